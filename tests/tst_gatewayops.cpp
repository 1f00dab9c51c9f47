// idem-gateway in operation, over real sockets: its private Redis killed or frozen (503, fail closed),
// --fail-open, --min-replicas, a Redis that refuses it or is not up yet at start, the idem-gateway
// binary SIGKILLed mid-request (409 while its lease lives, a takeover with a higher fence after),
// and a graceful stop (drain, SIGTERM). tst_gatewayconfig.cpp has the admin listener, routes and
// TLS. The shared upstream and clients: gatewaytestsupport.h.
#include "gatewaytestsupport.h"
#include "idem/redis/localserver.h"

#include <QProcess>
#include <QRegularExpression>

using namespace idem;
using namespace gwtest;
using namespace Qt::StringLiterals;

class TestGatewayOps : public GatewaySuite {
    Q_OBJECT

private slots:
    void init() { up = std::make_unique<TestUpstream>(); }
    void cleanup() { up.reset(); }

    void redisDownIs503();
    void frozenRedisLeavesTheKeyFree();
    void failOpenForwardsUnprotected();
    void minReplicasHoldsTheUpstreamBack();
    void killedGatewayIsTakenOver();
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

// Redis frozen (SIGSTOP) under a request: 503, "retry later", and when it thaws the acquire that
// ran late does not hold the key: the retry runs at once, not 409 for the whole lease
void TestGatewayOps::frozenRedisLeavesTheKeyFree()
{
    LocalServer redis;
    auto g = start([](gateway::GatewayOptions& o) { o.connection.commandTimeout = Millis(300); },
                   redis.connectionOptions());
    QVERIFY(g);
    QCOMPARE(call(g->port(), request("POST", "/r", "warm-up", "{}")).status, 201);
    redis.pause();
    const Reply frozen = call(g->port(), request("POST", "/r", "f-1", "{}"));
    redis.resume();
    QCOMPARE(frozen.status, 503);
    QVERIFY(frozen.has("Retry-After"));
    const Reply retry = call(g->port(), request("POST", "/r", "f-1", "{}"));
    QVERIFY2(retry.status == 201, retry.body.constData());
    QCOMPARE(up->calls("/r"), 2); // the warm-up and the retry: the frozen one was not forwarded
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

// A password the server refuses cannot get better by retrying: one line naming what to check, exit
// 77 (as idemctl's), and nothing listens (a deployment fails at once, not at its first request).
void TestGatewayOps::refusedPasswordEndsItAtStart()
{
    LocalServerOptions lo;
    lo.extraArgs = {"--requirepass", "s3cret"};
    LocalServer redis(lo);
    QProcess p;
    startBinary(p, {u"--url"_s, u"redis://:wrong@127.0.0.1:%1/0"_s.arg(redis.port())});
    QVERIFY(p.waitForFinished(20000));
    const QString err = QString::fromUtf8(p.readAllStandardError());
    QCOMPARE(p.exitCode(), 77);
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
