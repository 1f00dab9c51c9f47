// Races on one id: threads, processes, a paused owner, and lease renewal.
#include "idem/engine/executor.h"
#include "idem/engine/store.h"
#include "testsupport.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <atomic>
#include <csignal>
#include <thread>

using idem::OutcomeKind;

class TestConcurrency : public QObject {
    Q_OBJECT

    std::unique_ptr<idem::ConnectionPool> pool;

    std::int64_t listLength(const std::string& key)
    {
        idem::Connection c(idemtest::sharedRedis());
        return idem::reply::integer(c.checked({"LLEN", key}).get());
    }

private slots:
    void initTestCase() { pool = std::make_unique<idem::ConnectionPool>(idemtest::sharedRedis(), 40); }

    // 5a. 32 threads on one id: the work runs exactly once; the rest are in progress or replayed
    void threadsRaceOnOneId()
    {
        idem::StoreOptions so;
        so.keyNamespace = idemtest::uniqueNamespace("thr");
        idem::Store store(*pool, so);
        idem::Executor ex(store);
        const std::string ledger = so.keyNamespace + ":ledger";
        for (int round = 0; round < 5; ++round) {
            const std::string id = "payment-" + std::to_string(round);
            std::atomic<int> runs{0}, inProgress{0}, replayed{0}, other{0};
            std::atomic<bool> go{false};
            std::vector<std::thread> threads;
            for (int t = 0; t < 32; ++t) {
                threads.emplace_back([&, t] {
                    while (!go.load())
                        std::this_thread::yield();
                    auto o = ex.execute(id, R"({"amount":42})", [&](const idem::WorkContext& ctx) {
                        ++runs;
                        idem::Connection c(idemtest::sharedRedis());
                        c.checked({"RPUSH", ledger, id}); // ground truth, independent of idem
                        std::this_thread::sleep_for(std::chrono::milliseconds(30));
                        return idem::WorkResult::success("charged by thread " + std::to_string(t) +
                                                         " fence " + std::to_string(ctx.fence));
                    });
                    if (o.kind == OutcomeKind::InProgress)
                        ++inProgress;
                    else if (o.kind == OutcomeKind::Replayed)
                        ++replayed;
                    else if (o.kind != OutcomeKind::Executed)
                        ++other;
                });
            }
            go = true;
            for (auto& t : threads)
                t.join();
            QCOMPARE(runs.load(), 1);
            QCOMPARE(other.load(), 0);
            QCOMPARE(inProgress.load() + replayed.load(), 31);
        }
        QCOMPARE(listLength(ledger), std::int64_t(5));
    }

    // 5b. 8 processes (idemctl run) on one id: the command runs exactly once
    void processesRaceOnOneId()
    {
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        const QString ns = QString::fromStdString(idemtest::uniqueNamespace("proc"));
        const QString url = QString::fromStdString(idemtest::sharedRedisUrl());
        for (int round = 0; round < 3; ++round) {
            const QString file = tmp.filePath(QStringLiteral("ran-%1").arg(round));
            const QString key = QStringLiteral("order-%1").arg(round);
            std::vector<std::unique_ptr<QProcess>> procs;
            for (int i = 0; i < 8; ++i) {
                auto p = std::make_unique<QProcess>();
                p->start(idemtest::idemctlPath(),
                         {QStringLiteral("--url"), url, QStringLiteral("--namespace"), ns, QStringLiteral("run"),
                          QStringLiteral("--key"), key, QStringLiteral("--"), QStringLiteral("sh"), QStringLiteral("-c"),
                          QStringLiteral("echo ran >> '%1'; sleep 0.2; echo receipt-%2").arg(file).arg(i)});
                procs.push_back(std::move(p));
            }
            int zero = 0, busy = 0;
            QSet<QByteArray> outputs;
            for (auto& p : procs) {
                QVERIFY(p->waitForFinished(20000));
                QCOMPARE(p->exitStatus(), QProcess::NormalExit);
                const int code = p->exitCode();
                QVERIFY2(code == 0 || code == 75, qPrintable(QString::number(code) + QString::fromUtf8(p->readAllStandardError())));
                if (code == 0) {
                    ++zero;
                    outputs.insert(p->readAllStandardOutput());
                } else {
                    ++busy;
                }
            }
            QFile f(file);
            QVERIFY(f.open(QIODevice::ReadOnly));
            QCOMPARE(f.readAll(), QByteArray("ran\n")); // exactly one execution
            QCOMPARE(zero + busy, 8);
            QVERIFY(zero >= 1);
            QCOMPARE(outputs.size(), 1); // replays print the executor's receipt
        }
    }

    // 6. an owner paused (SIGSTOP) past its lease: another takes over; the paused owner's late
    //    complete is rejected and the new owner's result stands
    void pausedOwnerLosesItsLease()
    {
        const QString ns = QString::fromStdString(idemtest::uniqueNamespace("stop"));
        const QString url = QString::fromStdString(idemtest::sharedRedisUrl());
        const QStringList common = {QStringLiteral("--url"), url, QStringLiteral("--namespace"), ns};
        QProcess a;
        a.start(idemtest::idemctlPath(), common + QStringList{QStringLiteral("run"), QStringLiteral("--key"),
                                                               QStringLiteral("gc"), QStringLiteral("--lease"),
                                                               QStringLiteral("400ms"), QStringLiteral("--"),
                                                               QStringLiteral("sh"), QStringLiteral("-c"),
                                                               QStringLiteral("sleep 1; echo from-A")});
        QVERIFY(a.waitForStarted());
        idem::StoreOptions so;
        so.keyNamespace = ns.toStdString();
        idem::Store store(*pool, so);
        QTRY_VERIFY_WITH_TIMEOUT(store.inspect("gc").has_value(), 5000);
        const auto fenceA = store.inspect("gc")->fence;
        ::kill(static_cast<pid_t>(a.processId()), SIGSTOP);
        QThread::msleep(700); // well past A's lease; its watchdog cannot renew

        auto b = idemtest::runIdemctl(common + QStringList{QStringLiteral("run"), QStringLiteral("--key"),
                                                           QStringLiteral("gc"), QStringLiteral("--"),
                                                           QStringLiteral("echo"), QStringLiteral("from-B")});
        QCOMPARE(b.exitCode, 0);
        QCOMPARE(b.out, QByteArray("from-B\n"));
        const auto rec = store.inspect("gc");
        QCOMPARE(rec->state, idem::RecordState::Completed);
        QVERIFY(rec->fence > fenceA);
        QCOMPARE(rec->attempt, std::int64_t(2));

        ::kill(static_cast<pid_t>(a.processId()), SIGCONT);
        QVERIFY(a.waitForFinished(10000));
        QCOMPARE(a.exitCode(), 70); // ran, but the result is not stored
        QVERIFY(QString::fromUtf8(a.readAllStandardError()).contains(QStringLiteral("lease")));
        auto c = idemtest::runIdemctl(common + QStringList{QStringLiteral("run"), QStringLiteral("--key"),
                                                           QStringLiteral("gc"), QStringLiteral("--"),
                                                           QStringLiteral("echo"), QStringLiteral("from-C")});
        QCOMPARE(c.exitCode, 0);
        QCOMPARE(c.out, QByteArray("from-B\n")); // B's result stands

        // the same at the library level: a worker that cannot renew is taken over and rejected
        idem::Executor ex1(store), ex2(store);
        idem::ExecuteOptions noRenew;
        noRenew.renew = false;
        noRenew.lease = idem::Millis(100);
        idem::Outcome slow;
        std::thread t([&] {
            slow = ex1.execute("lib-gc", "", [](const idem::WorkContext&) {
                std::this_thread::sleep_for(std::chrono::milliseconds(400));
                return idem::WorkResult::success("slow");
            }, noRenew);
        });
        QThread::msleep(200);
        auto fast = ex2.execute("lib-gc", "", [](const idem::WorkContext& ctx) {
            return idem::WorkResult::success("fast, fence " + std::to_string(ctx.fence));
        });
        t.join();
        QCOMPARE(fast.kind, OutcomeKind::Executed);
        QVERIFY(fast.takeover);
        QCOMPARE(slow.kind, OutcomeKind::LeaseLost);
        QVERIFY(slow.workRan);
        QCOMPARE(store.inspect("lib-gc")->response.value_or(""), fast.response);
    }

    // 7. renewal keeps a long job's lease alive; when renewal fails the work is told
    void renewalKeepsLeaseAndReportsLoss()
    {
        idem::StoreOptions so;
        so.keyNamespace = idemtest::uniqueNamespace("renew");
        so.lease = idem::Millis(300);
        idem::Store store(*pool, so);
        idem::Executor ex(store), other(store);
        // a 1 s job on a 300 ms lease: while it runs, duplicates every 25 ms must see it in progress
        int checks = 0, notInProgress = 0;
        auto o = ex.execute("long-job", "", [&](const idem::WorkContext& ctx) {
            for (int i = 0; i < 40 && !ctx.leaseLost.stop_requested(); ++i) {
                auto a = other.store().acquire("long-job", "");
                ++checks;
                if (a.status != idem::AcquireStatus::InProgress)
                    ++notInProgress;
                std::this_thread::sleep_for(std::chrono::milliseconds(25));
            }
            return idem::WorkResult::success(ctx.leaseLost.stop_requested() ? "lost" : "kept");
        });
        QCOMPARE(o.kind, OutcomeKind::Executed);
        QCOMPARE(o.response, std::string("kept"));
        QCOMPARE(checks, 40);
        QCOMPARE(notInProgress, 0);

        // an operator force-fails the running job: the next renewal says so and the work is told
        std::atomic<bool> told{false};
        std::thread op([&] {
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            store.forceFail("doomed", "operator stopped it", false, "test");
        });
        auto lost = ex.execute("doomed", "", [&](const idem::WorkContext& ctx) {
            for (int i = 0; i < 200 && !ctx.leaseLost.stop_requested(); ++i)
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
            told = ctx.leaseLost.stop_requested();
            return idem::WorkResult::success("should not be stored");
        });
        op.join();
        QVERIFY(told.load());
        QCOMPARE(lost.kind, OutcomeKind::LeaseLost);
        QCOMPARE(store.inspect("doomed")->state, idem::RecordState::Failed);
    }
};

QTEST_GUILESS_MAIN(TestConcurrency)
#include "tst_concurrency.moc"
