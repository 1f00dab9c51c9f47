// idem-gateway's HTTP side over real sockets: what it forwards and answers, and what it refuses to
// store — upstream answers it cannot be sure it read whole, oversized and chunked bodies,
// Expect: 100-continue, pipelining, clients that go away, malformed requests, hop-by-hop headers,
// request targets, idle connections. A real redis-server (the fixture's, each test in its own
// namespace), a real upstream started here, raw TCP clients. tst_gateway.cpp has the idempotency
// rules; tst_gatewayops.cpp Redis killed and a SIGKILLed gateway; tst_gatewayconfig.cpp the admin
// listener, routes and TLS.
#include "gatewaytestsupport.h"

#include <QRegularExpression>

using namespace idem;
using namespace gwtest;
using namespace Qt::StringLiterals;

class TestGatewayHttp : public GatewaySuite {
    Q_OBJECT

private slots:
    void init() { up = std::make_unique<TestUpstream>(); }
    void cleanup() { up.reset(); }

    void doubtfulUpstreamAnswersAreNeverStored();
    void tooLargeIs413();
    void expectContinue();
    void chunkedBodies();
    void pipelinedRequestsAnsweredInOrder();
    void clientDisconnectsMidRequest();
    void malformedRequestsAre400();
    void hopByHopHeadersStayBehind();
    void targetsAndVersions();
    void idleConnectionsClose();
    void idleUpstreamConnectionsDropQuietly();
    void methodsAreProtectedInAnyCase();
    void reorderedQueryIsAnotherRequest();
    void pathSpelledAnotherWayIsNoSecondRun();
    void scopeHeaderGivenOnce();
    void strayUpstreamAnswerIsNoAnswer();
    void headerBytesReplayAsSent();
};

// An answer the gateway cannot be sure it read whole, or read right, is never stored: a client
// would get it again for the whole retention. It is 502 and the key released.
void TestGatewayHttp::doubtfulUpstreamAnswersAreNeverStored()
{
    auto g = start();
    QVERIFY(g);
    // a body ended by the connection's close is whole; ended by a reset, it may be cut short
    const QByteArray fin = request("POST", "/raw/close-fin/a", "f-1", "{}");
    const Reply first = call(g->port(), fin);
    QCOMPARE(first.status, 201);
    QCOMPARE(first.body, "body up to the close"_ba);
    const Reply again = call(g->port(), fin);
    QVERIFY(again.replayed());
    QCOMPARE(again.body, first.body);
    QCOMPARE(up->calls("/raw/close-fin/a"), 1);
    const QByteArray reset = request("POST", "/raw/close-reset/a", "f-2", "{}");
    QCOMPARE(call(g->port(), reset).status, 502);
    QCOMPARE(call(g->port(), reset).status, 502);
    QCOMPARE(up->calls("/raw/close-reset/a"), 2);
    // two lengths (RFC 9112 §6.3: a proxy discards such an answer); a coding the gateway does not decode
    for (const QByteArray& path : {"/raw/two-lengths/a"_ba, "/raw/gzip-chunked/a"_ba}) {
        const QByteArray r = request("POST", path, "f-" + path, "{}");
        QCOMPARE(call(g->port(), r).status, 502);
        QCOMPARE(call(g->port(), r).status, 502);
        QCOMPARE(up->calls(path.toStdString()), 2);
    }
    // the gateway says what it replayed, not the upstream
    const QByteArray claimed = request("POST", "/raw/replayed/a", "f-3", "{}");
    const Reply executed = call(g->port(), claimed);
    QCOMPARE(executed.status, 201);
    QVERIFY(!executed.has("Idempotent-Replayed"));
    const Reply replayed = call(g->port(), claimed);
    QVERIFY(replayed.replayed());
    QCOMPARE(std::count_if(replayed.headers.begin(), replayed.headers.end(),
                           [](const auto& h) { return h.first.compare("Idempotent-Replayed", Qt::CaseInsensitive) == 0; }),
             1);
    // a 204 that announces a body, which arrives late: its connection is not used again, or the
    // next request would get those bytes as its answer, stored under its key
    QCOMPARE(call(g->port(), request("POST", "/raw/204-with-body/a", "f-4", "{}")).status, 204);
    const QByteArray victim = request("POST", "/victim", "f-5", "{}");
    const Reply own = call(g->port(), victim);
    QCOMPARE(own.status, 201);
    QVERIFY2(own.body.contains("\"path\":\"/victim\""), own.body.constData());
    QTest::qWait(300);
    QCOMPARE(call(g->port(), victim).body, own.body);
}

void TestGatewayHttp::tooLargeIs413()
{
    auto g = start([](gateway::GatewayOptions& o) { o.maxBody = 1000; });
    QVERIFY(g);
    QCOMPARE(call(g->port(), request("POST", "/big", "b-1", QByteArray(1000, 'x'))).status, 201);
    const Reply big = call(g->port(), request("POST", "/big", "b-2", QByteArray(1001, 'x')));
    QCOMPARE(big.status, 413);
    QCOMPARE(big.header("Content-Type"), "application/problem+json"_ba);
    // with 100-continue: refused before the body is sent
    Client c(g->port());
    c.send("POST /big HTTP/1.1\r\nHost: h\r\nIdempotency-Key: b-3\r\nExpect: 100-continue\r\nContent-Length: 5000\r\n\r\n");
    QVERIFY(c.wait(1));
    QCOMPARE(c.replies[0].status, 413);
    QCOMPARE(c.interim, 0);
    // chunked bodies are counted too
    const Reply chunked = call(g->port(), "POST /big HTTP/1.1\r\nHost: h\r\nIdempotency-Key: b-4\r\n"
                                          "Transfer-Encoding: chunked\r\n\r\n3e8\r\n" + QByteArray(1000, 'y') + "\r\n1\r\nz\r\n0\r\n\r\n");
    QCOMPARE(chunked.status, 413);
    QCOMPARE(up->calls("/big"), 1);
    QCOMPARE(outcome(*g, gateway::Outcome::TooLarge), 3u);
    QVERIFY(metricsOf(g->adminPort()).contains("idem_gateway_requests_total{outcome=\"too_large\"} 3"));
}

void TestGatewayHttp::expectContinue()
{
    auto g = start();
    QVERIFY(g);
    Client c(g->port());
    c.send("POST /e HTTP/1.1\r\nHost: h\r\nIdempotency-Key: e-1\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n");
    QVERIFY(QTest::qWaitFor([&] { return c.interim == 1; }, 10000));
    QCOMPARE(up->calls("/e"), 0);
    c.send("hello");
    QVERIFY(c.wait(1));
    QCOMPARE(c.replies[0].status, 201);
    QCOMPARE(c.replies[0].json().value(u"bytes"_s).toInt(), 5);
    QCOMPARE(up->last("/e").header("Expect"), nullptr); // the gateway's own business
}

void TestGatewayHttp::chunkedBodies()
{
    auto g = start();
    QVERIFY(g);
    const QByteArray chunked = "POST /echo/ch HTTP/1.1\r\nHost: h\r\nIdempotency-Key: ch-1\r\n"
                               "Transfer-Encoding: chunked\r\n\r\n6\r\nhello \r\n5;ext=1\r\nworld\r\n0\r\nX-Trailer: t\r\n\r\n";
    const Reply r = call(g->port(), chunked);
    QCOMPARE(r.status, 201);
    QCOMPARE(r.body, "hello world"_ba);
    QCOMPARE(up->last("/echo/ch").body, std::string("hello world"));
    QCOMPARE(up->last("/echo/ch").header("Transfer-Encoding"), nullptr);
    // the same body with a Content-Length is the same request
    QVERIFY(call(g->port(), request("POST", "/echo/ch", "ch-1", "hello world")).replayed());
    QCOMPARE(up->calls("/echo/ch"), 1);
}

void TestGatewayHttp::pipelinedRequestsAnsweredInOrder()
{
    auto g = start();
    QVERIFY(g);
    Client c(g->port());
    c.send(request("POST", "/slow/400/p1", "p-1", "{}") + request("GET", "/p2") +
           request("POST", "/p3", "p-3", "{}") + request("POST", "/slow/100/p4", "p-4", "{}"));
    QVERIFY(c.wait(4));
    QCOMPARE(c.replies.size(), std::size_t(4));
    const char* paths[] = {"/slow/400/p1", "/p2", "/p3", "/slow/100/p4"};
    for (int i = 0; i < 4; ++i)
        QCOMPARE(c.replies[static_cast<std::size_t>(i)].json().value(u"path"_s).toString(), QString::fromLatin1(paths[i]));
    QVERIFY(!c.closed);
    // unsafe requests one at a time, in order: the slow first one's answer is in before the next
    // reaches the upstream; safe ones after an unsafe one wait for it too
    QCOMPARE(up->calls("/p3"), 1);
    QCOMPARE(up->calls("/slow/100/p4"), 1);
    Client order(g->port());
    order.send(request("POST", "/slow/300/o1", "o-1", "{}") + request("DELETE", "/o2", "o-2") +
               request("POST", "/slow/300/o1", "o-1", "{}"));
    QVERIFY(QTest::qWaitFor([&] { return up->calls("/slow/300/o1") == 1; }, 5000));
    QTest::qWait(150);
    QCOMPARE(up->calls("/o2"), 0); // (concurrently, it would be there by now)
    QVERIFY(order.wait(3));
    QCOMPARE(up->calls("/o2"), 1);
    QCOMPARE(up->calls("/slow/300/o1"), 1);
    QVERIFY(order.replies[2].replayed()); // a pipelined duplicate: the first's answer, not 409
    QCOMPARE(order.replies[2].body, order.replies[0].body);
    // at most 64 of a connection's requests in the works at once, even when one read brings more
    Client many(g->port());
    QByteArray hundred;
    for (int i = 0; i < 100; ++i)
        hundred += request("GET", "/slow/400/m" + QByteArray::number(i));
    many.send(hundred);
    const auto reached = [&] {
        int n = 0;
        for (int i = 0; i < 100; ++i)
            n += up->calls("/slow/400/m" + std::to_string(i));
        return n;
    };
    QVERIFY2(QTest::qWaitFor([&] { return reached() == 64; }, 5000), std::to_string(reached()).c_str());
    QTest::qWait(150);
    QCOMPARE(reached(), 64);
    QVERIFY(many.wait(100, 10000));
    QCOMPARE(reached(), 100);
    // the connection stays open for more
    c.send(request("POST", "/p3", "p-3", "{}"));
    QVERIFY(c.wait(5));
    QVERIFY(c.replies[4].replayed());
    // Connection: close is honoured after the answer
    c.send(request("GET", "/p5", {}, {}, {"Connection: close"}));
    QVERIFY(c.wait(6));
    QCOMPARE(c.replies[5].header("Connection"), "close"_ba);
    QVERIFY(QTest::qWaitFor([&] { return c.closed; }, 5000));
}

void TestGatewayHttp::clientDisconnectsMidRequest()
{
    auto g = start();
    QVERIFY(g);
    {
        // half a body, then gone
        Client c(g->port());
        c.send("POST /half HTTP/1.1\r\nHost: h\r\nIdempotency-Key: h-1\r\nContent-Length: 100\r\n\r\n0123456789");
        QTest::qWait(100);
        c.close();
    }
    {
        // the whole request, then gone while the upstream works: the answer is stored all the same
        Client c(g->port());
        c.send(request("POST", "/slow/500/gone", "g-1", "{}"));
        QVERIFY(QTest::qWaitFor([&] { return up->calls("/slow/500/gone") == 1; }, 10000));
        c.close();
    }
    QVERIFY(QTest::qWaitFor([&] { return outcome(*g, gateway::Outcome::Executed) == 1; }, 10000));
    const Reply retry = call(g->port(), request("POST", "/slow/500/gone", "g-1", "{}"));
    QVERIFY(retry.replayed());
    QCOMPARE(up->calls("/slow/500/gone"), 1);
    QCOMPARE(up->calls("/half"), 0);
    QCOMPARE(call(g->port(), request("GET", "/still-serving")).status, 201);
}

void TestGatewayHttp::malformedRequestsAre400()
{
    auto g = start();
    QVERIFY(g);
    const auto describedBy = [&](const Reply& r) {
        return r.header("Link").contains("/policy>; rel=\"describedby\"") &&
               r.header("Content-Type") == "application/problem+json";
    };
    Client bad(g->port());
    bad.send("POST /m HTTP/1.1\r\nHost: h\r\nBad Header: x\r\nContent-Length: 0\r\n\r\n");
    QVERIFY(bad.wait(1));
    QCOMPARE(bad.replies[0].status, 400);
    QVERIFY(QTest::qWaitFor([&] { return bad.closed; }, 5000));

    const Reply twoKeys = call(g->port(), "POST /m HTTP/1.1\r\nHost: h\r\nIdempotency-Key: a\r\nIdempotency-Key: b\r\n"
                                          "Content-Length: 0\r\n\r\n");
    QCOMPARE(twoKeys.status, 400);
    QVERIFY(describedBy(twoKeys));
    const Reply longKey = call(g->port(), request("POST", "/m", "\"" + QByteArray(300, 'k') + "\"", "{}"));
    QCOMPARE(longKey.status, 400);
    QVERIFY(describedBy(longKey));
    const Reply badString = call(g->port(), request("POST", "/m", "\"unclosed", "{}"));
    QCOMPARE(badString.status, 400);
    QVERIFY(describedBy(badString));
    QVERIFY(!badString.json().value(u"detail"_s).toString().isEmpty());
    QCOMPARE(up->calls("/m"), 0);
    // the 400s are never stored: the same key, well formed, runs
    QCOMPARE(call(g->port(), request("POST", "/m", "a", "{}")).status, 201);
}

void TestGatewayHttp::hopByHopHeadersStayBehind()
{
    auto g = start();
    QVERIFY(g);
    const Reply r = call(g->port(), request("POST", "/hop", "hop-1", "{}",
                                            {"Connection: X-Secret", "X-Secret: 1", "Keep-Alive: timeout=5",
                                             "Proxy-Authorization: Basic eA==", "X-Kept: yes", "Cookie: a=1",
                                             "Cookie: b=2"}));
    QCOMPARE(r.status, 201);
    const http::Request& seen = up->last("/hop");
    QVERIFY(!seen.header("X-Secret"));
    QVERIFY(!seen.header("Keep-Alive"));
    QVERIFY(!seen.header("Proxy-Authorization"));
    QCOMPARE(*seen.header("X-Kept"), std::string("yes"));
    QCOMPARE(*seen.header("Cookie"), std::string("a=1; b=2"));
    QCOMPARE(*seen.header("Idempotency-Key"), std::string("hop-1"));
    QCOMPARE(*seen.header("X-Forwarded-For"), std::string("127.0.0.1"));
    QCOMPARE(*seen.header("X-Forwarded-Host"), std::string("gateway.test"));
    QVERIFY(std::stoll(*seen.header("Idempotency-Fence")) > 0);
}

// Targets as the upstream gets them, under a base path; HTTP/1.0 kept alive is told so
void TestGatewayHttp::targetsAndVersions()
{
    auto g = start([&](gateway::GatewayOptions& o) { o.upstream = QUrl(up->url().toString() + u"/api"_s); });
    QVERIFY(g);
    QCOMPARE(call(g->port(), request("POST", "/x/../orders/./1", "t-1", "{}")).status, 201);
    QCOMPARE(up->calls("/api/orders/1"), 1);
    QCOMPARE(call(g->port(), "POST http://gateway.test/orders/2?a=1 HTTP/1.1\r\nHost: gateway.test\r\n"
                             "Idempotency-Key: t-2\r\nContent-Length: 2\r\n\r\n{}").status, 201);
    QCOMPARE(up->calls("/api/orders/2"), 1);
    QCOMPARE(up->last("/api/orders/2").query, std::string("a=1"));
    call(g->port(), "OPTIONS * HTTP/1.1\r\nHost: gateway.test\r\n\r\n"); // the server's, not under /api
    QCOMPARE(up->calls("*"), 1);
    Client c(g->port());
    c.send("GET /v HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    QVERIFY(c.wait(1));
    QCOMPARE(c.replies[0].header("Connection"), "keep-alive"_ba);
    c.send("GET /v HTTP/1.0\r\n\r\n");
    QVERIFY(c.wait(2));
    QCOMPARE(c.replies[1].header("Connection"), "close"_ba);
    QCOMPARE(up->calls("/api/v"), 2);
}

void TestGatewayHttp::idleConnectionsClose()
{
    auto g = start([](gateway::GatewayOptions& o) { o.idleTimeout = Millis(300); });
    QVERIFY(g);
    Client silent(g->port());
    QVERIFY(QTest::qWaitFor([&] { return silent.closed; }, 5000));
    Client used(g->port());
    used.send(request("GET", "/idle"));
    QVERIFY(used.wait(1));
    QVERIFY(QTest::qWaitFor([&] { return used.closed; }, 5000));
    // a request in flight keeps its connection past the idle time
    Client busy(g->port());
    busy.send(request("POST", "/slow/900/busy", "busy", "{}"));
    QVERIFY(busy.wait(1));
    QCOMPARE(busy.replies[0].status, 201);
}

// The pool's idle timer once was the socket's own connect timer (QAbstractSocket's QTimer child):
// when it fired, Qt tried to connect the connected socket again and warned. An idle upstream
// connection now closes after its 4 s without a word, and the next request opens a new one.
void TestGatewayHttp::idleUpstreamConnectionsDropQuietly()
{
    QTest::failOnWarning(QRegularExpression(u"connectToHost|UnconnectedState"_s));
    auto g = start();
    QVERIFY(g);
    QCOMPARE(call(g->port(), request("POST", "/pooled", "p-1", "{}")).status, 201);
    QCOMPARE(up->openConnections(), 1);
    QTRY_COMPARE_WITH_TIMEOUT(up->openConnections(), 0, 8000); // the gateway closed it when idle
    QTest::qWait(100);
    QCOMPARE(call(g->port(), request("POST", "/pooled", "p-2", "{}")).status, 201);
    QCOMPARE(up->acceptedConnections(), 2);
}

// Werkzeug and others read "post" as POST: the gateway protects it as POST, in POST's record, and
// forwards the method as it came
void TestGatewayHttp::methodsAreProtectedInAnyCase()
{
    auto g = start([](gateway::GatewayOptions& o) { o.requireKey = true; });
    QVERIFY(g);
    QCOMPARE(call(g->port(), request("POST", "/case", "mc-1", R"({"a":1})")).status, 201);
    for (const QByteArray& method : {"post"_ba, "Post"_ba}) {
        const Reply dup = call(g->port(), request(method, "/case", "mc-1", R"({"a":1})"));
        QCOMPARE(dup.status, 201);
        QVERIFY2(dup.replayed(), method.constData());
    }
    QCOMPARE(up->calls("/case"), 1);
    const Reply keyless = call(g->port(), request("post", "/case", {}, R"({"a":1})"));
    QCOMPARE(keyless.status, 400);
    QCOMPARE(up->calls("/case"), 1);
    // the upstream gets the method itself, so what it runs is what the record says
    QCOMPARE(call(g->port(), request("pAtCh", "/case2", "mc-2", "{}")).status, 201);
    QCOMPARE(up->last("/case2").method, std::string("PATCH"));
    // an extension method keeps its case; a HEAD in any case is framed as one (no body follows)
    QCOMPARE(call(g->port(), request("Purge", "/case3", {}, {})).status, 201);
    QCOMPARE(up->last("/case3").method, std::string("Purge"));
    QTcpSocket head; // (the test's client would wait for a body a HEAD's answer never has)
    QByteArray answer;
    connect(&head, &QTcpSocket::readyRead, &head, [&] { answer += head.readAll(); });
    connect(&head, &QTcpSocket::connected, &head, [&] { head.write(request("head", "/case4")); });
    head.connectToHost(QHostAddress::LocalHost, g->port()); // (the gateway runs on this thread's loop)
    QVERIFY(QTest::qWaitFor([&] { return answer.contains("\r\n\r\n"); }, 5000)); // at once: no body awaited
    QVERIFY2(answer.startsWith("HTTP/1.1 201"), answer.constData());
    QCOMPARE(up->last("/case4").method, std::string("HEAD"));
}

// PHP maps '.' in a parameter's name to '_' and keeps the last value: reordered parameters can be
// another request, so the fingerprint keeps their order
void TestGatewayHttp::reorderedQueryIsAnotherRequest()
{
    auto g = start();
    QVERIFY(g);
    QCOMPARE(call(g->port(), request("POST", "/pay?amount_usd=1000&amount.usd=1", "q-1", "{}")).status, 201);
    const Reply reordered = call(g->port(), request("POST", "/pay?amount.usd=1&amount_usd=1000", "q-1", "{}"));
    QCOMPARE(reordered.status, 422);
    QVERIFY(!reordered.replayed());
    QVERIFY(call(g->port(), request("POST", "/pay?amount_usd=1000&amount.usd=1", "q-1", "{}")).replayed());
    QCOMPARE(up->calls("/pay"), 1);
}

// "//orders" and "/orders;v=1" are /orders to most upstreams: one key, one record, one run
void TestGatewayHttp::pathSpelledAnotherWayIsNoSecondRun()
{
    auto g = start();
    QVERIFY(g);
    QCOMPARE(call(g->port(), request("POST", "/orders", "p-1", "{}")).status, 201);
    for (const char* other : {"//orders", "/orders;v=1", "/orders/"}) {
        const Reply r = call(g->port(), request("POST", other, "p-1", "{}"));
        QVERIFY2(r.status == 422 || r.replayed(), qPrintable(u"%1: %2"_s.arg(QLatin1StringView(other)).arg(r.status)));
    }
    QCOMPARE(up->calls("/orders") + up->calls("//orders") + up->calls("/orders;v=1") + up->calls("/orders/"), 1);
    QVERIFY(call(g->port(), request("POST", "/orders", "p-1", "{}")).replayed());
}

// The record is scoped by one Authorization (or --key-scope) header; the upstream would get all of
// them, comma-joined, and none of one that Connection names
void TestGatewayHttp::scopeHeaderGivenOnce()
{
    auto g = start();
    QVERIFY(g);
    const Reply two =
        call(g->port(), request("POST", "/scope", "s-1", "{}", {"Authorization: Bearer A", "Authorization: Bearer B"}));
    QCOMPARE(two.status, 400);
    QCOMPARE(two.header("Content-Type"), "application/problem+json"_ba);
    for (const QByteArray& named : {"Connection: close, Authorization"_ba, "Connection: idempotency-key"_ba}) {
        const Reply r = call(g->port(), request("POST", "/scope", "s-1", "{}", {"Authorization: Bearer A", named}));
        QVERIFY2(r.status == 400, named.constData());
    }
    QCOMPARE(up->calls("/scope"), 0);
    QCOMPARE(call(g->port(), request("POST", "/scope", "s-1", "{}", {"Authorization: Bearer A"})).status, 201);
    auto tenant = start([](gateway::GatewayOptions& o) { o.scope = *gateway::parseKeyScope("header:X-Tenant"); });
    QVERIFY(tenant);
    QCOMPARE(call(tenant->port(), request("POST", "/scope", "s-2", "{}", {"X-Tenant: a", "x-tenant: b"})).status, 400);
    QCOMPARE(up->calls("/scope"), 1);
}

// An upstream that sends a second answer, unasked, once the gateway begins to write the next request
// on that pooled connection: it answers nothing of that request, which gets 502 and its key released
// (an idle connection that talks is closed at once: TestGatewayHttp::doubtfulUpstreamAnswers...)
void TestGatewayHttp::strayUpstreamAnswerIsNoAnswer()
{
    auto g = start([](gateway::GatewayOptions& o) { o.maxBody = 16 << 20; });
    QVERIFY(g);
    QCOMPARE(call(g->port(), request("POST", "/raw/twice/a", "t-1", "{}")).body, "first"_ba);
    // the next request reuses the connection; the upstream reads one byte of it, then answers
    const QByteArray body(8 << 20, 'b'); // (more than the kernel's buffers hold, sent within 4 s)
    const Reply victim = call(g->port(), request("POST", "/victim", "t-2", body));
    QCOMPARE(victim.status, 502);
    QVERIFY(!victim.body.contains("EVIL"));
    const Reply retry = call(g->port(), request("POST", "/victim", "t-2", body));
    QCOMPARE(retry.status, 201);
    QVERIFY(!retry.replayed());
}

// A header value that is not UTF-8 comes back as the bytes it was, not re-encoded
void TestGatewayHttp::headerBytesReplayAsSent()
{
    auto g = start();
    QVERIFY(g);
    const QByteArray r = request("POST", "/raw/latin1/a", "l-1", "{}");
    const Reply first = call(g->port(), r);
    QCOMPARE(first.header("Content-Disposition"), "attachment; filename=\"caf\xe9.txt\""_ba);
    const Reply again = call(g->port(), r);
    QVERIFY(again.replayed());
    QCOMPARE(again.header("Content-Disposition"), "attachment; filename=\"caf\xe9.txt\""_ba);
}

QTEST_GUILESS_MAIN(TestGatewayHttp)
#include "tst_gatewayhttp.moc"
