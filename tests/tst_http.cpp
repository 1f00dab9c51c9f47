// The gateway's HTTP units, pure over bytes (no socket, no server): the request parser, the
// Idempotency-Key rules, the stored answer's encoding, the per-route policy file and the command
// line. The server itself is
// tst_gateway (it runs the policy file's fields over real sockets).
#include "idem/format/httpanswer.h"
#include "idem/gateway/httprequest.h"
#include "idem/gateway/httpresponse.h"
#include "idem/gateway/keyrules.h"
#include "idem/gateway/options.h"
#include "idem/gateway/routepolicy.h"
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
    void fingerprintKeepsQueryOrder();
    void fingerprintReadsNamedHeaders();
    void storedAnswerKeepsBytesAndDropsCookies();
    void commandLineRefusesMistakes_data();
    void commandLineRefusesMistakes();
    void commandLineReadsOptions();
    void routePrecedence();
    void routesFileReadsFields();
    void routesFileRefusesMistakes_data();
    void routesFileRefusesMistakes();
    void configFlagReadsTheFile();
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
    // the path as routes, record ids and the upstream read it (RFC 3986 §6.2.2, §5.2.4)
    QTest::newRow("absolute form") << "GET http://x:80/a?q=1 HTTP/1.1\r\nHost: h\r\n\r\nGET HTTP://x HTTP/1.1\r\nHost: h\r\n\r\n"_ba
                                   << QStringList{u"/a"_s, u"/"_s} << QStringList{u""_s, u""_s} << QList<bool>{true, true};
    QTest::newRow("normalized paths")
        << "POST /webhooks/../payments HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n"
           "POST /%70ayments/./x/ HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n"
           "POST //payments//x/.. HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n"
           "POST /a%2fb%2A HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n"_ba
        << QStringList{u"/payments"_s, u"/payments/x/"_s, u"//payments//"_s, u"/a%2Fb%2A"_s}
        << QStringList{u""_s, u""_s, u""_s, u""_s} << QList<bool>{true, true, true, true};
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
            QCOMPARE(r.route, http::routePath(r.path)); // worked out once, by the parser
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
    QTest::newRow("fragment") << "GET /a#frag HTTP/1.1\r\nHost: h\r\n\r\n"_ba << 400;
    QTest::newRow("above the root") << "GET /a/../../etc HTTP/1.1\r\nHost: h\r\n\r\n"_ba << 400;
    QTest::newRow("above the root, encoded") << "GET /%2e%2e/secret HTTP/1.1\r\nHost: h\r\n\r\n"_ba << 400;
    QTest::newRow("broken escape") << "GET /a%2 HTTP/1.1\r\nHost: h\r\n\r\n"_ba << 400;
    // dot segments as some servers read them: with ;params, behind an encoded slash, a backslash
    QTest::newRow("dot segment with params") << "GET /free/..;/strict HTTP/1.1\r\nHost: h\r\n\r\n"_ba << 400;
    QTest::newRow("dot segment, encoded slash") << "GET /free%2F..%2Fstrict HTTP/1.1\r\nHost: h\r\n\r\n"_ba << 400;
    QTest::newRow("backslash") << "GET /free\\..\\strict HTTP/1.1\r\nHost: h\r\n\r\n"_ba << 400;
    QTest::newRow("query only") << "GET ?x=1 HTTP/1.1\r\nHost: h\r\n\r\n"_ba << 400;
    QTest::newRow("other scheme") << "GET ftp://x/ HTTP/1.1\r\nHost: h\r\n\r\n"_ba << 400;
    QTest::newRow("host with a space") << "GET / HTTP/1.1\r\nHost: a b\r\n\r\n"_ba << 400;
    QTest::newRow("connect") << "CONNECT x:443 HTTP/1.1\r\nHost: x:443\r\n\r\n"_ba << 501;
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
    QTest::newRow("bare UUID starting with a digit") << "8e03978e-40d5-43e8-bc93-6894a57f9324"_ba
                                                     << "8e03978e-40d5-43e8-bc93-6894a57f9324"_ba;
    QTest::newRow("bare base64") << "q+3/Zw=="_ba << "q+3/Zw=="_ba;
    QTest::newRow("bare list") << "a,b"_ba << QByteArray();
    QTest::newRow("bare with parameters") << "abc;x=1"_ba << QByteArray();
    QTest::newRow("bare with a space") << "a b"_ba << QByteArray();
    QTest::newRow("bare with a quote") << "a\"b"_ba << QByteArray();
    QTest::newRow("bare non-ASCII") << "caf\xc3\xa9"_ba << QByteArray();
    QTest::newRow("bare with DEL") << "ab\x7f"_ba << QByteArray();
    QTest::newRow("bare with a tab") << "a\tb"_ba << QByteArray();
    QTest::newRow("bare 255 characters") << QByteArray(255, '7') << QByteArray(255, '7');
    QTest::newRow("bare 256 characters") << QByteArray(256, '7') << QByteArray();
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
    a.path = a.route = "/orders";
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
    c.path = c.route = "/refunds";
    QVERIFY(gateway::recordId(a, byAuth, "k") != gateway::recordId(c, byAuth, "k"));
    c = a;
    c.method = "PATCH";
    QVERIFY(gateway::recordId(a, byAuth, "k") != gateway::recordId(c, byAuth, "k"));
    QVERIFY(!gateway::parseKeyScope("header:"));
    QVERIFY(!gateway::parseKeyScope("cookie"));
}

void TestHttp::fingerprintKeepsQueryOrder()
{
    http::Request a;
    a.method = "POST";
    a.path = "/o";
    a.query = "a=1&b=2";
    a.body = R"({"x":1,"y":2})";
    http::Request b = a;
    b.query = "a=1&&b=2&";               // empty parameters say nothing
    b.body = R"({"y":2, "x":1})"; // the same JSON
    QCOMPARE(gateway::requestFingerprint(a), gateway::requestFingerprint(b));
    b.body = R"({"y":3,"x":1})";
    QVERIFY(gateway::requestFingerprint(a) != gateway::requestFingerprint(b));
    b = a;
    b.query = "a=1&b=3";
    QVERIFY(gateway::requestFingerprint(a) != gateway::requestFingerprint(b));
    // reordered parameters are another request: PHP reads '.' in a name as '_', and the last wins
    a.query = "amount_usd=1000&amount.usd=1";
    b.query = "amount.usd=1&amount_usd=1000";
    QVERIFY(gateway::requestFingerprint(a) != gateway::requestFingerprint(b));
    a.query = "b=2&a=1";
    b.query = "a=1&b=2";
    QVERIFY(gateway::requestFingerprint(a) != gateway::requestFingerprint(b));
    // the method in capitals: "post" is POST
    b = a;
    b.method = "post";
    QCOMPARE(gateway::requestFingerprint(a), gateway::requestFingerprint(b));
    QCOMPARE(gateway::canonicalQuery("ab=3&&flag&a=2&"), std::string("ab=3&flag&a=2"));
}

void TestHttp::fingerprintReadsNamedHeaders()
{
    http::Request a;
    a.method = "POST";
    a.path = "/o";
    a.query = "a=1&b=2";
    a.body = R"({"b":2, "a":1})";
    a.headers = {{"Host", "x"}, {"X-Api-Version", "2"}};
    // without named headers the fingerprint is what gateways before them stored (an upgraded
    // gateway must not answer the retries of its predecessor's records 422)
    const std::string golden = "sha256:a6acb98dbbb57ff239f20a27e90d2433af0a847e8f2c4ab102fe27ff190bf302";
    QCOMPARE(gateway::requestFingerprint(a), golden);
    QCOMPARE(gateway::requestFingerprint(a, std::vector<std::string>{}), golden);

    const std::vector<std::string> named = {"X-Api-Version"};
    const auto fp = [&](std::vector<http::Header> headers) {
        http::Request r = a;
        r.headers = std::move(headers);
        return gateway::requestFingerprint(r, named);
    };
    const std::string v2 = fp({{"X-Api-Version", "2"}});
    QVERIFY(v2 != golden);
    QCOMPARE(fp({{"x-api-version", "2"}, {"X-Other", "1"}}), v2); // the name's case; a header not named
    QVERIFY(fp({{"X-Api-Version", "3"}}) != v2);
    QVERIFY(fp({}) != fp({{"X-Api-Version", ""}})); // left out is not sent empty
    QVERIFY(fp({}) != v2);
    // several fields of one name are their values joined, in the order sent
    QCOMPARE(fp({{"X-Api-Version", "1"}, {"X-Api-Version", "2"}}), fp({{"X-Api-Version", "1, 2"}}));
    QVERIFY(fp({{"X-Api-Version", "2"}, {"X-Api-Version", "1"}}) != fp({{"X-Api-Version", "1, 2"}}));
    // two names: a value cannot pass for the next name's
    const std::vector<std::string> two = {"X-A", "X-B"};
    http::Request b = a, c = a;
    b.headers = {{"X-A", "1:-"}};
    c.headers = {{"X-A", "1"}};
    QVERIFY(gateway::requestFingerprint(b, two) != gateway::requestFingerprint(c, two));

    std::string why;
    const auto list = gateway::fingerprintHeaders({"x-b", "X-A", "X-a", "Accept-Language"}, &why);
    QVERIFY(list);
    QCOMPARE(*list, (std::vector<std::string>{"Accept-Language", "X-A", "x-b"})); // sorted, once each
    for (const char* refused : {"Host", "content-length", "Transfer-Encoding", "Idempotency-Key", "X Y", ""}) {
        why.clear();
        QVERIFY2(!gateway::fingerprintHeaders({"X-A", refused}, &why), refused);
        QVERIFY2(!why.empty() && why.find('\n') == std::string::npos, refused);
    }
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
    // text with escapes Qt writes (\u0001, \"), non-ASCII and a character outside the BMP, read back by
    // core's decoder (what the console's inspector and the replays use)
    r.body = "caf\xc3\xa9 \xf0\x9f\x98\x80\t\x01\"\\";
    const auto text = idem::decodeHttpAnswer(gateway::encodeAnswer(r, "PATCH", "/o/1"));
    QVERIFY(text);
    QCOMPARE(text->body, r.body);
    QVERIFY(!text->bodyBase64);
    QCOMPARE(text->method, std::string("PATCH"));
    QCOMPARE(text->route, std::string("/o/1"));
    // what is not well-formed UTF-8 (an overlong '/', a surrogate, a cut sequence, past U+10FFFF)
    // is kept as bytes, in base64
    for (const std::string bad : {"a\xc0\xaf", "a\xed\xa0\x80", "a\xe2\x82", "a\xf4\x90\x80\x80"}) {
        r.body = bad;
        const auto b = idem::decodeHttpAnswer(gateway::encodeAnswer(r, "POST", "/o"));
        QVERIFY(b);
        QVERIFY(b->bodyBase64);
        QCOMPARE(b->body, bad);
    }
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
    QTest::newRow("min replicas not a number") << QStringList{u"--upstream"_s, u"http://x"_s, u"--min-replicas"_s, u"all"_s};
    QTest::newRow("min replicas negative") << QStringList{u"--upstream"_s, u"http://x"_s, u"--min-replicas"_s, u"-1"_s};
    QTest::newRow("fingerprint hop-by-hop") << QStringList{u"--upstream"_s, u"http://x"_s, u"--fingerprint-headers"_s,
                                                          u"X-Api-Version,Host"_s};
    QTest::newRow("fingerprint not a name") << QStringList{u"--upstream"_s, u"http://x"_s, u"--fingerprint-headers"_s,
                                                           u"X-Api-Version,,"_s};
    QTest::newRow("replica timeout alone") << QStringList{u"--upstream"_s, u"http://x"_s, u"--replica-timeout"_s, u"1s"_s};
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

// The longest prefix (whole segments) wins; at equal prefixes the route naming the method.
void TestHttp::routePrecedence()
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

void TestHttp::routesFileReadsFields()
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

void TestHttp::routesFileRefusesMistakes_data()
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
void TestHttp::routesFileRefusesMistakes()
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

void TestHttp::configFlagReadsTheFile()
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

QTEST_GUILESS_MAIN(TestHttp)
#include "tst_http.moc"
