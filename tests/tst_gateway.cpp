// idem-gateway over real sockets, the idempotency rules: a real redis-server (the
// fixture's, each test in its own namespace), a real upstream HTTP server started here (it counts
// calls per path and can answer slowly, with any status, with Set-Cookie, or reset the
// connection), and raw TCP clients that pipeline, disconnect and send what they like.
// tst_gatewayhttp.cpp has the HTTP side (framing, what is never stored, pipelining, targets),
// tst_gatewayops.cpp Redis killed, fail-open, a SIGKILLed gateway and a graceful stop,
// tst_gatewayconfig.cpp the admin listener, per-route policies and TLS.
#include "gatewaytestsupport.h"

#include <QElapsedTimer>

using namespace idem;
using namespace gwtest;
using namespace Qt::StringLiterals;

class TestGateway : public GatewaySuite {
    Q_OBJECT

private slots:
    void init() { up = std::make_unique<TestUpstream>(); }
    void cleanup() { up.reset(); }

    void executesOnceThenReplays();
    void replayKeepsBinaryBodies();
    void concurrentDuplicatesReachUpstreamOnce();
    void credentialsKeepKeysApart();
    void mismatchIs422EvenInFlight();
    void namedHeadersAreFingerprinted();
    void inFlightIs409WithRetryAfter();
    void operatorsTerminalFailureIs409ForGood();
    void leaseIsRenewedWhileUpstreamWorks();
    void waitInProgressGetsTheFirstAnswer();
    void waitersAreWokenByTheAnswer();
    void fiveHundredsReleaseTheKey();
    void store5xxKeepsThem();
    void timeoutsAndResetsReleaseTheKey();
    void requireKeyAndPassThrough();
};

void TestGateway::executesOnceThenReplays()
{
    auto g = start();
    QVERIFY(g);
    const QByteArray req = request("POST", "/orders", "\"k-1\"", R"({"amount":10})",
                                   {"Content-Type: application/json"});
    const Reply first = call(g->port(), req);
    QCOMPARE(first.status, 201);
    QVERIFY(!first.replayed());
    QCOMPARE(first.header("Set-Cookie"), "session=s1"_ba); // the first answer goes as it came
    QCOMPARE(first.json().value(u"call"_s).toInt(), 1);
    QVERIFY(first.json().value(u"fence"_s).toString().toLongLong() > 0); // Idempotency-Fence reached the upstream

    const Reply again = call(g->port(), req);
    QCOMPARE(again.status, 201);
    QVERIFY(again.replayed());
    QCOMPARE(again.body, first.body);
    QVERIFY(!again.has("Set-Cookie"));
    QVERIFY(!again.has("X-Upstream")); // not on the allow-list
    QCOMPARE(again.header("ETag"), "\"e1\""_ba);
    QCOMPARE(again.header("Location"), "/made/1"_ba);
    QCOMPARE(again.header("Content-Type"), "application/json"_ba);
    QCOMPARE(up->calls("/orders"), 1);
    // the same JSON in another order is the same request
    QVERIFY(call(g->port(), request("POST", "/orders", "\"k-1\"", R"({ "amount" : 10 })")).replayed());
    QCOMPARE(outcome(*g, gateway::Outcome::Executed), 1u);
    QCOMPARE(outcome(*g, gateway::Outcome::Replayed), 2u);
}

void TestGateway::replayKeepsBinaryBodies()
{
    auto g = start();
    QVERIFY(g);
    QByteArray body;
    for (int i = 0; i < 256; ++i)
        body.append(static_cast<char>(i));
    body += body;
    const Reply first = call(g->port(), request("POST", "/echo/bin", "bin", body));
    QCOMPARE(first.status, 201);
    QCOMPARE(first.body, body);
    const Reply again = call(g->port(), request("POST", "/echo/bin", "bin", body));
    QVERIFY(again.replayed());
    QCOMPARE(again.body, body);
    QCOMPARE(again.header("Content-Type"), "application/octet-stream"_ba);
    QCOMPARE(up->calls("/echo/bin"), 1);
}

void TestGateway::concurrentDuplicatesReachUpstreamOnce()
{
    auto g = start();
    QVERIFY(g);
    std::vector<std::unique_ptr<Client>> clients;
    for (int i = 0; i < 32; ++i)
        clients.push_back(std::make_unique<Client>(g->port()));
    for (auto& c : clients)
        c->send(request("POST", "/slow/300/pay", "\"pay-1\"", R"({"amount":5})"));
    for (auto& c : clients)
        QVERIFY(c->wait(1));
    int fresh = 0, replayed = 0, conflicts = 0;
    for (auto& c : clients) {
        const Reply& r = c->replies.front();
        if (r.status == 201)
            (r.replayed() ? replayed : fresh)++;
        else if (r.status == 409)
            ++conflicts;
        else
            QFAIL(qPrintable(u"unexpected status %1: %2"_s.arg(r.status).arg(QString::fromUtf8(r.body))));
    }
    QCOMPARE(fresh, 1);
    QCOMPARE(fresh + replayed + conflicts, 32);
    QCOMPARE(up->calls("/slow/300/pay"), 1);
}

void TestGateway::credentialsKeepKeysApart()
{
    auto g = start();
    QVERIFY(g);
    const auto as = [](const QByteArray& who) {
        return request("POST", "/orders", "same-key", "{}", {"Authorization: Bearer " + who});
    };
    const Reply alice = call(g->port(), as("alice"));
    const Reply bob = call(g->port(), as("bob"));
    QCOMPARE(alice.status, 201);
    QCOMPARE(bob.status, 201);
    QVERIFY(!bob.replayed()); // bob does not get alice's answer
    QCOMPARE(up->calls("/orders"), 2);
    QCOMPARE(call(g->port(), as("alice")).json().value(u"call"_s).toInt(), 1);
    QCOMPARE(call(g->port(), as("bob")).json().value(u"call"_s).toInt(), 2);
    // with --key-scope none, the key alone decides
    auto shared = start([](gateway::GatewayOptions& o) { o.scope = *gateway::parseKeyScope("none"); });
    QVERIFY(shared);
    QVERIFY(!call(shared->port(), as("alice")).replayed());
    QVERIFY(call(shared->port(), as("bob")).replayed());
}

void TestGateway::mismatchIs422EvenInFlight()
{
    auto g = start();
    QVERIFY(g);
    Client first(g->port());
    first.send(request("POST", "/slow/800/m", "m-1", R"({"amount":1})"));
    QVERIFY(QTest::qWaitFor([&] { return up->calls("/slow/800/m") == 1; }, 10000));
    const Reply inFlight = call(g->port(), request("POST", "/slow/800/m", "m-1", R"({"amount":2})"));
    QCOMPARE(inFlight.status, 422);
    QCOMPARE(inFlight.header("Content-Type"), "application/problem+json"_ba);
    QCOMPARE(inFlight.json().value(u"status"_s).toInt(), 422);
    QVERIFY(first.wait(1));
    QCOMPARE(first.replies[0].status, 201);
    QCOMPARE(call(g->port(), request("POST", "/slow/800/m", "m-1", R"({"amount":2})")).status, 422);
    QCOMPARE(call(g->port(), request("POST", "/slow/800/m?x=1", "m-1", R"({"amount":1})")).status, 422);
    QCOMPARE(up->calls("/slow/800/m"), 1);
    QCOMPARE(outcome(*g, gateway::Outcome::Mismatch), 3u);
}

// --fingerprint-headers and a route's fingerprint_headers: a retry that differs in a named header
// is another request (422); one that differs in another header is the same (replayed).
void TestGateway::namedHeadersAreFingerprinted()
{
    auto g = start([](gateway::GatewayOptions& o) {
        o.fingerprintHeaders = {"X-Api-Version"};
        QString why;
        QVERIFY2(gateway::parseRoutes(R"({"routes":[{"route":"/lang","fingerprint_headers":["Accept-Language"]}]})",
                                      gateway::defaultPolicy(o), o.routes, &why),
                 qPrintable(why));
    });
    QVERIFY(g);
    const auto post = [&](const QByteArray& path, const QList<QByteArray>& headers) {
        return call(g->port(), request("POST", path, "h-1", R"({"amount":1})", headers));
    };
    QCOMPARE(post("/v", {"X-Api-Version: 1", "X-Trace: a"}).status, 201);
    QVERIFY(post("/v", {"x-api-version: 1", "X-Trace: b"}).replayed()); // the name's case, another header
    const Reply other = post("/v", {"X-Api-Version: 2"});
    QCOMPARE(other.status, 422);
    QVERIFY2(other.json().value(u"detail"_s).toString().contains(u"X-Api-Version"_s), other.body.constData());
    QCOMPARE(post("/v", {}).status, 422); // left out is not the same as sent
    QCOMPARE(post("/v", {"X-Api-Version: 1", "X-Api-Version: 1"}).status, 422);
    QCOMPARE(up->calls("/v"), 1);
    // the route's list replaces the flag's
    QCOMPARE(post("/lang", {"Accept-Language: de", "X-Api-Version: 1"}).status, 201);
    QVERIFY(post("/lang", {"Accept-Language: de", "X-Api-Version: 7"}).replayed());
    QCOMPARE(post("/lang", {"Accept-Language: fr", "X-Api-Version: 1"}).status, 422);
    QCOMPARE(up->calls("/lang"), 1);
    QCOMPARE(outcome(*g, gateway::Outcome::Mismatch), 4u);
}

void TestGateway::inFlightIs409WithRetryAfter()
{
    auto g = start([](gateway::GatewayOptions& o) { o.lease = Millis(5000); });
    QVERIFY(g);
    Client first(g->port());
    first.send(request("POST", "/slow/1000/c", "c-1", "{}"));
    QVERIFY(QTest::qWaitFor([&] { return up->calls("/slow/1000/c") == 1; }, 10000));
    const Reply dup = call(g->port(), request("POST", "/slow/1000/c", "c-1", "{}"));
    QCOMPARE(dup.status, 409);
    QCOMPARE(dup.header("Content-Type"), "application/problem+json"_ba);
    const int retryAfter = dup.header("Retry-After").toInt();
    QVERIFY2(retryAfter >= 1 && retryAfter <= 5, dup.header("Retry-After").constData());
    QVERIFY(first.wait(1));
    QVERIFY(call(g->port(), request("POST", "/slow/1000/c", "c-1", "{}")).replayed());
    QCOMPARE(up->calls("/slow/1000/c"), 1);
}

// A key an operator marked failed for good (idemctl force-fail --terminal, the console's
// force-fail) is never executed again: 409 naming the operator's reason, in their words only.
void TestGateway::operatorsTerminalFailureIs409ForGood()
{
    auto g = start([](gateway::GatewayOptions& o) { o.lease = Millis(5000); });
    QVERIFY(g);
    Client first(g->port());
    first.send(request("POST", "/slow/1500/t", "t-1", "{}"));
    QVERIFY(QTest::qWaitFor([&] { return up->calls("/slow/1500/t") == 1; }, 10000));
    ConnectionPool pool(idemtest::sharedRedis(), 1);
    StoreOptions so;
    so.keyNamespace = g->options().keyNamespace;
    Store store(pool, so);
    const AdminResult forced = store.forceFail("anonymous POST /slow/1500/t t-1", "stuck upstream", true, "ops");
    QCOMPARE(forced.status, AdminStatus::Ok);
    QVERIFY(first.wait(1)); // the first still gets its answer: it cannot be stored any more
    QCOMPARE(first.replies[0].status, 201);
    for (int i = 0; i < 2; ++i) {
        const Reply r = call(g->port(), request("POST", "/slow/1500/t", "t-1", "{}"));
        QCOMPARE(r.status, 409);
        QCOMPARE(r.header("Content-Type"), "application/problem+json"_ba);
        const QJsonObject p = QJsonDocument::fromJson(r.body).object();
        QCOMPARE(p.value(u"title"_s).toString(), u"This Idempotency-Key failed for good"_s);
        QCOMPARE(p.value(u"detail"_s).toString(), u"an operator marked it failed: stuck upstream"_s);
        QVERIFY(!r.has("Retry-After")); // retrying will not change it
    }
    QCOMPARE(up->calls("/slow/1500/t"), 1);
}

void TestGateway::leaseIsRenewedWhileUpstreamWorks()
{
    auto g = start([](gateway::GatewayOptions& o) { o.lease = Millis(600); });
    QVERIFY(g);
    Client first(g->port());
    first.send(request("POST", "/slow/2500/r", "r-1", "{}"));
    QVERIFY(QTest::qWaitFor([&] { return up->calls("/slow/2500/r") == 1; }, 10000));
    QTest::qWait(1500); // more than twice the lease: only renewals keep it
    QCOMPARE(call(g->port(), request("POST", "/slow/2500/r", "r-1", "{}")).status, 409);
    QVERIFY(first.wait(1));
    QCOMPARE(first.replies[0].status, 201);
    QVERIFY(call(g->port(), request("POST", "/slow/2500/r", "r-1", "{}")).replayed());
    QCOMPARE(up->calls("/slow/2500/r"), 1);
}

void TestGateway::waitInProgressGetsTheFirstAnswer()
{
    auto g = start([](gateway::GatewayOptions& o) { o.waitInProgress = Millis(5000); });
    QVERIFY(g);
    Client first(g->port());
    first.send(request("POST", "/slow/700/w", "w-1", "{}"));
    QVERIFY(QTest::qWaitFor([&] { return up->calls("/slow/700/w") == 1; }, 10000));
    const Reply waited = call(g->port(), request("POST", "/slow/700/w", "w-1", "{}"));
    QCOMPARE(waited.status, 201);
    QVERIFY(waited.replayed());
    QCOMPARE(waited.json().value(u"call"_s).toInt(), 1);
    QVERIFY(first.wait(1));
    QCOMPARE(first.replies[0].body, waited.body);
    QCOMPARE(up->calls("/slow/700/w"), 1);
    // a first request that is released (5xx): the waiting one runs in its place
    Client failing(g->port());
    failing.send(request("POST", "/slow/500/failfirst", "w-2", "{}"));
    QVERIFY(QTest::qWaitFor([&] { return up->calls("/slow/500/failfirst") == 1; }, 10000));
    const Reply ranInstead = call(g->port(), request("POST", "/slow/500/failfirst", "w-2", "{}"));
    QCOMPARE(ranInstead.status, 201);
    QVERIFY(!ranInstead.replayed());
    QVERIFY(failing.wait(1));
    QCOMPARE(failing.replies[0].status, 503);
    QCOMPARE(up->calls("/slow/500/failfirst"), 2);
    // the wait is bounded
    auto brief = start([](gateway::GatewayOptions& o) { o.waitInProgress = Millis(300); });
    QVERIFY(brief);
    Client slow(brief->port());
    slow.send(request("POST", "/slow/3000/b", "w-3", "{}"));
    QVERIFY(QTest::qWaitFor([&] { return up->calls("/slow/3000/b") == 1; }, 10000));
    QElapsedTimer clock;
    clock.start();
    const Reply gaveUp = call(brief->port(), request("POST", "/slow/3000/b", "w-3", "{}"));
    QCOMPARE(gaveUp.status, 409);
    QVERIFY2(clock.elapsed() >= 250 && clock.elapsed() < 2500, qPrintable(QString::number(clock.elapsed())));
}

// Duplicates waiting for a key this gateway runs get its answer as soon as it is stored, not at
// their next poll (every 200 ms by then): five waiters all within 100 ms of the first's answer
// would happen by chance about once in thirty runs without the wake-up.
void TestGateway::waitersAreWokenByTheAnswer()
{
    auto g = start([](gateway::GatewayOptions& o) { o.waitInProgress = Millis(10000); });
    QVERIFY(g);
    Client first(g->port());
    first.send(request("POST", "/slow/1500/k", "k-1", "{}"));
    QVERIFY(QTest::qWaitFor([&] { return up->calls("/slow/1500/k") == 1; }, 10000));
    std::vector<std::unique_ptr<Client>> waiters;
    for (int i = 0; i < 5; ++i) {
        waiters.push_back(std::make_unique<Client>(g->port()));
        waiters.back()->send(request("POST", "/slow/1500/k", "k-1", "{}"));
        QTest::qWait(37); // their polls out of step
    }
    QElapsedTimer clock;
    clock.start();
    qint64 firstAt = -1;
    std::vector<qint64> at(waiters.size(), -1);
    while (clock.elapsed() < 15000 && std::count(at.begin(), at.end(), -1) > 0) {
        QTest::qWait(1);
        if (firstAt < 0 && !first.replies.empty())
            firstAt = clock.elapsed();
        for (std::size_t i = 0; i < waiters.size(); ++i)
            if (at[i] < 0 && !waiters[i]->replies.empty())
                at[i] = clock.elapsed();
    }
    QVERIFY(firstAt >= 0);
    QCOMPARE(first.replies[0].status, 201);
    for (std::size_t i = 0; i < waiters.size(); ++i) {
        QVERIFY(at[i] >= 0);
        QVERIFY(waiters[i]->replies[0].replayed());
        QVERIFY2(at[i] - firstAt < 100, qPrintable(u"waiter %1 answered %2 ms after the first"_s.arg(i).arg(at[i] - firstAt)));
    }
    QCOMPARE(up->calls("/slow/1500/k"), 1);
}

void TestGateway::fiveHundredsReleaseTheKey()
{
    auto g = start();
    QVERIFY(g);
    const QByteArray req = request("POST", "/status/503/x", "f-1", "{}");
    const Reply first = call(g->port(), req);
    QCOMPARE(first.status, 503);
    QVERIFY(!first.replayed());
    const Reply retry = call(g->port(), req);
    QCOMPARE(retry.status, 503);
    QVERIFY(!retry.replayed());
    QCOMPARE(up->calls("/status/503/x"), 2); // released: the retry ran again
    QCOMPARE(outcome(*g, gateway::Outcome::Released), 2u);
    // 4xx are answers: stored and replayed
    const QByteArray notFound = request("POST", "/status/404/y", "f-2", "{}");
    QCOMPARE(call(g->port(), notFound).status, 404);
    const Reply again = call(g->port(), notFound);
    QCOMPARE(again.status, 404);
    QVERIFY(again.replayed());
    QCOMPARE(up->calls("/status/404/y"), 1);
    // each with its reason phrase, as it came, when replayed too (402: the trial's, which had none)
    const QByteArray payment = request("POST", "/status/402/z", "f-3", "{}");
    QCOMPARE(call(g->port(), payment).statusLine, "HTTP/1.1 402 Payment Required"_ba);
    QCOMPARE(call(g->port(), payment).statusLine, "HTTP/1.1 402 Payment Required"_ba);
    QCOMPARE(up->calls("/status/402/z"), 1);
}

void TestGateway::store5xxKeepsThem()
{
    auto g = start([](gateway::GatewayOptions& o) { o.store5xx = true; });
    QVERIFY(g);
    const QByteArray req = request("POST", "/status/500/x", "s-1", "{}");
    QCOMPARE(call(g->port(), req).status, 500);
    const Reply again = call(g->port(), req);
    QCOMPARE(again.status, 500);
    QVERIFY(again.replayed());
    QCOMPARE(up->calls("/status/500/x"), 1);
}

void TestGateway::timeoutsAndResetsReleaseTheKey()
{
    auto g = start([](gateway::GatewayOptions& o) { o.upstreamTimeout = Millis(300); });
    QVERIFY(g);
    const QByteArray slow = request("POST", "/slow/2000/t", "t-1", "{}");
    const Reply late = call(g->port(), slow);
    QCOMPARE(late.status, 504);
    QCOMPARE(late.header("Content-Type"), "application/problem+json"_ba);
    QCOMPARE(call(g->port(), slow).status, 504);
    QCOMPARE(up->calls("/slow/2000/t"), 2);

    const QByteArray reset = request("POST", "/reset/r", "t-2", "{}");
    QCOMPARE(call(g->port(), reset).status, 502);
    QCOMPARE(call(g->port(), reset).status, 502);
    QCOMPARE(up->calls("/reset/r"), 2);
    QCOMPARE(outcome(*g, gateway::Outcome::Released), 4u);
}

void TestGateway::requireKeyAndPassThrough()
{
    auto strict = start([](gateway::GatewayOptions& o) { o.requireKey = true; });
    QVERIFY(strict);
    const Reply missing = call(strict->port(), request("POST", "/nokey", {}, "{}"));
    QCOMPARE(missing.status, 400);
    QVERIFY(missing.header("Link").contains("rel=\"describedby\""));
    QCOMPARE(up->calls("/nokey"), 0);
    // methods not protected pass through, key or not, every time
    QCOMPARE(call(strict->port(), request("GET", "/nokey")).status, 201);
    QCOMPARE(call(strict->port(), request("GET", "/nokey", "k")).status, 201);
    QCOMPARE(up->calls("/nokey"), 2);
    QVERIFY(!up->last("/nokey").header("Idempotency-Fence"));

    auto lax = start();
    QVERIFY(lax);
    QCOMPARE(call(lax->port(), request("POST", "/nokey", {}, "{}")).status, 201);
    QCOMPARE(call(lax->port(), request("POST", "/nokey", {}, "{}")).status, 201);
    QCOMPARE(up->calls("/nokey"), 4);
    QCOMPARE(outcome(*lax, gateway::Outcome::Bypassed), 2u);
}

QTEST_GUILESS_MAIN(TestGateway)
#include "tst_gateway.moc"
