// The gateway's HTTP units, pure over bytes (no socket, no server): the request parser, the
// Idempotency-Key rules, the stored answer's encoding and the command line. The server itself is
// tst_gateway.
#include "idem/gateway/httprequest.h"
#include "idem/gateway/httpresponse.h"
#include "idem/gateway/keyrules.h"
#include "idem/gateway/options.h"
#include "idem/gateway/storedanswer.h"

#include <QtTest>

using namespace idem;
using namespace Qt::StringLiterals;

namespace {
struct Parsed {
    std::vector<http::Request> requests;
    http::ParseError error;
    bool failed = false;
};

Parsed parse(const QByteArray& bytes, http::Limits limits = {}, int step = 0)
{
    http::RequestParser p(limits);
    Parsed out;
    const std::string_view s(bytes.constData(), static_cast<std::size_t>(bytes.size()));
    const std::size_t n = step > 0 ? static_cast<std::size_t>(step) : s.size() + 1;
    for (std::size_t i = 0; i < s.size(); i += n)
        p.feed(s.substr(i, n));
    while (auto r = p.take())
        out.requests.push_back(*r);
    out.failed = p.failed();
    out.error = p.error();
    return out;
}
} // namespace

class TestHttp : public QObject {
    Q_OBJECT
private slots:
    void parsesRequests_data();
    void parsesRequests();
    void refuses_data();
    void refuses();
    void continueOnceHeadersAreIn();
    void keySyntax_data();
    void keySyntax();
    void recordIdIsScoped();
    void fingerprintIgnoresQueryOrder();
    void storedAnswerKeepsBytesAndDropsCookies();
    void commandLineRefusesMistakes_data();
    void commandLineRefusesMistakes();
    void commandLineReadsOptions();
};

void TestHttp::parsesRequests_data()
{
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<QStringList>("paths");
    QTest::addColumn<QStringList>("bodies");
    QTest::addColumn<QList<bool>>("keepAlive");
    QTest::newRow("get") << "GET /a?x=1 HTTP/1.1\r\nHost: h\r\n\r\n"_ba << QStringList{u"/a"_s} << QStringList{u""_s}
                         << QList<bool>{true};
    QTest::newRow("content-length") << "POST /o HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello"_ba
                                    << QStringList{u"/o"_s} << QStringList{u"hello"_s} << QList<bool>{true};
    QTest::newRow("chunked with extension and trailer")
        << "POST /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n1\r\n!\r\n0\r\nT: v\r\n\r\n"_ba
        << QStringList{u"/c"_s} << QStringList{u"hello!"_s} << QList<bool>{true};
    QTest::newRow("pipelined, then close")
        << "GET /1 HTTP/1.1\r\nHost: h\r\n\r\nPOST /2 HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nabGET /3 HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\nGET /4 HTTP/1.1\r\nHost: h\r\n\r\n"_ba
        << QStringList{u"/1"_s, u"/2"_s, u"/3"_s} << QStringList{u""_s, u"ab"_s, u""_s} << QList<bool>{true, true, false};
    QTest::newRow("HTTP/1.0 closes unless keep-alive")
        << "GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /b HTTP/1.0\r\n\r\nGET /c HTTP/1.0\r\n\r\n"_ba
        << QStringList{u"/a"_s, u"/b"_s} << QStringList{u""_s, u""_s} << QList<bool>{true, false};
    QTest::newRow("bare LF, empty line before") << "\r\nGET /lf HTTP/1.1\nHost: h\n\n"_ba << QStringList{u"/lf"_s}
                                                << QStringList{u""_s} << QList<bool>{true};
    QTest::newRow("binary body") << QByteArray("POST /b HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\n\r\n\0\xff\r\n", 52)
                                 << QStringList{u"/b"_s} << QStringList{QString::fromLatin1("\0\xff\r\n", 4)}
                                 << QList<bool>{true};
}

void TestHttp::parsesRequests()
{
    QFETCH(QByteArray, bytes);
    QFETCH(QStringList, paths);
    QFETCH(QStringList, bodies);
    QFETCH(QList<bool>, keepAlive);
    for (const int step : {0, 1, 3, 7}) {
        const Parsed p = parse(bytes, {}, step);
        QVERIFY2(!p.failed, p.error.reason.c_str());
        QCOMPARE(p.requests.size(), static_cast<std::size_t>(paths.size()));
        for (qsizetype i = 0; i < paths.size(); ++i) {
            const auto& r = p.requests[static_cast<std::size_t>(i)];
            QCOMPARE(QString::fromStdString(r.path), paths[i]);
            QCOMPARE(QByteArray::fromStdString(r.body), bodies[i].toLatin1());
            QCOMPARE(r.keepAlive, keepAlive[i]);
        }
    }
}

void TestHttp::refuses_data()
{
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<int>("status");
    QTest::newRow("header without colon") << "GET / HTTP/1.1\r\nHost: h\r\nNoColon\r\n\r\n"_ba << 400;
    QTest::newRow("space before colon") << "GET / HTTP/1.1\r\nHost : h\r\n\r\n"_ba << 400;
    QTest::newRow("folded header") << "GET / HTTP/1.1\r\nHost: h\r\nX: a\r\n b\r\n\r\n"_ba << 400;
    QTest::newRow("control byte in value") << "GET / HTTP/1.1\r\nHost: h\r\nX: a\x01\r\n\r\n"_ba << 400;
    QTest::newRow("no host") << "GET / HTTP/1.1\r\n\r\n"_ba << 400;
    QTest::newRow("two hosts") << "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"_ba << 400;
    QTest::newRow("absolute form") << "GET http://x/ HTTP/1.1\r\nHost: h\r\n\r\n"_ba << 400;
    QTest::newRow("two lengths") << "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab"_ba << 400;
    QTest::newRow("length and chunked") << "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n"_ba << 400;
    QTest::newRow("signed length") << "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: +1\r\n\r\nab"_ba << 400;
    QTest::newRow("bad chunk size") << "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"_ba << 400;
    QTest::newRow("chunk without CRLF") << "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n"_ba << 400;
    QTest::newRow("gzip coding") << "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"_ba << 501;
    QTest::newRow("HTTP/2 preface") << "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"_ba << 505;
    QTest::newRow("not HTTP") << "GET / FTP/1.1\r\nHost: h\r\n\r\n"_ba << 400;
    QTest::newRow("other expectation") << "POST / HTTP/1.1\r\nHost: h\r\nExpect: fast\r\n\r\n"_ba << 417;
    QTest::newRow("body too large") << "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1048577\r\n\r\n"_ba << 413;
    QTest::newRow("length beyond 64 bits") << "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999999999999999\r\n\r\n"_ba << 413;
    QTest::newRow("chunks too large") << "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n100001\r\n"_ba << 413;
    QTest::newRow("request line too long") << "GET /" + QByteArray(9000, 'a') + " HTTP/1.1\r\nHost: h\r\n\r\n" << 414;
    QTest::newRow("headers too large") << "GET / HTTP/1.1\r\nHost: h\r\nX: " + QByteArray(40000, 'a') + "\r\n\r\n" << 431;
    QByteArray many = "GET / HTTP/1.1\r\nHost: h\r\n"_ba;
    for (int i = 0; i < 101; ++i)
        many += "X-" + QByteArray::number(i) + ": v\r\n";
    QTest::newRow("too many headers") << many + "\r\n" << 431;
}

void TestHttp::refuses()
{
    QFETCH(QByteArray, bytes);
    QFETCH(int, status);
    for (const int step : {0, 1, 5}) {
        const Parsed p = parse(bytes, {}, step);
        QVERIFY(p.failed);
        QCOMPARE(p.error.status, status);
        QVERIFY(!p.error.reason.empty());
    }
}

void TestHttp::continueOnceHeadersAreIn()
{
    http::RequestParser p;
    p.feed("POST /e HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n");
    QVERIFY(p.takeContinue());
    QVERIFY(!p.takeContinue());
    QVERIFY(p.midRequest());
    p.feed("abc");
    auto r = p.take();
    QVERIFY(r);
    QVERIFY(r->expectContinue);
    QCOMPARE(r->body, std::string("abc"));
    // the body came with the headers: nothing to continue
    http::RequestParser q;
    q.feed("POST /e HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\nabc");
    QVERIFY(!q.takeContinue());
}

void TestHttp::keySyntax_data()
{
    QTest::addColumn<QByteArray>("value");
    QTest::addColumn<QByteArray>("key"); // empty: refused
    QTest::newRow("sf-string") << "\"8e03978e-40d5-43e8-bc93-6894a57f9324\""_ba << "8e03978e-40d5-43e8-bc93-6894a57f9324"_ba;
    QTest::newRow("sf-string with escapes and spaces") << "\"a \\\"b\\\\ c\""_ba << "a \"b\\ c"_ba;
    QTest::newRow("token") << "order-1:retry/2"_ba << "order-1:retry/2"_ba;
    QTest::newRow("255 characters") << "\"" + QByteArray(255, 'k') + "\"" << QByteArray(255, 'k');
    QTest::newRow("300 characters") << "\"" + QByteArray(300, 'k') + "\"" << QByteArray();
    QTest::newRow("300-character token") << QByteArray(300, 'k') << QByteArray();
    QTest::newRow("empty string") << "\"\""_ba << QByteArray();
    QTest::newRow("unclosed") << "\"abc"_ba << QByteArray();
    QTest::newRow("bad escape") << "\"a\\nb\""_ba << QByteArray();
    QTest::newRow("parameters") << "\"abc\";x=1"_ba << QByteArray();
    QTest::newRow("two keys") << "\"a\", \"b\""_ba << QByteArray();
    QTest::newRow("token starting with a digit") << "1abc"_ba << QByteArray();
    QTest::newRow("non-ASCII") << "\"caf\xc3\xa9\""_ba << QByteArray();
}

void TestHttp::keySyntax()
{
    QFETCH(QByteArray, value);
    QFETCH(QByteArray, key);
    std::string why;
    const auto k = gateway::parseKey(value.toStdString(), &why);
    if (key.isEmpty()) {
        QVERIFY(!k);
        QVERIFY(!why.empty());
    } else {
        QVERIFY2(k, why.c_str());
        QCOMPARE(QByteArray::fromStdString(*k), key);
    }
}

void TestHttp::recordIdIsScoped()
{
    http::Request a;
    a.method = "POST";
    a.path = "/orders";
    a.headers = {{"Host", "h"}, {"Authorization", "Bearer alice"}, {"X-Tenant", "t1"}};
    http::Request b = a;
    b.headers[1].value = "Bearer bob";
    const gateway::KeyScope byAuth;
    QVERIFY(gateway::recordId(a, byAuth, "k") != gateway::recordId(b, byAuth, "k"));
    QVERIFY(gateway::recordId(a, byAuth, "k") != gateway::recordId(a, byAuth, "k2"));
    // the credential is never in the id
    QVERIFY(gateway::recordId(a, byAuth, "k").find("alice") == std::string::npos);
    const auto none = *gateway::parseKeyScope("none");
    QCOMPARE(gateway::recordId(a, none, "k"), gateway::recordId(b, none, "k"));
    const auto tenant = *gateway::parseKeyScope("header:X-Tenant");
    QCOMPARE(gateway::recordId(a, tenant, "k"), gateway::recordId(b, tenant, "k"));
    http::Request c = a;
    c.path = "/refunds";
    QVERIFY(gateway::recordId(a, byAuth, "k") != gateway::recordId(c, byAuth, "k"));
    c = a;
    c.method = "PATCH";
    QVERIFY(gateway::recordId(a, byAuth, "k") != gateway::recordId(c, byAuth, "k"));
    QVERIFY(!gateway::parseKeyScope("header:"));
    QVERIFY(!gateway::parseKeyScope("cookie"));
}

void TestHttp::fingerprintIgnoresQueryOrder()
{
    http::Request a;
    a.method = "POST";
    a.path = "/o";
    a.query = "b=2&a=1";
    a.body = R"({"x":1,"y":2})";
    http::Request b = a;
    b.query = "a=1&b=2&";
    b.body = R"({"y":2, "x":1})"; // the same JSON
    QCOMPARE(gateway::requestFingerprint(a), gateway::requestFingerprint(b));
    b.body = R"({"y":3,"x":1})";
    QVERIFY(gateway::requestFingerprint(a) != gateway::requestFingerprint(b));
    b = a;
    b.query = "a=1&b=3";
    QVERIFY(gateway::requestFingerprint(a) != gateway::requestFingerprint(b));
}

void TestHttp::storedAnswerKeepsBytesAndDropsCookies()
{
    http::Response r;
    r.status = 201;
    r.headers = {{"Content-Type", "application/octet-stream"}, {"Set-Cookie", "s=1"}, {"Date", "x"}, {"ETag", "\"v1\""},
                 {"Location", "/o/1"}, {"X-Internal", "y"}};
    for (int i = 0; i < 256; ++i)
        r.body.push_back(static_cast<char>(i));
    const std::string stored = gateway::encodeAnswer(r, "POST", "/o");
    const auto back = gateway::decodeAnswer(stored);
    QVERIFY(back);
    QCOMPARE(back->status, 201);
    QCOMPARE(back->body, r.body);
    QVERIFY(!back->header("Set-Cookie"));
    QVERIFY(!back->header("Date"));
    QVERIFY(!back->header("X-Internal"));
    QCOMPARE(*back->header("ETag"), std::string("\"v1\""));
    QCOMPARE(*back->header("Location"), std::string("/o/1"));
    r.body = "{\"ok\":true}";
    QVERIFY(gateway::encodeAnswer(r, "POST", "/o").find("\"body\":\"{\\\"ok\\\":true}\"") != std::string::npos);
    QVERIFY(!gateway::decodeAnswer("{\"status\":200}"));
    QVERIFY(!gateway::decodeAnswer("not json"));
}

void TestHttp::commandLineRefusesMistakes_data()
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
}

void TestHttp::commandLineRefusesMistakes()
{
    QFETCH(QStringList, args);
    qunsetenv("IDEM_URL");
    gateway::GatewayOptions o;
    QCOMPARE(gateway::parseCommandLine(QStringList{u"idem-gateway"_s} + args, o), 64);
}

void TestHttp::commandLineReadsOptions()
{
    qunsetenv("IDEM_URL");
    gateway::GatewayOptions o;
    const QStringList args = {u"idem-gateway"_s, u"--upstream"_s, u"http://127.0.0.1:9000/api"_s, u"--listen"_s,
                              u"0.0.0.0:8081"_s, u"--admin-listen"_s, u"[::1]:9091"_s, u"--methods"_s, u"post, put"_s,
                              u"--lease"_s, u"5s"_s, u"--retention"_s, u"1h"_s, u"--max-body"_s, u"64KiB"_s,
                              u"--key-scope"_s, u"header:X-Api-Key"_s, u"--store-5xx"_s, u"--fail-open"_s,
                              u"--require-key"_s, u"--wait-in-progress"_s, u"3s"_s, u"--url"_s, u"redis://127.0.0.1:6390/2"_s, u"--namespace"_s, u"gw"_s};
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
}

QTEST_GUILESS_MAIN(TestHttp)
#include "tst_http.moc"
