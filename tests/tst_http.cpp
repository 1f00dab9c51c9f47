// The gateway's HTTP request parser, pure over bytes (no socket, no server): requests it reads
// (fed whole and a few bytes at a time), those it refuses and with which status, 100-continue.
// tst_httpkeys.cpp has the Idempotency-Key rules, the fingerprint and the stored answer,
// tst_httpconfig.cpp the command line and the per-route policy file; the server itself is
// tst_gateway.
#include "idem/gateway/httprequest.h"

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

QTEST_GUILESS_MAIN(TestHttp)
#include "tst_http.moc"
