// idem-gateway in operation, over real sockets: its private Redis killed (503, fail closed) or
// --fail-open, the admin listener (/metrics, /healthz, /policy), the idem-gateway binary
// SIGKILLed mid-request (409 while its lease lives, a takeover with a higher fence after),
// --config's per-route policies, and the TLS listener (keep-alive, replays, bad files refused).
// The shared upstream and clients: gatewaytestsupport.h.
#include "gatewaytestsupport.h"
#include "idem/gateway/listenertls.h"
#include "idem/redis/localserver.h"

#include <QJsonArray>
#include <QNetworkInterface>
#include <QProcess>
#include <QRegularExpression>
#include <QSslKey>

using namespace idem;
using namespace gwtest;
using namespace Qt::StringLiterals;

class TestGatewayOps : public GatewaySuite {
    Q_OBJECT

private slots:
    void init() { up = std::make_unique<TestUpstream>(); }
    void cleanup() { up.reset(); }

    void redisDownIs503();
    void failOpenForwardsUnprotected();
    void minReplicasHoldsTheUpstreamBack();
    void adminEndpoints();
    void policyLinkOnlyForLocalClients();
    void policyLinkNamesAnAddressToConnectTo_data();
    void policyLinkNamesAnAddressToConnectTo();
    void killedGatewayIsTakenOver();
    void perRoutePolicies();
    void tlsListenerKeepsAliveAndReplays();
    void tlsListenerRefusesBadFiles_data();
    void tlsListenerRefusesBadFiles();
    void refusedPasswordEndsItAtStart();
    void missingClientCertificateEndsItAtStart();
    void redisNotUpYetIsSaidAndFailsClosed();
    void drainAnswersWhatIsUnderWay();
    void drainTimesOut();
    void sigtermDrainsTheBinary();

private:
    // the idem-gateway binary with `args` after --upstream and --listen 127.0.0.1:0
    void startBinary(QProcess& p, const QStringList& args);
    // its listening port, from stdout (0: it never said)
    quint16 listeningPort(QProcess& p);
};

void TestGatewayOps::startBinary(QProcess& p, const QStringList& args) { startGatewayBinary(p, *up, args); }
quint16 TestGatewayOps::listeningPort(QProcess& p) { return gatewayBinaryPort(p); }

void TestGatewayOps::redisDownIs503()
{
    LocalServer redis;
    auto g = start({}, redis.connectionOptions());
    QVERIFY(g);
    QCOMPARE(call(g->port(), request("POST", "/r", "r-1", "{}")).status, 201);
    redis.kill();
    const Reply down = call(g->port(), request("POST", "/r", "r-2", "{}"));
    QCOMPARE(down.status, 503);
    QCOMPARE(down.header("Content-Type"), "application/problem+json"_ba);
    QVERIFY(down.has("Retry-After"));
    // nothing of the store's address or credentials reaches the client
    QVERIFY2(!down.body.contains("127.0.0.1") && !down.body.contains("redis"), down.body.constData());
    QCOMPARE(up->calls("/r"), 1); // fail closed: not forwarded
    QCOMPARE(outcome(*g, gateway::Outcome::StoreError), 1u);
    // the operator's listener says why, in the store's words
    const Reply health = call(g->adminPort(), request("GET", "/healthz"));
    QCOMPARE(health.status, 503);
    QCOMPARE(health.json().value(u"redis"_s).toString(), u"unreachable"_s);
    QVERIFY2(health.json().value(u"redis_error"_s).toString().size() > 10, health.body.constData());
    // unprotected methods still pass
    QCOMPARE(call(g->port(), request("GET", "/r")).status, 201);
    redis.start();
    QVERIFY(QTest::qWaitFor([&] { return call(g->port(), request("POST", "/r", "r-2", "{}")).status == 201; }, 10000));
    const Reply healthy = call(g->adminPort(), request("GET", "/healthz"));
    QCOMPARE(healthy.status, 200);
    QVERIFY2(!healthy.json().contains(u"redis_error"_s), healthy.body.constData());
}

// --min-replicas: a key no replica acknowledged could vanish in a failover, and the request run
// again; so the upstream is not called (503) until a replica has it, then runs once and replays
void TestGatewayOps::minReplicasHoldsTheUpstreamBack()
{
    LocalServer primary;
    LocalServerOptions ro;
    ro.extraArgs = {"--replicaof", "127.0.0.1", std::to_string(primary.port())};
    LocalServer replica(ro);
    auto g = start(
        [](gateway::GatewayOptions& o) {
            o.minReplicas = 1;
            o.replicaTimeout = Millis(200);
        },
        primary.connectionOptions());
    QVERIFY(g);
    QVERIFY(QTest::qWaitFor([&] { return call(g->port(), request("POST", "/rep", "rep-0", "{}")).status == 201; }, 10000));
    replica.pause(); // it acknowledges nothing
    const Reply held = call(g->port(), request("POST", "/rep", "rep-1", "{}"));
    QCOMPARE(held.status, 503);
    QCOMPARE(up->calls("/rep"), 1);
    replica.resume();
    QVERIFY(QTest::qWaitFor([&] { return call(g->port(), request("POST", "/rep", "rep-1", "{}")).status == 201; }, 10000));
    QVERIFY(call(g->port(), request("POST", "/rep", "rep-1", "{}")).replayed());
    QCOMPARE(up->calls("/rep"), 2);
    QCOMPARE(call(g->adminPort(), request("GET", "/policy")).json().value(u"min_replicas"_s).toInt(), 1);
}

void TestGatewayOps::failOpenForwardsUnprotected()
{
    LocalServer redis;
    auto g = start([](gateway::GatewayOptions& o) { o.failOpen = true; }, redis.connectionOptions());
    QVERIFY(g);
    redis.kill();
    QCOMPARE(call(g->port(), request("POST", "/open", "o-1", "{}")).status, 201);
    QCOMPARE(call(g->port(), request("POST", "/open", "o-1", "{}")).status, 201);
    QCOMPARE(up->calls("/open"), 2);
    QCOMPARE(outcome(*g, gateway::Outcome::StoreError), 2u);
}

void TestGatewayOps::adminEndpoints()
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
void TestGatewayOps::policyLinkOnlyForLocalClients()
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

void TestGatewayOps::policyLinkNamesAnAddressToConnectTo_data()
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
void TestGatewayOps::policyLinkNamesAnAddressToConnectTo()
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

// A gateway SIGKILLed while the upstream works leaves its lease: duplicates get 409 while it
// lives, then a retry takes it over with a higher fence.
void TestGatewayOps::killedGatewayIsTakenOver()
{
    const QString binary = qEnvironmentVariable("IDEM_GATEWAY");
    QVERIFY2(!binary.isEmpty(), "IDEM_GATEWAY is not set: run the tests through ctest");
    const std::string ns = idemtest::uniqueNamespace("gwkill");
    QProcess p;
    p.setProgram(binary);
    p.setArguments({u"--upstream"_s, up->url().toString(), u"--listen"_s, u"127.0.0.1:0"_s, u"--url"_s,
                    QString::fromStdString(idemtest::sharedRedisUrl()), u"--namespace"_s, QString::fromStdString(ns),
                    u"--lease"_s, u"2s"_s});
    p.start();
    QVERIFY(p.waitForStarted());
    QByteArray out;
    quint16 port = 0;
    QVERIFY(QTest::qWaitFor(
        [&] {
            out += p.readAllStandardOutput();
            const auto m = QRegularExpression(u"listening: http://127.0.0.1:(\\d+)"_s).match(QString::fromUtf8(out));
            port = m.hasMatch() ? static_cast<quint16>(m.captured(1).toUInt()) : 0;
            return port != 0;
        },
        10000));
    Client doomed(port);
    const QByteArray req = request("POST", "/slowfirst/60000/k", "kill-1", "{}");
    doomed.send(req);
    QVERIFY(QTest::qWaitFor([&] { return up->calls("/slowfirst/60000/k") == 1; }, 10000));
    const qint64 firstFence = std::stoll(*up->last("/slowfirst/60000/k").header("Idempotency-Fence"));
    p.kill(); // SIGKILL: nothing is released
    QVERIFY(p.waitForFinished());

    auto g = start([&](gateway::GatewayOptions& o) { o.keyNamespace = ns; });
    QVERIFY(g);
    QCOMPARE(call(g->port(), req).status, 409); // the lease still lives
    // once it runs out (at most 2 s after the last renewal), a retry takes it over
    Reply taken;
    QVERIFY(QTest::qWaitFor(
        [&] {
            taken = call(g->port(), req);
            return taken.status != 409;
        },
        10000));
    QCOMPARE(taken.status, 201);
    QVERIFY(!taken.replayed());
    QCOMPARE(taken.json().value(u"call"_s).toInt(), 2);
    QVERIFY(std::stoll(*up->last("/slowfirst/60000/k").header("Idempotency-Fence")) > firstFence);
    QCOMPARE(outcome(*g, gateway::Outcome::Takeover), 1u);
    QVERIFY(call(g->port(), req).replayed());
    QCOMPARE(up->calls("/slowfirst/60000/k"), 2);
}

// --config's routes over real sockets: each field, and which route a request falls under.
void TestGatewayOps::perRoutePolicies()
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
void TestGatewayOps::tlsListenerKeepsAliveAndReplays()
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

void TestGatewayOps::tlsListenerRefusesBadFiles_data()
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
void TestGatewayOps::tlsListenerRefusesBadFiles()
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

// A password the server refuses cannot get better by retrying: one line naming what to check, exit
// 69, and nothing listens (a deployment fails at once, not at its first request).
void TestGatewayOps::refusedPasswordEndsItAtStart()
{
    LocalServerOptions lo;
    lo.extraArgs = {"--requirepass", "s3cret"};
    LocalServer redis(lo);
    QProcess p;
    startBinary(p, {u"--url"_s, u"redis://:wrong@127.0.0.1:%1/0"_s.arg(redis.port())});
    QVERIFY(p.waitForFinished(20000));
    const QString err = QString::fromUtf8(p.readAllStandardError());
    QCOMPARE(p.exitCode(), 69);
    QVERIFY2(err.startsWith(u"idem-gateway: "_s) && err.contains(u"WRONGPASS"_s) && err.contains(u"(check password)"_s),
             qPrintable(err));
    QCOMPARE(err.count(u'\n'), 1);
    QVERIFY(!p.readAllStandardOutput().contains("listening"));
}

// A TLS server that wants a client certificate, given none: its reset often overtakes its alert,
// so a single try reads only "closed before its first answer". Asked five times, the same answer:
// the gateway does not start (it once listened and answered every request 503).
void TestGatewayOps::missingClientCertificateEndsItAtStart()
{
    const auto& certs = idemtest::TestCerts::get();
    LocalServer redis(certs.serverOptions("server.pem", true));
    QProcess p;
    startBinary(p, {u"--url"_s, u"rediss://127.0.0.1:%1/0"_s.arg(redis.port()), u"--tls-ca"_s,
                    QString::fromStdString(certs.path("ca.pem"))});
    QVERIFY(p.waitForFinished(20000));
    const QString err = QString::fromUtf8(p.readAllStandardError());
    QCOMPARE(p.exitCode(), 69);
    QVERIFY2(err.startsWith(u"idem-gateway: "_s) && err.contains(u"tls-cert"_s), qPrintable(err));
    QCOMPARE(err.count(u'\n'), 1);
    QVERIFY(!p.readAllStandardOutput().contains("listening"));
}

// A Redis that is not up yet may come later: the gateway says so, listens, and fails closed (503)
// until it answers.
void TestGatewayOps::redisNotUpYetIsSaidAndFailsClosed()
{
    const idemtest::ClosedPort closed;
    QProcess p;
    startBinary(p, {u"--url"_s, u"redis://127.0.0.1:%1/0"_s.arg(closed.port())});
    const quint16 port = listeningPort(p);
    QString err;
    (void)QTest::qWaitFor([&] { return (err += QString::fromUtf8(p.readAllStandardError())).endsWith(u'\n'); }, 5000);
    QVERIFY2(port != 0, qPrintable(err));
    QVERIFY2(err.startsWith(u"idem-gateway: warning: "_s) && err.contains(u"unreachable"_s) &&
                 err.contains(u"get 503 until it answers"_s),
             qPrintable(err));
    QCOMPARE(call(port, request("POST", "/r", "early-1", "{}")).status, 503);
    QCOMPARE(up->calls("/r"), 0);
    p.terminate();
    QVERIFY(p.waitForFinished(10000));
}

// A graceful stop: the listener closes, an idle keep-alive client is let go at once, /healthz says
// draining, the request under way is answered (Connection: close) and stored, then drained().
void TestGatewayOps::drainAnswersWhatIsUnderWay()
{
    std::string ns;
    auto g = start([&](gateway::GatewayOptions& o) { ns = o.keyNamespace; });
    QVERIFY(g);
    QSignalSpy drained(g.get(), &gateway::Gateway::drained);
    Client idle(g->port());
    idle.send(request("POST", "/d", "drain-0", "{}"));
    QVERIFY(idle.wait(1)); // kept alive, nothing more asked
    Client busy(g->port());
    const QByteArray req = request("POST", "/slow/1500/d", "drain-1", "{}");
    busy.send(req);
    QVERIFY(QTest::qWaitFor([&] { return up->calls("/slow/1500/d") == 1; }, 10000));
    QCOMPARE(g->inFlight(), 1u);

    g->drain(Millis(20000));
    QVERIFY(QTest::qWaitFor([&] { return idle.closed; }, 5000));
    QVERIFY(busy.replies.empty() && !busy.closed);
    QCOMPARE(drained.count(), 0);
    const Reply health = call(g->adminPort(), request("GET", "/healthz"));
    QCOMPARE(health.status, 503);
    QVERIFY2(health.body.contains("\"draining\""), health.body.constData());
    QTcpSocket late; // the listener is closed: refused by the kernel, no event loop needed
    late.connectToHost(QHostAddress::LocalHost, g->port());
    QVERIFY(!late.waitForConnected(3000));

    QVERIFY(busy.wait(1));
    QCOMPARE(busy.replies[0].status, 201);
    QCOMPARE(busy.replies[0].header("Connection"), "close"_ba);
    QVERIFY(QTest::qWaitFor([&] { return busy.closed; }, 5000));
    QVERIFY(drained.count() == 1 || drained.wait(5000));
    QCOMPARE(g->inFlight(), 0u);
    g.reset();
    // its answer was stored before it was sent: the next gateway replays it
    auto next = start([&](gateway::GatewayOptions& o) { o.keyNamespace = ns; });
    QVERIFY(next);
    QVERIFY(call(next->port(), req).replayed());
    QCOMPARE(up->calls("/slow/1500/d"), 1);
}

// An upstream slower than the drain: drained() comes at the timeout; the request keeps its lease.
void TestGatewayOps::drainTimesOut()
{
    auto g = start();
    QVERIFY(g);
    QSignalSpy drained(g.get(), &gateway::Gateway::drained);
    Client busy(g->port());
    busy.send(request("POST", "/slow/8000/t", "drain-t", "{}"));
    QVERIFY(QTest::qWaitFor([&] { return up->calls("/slow/8000/t") == 1; }, 10000));
    QElapsedTimer t;
    t.start();
    g->drain(Millis(400));
    QVERIFY(drained.wait(5000));
    QVERIFY2(t.elapsed() >= 350 && t.elapsed() < 4000, qPrintable(QString::number(t.elapsed())));
    QCOMPARE(g->inFlight(), 1u);
    QVERIFY(g->drainTimedOut());
    QCOMPARE(g->cutOff(), 1u);
    QVERIFY(busy.replies.empty());
}

// The binary: SIGTERM mid-request, the request answered, exit 0; a second signal ends it at once,
// says what it cut off and exits 1 (a supervisor can tell it from a clean drain); so does a drain
// that runs out of time.
void TestGatewayOps::sigtermDrainsTheBinary()
{
    // the binary on the shared Redis with one request under way at `path` (the upstream has it)
    const auto underWay = [&](QProcess& proc, const QStringList& args, const QByteArray& path,
                              std::unique_ptr<Client>& client) {
        startBinary(proc, QStringList{u"--url"_s, QString::fromStdString(idemtest::sharedRedisUrl())} + args);
        const quint16 port = listeningPort(proc);
        if (port == 0)
            return false;
        client = std::make_unique<Client>(port);
        if (!path.isEmpty())
            client->send(request("POST", path, "k-" + path, "{}"));
        return path.isEmpty() || QTest::qWaitFor([&] { return up->calls(path.toStdString()) == 1; }, 10000);
    };
    const auto ended = [](QProcess& proc, int ms) {
        return (proc.state() == QProcess::NotRunning || proc.waitForFinished(ms)) && // (false if it ended already)
               proc.exitStatus() == QProcess::NormalExit;
    };

    QProcess idle;
    std::unique_ptr<Client> none;
    QVERIFY(underWay(idle, {}, {}, none));
    idle.terminate(); // SIGTERM with nothing asked: out at once
    QVERIFY(ended(idle, 5000));
    QCOMPARE(idle.exitCode(), 0);
    QVERIFY(idle.readAllStandardOutput().contains("draining: no new connections; nothing under way\n"));

    QProcess p;
    std::unique_ptr<Client> busy;
    QVERIFY(underWay(p, {u"--namespace"_s, QString::fromStdString(idemtest::uniqueNamespace("gwterm"))},
                     "/slow/1500/term", busy));
    p.terminate(); // SIGTERM mid-request: answered, then out
    QVERIFY(busy->wait(1));
    QCOMPARE(busy->replies[0].status, 201);
    QVERIFY(ended(p, 10000));
    QCOMPARE(p.exitCode(), 0);
    QVERIFY(p.readAllStandardOutput().contains("draining: no new connections; 1 request under way ends within 20s"));

    QProcess q;
    std::unique_ptr<Client> stuck;
    QVERIFY(underWay(q, {}, "/slow/8000/term2", stuck));
    q.terminate();
    QVERIFY(QTest::qWaitFor([&] { return q.readAllStandardOutput().contains("draining"); }, 5000));
    q.terminate(); // the second: now
    QVERIFY(ended(q, 3000));
    QCOMPARE(q.exitCode(), 1);
    const QByteArray said = q.readAllStandardError();
    QVERIFY2(said.contains("stopped by a second signal: 1 request cut off"), said.constData());
    QVERIFY(stuck->replies.empty());

    // the drain's timeout: the same words and exit 1
    QProcess t;
    std::unique_ptr<Client> slow;
    QVERIFY(underWay(t, {u"--drain-timeout"_s, u"300ms"_s}, "/slow/8000/term3", slow));
    t.terminate();
    QVERIFY(ended(t, 5000));
    QCOMPARE(t.exitCode(), 1);
    const QByteArray timedOut = t.readAllStandardError();
    QVERIFY2(timedOut.contains("the drain timed out after 300ms: 1 request cut off"), timedOut.constData());
    QVERIFY(slow->replies.empty());
}

QTEST_GUILESS_MAIN(TestGatewayOps)
#include "tst_gatewayops.moc"
