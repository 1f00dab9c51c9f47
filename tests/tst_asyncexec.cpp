// The asynchronous core as services use it: Executor::submit() over AsyncStore (a killed server,
// a script flush mid-batch, duplicates in flight, renewals, min-replicas) and idem_qt's delivery on
// a QObject's thread. Real redis-servers only; what stops a server uses a private one.
#include "asynctestsupport.h"
#include "idem/qt/submit.h"

#include <QElapsedTimer>
#include <QPointer>
#include <QThread>
#include <QtTest>

#include <atomic>
#include <csignal>

using idem::OutcomeKind;
using namespace asynctest;

class TestAsyncExec : public QObject {
    Q_OBJECT
private slots:
    // A batch cut by a killed server: every pending request fails closed and no work runs.
    void killedServerFailsEveryPendingExecutionClosed()
    {
        idem::LocalServer server;
        idem::ConnectionPool blocking(quick(server.connectionOptions()), 1);
        idem::Store store(blocking, ns("killed"));
        idem::AsyncPool pool(quick(server.connectionOptions()), 2);
        idem::AsyncStore async(pool, store.options());
        idem::Executor ex(store, async);
        std::atomic<int> runs{0};
        auto work = [&](const idem::WorkContext&) {
            ++runs;
            return idem::WorkResult::success("done");
        };
        QCOMPARE(ex.submit("warm-0", "", work).get().kind, OutcomeKind::Executed);
        QCOMPARE(ex.submit("warm-1", "", work).get().kind, OutcomeKind::Executed); // both connections up
        runs = 0;

        server.pause(); // the requests pile up, written and unanswered
        constexpr int kCount = 2000;
        std::atomic<int> completed{0}, failedClosed{0};
        for (int i = 0; i < kCount; ++i)
            ex.submit("cut-" + std::to_string(i), "", work, [&](idem::Outcome o) {
                if (o.kind == OutcomeKind::StoreUnavailable && !o.workRan && !o.error.empty())
                    ++failedClosed;
                ++completed;
            });
        // written and unanswered: the first units; the others wait for them in the AsyncStore
        QTRY_VERIFY(pool.at(0).pending() + pool.at(1).pending() >= 1);
        ::kill(server.pid(), SIGKILL); // while stopped: it runs nothing more
        QElapsedTimer timer;
        timer.start();
        QTRY_COMPARE_WITH_TIMEOUT(completed.load(), kCount, 5000);
        QVERIFY2(timer.elapsed() < 2000, "failing closed must not wait for timeouts");
        QCOMPARE(failedClosed.load(), kCount);
        QCOMPARE(runs.load(), 0);
        server.kill(); // reaps it

        // down: fail closed, fast
        for (int i = 0; i < 5; ++i) {
            const auto o = ex.submit("down-" + std::to_string(i), "", work).get();
            QCOMPARE(o.kind, OutcomeKind::StoreUnavailable);
            QVERIFY(!o.workRan);
        }
        QCOMPARE(runs.load(), 0);

        server.start(); // a new, empty server on the same port: NOSCRIPT, then recovered
        idem::Outcome o;
        QElapsedTimer restart;
        restart.start();
        while ((o = ex.submit("after", "", work).get()).kind == OutcomeKind::StoreUnavailable && restart.elapsed() < 5000)
            QTest::qWait(20);
        QCOMPARE(o.kind, OutcomeKind::Executed);
        QCOMPARE(runs.load(), 1);
    }

    // SCRIPT FLUSH between pipelined calls: the ones behind it come back NOSCRIPT, are sent again
    // after SCRIPT LOAD, and each still answers for its own id.
    void scriptFlushMidBatchIsRecovered()
    {
        idem::LocalServer server;
        idem::AsyncPool pool(quick(server.connectionOptions()), 1);
        idem::AsyncStore store(pool, ns("flush"));
        idem::Connection admin(server.connectionOptions());
        QCOMPARE(store.acquire("first").get().status, idem::AcquireStatus::Acquired); // loaded

        server.pause(); // everything below reaches the server as one stream
        std::vector<std::pair<std::string, std::future<idem::AcquireResult>>> calls;
        for (int i = 0; i < 100; ++i)
            calls.emplace_back("a-" + std::to_string(i), store.acquire("a-" + std::to_string(i)));
        auto flushed = pool.at(0).command({"SCRIPT", "FLUSH"});
        for (int i = 0; i < 100; ++i)
            calls.emplace_back("b-" + std::to_string(i), store.acquire("b-" + std::to_string(i)));
        server.resume();
        QCOMPARE(text(flushed.get()), std::string("OK"));
        for (auto& [id, f] : calls) {
            const auto a = f.get();
            QCOMPARE(a.status, idem::AcquireStatus::Acquired);
            QCOMPARE(a.ticket.id, id);
        }
        QVERIFY2(infoField(admin, "errorstats", "errorstat_NOSCRIPT") >= 1, "no call met NOSCRIPT");
        // and again with executions
        idem::ConnectionPool blocking(server.connectionOptions(), 1);
        idem::Store bstore(blocking, ns("flush"));
        idem::Executor ex(bstore, store);
        admin.checked({"SCRIPT", "FLUSH"});
        std::vector<std::future<idem::Outcome>> outs;
        for (int i = 0; i < 50; ++i)
            outs.push_back(ex.submit("x-" + std::to_string(i), "", [i](const idem::WorkContext& ctx) {
                return idem::WorkResult::success(ctx.id + "=" + std::to_string(i));
            }));
        for (int i = 0; i < 50; ++i) {
            const auto o = outs[static_cast<std::size_t>(i)].get();
            QCOMPARE(o.kind, OutcomeKind::Executed);
            QCOMPARE(o.response, "x-" + std::to_string(i) + "=" + std::to_string(i));
        }
    }

    // submit(): one id submitted 50 times at once runs once; the others are InProgress, later
    // ones replay
    void duplicatesAndConcurrentInProgress()
    {
        idem::ConnectionPool blocking(idemtest::sharedRedis(), 1);
        idem::Store store(blocking, ns(idemtest::uniqueNamespace("dup")));
        idem::AsyncPool pool(idemtest::sharedRedis(), 2);
        idem::AsyncStore async(pool, store.options());
        idem::Executor ex(store, async);
        std::atomic<int> runs{0};
        idem::ExecuteOptions eo;
        eo.runOn = onPool;
        auto work = [&](const idem::WorkContext&) {
            ++runs;
            QThread::msleep(300);
            return idem::WorkResult::success("the one");
        };
        std::vector<std::future<idem::Outcome>> first;
        for (int i = 0; i < 50; ++i)
            first.push_back(ex.submit("order-1", "{\"a\":1}", work, eo));
        int executed = 0, inProgress = 0;
        for (auto& f : first) {
            const auto o = f.get();
            executed += o.kind == OutcomeKind::Executed;
            inProgress += o.kind == OutcomeKind::InProgress;
        }
        QCOMPARE(executed, 1);
        QCOMPARE(inProgress, 49);
        for (int i = 0; i < 20; ++i) {
            const auto o = ex.submit("order-1", "{\"a\":1}", work, eo).get();
            QCOMPARE(o.kind, OutcomeKind::Replayed);
            QCOMPARE(o.response, std::string("the one"));
        }
        QCOMPARE(ex.submit("order-1", "{\"a\":2}", work, eo).get().kind, OutcomeKind::PayloadMismatch);
        QCOMPARE(runs.load(), 1);
    }

    // Work running four leases long keeps its lease (the watchdog renews it, pipelined): a
    // duplicate in the meantime is InProgress, not a takeover.
    void longWorkIsRenewed()
    {
        idem::ConnectionPool blocking(idemtest::sharedRedis(), 1);
        idem::Store store(blocking, ns(idemtest::uniqueNamespace("renew"), idem::Millis(300)));
        idem::AsyncPool pool(idemtest::sharedRedis(), 2);
        idem::AsyncStore async(pool, store.options());
        idem::Executor ex(store, async);
        idem::ExecuteOptions eo;
        eo.runOn = onPool;
        std::atomic<bool> lost{false};
        std::vector<std::future<idem::Outcome>> longOnes;
        for (int i = 0; i < 20; ++i)
            longOnes.push_back(ex.submit("long-" + std::to_string(i), "", [&](const idem::WorkContext& ctx) {
                for (int t = 0; t < 24; ++t) {
                    QThread::msleep(50);
                    if (ctx.leaseLost.stop_requested())
                        lost = true;
                }
                return idem::WorkResult::success("finished");
            }, eo));
        QTest::qWait(700);
        for (int i = 0; i < 20; ++i)
            QCOMPARE(ex.submit("long-" + std::to_string(i), "", [](auto&) { return idem::WorkResult::success("2nd"); })
                         .get()
                         .kind,
                     OutcomeKind::InProgress);
        for (auto& f : longOnes) {
            const auto o = f.get();
            QCOMPARE(o.kind, OutcomeKind::Executed);
            QCOMPARE(o.response, std::string("finished"));
        }
        QVERIFY(!lost);
    }

    // Submitted work whose renewals keep failing (the server hangs): the watchdog's pipelined
    // renewals time out, and the work is told once its lease has certainly run out - not before
    // (a failed renewal alone is not a lost lease), not long after
    void asyncRenewalsFailingUntilTheLeaseEnds()
    {
        idem::LocalServer server;
        auto opts = quick(server.connectionOptions());
        opts.commandTimeout = idem::Millis(150);
        idem::ConnectionPool blocking(opts, 1);
        idem::Store store(blocking, ns("rf", idem::Millis(600)));
        idem::AsyncPool pool(opts, 1);
        idem::AsyncStore async(pool, store.options());
        idem::Executor ex(store, async);
        idem::ExecuteOptions eo;
        eo.runOn = onPool;
        std::atomic<bool> told{false};
        std::atomic<qint64> toldAfter{-1};
        const auto o = ex.submit("job", "", [&](const idem::WorkContext& ctx) {
            QElapsedTimer since;
            server.pause(); // the lease was taken just now: it ends about 600 ms from here
            since.start();
            for (int i = 0; i < 400 && !ctx.leaseLost.stop_requested(); ++i)
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
            told = ctx.leaseLost.stop_requested();
            toldAfter = since.elapsed();
            server.resume();
            return idem::WorkResult::success("done");
        }, eo).get();
        QVERIFY(told.load());
        QVERIFY2(toldAfter >= 550, qPrintable(QString::number(toldAfter))); // not before the lease ran out
        QVERIFY2(toldAfter < 2000, qPrintable(QString::number(toldAfter)));  // and soon after it
        QVERIFY(o.workRan);
        // nobody took the lock over meanwhile: the owner's result is still stored once it can be
        QCOMPARE(o.kind, OutcomeKind::Executed);
        QCOMPARE(store.inspect("job")->state, idem::RecordState::Completed);
    }

    // minReplicas through submit(): WAIT rides in the acquire's unit; a frozen replica leaves the
    // lock unacknowledged, so it is given back and the work does not run; thawed, it runs once
    void minReplicasThroughSubmit()
    {
        idem::LocalServer primary;
        idem::LocalServerOptions ro;
        ro.extraArgs = {"--replicaof", "127.0.0.1", std::to_string(primary.port())};
        idem::LocalServer replica(ro);
        idem::Connection admin(primary.connectionOptions());
        QTRY_VERIFY_WITH_TIMEOUT(text(admin.checked({"INFO", "replication"})).find("state=online") != std::string::npos,
                                 10000);
        idem::StoreOptions so = ns("replicated", idem::Millis(3000));
        so.minReplicas = 1;
        so.replicaTimeout = idem::Millis(300);
        idem::ConnectionPool blocking(quick(primary.connectionOptions()), 1);
        idem::Store store(blocking, so);
        idem::AsyncPool pool(quick(primary.connectionOptions()), 1);
        idem::AsyncStore async(pool, so);
        idem::Executor ex(store, async);
        std::atomic<int> runs{0};
        const auto work = [&](const idem::WorkContext&) {
            ++runs;
            return idem::WorkResult::success("ok");
        };
        replica.pause();
        const auto refused = ex.submit("z", "", work).get();
        QCOMPARE(refused.kind, OutcomeKind::StoreUnavailable);
        QVERIFY2(refused.error.find("acknowledged by 0 of the 1 replica") != std::string::npos, refused.error.c_str());
        QCOMPARE(runs.load(), 0);
        QTRY_VERIFY(!store.inspect("z")); // the lock was given back
        replica.resume();
        idem::Outcome ran;
        QElapsedTimer thawed;
        thawed.start();
        while ((ran = ex.submit("z", "", work).get()).kind == OutcomeKind::StoreUnavailable && thawed.elapsed() < 10000) {
            QVERIFY(!ran.workRan); // the replica catches up: still refused, still not run
            QThread::msleep(50);
        }
        QCOMPARE(ran.kind, OutcomeKind::Executed);
        QCOMPARE(runs.load(), 1);
        QCOMPARE(ex.submit("z", "", work).get().kind, OutcomeKind::Replayed);
    }

    // Executor without an AsyncStore of its own makes one; completions arrive on the context's
    // thread through idem_qt
    void qtCompletionOnTheContextThread()
    {
        idem::ConnectionPool blocking(idemtest::sharedRedis(), 1);
        idem::Store store(blocking, ns(idemtest::uniqueNamespace("qt")));
        idem::Executor ex(store);
        QObject context;
        QThread* where = nullptr;
        idem::Outcome got;
        idem::qt::submit(ex, "q-1", "", [](auto&) { return idem::WorkResult::success("qt"); }, &context,
                         [&](const idem::Outcome& o) {
                             where = QThread::currentThread();
                             got = o;
                         });
        QTRY_VERIFY(where != nullptr);
        QCOMPARE(where, QThread::currentThread());
        QCOMPARE(got.kind, OutcomeKind::Executed);
        QCOMPARE(got.response, std::string("qt"));
    }

    void qtCompletionDroppedWhenTheContextDied()
    {
        idem::ConnectionPool blocking(idemtest::sharedRedis(), 1);
        idem::Store store(blocking, ns(idemtest::uniqueNamespace("qt")));
        idem::Executor ex(store);
        auto* context = new QObject;
        std::atomic<int> called{0};
        idem::ExecuteOptions eo;
        eo.runOn = onPool;
        for (int i = 0; i < 20; ++i)
            idem::qt::submit(ex, "gone-" + std::to_string(i), "", [](auto&) {
                QThread::msleep(100);
                return idem::WorkResult::success("late");
            }, context, [&](const idem::Outcome&) { ++called; }, eo);
        delete context;
        QTRY_COMPARE(ex.inFlight(), std::size_t(0));
        QTest::qWait(50); // anything posted would run now
        QCOMPARE(called.load(), 0);
    }
};

QTEST_GUILESS_MAIN(TestAsyncExec)
#include "tst_asyncexec.moc"
