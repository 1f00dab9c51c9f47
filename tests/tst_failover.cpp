// Redis going away: fail closed, recover, keep completed results (AOF), survive SCRIPT FLUSH;
// wrong passwords and unreachable servers. Each test starts its own redis-server.
#include "idem/errors.h"
#include "idem/engine/executor.h"
#include "idem/redis/localserver.h"
#include "idem/engine/scripts.h"
#include "idem/engine/store.h"
#include "testsupport.h"

#include <QElapsedTimer>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <atomic>
#include <thread>

using idem::OutcomeKind;
using namespace Qt::StringLiterals;

namespace {
idem::ConnectionOptions quick(idem::ConnectionOptions o)
{
    o.connectTimeout = idem::Millis(300);
    o.commandTimeout = idem::Millis(500);
    o.reconnectMin = idem::Millis(20);
    o.reconnectMax = idem::Millis(200);
    return o;
}
idem::LocalServerOptions serverArgs(std::vector<std::string> args)
{
    idem::LocalServerOptions o;
    o.extraArgs = std::move(args);
    return o;
}
idem::StoreOptions ns(const char* name, idem::Millis lease = idem::Millis(30000))
{
    idem::StoreOptions o;
    o.keyNamespace = name;
    o.lease = lease;
    return o;
}
idem::WorkResult counted(std::atomic<int>& runs, std::string r)
{
    ++runs;
    return idem::WorkResult::success(std::move(r));
}
} // namespace

class TestFailover : public QObject {
    Q_OBJECT
private slots:
    // 9. killed mid-flight: nothing runs while it is down; restarted: EVALSHA recovers;
    //    with appendonly on, completed records survive
    void killedAndRestarted()
    {
        idem::LocalServer server(serverArgs({"--appendonly", "yes", "--appendfsync", "always"}));
        idem::ConnectionPool pool(quick(server.connectionOptions()), 4);
        idem::Store store(pool, ns("fo"));
        idem::Executor ex(store);
        std::atomic<int> runs{0};

        QCOMPARE(ex.execute("before", "", [&](auto&) { return counted(runs, "kept"); }).kind, OutcomeKind::Executed);
        // a job in flight when Redis dies: its result cannot be stored, and it says so
        std::atomic<bool> inWork{false};
        idem::Outcome midFlight;
        std::thread t([&] {
            midFlight = ex.execute("mid", "", [&](auto&) {
                inWork = true;
                std::this_thread::sleep_for(std::chrono::milliseconds(300));
                return counted(runs, "mid");
            });
        });
        QTRY_VERIFY(inWork.load());
        server.kill();
        t.join();
        QCOMPARE(midFlight.kind, OutcomeKind::StoreUnavailable);
        QVERIFY(midFlight.workRan);

        // down: fail closed, fast, with a clear one-line error
        const int before = runs;
        for (int i = 0; i < 5; ++i) {
            QElapsedTimer timer;
            timer.start();
            auto o = ex.execute("during-" + std::to_string(i), "", [&](auto&) { return counted(runs, "no"); });
            QCOMPARE(o.kind, OutcomeKind::StoreUnavailable);
            QVERIFY(!o.workRan);
            QVERIFY(!o.error.empty());
            QVERIFY(o.error.find('\n') == std::string::npos);
            QVERIFY2(timer.elapsed() < 2000, "failing closed must not hang");
        }
        QCOMPARE(runs.load(), before);

        server.start(); // same port, same directory: the AOF is replayed
        idem::Outcome o;
        QTRY_VERIFY_WITH_TIMEOUT((o = ex.execute("before", "", [&](auto&) { return counted(runs, "again"); }),
                                  o.kind != OutcomeKind::StoreUnavailable),
                                 5000);
        QCOMPARE(o.kind, OutcomeKind::Replayed); // survived the crash
        QCOMPARE(o.response, std::string("kept"));
        QCOMPARE(runs.load(), before);
        QCOMPARE(ex.execute("after", "", [&](auto&) { return counted(runs, "new"); }).kind, OutcomeKind::Executed);
    }

    // A restart finds its port taken by another redis-server (a parallel test's, say): its own
    // server fails to bind and exits, but the other one answers PING - the process id tells them
    // apart, and start() fails instead of talking to a stranger.
    void startNoticesAPortTakenByAnotherServer()
    {
        idem::LocalServer ours;
        const int port = ours.port();
        ours.stop();
        QTemporaryDir dir;
        QProcess other;
        other.start(QStringLiteral("redis-server"),
                    {QStringLiteral("--port"), QString::number(port), QStringLiteral("--bind"), QStringLiteral("127.0.0.1"),
                     QStringLiteral("--save"), QString(), QStringLiteral("--dir"), dir.path()});
        QVERIFY(other.waitForStarted());
        idem::ConnectionOptions o = ours.connectionOptions();
        QTRY_VERIFY_WITH_TIMEOUT(
            [&] {
                try {
                    idem::Connection c(o);
                    c.connect();
                    return true;
                } catch (const idem::Error&) {
                    return false;
                }
            }(),
            5000);
        try {
            ours.start();
            QFAIL("start() took another redis-server for its own");
        } catch (const idem::IoError& e) {
            QVERIFY2(std::string(e.what()).find("another redis-server") != std::string::npos ||
                         std::string(e.what()).find("exited at start") != std::string::npos,
                     e.what());
        }
        other.terminate();
        QVERIFY(other.waitForFinished(5000));
    }

    void scriptFlushIsRecovered()
    {
        idem::LocalServer server;
        idem::ConnectionPool pool(quick(server.connectionOptions()), 2);
        idem::Store store(pool, ns("sf"));
        idem::Executor ex(store);
        idem::Connection admin(server.connectionOptions());
        auto exists = [&] {
            auto r = admin.checked({"SCRIPT", "EXISTS", idem::scripts::acquire().sha1});
            return idem::reply::integer(idem::reply::element(r.get(), 0));
        };
        QCOMPARE(exists(), std::int64_t(0));
        QCOMPARE(ex.execute("a", "", [](auto&) { return idem::WorkResult::success("1"); }).kind, OutcomeKind::Executed);
        QCOMPARE(exists(), std::int64_t(1)); // loaded once, by SCRIPT LOAD, with the SHA1 computed locally
        admin.checked({"SCRIPT", "FLUSH"});
        QCOMPARE(exists(), std::int64_t(0));
        QCOMPARE(ex.execute("a", "", [](auto&) { return idem::WorkResult::success("2"); }).kind, OutcomeKind::Replayed);
        admin.checked({"SCRIPT", "FLUSH"});
        auto batch = store.acquireBatch({{"b1", ""}, {"b2", ""}, {"a", ""}});
        QCOMPARE(batch[0].status, idem::AcquireStatus::Acquired);
        QCOMPARE(batch[1].status, idem::AcquireStatus::Acquired);
        QCOMPARE(batch[2].status, idem::AcquireStatus::Duplicate);
        // a batch of several script calls in one round trip: every call answers NOSCRIPT, all are sent again
        admin.checked({"SCRIPT", "FLUSH"});
        std::vector<idem::AcquireRequest> many;
        for (int i = 0; i < 200; ++i)
            many.push_back({"m" + std::to_string(i), ""});
        many.push_back({"a", ""});
        auto manyGot = store.acquireBatch(many);
        QCOMPARE(manyGot.size(), many.size());
        for (int i = 0; i < 200; ++i)
            QCOMPARE(manyGot[static_cast<std::size_t>(i)].status, idem::AcquireStatus::Acquired);
        QCOMPARE(manyGot.back().status, idem::AcquireStatus::Duplicate);
        admin.checked({"SCRIPT", "FLUSH"});
        QCOMPARE(store.complete(batch[0].ticket, "x").status, idem::OwnerStatus::Ok);
        admin.checked({"SCRIPT", "FLUSH"});
        QCOMPARE(store.forceFail("b2", "r", false, "t").status, idem::AdminStatus::Ok);
        admin.checked({"SCRIPT", "FLUSH"});
        QCOMPARE(store.purge("b2", "t").status, idem::AdminStatus::Ok);
    }

    // a paused (hung) Redis: commands time out, the work is not run; renewals that keep failing
    // tell the running work once its lease has certainly run out
    void pausedServerTimesOut()
    {
        idem::LocalServer server;
        auto opts = quick(server.connectionOptions());
        opts.commandTimeout = idem::Millis(150);
        idem::ConnectionPool pool(opts, 4);
        idem::Store store(pool, ns("ps", idem::Millis(300)));
        idem::Executor ex(store);

        std::atomic<bool> told{false};
        QElapsedTimer timer;
        auto o = ex.execute("job", "", [&](const idem::WorkContext& ctx) {
            server.pause();
            timer.start();
            for (int i = 0; i < 300 && !ctx.leaseLost.stop_requested(); ++i)
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
            told = ctx.leaseLost.stop_requested();
            server.resume();
            return idem::WorkResult::success("done");
        });
        QVERIFY(told.load());
        QVERIFY2(timer.elapsed() < 1500, "the work must be told soon after the lease ran out");
        QVERIFY(o.workRan);

        server.pause();
        std::atomic<int> runs{0};
        QElapsedTimer t2;
        t2.start();
        auto down = ex.execute("other", "", [&](auto&) { return counted(runs, "x"); });
        server.resume();
        QCOMPARE(down.kind, OutcomeKind::StoreUnavailable);
        QCOMPARE(runs.load(), 0);
        QVERIFY(down.error.find("no reply within") != std::string::npos);
        QVERIFY(t2.elapsed() < 1500);

        // a request larger than the sockets' buffers: the write itself runs out of time (a
        // Connection writes to the socket, not through hiredis), and the next command reconnects
        idem::Connection c(opts);
        c.checked({"PING"});
        const std::string big(64 << 20, 'x');
        server.pause();
        QElapsedTimer t3;
        t3.start();
        try {
            c.command({"SET", "big", big});
            QFAIL("a write to a paused server did not time out");
        } catch (const idem::TimeoutError& e) {
            QVERIFY2(std::string(e.what()).find("no reply within 150 ms") != std::string::npos, e.what());
        }
        QVERIFY2(t3.elapsed() < 15000, "the write must time out, not wait for the paused server"); // (ASan, -j4)
        server.resume();
        QCOMPARE(idem::reply::str(c.checked({"PING"}).get()), std::string("PONG"));
    }

    // Redis frozen (SIGSTOP) under an acquire: the call times out and closes its connection, but
    // the server still holds the acquire and runs it when it thaws. The release written behind it
    // on the same socket runs right after: the key is free for a retry at once, not refused as in
    // progress for the whole lease. Store directly, a batch, and execute() (what idemctl run calls).
    void frozenAcquireLeavesNoLease_data()
    {
        QTest::addColumn<QString>("how");
        QTest::addColumn<int>("ids");
        QTest::newRow("acquire") << u"acquire"_s << 1;
        QTest::newRow("batch") << u"batch"_s << 3;
        QTest::newRow("execute") << u"execute"_s << 1;
    }
    void frozenAcquireLeavesNoLease()
    {
        QFETCH(QString, how);
        QFETCH(int, ids);
        idem::LocalServer server;
        auto opts = quick(server.connectionOptions());
        opts.commandTimeout = idem::Millis(300);
        idem::ConnectionPool pool(opts, 1);
        idem::Store store(pool, ns("fz")); // a 30 s lease: a retry refused for it would fail below
        idem::Executor ex(store);
        QCOMPARE(store.acquire("warm-up", "").status, idem::AcquireStatus::Acquired); // connected, scripts loaded
        std::vector<idem::AcquireRequest> batch;
        for (int i = 0; i < ids; ++i)
            batch.push_back({"order-" + std::to_string(i), ""});
        idem::Connection admin(server.connectionOptions());
        admin.checked({"CONFIG", "RESETSTAT"});
        const auto evalshas = [&admin] { // scripts the server has run since RESETSTAT (acquires, releases)
            const std::string info = idem::reply::str(admin.checked({"INFO", "commandstats"}).get());
            const auto at = info.find("cmdstat_evalsha:calls=");
            return at == std::string::npos ? 0 : std::atoi(info.c_str() + at + 22);
        };

        server.pause();
        QElapsedTimer timer;
        timer.start();
        std::atomic<int> runs{0};
        if (how == u"execute"_s) {
            const auto o = ex.execute(batch.front().id, "", [&](auto&) { return counted(runs, "x"); });
            QCOMPARE(o.kind, OutcomeKind::StoreUnavailable);
            QVERIFY2(o.error.find("no reply within") != std::string::npos, o.error.c_str());
        } else {
            try {
                if (how == u"batch"_s)
                    store.acquireBatch(batch);
                else
                    store.acquire(batch.front().id, "");
                QFAIL("an acquire on a frozen server was answered");
            } catch (const idem::TimeoutError& e) {
                QVERIFY2(std::string(e.what()).find("no reply within") != std::string::npos, e.what());
            }
        }
        // the command timeout, and at most one more for the release's write (here: at once)
        QVERIFY2(timer.elapsed() < 600 + 1000, qPrintable(QString::number(timer.elapsed())));
        QTest::qWait(500); // the connection is long closed when the server thaws
        server.resume();
        // the frozen acquire ran, late, and the release of each id behind it
        QTRY_VERIFY_WITH_TIMEOUT(evalshas() >= 1 + ids, 5000);
        for (const auto& rq : batch) {
            QCOMPARE(idem::reply::integer(admin.checked({"EXISTS", store.recordKey(rq.id)}).get()), 0LL);
            if (how == u"execute"_s) {
                const auto o = ex.execute(rq.id, "", [&](auto&) { return counted(runs, "x"); });
                QCOMPARE(o.kind, OutcomeKind::Executed); // a retry runs at once
            } else {
                QCOMPARE(store.acquire(rq.id, "").status, idem::AcquireStatus::Acquired);
            }
        }
        QCOMPARE(runs.load(), how == u"execute"_s ? 1 : 0);
    }

    void passwordsAndUnreachableServers()
    {
        idem::LocalServer server(serverArgs({"--requirepass", "s3cret"}));
        auto o = quick(server.connectionOptions());
        o.password = "wrong";
        idem::ConnectionPool badPool(o, 1);
        idem::Store bad(badPool, ns("pw"));
        try {
            bad.acquire("x", "");
            QFAIL("a wrong password was accepted");
        } catch (const idem::ConfigError& e) { // retrying cannot fix it: the password is named
            const std::string msg = e.what();
            QVERIFY2(msg.find("authentication failed") != std::string::npos, e.what());
            QVERIFY(msg.find("wrong") == std::string::npos); // the password is never echoed
            QCOMPARE(e.field(), std::string("password"));
        }
        // asked again at once: the same answer, without waiting for a reconnect to come round
        QVERIFY_THROWS_EXCEPTION(idem::ConfigError, bad.acquire("x", ""));
        idem::Executor badEx(bad);
        int runs = 0;
        auto out = badEx.execute("x", "", [&](auto&) { ++runs; return idem::WorkResult::success(""); });
        QCOMPARE(out.kind, OutcomeKind::StoreUnavailable);
        QCOMPARE(runs, 0);

        o.password = "s3cret";
        idem::ConnectionPool goodPool(o, 1);
        idem::Store good(goodPool, ns("pw"));
        QCOMPARE(good.acquire("x", "").status, idem::AcquireStatus::Acquired);

        // an ACL user with just enough rights, and a database other than 0
        idem::Connection admin(o);
        admin.checked({"ACL", "SETUSER", "svc", "on", ">pa ss", "~*", "+@all"});
        auto acl = quick(server.connectionOptions());
        acl.user = "svc";
        acl.password = "pa ss";
        acl.db = 3;
        idem::ConnectionPool aclPool(acl, 1);
        idem::Store aclStore(aclPool, ns("pw"));
        QCOMPARE(aclStore.acquire("x", "").status, idem::AcquireStatus::Acquired); // db 3: a fresh id

        // nobody listening
        auto gone = quick(idem::ConnectionOptions{});
        const idemtest::ClosedPort closed;
        gone.port = closed.port();
        idem::ConnectionPool gonePool(gone, 1);
        idem::Store goneStore(gonePool, ns("pw"));
        QVERIFY_THROWS_EXCEPTION(idem::IoError, goneStore.acquire("x", ""));
    }
};

QTEST_GUILESS_MAIN(TestFailover)
#include "tst_failover.moc"
