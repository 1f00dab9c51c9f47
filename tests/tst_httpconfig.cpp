// How the gateway is configured, pure (no socket, no server): the command line's options and
// mistakes, the per-route policy file's fields, mistakes and route precedence, --config. Each
// policy field through a real gateway is tst_gatewayconfig.
#include "idem/gateway/httprequest.h"
#include "idem/gateway/options.h"
#include "idem/gateway/routepolicy.h"

#include <QtTest>

using namespace idem;
using namespace Qt::StringLiterals;

namespace {
std::vector<gateway::RoutePolicy> routes(const char* json, QString* error = nullptr)
{
    std::vector<gateway::RoutePolicy> out;
    QString why;
    if (!gateway::parseRoutes(QByteArray(json), gateway::RoutePolicy{}, out, &why) && error)
        *error = why;
    return out;
}
} // namespace

class TestHttpConfig : public QObject {
    Q_OBJECT
private slots:
    void commandLineRefusesMistakes_data();
    void commandLineRefusesMistakes();
    void commandLineReadsOptions();
    void routePrecedence();
    void routesFileReadsFields();
    void routesFileRefusesMistakes_data();
    void routesFileRefusesMistakes();
    void configFlagReadsTheFile();
};

void TestHttpConfig::commandLineRefusesMistakes_data()
{
    QTest::addColumn<QStringList>("args");
    QTest::newRow("no upstream") << QStringList{};
    QTest::newRow("upstream not http") << QStringList{u"--upstream"_s, u"ftp://x"_s};
    QTest::newRow("upstream with a query") << QStringList{u"--upstream"_s, u"http://x/?a=1"_s};
    QTest::newRow("listen without port") << QStringList{u"--upstream"_s, u"http://x"_s, u"--listen"_s, u"127.0.0.1"_s};
    QTest::newRow("listen port too big") << QStringList{u"--upstream"_s, u"http://x"_s, u"--listen"_s, u":70000"_s};
    QTest::newRow("listen on a name") << QStringList{u"--upstream"_s, u"http://x"_s, u"--listen"_s, u"example.com:80"_s};
    QTest::newRow("bad key scope") << QStringList{u"--upstream"_s, u"http://x"_s, u"--key-scope"_s, u"cookie"_s};
    QTest::newRow("bad lease") << QStringList{u"--upstream"_s, u"http://x"_s, u"--lease"_s, u"soon"_s};
    QTest::newRow("zero lease") << QStringList{u"--upstream"_s, u"http://x"_s, u"--lease"_s, u"0s"_s};
    QTest::newRow("bad size") << QStringList{u"--upstream"_s, u"http://x"_s, u"--max-body"_s, u"big"_s};
    QTest::newRow("bad methods") << QStringList{u"--upstream"_s, u"http://x"_s, u"--methods"_s, u"POST,,"_s};
    QTest::newRow("bad url") << QStringList{u"--upstream"_s, u"http://x"_s, u"--url"_s, u"http://redis"_s};
    QTest::newRow("tls without rediss") << QStringList{u"--upstream"_s, u"http://x"_s, u"--url"_s, u"redis://h"_s,
                                                       u"--tls-ca"_s, u"ca.pem"_s};
    QTest::newRow("tls without url") << QStringList{u"--upstream"_s, u"http://x"_s, u"--tls-insecure"_s};
    QTest::newRow("unknown flag") << QStringList{u"--upstream"_s, u"http://x"_s, u"--frobnicate"_s};
    QTest::newRow("stray argument") << QStringList{u"--upstream"_s, u"http://x"_s, u"extra"_s};
    QTest::newRow("min replicas not a number") << QStringList{u"--upstream"_s, u"http://x"_s, u"--min-replicas"_s, u"all"_s};
    QTest::newRow("min replicas negative") << QStringList{u"--upstream"_s, u"http://x"_s, u"--min-replicas"_s, u"-1"_s};
    QTest::newRow("fingerprint hop-by-hop") << QStringList{u"--upstream"_s, u"http://x"_s, u"--fingerprint-headers"_s,
                                                          u"X-Api-Version,Host"_s};
    QTest::newRow("fingerprint not a name") << QStringList{u"--upstream"_s, u"http://x"_s, u"--fingerprint-headers"_s,
                                                           u"X-Api-Version,,"_s};
    QTest::newRow("replica timeout alone") << QStringList{u"--upstream"_s, u"http://x"_s, u"--replica-timeout"_s, u"1s"_s};
}

void TestHttpConfig::commandLineRefusesMistakes()
{
    QFETCH(QStringList, args);
    qunsetenv("IDEM_URL");
    gateway::GatewayOptions o;
    QCOMPARE(gateway::parseCommandLine(QStringList{u"idem-gateway"_s} + args, o), 64);
}

void TestHttpConfig::commandLineReadsOptions()
{
    qunsetenv("IDEM_URL");
    gateway::GatewayOptions o;
    const QStringList args = {u"idem-gateway"_s, u"--upstream"_s, u"http://127.0.0.1:9000/api"_s, u"--listen"_s,
                              u"0.0.0.0:8081"_s, u"--admin-listen"_s, u"[::1]:9091"_s, u"--methods"_s, u"post, put"_s,
                              u"--lease"_s, u"5s"_s, u"--retention"_s, u"1h"_s, u"--max-body"_s, u"64KiB"_s,
                              u"--key-scope"_s, u"header:X-Api-Key"_s, u"--store-5xx"_s, u"--fail-open"_s,
                              u"--require-key"_s, u"--wait-in-progress"_s, u"3s"_s, u"--min-replicas"_s, u"2"_s,
                              u"--replica-timeout"_s, u"250ms"_s, u"--fingerprint-headers"_s,
                              u"X-Api-Version, accept-language"_s, u"--url"_s, u"redis://127.0.0.1:6390/2"_s, u"--namespace"_s, u"gw"_s};
    QCOMPARE(gateway::parseCommandLine(args, o), -1);
    QCOMPARE(o.upstream.toString(), u"http://127.0.0.1:9000/api"_s);
    QCOMPARE(o.listenPort, quint16(8081));
    QVERIFY(o.admin);
    QCOMPARE(o.adminHost, QHostAddress(u"::1"_s));
    QCOMPARE(o.methods, (std::set<std::string>{"POST", "PUT"}));
    QCOMPARE(o.lease.count(), 5000);
    QCOMPARE(o.retention.count(), 3600000);
    QCOMPARE(o.maxBody, std::size_t(65536));
    QCOMPARE(o.scope.header, std::string("X-Api-Key"));
    QVERIFY(o.store5xx && o.failOpen && o.requireKey && o.urlGiven);
    QCOMPARE(o.connection.port, 6390);
    QCOMPARE(o.connection.db, 2);
    QCOMPARE(o.keyNamespace, std::string("gw"));
    QCOMPARE(o.waitInProgress.count(), 3000);
    QCOMPARE(o.minReplicas, 2);
    QCOMPARE(o.replicaTimeout.count(), 250);
    QCOMPARE(o.fingerprintHeaders, (std::vector<std::string>{"accept-language", "X-Api-Version"}));
    QCOMPARE(gateway::defaultPolicy(o).fingerprinted, o.fingerprintHeaders);
    // --min-replicas 0 is off, and takes --replica-timeout (scripts that always pass both)
    gateway::GatewayOptions off;
    QCOMPARE(gateway::parseCommandLine({u"idem-gateway"_s, u"--upstream"_s, u"http://x"_s, u"--min-replicas"_s, u"0"_s,
                                        u"--replica-timeout"_s, u"1s"_s},
                                       off),
             -1);
    QCOMPARE(off.minReplicas, 0);
}
// The longest prefix (whole segments) wins; at equal prefixes the route naming the method.
void TestHttpConfig::routePrecedence()
{
    QString error;
    gateway::Policy p;
    p.defaults.route = "default";
    p.routes = routes(R"({"routes":[{"route":"/pay"},{"route":"POST,PUT /pay/"},{"route":"/pay/refunds"},
                                    {"route":"/payments"},{"route":"DELETE /"}]})",
                      &error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    QCOMPARE(p.routes.size(), std::size_t(5));
    const auto of = [&](const char* m, const char* path) { return p.of(m, http::routePath(path)).route; };
    QCOMPARE(of("POST", "/pay"), std::string("POST,PUT /pay/"));
    QCOMPARE(of("PUT", "/pay/x"), std::string("POST,PUT /pay/"));
    QCOMPARE(of("GET", "/pay/x"), std::string("/pay"));
    QCOMPARE(of("POST", "/pay/refunds/7"), std::string("/pay/refunds")); // longer beats named
    QCOMPARE(of("POST", "/payments/1"), std::string("/payments"));
    QCOMPARE(of("POST", "/payments;jsessionid=1"), std::string("/payments")); // path parameters end a segment
    QCOMPARE(of("POST", "/pay;v=1/refunds/7"), std::string("/pay/refunds"));   // ... and are dropped, as servers route
    QCOMPARE(of("POST", "//pay//refunds"), std::string("/pay/refunds"));
    QCOMPARE(of("POST", "/paying"), std::string("default")); // "/pay" is a segment, not a string prefix
    QCOMPARE(of("DELETE", "/paying"), std::string("DELETE /"));
    QCOMPARE(of("DELETE", "/pay/refunds"), std::string("/pay/refunds"));
    QCOMPARE(of("GET", "/"), std::string("default"));
    // prefixes are read as paths are
    p.routes = routes(R"({"routes":[{"route":"/%7Euser"},{"route":"/v1//orders/"}]})", &error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    QCOMPARE(of("POST", "/~user/x"), std::string("/%7Euser"));
    QCOMPARE(of("POST", "/v1/orders/1"), std::string("/v1//orders/"));
    QVERIFY(routes(R"({"routes":[{"route":"/a/../../b"}]})", &error).empty() && error.contains(u"root"_s));
}

void TestHttpConfig::routesFileReadsFields()
{
    gateway::GatewayOptions o;
    o.store5xx = true;
    o.fingerprintHeaders = {"X-Tenant"};
    const gateway::RoutePolicy d = gateway::defaultPolicy(o);
    std::vector<gateway::RoutePolicy> r;
    QString error;
    QVERIFY2(gateway::parseRoutes(R"({"routes":[
        {"route":"post /a","methods":["post","delete"],"key_required":true,"retention":"7d","lease":"10s",
         "store":["2xx","409"],"replay_headers":["Content-Type","X-Request-Id"],"max_body":"64KiB",
         "fingerprint_headers":["X-Api-Version","Accept"]},
        {"route":"/b","max_body":100}]})",
                                  d, r, &error),
             qPrintable(error));
    QCOMPARE(r.size(), std::size_t(2));
    QCOMPARE(r[0].on, (std::set<std::string>{"POST"}));
    QCOMPARE(r[0].prefix, std::string("/a"));
    QCOMPARE(r[0].methods, (std::set<std::string>{"POST", "DELETE"}));
    QVERIFY(r[0].requireKey);
    QCOMPARE(r[0].retention.count(), 7LL * 86400 * 1000);
    QCOMPARE(r[0].lease.count(), 10000);
    QVERIFY(r[0].stores(201) && r[0].stores(409) && !r[0].stores(404) && !r[0].stores(503) && !r[0].stores(302));
    QVERIFY(r[0].replays("x-request-id") && !r[0].replays("ETag"));
    QCOMPARE(r[0].maxBody, std::size_t(65536));
    QCOMPARE(r[0].fingerprinted, (std::vector<std::string>{"Accept", "X-Api-Version"}));
    // what a route does not name comes from the flags
    QCOMPARE(r[1].methods, d.methods);
    QCOMPARE(r[1].requireKey, false);
    QCOMPARE(r[1].lease, d.lease);
    QVERIFY(r[1].stores(503) && r[1].stores(404) && !r[1].stores(101));
    QVERIFY(r[1].replays("ETag") && !r[1].replays("Set-Cookie"));
    QCOMPARE(r[1].maxBody, std::size_t(100));
    QCOMPARE(r[1].fingerprinted, std::vector<std::string>{"X-Tenant"});
}

void TestHttpConfig::routesFileRefusesMistakes_data()
{
    QTest::addColumn<QByteArray>("json");
    QTest::addColumn<QString>("says");
    QTest::newRow("not json") << "{\"routes\": ["_ba << u"not JSON"_s;
    QTest::newRow("no routes") << "{\"rules\": []}"_ba << u"must be an object with a list \"routes\""_s;
    QTest::newRow("route missing") << R"({"routes":[{"methods":["POST"]}]})"_ba << u"routes[0]: route: is required"_s;
    QTest::newRow("route without slash") << R"({"routes":[{"route":"POST pay"}]})"_ba
                                         << u"routes[0] \"POST pay\": route: must be"_s;
    QTest::newRow("route bad method") << R"({"routes":[{"route":"PO(ST /pay"}]})"_ba
                                      << u"routes[0] \"PO(ST /pay\": route: not a comma-separated list"_s;
    QTest::newRow("same route twice") << R"({"routes":[{"route":"POST /a"},{"route":"POST,PUT /a/"}]})"_ba
                                      << u"routes[1] \"POST,PUT /a/\": route: the same prefix and methods as routes[0]"_s;
    QTest::newRow("methods not a list") << R"({"routes":[{"route":"/a"},{"route":"/b","methods":"POST"}]})"_ba
                                        << u"routes[1] \"/b\": methods: must be a list of strings"_s;
    QTest::newRow("methods bad") << R"({"routes":[{"route":"/a","methods":["PO ST"]}]})"_ba
                                 << u"routes[0] \"/a\": methods: 'PO ST' is not a method"_s;
    QTest::newRow("key_required") << R"({"routes":[{"route":"/a","key_required":"yes"}]})"_ba
                                  << u"routes[0] \"/a\": key_required: must be true or false"_s;
    QTest::newRow("retention") << R"({"routes":[{"route":"/a","retention":"forever"}]})"_ba
                               << u"routes[0] \"/a\": retention: "_s;
    QTest::newRow("retention number") << R"({"routes":[{"route":"/a","retention":60}]})"_ba
                                      << u"routes[0] \"/a\": retention: must be a duration string"_s;
    QTest::newRow("lease zero") << R"({"routes":[{"route":"/a","lease":"0s"}]})"_ba
                                << u"routes[0] \"/a\": lease: must be longer than 0"_s;
    QTest::newRow("store") << R"({"routes":[{"route":"/a","store":["2xx","1xx"]}]})"_ba
                           << u"routes[0] \"/a\": store: '1xx' is neither"_s;
    QTest::newRow("replay set-cookie") << R"({"routes":[{"route":"/a","replay_headers":["Set-Cookie"]}]})"_ba
                                       << u"routes[0] \"/a\": replay_headers: Set-Cookie is never replayed"_s;
    QTest::newRow("replay hop-by-hop") << R"({"routes":[{"route":"/a","replay_headers":["Connection"]}]})"_ba
                                       << u"routes[0] \"/a\": replay_headers: Connection is a hop-by-hop header"_s;
    QTest::newRow("fingerprint content-length") << R"({"routes":[{"route":"/a","fingerprint_headers":["Content-Length"]}]})"_ba
                                                << u"routes[0] \"/a\": fingerprint_headers: Content-Length belongs to one connection"_s;
    QTest::newRow("fingerprint not a list") << R"({"routes":[{"route":"/a","fingerprint_headers":"X-A"}]})"_ba
                                            << u"routes[0] \"/a\": fingerprint_headers: must be a list of strings"_s;
    QTest::newRow("max_body") << R"({"routes":[{"route":"/a","max_body":"lots"}]})"_ba
                              << u"routes[0] \"/a\": max_body: "_s;
    QTest::newRow("max_body zero") << R"({"routes":[{"route":"/a","max_body":0}]})"_ba
                                   << u"routes[0] \"/a\": max_body: must be from 1 byte to 1GiB"_s;
    QTest::newRow("unknown field") << R"({"routes":[{"route":"/a","store_5xx":true}]})"_ba
                                   << u"routes[0] \"/a\": store_5xx: unknown field"_s;
}

// One line naming the route and the field.
void TestHttpConfig::routesFileRefusesMistakes()
{
    QFETCH(QByteArray, json);
    QFETCH(QString, says);
    std::vector<gateway::RoutePolicy> r;
    QString error;
    QVERIFY(!gateway::parseRoutes(json, gateway::RoutePolicy{}, r, &error));
    QVERIFY2(error.startsWith(says), qPrintable(error));
    QVERIFY(!error.contains(u'\n'));
    QVERIFY(r.empty());
}

void TestHttpConfig::configFlagReadsTheFile()
{
    qunsetenv("IDEM_URL");
    QTemporaryDir dir;
    const QString good = dir.filePath(u"good.json"_s), bad = dir.filePath(u"bad.json"_s);
    {
        QFile f(good);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(R"({"routes":[{"route":"POST /orders","key_required":true}]})");
        QFile b(bad);
        QVERIFY(b.open(QIODevice::WriteOnly));
        b.write(R"({"routes":[{"route":"POST /orders","lease":"-"}]})");
    }
    const QStringList base = {u"idem-gateway"_s, u"--upstream"_s, u"http://127.0.0.1:9000"_s, u"--lease"_s, u"5s"_s};
    gateway::GatewayOptions o;
    QCOMPARE(gateway::parseCommandLine(base + QStringList{u"--config"_s, good}, o), -1);
    QCOMPARE(o.routes.size(), std::size_t(1));
    QVERIFY(o.routes[0].requireKey);
    QCOMPARE(o.routes[0].lease.count(), 5000); // from the flags
    gateway::GatewayOptions o2;
    QCOMPARE(gateway::parseCommandLine(base + QStringList{u"--config"_s, bad}, o2), 64);
    gateway::GatewayOptions o3;
    QCOMPARE(gateway::parseCommandLine(base + QStringList{u"--config"_s, dir.filePath(u"none.json"_s)}, o3), 64);
}

QTEST_GUILESS_MAIN(TestHttpConfig)
#include "tst_httpconfig.moc"
