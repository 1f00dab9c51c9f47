// What an operator configures in idem-gateway, over real sockets: the admin listener (/metrics,
// /healthz, /policy) and the Link that names it, --config's per-route policies, and the TLS
// listener (keep-alive, replays, bad files and the command line's mistakes refused at start).
// tst_gatewayops.cpp has the gateway in operation. The shared upstream and clients:
// gatewaytestsupport.h.
#include "gatewaytestsupport.h"
#include "idem/gateway/listenertls.h"

#include <QJsonArray>
#include <QNetworkInterface>
#include <QProcess>

using namespace idem;
using namespace gwtest;
using namespace Qt::StringLiterals;

class TestGatewayConfig : public GatewaySuite {
    Q_OBJECT

private slots:
    void init() { up = std::make_unique<TestUpstream>(); }
    void cleanup() { up.reset(); }

    void adminEndpoints();
    void policyLinkOnlyForLocalClients();
    void policyLinkNamesAnAddressToConnectTo_data();
    void policyLinkNamesAnAddressToConnectTo();
    void perRoutePolicies();
    void tlsListenerKeepsAliveAndReplays();
    void tlsListenerRefusesBadFiles_data();
    void tlsListenerRefusesBadFiles();
};

void TestGatewayConfig::adminEndpoints()
{
    auto g = start([](gateway::GatewayOptions& o) { o.methods = {"POST", "PUT"}; });
    QVERIFY(g);
    QCOMPARE(call(g->port(), request("PUT", "/a", "a-1", "{}")).status, 201);
    QVERIFY(call(g->port(), request("PUT", "/a", "a-1", "{}")).replayed());
    const QByteArray m = metricsOf(g->adminPort());
    QVERIFY2(m.contains("idem_gateway_requests_total{outcome=\"executed\"} 1\n"), m.constData());
    QVERIFY(m.contains("idem_gateway_requests_total{outcome=\"replayed\"} 1\n"));
    QVERIFY(m.contains("# TYPE idem_gateway_request_duration_seconds histogram"));
    QVERIFY(m.contains("idem_gateway_request_duration_seconds_count 2\n"));
    QVERIFY(m.contains("idem_gateway_upstream_duration_seconds_count 1\n"));
    const Reply policy = call(g->adminPort(), request("GET", "/policy"));
    QCOMPARE(policy.status, 200);
    const QJsonObject p = policy.json();
    QCOMPARE(p.value(u"methods"_s).toVariant().toStringList(), (QStringList{u"POST"_s, u"PUT"_s}));
    QCOMPARE(p.value(u"retention_seconds"_s).toDouble(), 86400.0);
    QCOMPARE(p.value(u"max_body_bytes"_s).toInt(), 1 << 20);
    const Reply health = call(g->adminPort(), request("GET", "/healthz"));
    QCOMPARE(health.status, 200);
    QCOMPARE(call(g->adminPort(), request("GET", "/nothing")).status, 404);
}

// A 400's Link names the admin listener's /policy to a client on this machine only: one elsewhere
// seldom reaches the admin listener, and need not learn where it is. It gets the draft, as does a
// proxy on this machine forwarding another's request; --policy-link is for everyone.
void TestGatewayConfig::policyLinkOnlyForLocalClients()
{
    QHostAddress elsewhere; // an address of this machine's but loopback: its client is not on loopback
    for (const QHostAddress& a : QNetworkInterface::allAddresses())
        if (a.protocol() == QAbstractSocket::IPv4Protocol && !a.isLoopback() && !a.isLinkLocal())
            elsewhere = a;
    const auto linkOf = [](quint16 port, const QList<QByteArray>& extra, const QHostAddress& from) {
        Client c(port, false, from);
        c.send(request("POST", "/l", {}, "{}", extra));
        return c.wait(1) ? c.replies.front().header("Link") : QByteArray("(no answer)");
    };
    const QHostAddress local(QHostAddress::LocalHost);
    const QByteArray draft =
        "<https://datatracker.ietf.org/doc/draft-ietf-httpapi-idempotency-key-header/>; rel=\"describedby\"";
    auto g = start([](gateway::GatewayOptions& o) {
        o.listenHost = QHostAddress::Any;
        o.requireKey = true;
    });
    QVERIFY(g);
    QCOMPARE(linkOf(g->port(), {}, local),
             "<http://127.0.0.1:" + QByteArray::number(g->adminPort()) + "/policy>; rel=\"describedby\"");
    QCOMPARE(linkOf(g->port(), {"X-Forwarded-For: 203.0.113.7"}, local), draft);
    QCOMPARE(linkOf(g->port(), {"Forwarded: for=203.0.113.7"}, local), draft);
    if (!elsewhere.isNull())
        QCOMPARE(linkOf(g->port(), {}, elsewhere), draft);

    auto given = start([](gateway::GatewayOptions& o) {
        o.listenHost = QHostAddress::Any;
        o.requireKey = true;
        o.policyLink = u"https://api.example/idempotency"_s;
    });
    QVERIFY(given);
    const QByteArray published = "<https://api.example/idempotency>; rel=\"describedby\"";
    QCOMPARE(linkOf(given->port(), {}, local), published);
    if (elsewhere.isNull())
        QSKIP("this machine has no address but loopback: a client elsewhere was not tried");
    QCOMPARE(linkOf(given->port(), {}, elsewhere), published);
}

void TestGatewayConfig::policyLinkNamesAnAddressToConnectTo_data()
{
    QTest::addColumn<QString>("adminListen");
    QTest::addColumn<QString>("named");
    QTest::newRow("*") << u"*:0"_s << u"127.0.0.1"_s;
    QTest::newRow("0.0.0.0") << u"0.0.0.0:0"_s << u"127.0.0.1"_s;
    QTest::newRow("[::]") << u"[::]:0"_s << u"[::1]"_s; // (Qt listens there on IPv6 only)
    QTest::newRow("127.0.0.1") << u"127.0.0.1:0"_s << u"127.0.0.1"_s;
}

// An admin listener on every address (--admin-listen *, 0.0.0.0 or [::]) is no address a client
// can connect to: the Link names the loopback address it answers on, and /policy is there
void TestGatewayConfig::policyLinkNamesAnAddressToConnectTo()
{
    QFETCH(QString, adminListen);
    QFETCH(QString, named);
    if (named.startsWith(u'[')) {
        QTcpServer probe;
        if (!probe.listen(QHostAddress::LocalHostIPv6))
            QSKIP("this machine has no IPv6 loopback");
    }
    gateway::GatewayOptions parsed;
    QCOMPARE(gateway::parseCommandLine({u"idem-gateway"_s, u"--upstream"_s, up->url().toString(), u"--admin-listen"_s,
                                        adminListen},
                                       parsed),
             -1);
    auto g = start([&parsed](gateway::GatewayOptions& o) {
        o.adminHost = parsed.adminHost;
        o.requireKey = true;
    });
    QVERIFY(g);
    Client c(g->port());
    c.send(request("POST", "/l", {}, "{}"));
    QVERIFY(c.wait(1));
    const QByteArray link = c.replies.front().header("Link");
    const QByteArray url = "http://" + named.toLatin1() + ':' + QByteArray::number(g->adminPort()) + "/policy";
    QCOMPARE(link, '<' + url + ">; rel=\"describedby\"");
    // and a client reaches it there
    const QString host = named.startsWith(u'[') ? named.mid(1, named.size() - 2) : named;
    Client admin(g->adminPort(), false, QHostAddress(host));
    admin.send(request("GET", "/policy"));
    QVERIFY(admin.wait(1));
    QCOMPARE(admin.replies.front().status, 200);
}

// --config's routes over real sockets: each field, and which route a request falls under.
void TestGatewayConfig::perRoutePolicies()
{
    std::vector<gateway::RoutePolicy> routes;
    QString error;
    gateway::GatewayOptions flags;
    QVERIFY2(gateway::parseRoutes(R"({"routes":[
        {"route":"/strict","methods":["POST","PUT"],"key_required":true},
        {"route":"POST /strict/open","key_required":false},
        {"route":"/free","methods":[]},
        {"route":"/status/503","store":["2xx","5xx"]},
        {"route":"/status/404","store":["2xx"]},
        {"route":"/hdr","replay_headers":["X-Upstream","Content-Type"]},
        {"route":"/small","max_body":"16"},
        {"route":"/short","retention":"1s"},
        {"route":"/slow/1500","lease":"3s"}]})",
                                  gateway::defaultPolicy(flags), routes, &error),
             qPrintable(error));
    auto g = start([&](gateway::GatewayOptions& o) { o.routes = routes; });
    QVERIFY(g);
    const quint16 port = g->port();

    // key_required and methods: POST and PUT need a key under /strict, PATCH is not protected there
    const Reply noKey = call(port, request("POST", "/strict/x", {}, "{}"));
    QCOMPARE(noKey.status, 400);
    QVERIFY(noKey.header("Link").contains("rel=\"describedby\""));
    QCOMPARE(call(port, request("PUT", "/strict/x", "s-1", "{}")).status, 201);
    QVERIFY(call(port, request("PUT", "/strict/x", "s-1", "{}")).replayed());
    QCOMPARE(call(port, request("PATCH", "/strict/x", "s-2", "{}")).status, 201);
    QVERIFY(!call(port, request("PATCH", "/strict/x", "s-2", "{}")).replayed()); // passed through
    QCOMPARE(up->calls("/strict/x"), 3);
    // a longer prefix for POST only: no key needed there, others still under /strict
    QCOMPARE(call(port, request("POST", "/strict/open/1", {}, "{}")).status, 201);
    QCOMPARE(call(port, request("PUT", "/strict/open/1", {}, "{}")).status, 400);
    // a route's policy cannot be stepped around by another spelling of its path, and the
    // upstream gets the path the policy was chosen for
    for (const QByteArray& path : {"/free/../strict/x"_ba, "/%73trict/x"_ba, "//strict//x"_ba, "/strict;v=1/x"_ba})
        QVERIFY2(call(port, request("POST", path, {}, "{}")).status == 400, path.constData());
    QCOMPARE(call(port, request("PUT", "/free/../strict/./x", "s-3", "{}")).status, 201);
    QCOMPARE(up->calls("/strict/x"), 4);
    // nothing protected
    call(port, request("POST", "/free/1", "f-1", "{}"));
    QVERIFY(!call(port, request("POST", "/free/1", "f-1", "{}")).replayed());
    QCOMPARE(up->calls("/free/1"), 2);
    // statuses stored: 5xx kept under /status/503, released elsewhere; 4xx released under /status/404
    QCOMPARE(call(port, request("POST", "/status/503/a", "st-1", "{}")).status, 503);
    const Reply kept = call(port, request("POST", "/status/503/a", "st-1", "{}"));
    QCOMPARE(kept.status, 503);
    QVERIFY(kept.replayed());
    QCOMPARE(up->calls("/status/503/a"), 1);
    QCOMPARE(call(port, request("POST", "/status/502/a", "st-2", "{}")).status, 502);
    QVERIFY(!call(port, request("POST", "/status/502/a", "st-2", "{}")).replayed());
    QCOMPARE(up->calls("/status/502/a"), 2);
    QCOMPARE(call(port, request("POST", "/status/404/a", "st-3", "{}")).status, 404);
    QVERIFY(!call(port, request("POST", "/status/404/a", "st-3", "{}")).replayed());
    QCOMPARE(up->calls("/status/404/a"), 2);
    QCOMPARE(call(port, request("POST", "/status/409/a", "st-4", "{}")).status, 409);
    QVERIFY(call(port, request("POST", "/status/409/a", "st-4", "{}")).replayed()); // the default stores 4xx
    // headers replayed: the route's allow-list, not the default one
    call(port, request("POST", "/hdr/1", "h-1", "{}"));
    const Reply hdr = call(port, request("POST", "/hdr/1", "h-1", "{}"));
    QVERIFY(hdr.replayed());
    QCOMPARE(hdr.header("X-Upstream"), "yes"_ba);
    QCOMPARE(hdr.header("Content-Type"), "application/json"_ba);
    QVERIFY(!hdr.has("ETag") && !hdr.has("Location") && !hdr.has("Set-Cookie"));
    // max body: 16 bytes under /small (413 before the body), the default elsewhere
    const QByteArray seventeen(17, 'x');
    QCOMPARE(call(port, request("POST", "/small/1", "b-1", seventeen)).status, 413);
    QCOMPARE(call(port, request("POST", "/small/1", "b-1", seventeen.left(16))).status, 201);
    QCOMPARE(call(port, request("POST", "/big/1", "b-1", seventeen)).status, 201);
    QCOMPARE(outcome(*g, gateway::Outcome::TooLarge), 1u);
    // retention: gone after a second under /short, kept by default
    call(port, request("POST", "/short/1", "r-1", "{}"));
    call(port, request("POST", "/long/1", "r-1", "{}"));
    QTest::qWait(1500);
    QVERIFY(!call(port, request("POST", "/short/1", "r-1", "{}")).replayed());
    QCOMPARE(up->calls("/short/1"), 2);
    QVERIFY(call(port, request("POST", "/long/1", "r-1", "{}")).replayed());
    // lease: a duplicate in flight is told the route's lease (3 s), not the default (30 s)
    Client first(port), other(port);
    first.send(request("POST", "/slow/1500/l", "l-1", "{}"));
    other.send(request("POST", "/slow/1400/l", "l-1", "{}"));
    QVERIFY(QTest::qWaitFor([&] { return up->calls("/slow/1500/l") == 1 && up->calls("/slow/1400/l") == 1; }, 5000));
    const Reply short409 = call(port, request("POST", "/slow/1500/l", "l-1", "{}"));
    const Reply long409 = call(port, request("POST", "/slow/1400/l", "l-1", "{}"));
    QCOMPARE(short409.status, 409);
    QCOMPARE(long409.status, 409);
    QVERIFY2(short409.header("Retry-After").toInt() <= 3, short409.header("Retry-After").constData());
    QVERIFY2(long409.header("Retry-After").toInt() > 20, long409.header("Retry-After").constData());
    QVERIFY(first.wait(1) && other.wait(1));

    // /policy publishes the routes
    const QJsonObject p = call(g->adminPort(), request("GET", "/policy")).json();
    const QJsonArray published = p.value(u"routes"_s).toArray();
    QCOMPARE(published.size(), 9);
    QCOMPARE(published[1].toObject().value(u"route"_s).toString(), u"POST /strict/open"_s);
    QCOMPARE(published[1].toObject().value(u"route_methods"_s).toArray().first().toString(), u"POST"_s);
    QCOMPARE(published[3].toObject().value(u"stored_statuses"_s).toVariant().toStringList(),
             (QStringList{u"2xx"_s, u"5xx"_s}));
    QCOMPARE(published[6].toObject().value(u"max_body_bytes"_s).toInt(), 16);
    QCOMPARE(published[8].toObject().value(u"lease_seconds"_s).toDouble(), 3.0);
    QCOMPARE(p.value(u"stored_statuses"_s).toVariant().toStringList(), (QStringList{u"2xx"_s, u"3xx"_s, u"4xx"_s}));
}

// --listen-cert/--listen-key: HTTPS with the tests' certificate; keep-alive and replays work
// over it, a client that does not speak TLS gets nothing and takes nothing down.
void TestGatewayConfig::tlsListenerKeepsAliveAndReplays()
{
    const auto& certs = idemtest::TestCerts::get();
    QSslConfiguration tls;
    QString error;
    QVERIFY2(gateway::loadListenerTls(QString::fromStdString(certs.path("server.pem")),
                                      QString::fromStdString(certs.path("server.key")), tls, &error),
             qPrintable(error));
    auto g = start([&](gateway::GatewayOptions& o) { o.listenTls = tls; });
    QVERIFY(g);
    Client c(g->port(), true);
    QVERIFY2(c.encrypted, qPrintable(c.error()));
    const QByteArray req = request("POST", "/tls/orders", "\"t-1\"", R"({"n":1})");
    c.send(req);
    QVERIFY(c.wait(1));
    QCOMPARE(c.replies[0].status, 201);
    QVERIFY(!c.replies[0].replayed());
    c.send(req); // the same connection: kept alive
    QVERIFY(c.wait(2));
    QCOMPARE(c.replies[1].status, 201);
    QVERIFY(c.replies[1].replayed());
    QCOMPARE(c.replies[1].body, c.replies[0].body);
    // pipelined over TLS, answered in order
    c.send(request("GET", "/tls/a") + request("POST", "/tls/b", "t-2", "{}") + request("GET", "/tls/c"));
    QVERIFY(c.wait(5));
    QCOMPARE(c.replies[2].json().value(u"path"_s).toString(), u"/tls/a"_s);
    QCOMPARE(c.replies[3].json().value(u"path"_s).toString(), u"/tls/b"_s);
    QCOMPARE(c.replies[4].json().value(u"path"_s).toString(), u"/tls/c"_s);
    QVERIFY(!c.closed);
    QCOMPARE(up->calls("/tls/orders"), 1);

    // plaintext to the TLS port: no answer, the connection is dropped
    Client plain(g->port());
    plain.send(req);
    QVERIFY(QTest::qWaitFor([&] { return plain.closed; }, 10000));
    QVERIFY(plain.replies.empty());
    // a client that does not trust the certificate fails its handshake; the gateway serves on
    QSslSocket untrusting;
    bool refused = false;
    connect(&untrusting, &QSslSocket::sslErrors, this, [&] { refused = true; });
    untrusting.connectToHostEncrypted(u"localhost"_s, g->port());
    QVERIFY(QTest::qWaitFor([&] { return refused; }, 10000));
    QVERIFY(!untrusting.isEncrypted());
    Client after(g->port(), true);
    QVERIFY(after.encrypted);
    after.send(req);
    QVERIFY(after.wait(1));
    QVERIFY(after.replies[0].replayed());
    QCOMPARE(up->calls("/tls/orders"), 1);
}

void TestGatewayConfig::tlsListenerRefusesBadFiles_data()
{
    const auto& certs = idemtest::TestCerts::get();
    const auto path = [&](const char* n) { return QString::fromStdString(certs.path(n)); };
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("says");
    QTest::newRow("missing cert") << QStringList{u"--listen-cert"_s, path("nothing.pem"), u"--listen-key"_s,
                                                 path("server.key")}
                                  << u"--listen-cert "_s + path("nothing.pem") + u": cannot read it"_s;
    QTest::newRow("missing key") << QStringList{u"--listen-cert"_s, path("server.pem"), u"--listen-key"_s,
                                                path("nothing.key")}
                                 << u"--listen-key "_s + path("nothing.key") + u": cannot read it"_s;
    QTest::newRow("a key as cert") << QStringList{u"--listen-cert"_s, path("server.key"), u"--listen-key"_s,
                                                  path("server.key")}
                                   << u"no PEM certificate"_s;
    QTest::newRow("a cert as key") << QStringList{u"--listen-cert"_s, path("server.pem"), u"--listen-key"_s,
                                                  path("server.pem")}
                                   << u"no unencrypted PEM private key"_s;
    QTest::newRow("key of another cert") << QStringList{u"--listen-cert"_s, path("server.pem"), u"--listen-key"_s,
                                                        path("client.key")}
                                         << u"does not go with --listen-cert"_s;
    QTest::newRow("endless cert") << QStringList{u"--listen-cert"_s, u"/dev/zero"_s, u"--listen-key"_s,
                                                 path("server.key")}
                                  << u"--listen-cert /dev/zero: larger than 1MiB"_s; // (not read forever)
    QTest::newRow("cert without key") << QStringList{u"--listen-cert"_s, path("server.pem")}
                                      << u"--listen-cert and --listen-key go together"_s;
    // not TLS, the same rule: the command line's own mistakes, in the words of the others
    QTest::newRow("unknown option") << QStringList{u"--bogus"_s} << u"idem-gateway: unknown option --bogus (see --help)"_s;
    QTest::newRow("missing value") << QStringList{u"--lease"_s}
                                   << u"idem-gateway: missing value after '--lease' (see --help)"_s;
}

// Each mistake is one line on stderr and exit 64, before anything listens.
void TestGatewayConfig::tlsListenerRefusesBadFiles()
{
    QFETCH(QStringList, args);
    QFETCH(QString, says);
    const QString binary = qEnvironmentVariable("IDEM_GATEWAY");
    QVERIFY2(!binary.isEmpty(), "IDEM_GATEWAY is not set: run the tests through ctest");
    QProcess p;
    p.start(binary, QStringList{u"--upstream"_s, up->url().toString(), u"--listen"_s, u"127.0.0.1:0"_s, u"--url"_s,
                                QString::fromStdString(idemtest::sharedRedisUrl())} +
                        args);
    QVERIFY(p.waitForFinished(20000));
    const QString err = QString::fromUtf8(p.readAllStandardError());
    QCOMPARE(p.exitCode(), 64);
    QVERIFY2(err.contains(says), qPrintable(err));
    QCOMPARE(err.count(u'\n'), 1);
    QVERIFY(err.startsWith(u"idem-gateway: "_s));
    QVERIFY(!p.readAllStandardOutput().contains("listening"));
}

QTEST_GUILESS_MAIN(TestGatewayConfig)
#include "tst_gatewayconfig.moc"
