// What the gateway makes of a request and keeps of its answer, pure (no socket, no server): the
// Idempotency-Key's syntax, the record id and what scopes it, the request's fingerprint (query
// order, named headers), the stored answer's encoding. tst_http.cpp has the parser.
#include "idem/format/httpanswer.h"
#include "idem/gateway/httprequest.h"
#include "idem/gateway/httpresponse.h"
#include "idem/gateway/keyrules.h"
#include "idem/gateway/storedanswer.h"

#include <QtTest>

using namespace idem;
using namespace Qt::StringLiterals;

class TestHttpKeys : public QObject {
    Q_OBJECT
private slots:
    void keySyntax_data();
    void keySyntax();
    void recordIdIsScoped();
    void fingerprintKeepsQueryOrder();
    void fingerprintReadsNamedHeaders();
    void storedAnswerKeepsBytesAndDropsCookies();
};

void TestHttpKeys::keySyntax_data()
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

void TestHttpKeys::keySyntax()
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

void TestHttpKeys::recordIdIsScoped()
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

void TestHttpKeys::fingerprintKeepsQueryOrder()
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

void TestHttpKeys::fingerprintReadsNamedHeaders()
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

void TestHttpKeys::storedAnswerKeepsBytesAndDropsCookies()
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

QTEST_GUILESS_MAIN(TestHttpKeys)
#include "tst_httpkeys.moc"
