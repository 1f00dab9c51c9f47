// The PostgreSQL store's leased mode through Executor (the same API as Redis), recovery points
// (idem.checkpoint) with the worker SIGKILLed, the upgrade from v1, `idemctl` on postgresql://
// URLs and `idemctl pg sweep`, on a private PostgreSQL server this test starts.
#include "idem/engine/executor.h"
#include "idem/errors.h"
#include "idem/pg/localpostgres.h"
#include "idem/pg/pgstore.h"
#include "idem/pg/schema.h"
#include "idem/redis/localserver.h"
#include "pgfixture.h"
#include "testsupport.h"

#include <libpq-fe.h>

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <atomic>
#include <csignal>
#include <thread>

namespace idem::sql {
extern const std::string_view v1; // the first migration, embedded in idem::pg
}

using idem::AcquireStatus;
using idem::OutcomeKind;
using idem::OwnerStatus;
using idemtest::Ctl;
using idemtest::pgSql;
using idemtest::idemctl;

namespace {

std::string uniqueId(const char* prefix) { return idemtest::uniqueNamespace(prefix); }

} // namespace

class TestPgExecutor : public QObject {
    Q_OBJECT

    std::unique_ptr<idem::LocalPostgres> pg;
    std::string url;

    std::unique_ptr<idem::PgStore> makeStore(idem::Millis lease)
    {
        idem::PgStoreOptions o;
        o.lease = lease;
        return std::make_unique<idem::PgStore>(url, o);
    }

private slots:
    void initTestCase()
    {
        pg = idemtest::startPostgres();
        url = pg->url();
    }
    void cleanupTestCase() { pg.reset(); }

    // 32 deliveries of one id at once through Executor: the work runs once; the others are told
    // it is in progress or get its result
    void exactlyOnceUnder32ConcurrentDeliveries()
    {
        auto store = makeStore(idem::Millis(5000));
        idem::Executor executor(*store);
        const std::string id = uniqueId("once");
        std::atomic<int> runs{0};
        std::vector<idem::Outcome> outs(32);
        std::vector<std::thread> threads;
        for (int i = 0; i < 32; ++i)
            threads.emplace_back([&, i] {
                outs[i] = executor.execute(id, "payload", [&](const idem::WorkContext&) {
                    ++runs;
                    std::this_thread::sleep_for(std::chrono::milliseconds(200));
                    return idem::WorkResult::success("charged");
                });
            });
        for (auto& t : threads)
            t.join();
        QCOMPARE(runs.load(), 1);
        int executed = 0;
        for (const auto& o : outs) {
            QVERIFY2(o.kind == OutcomeKind::Executed || o.kind == OutcomeKind::InProgress ||
                         o.kind == OutcomeKind::Replayed,
                     std::string(idem::nameOf(o.kind)).c_str());
            executed += o.kind == OutcomeKind::Executed;
            if (o.kind == OutcomeKind::Replayed)
                QCOMPARE(o.response, std::string("charged"));
        }
        QCOMPARE(executed, 1);
        const auto again = executor.execute(id, "payload", [&](const idem::WorkContext&) {
            ++runs;
            return idem::WorkResult::success("twice");
        });
        QCOMPARE(again.kind, OutcomeKind::Replayed);
        QCOMPARE(again.response, std::string("charged"));
        QCOMPARE(executor.execute(id, "other", [](const idem::WorkContext&) { return idem::WorkResult::success(""); })
                     .kind,
                 OutcomeKind::PayloadMismatch);
        QCOMPARE(runs.load(), 1);
    }

    // a worker that acquired and vanished: its lease runs out, the next delivery takes over with a
    // higher fence and attempt 2; the old owner's late complete is refused
    void takeoverOfAnExpiredLease()
    {
        auto store = makeStore(idem::Millis(200));
        idem::Executor executor(*store);
        const std::string id = uniqueId("takeover");
        const auto first = store->acquire(id);
        QCOMPARE(first.status, AcquireStatus::Acquired);
        QCOMPARE(executor.execute(id, "", [](const idem::WorkContext&) { return idem::WorkResult::success(""); }).kind,
                 OutcomeKind::InProgress);
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        idem::WorkContext seen;
        const auto o = executor.execute(id, "", [&](const idem::WorkContext& ctx) {
            seen = ctx;
            return idem::WorkResult::success("second");
        });
        QCOMPARE(o.kind, OutcomeKind::Executed);
        QVERIFY(o.takeover);
        QVERIFY(seen.takeover);
        QCOMPARE(seen.attempt, std::int64_t(2));
        QVERIFY(seen.fence > first.ticket.fence);
        QVERIFY(seen.phase.empty());
        const auto late = store->complete(first.ticket, "first");
        QCOMPARE(late.status, OwnerStatus::LeaseLost);
        QCOMPARE(late.currentState, std::string("COMPLETED"));
        QCOMPARE(store->acquire(id).response, std::string("second"));
    }

    // work that runs for many leases: the watchdog renews it, nobody takes over, the result is stored
    void watchdogRenewalKeepsALongWorksLease()
    {
        auto store = makeStore(idem::Millis(300));
        idem::Executor executor(*store);
        const std::string id = uniqueId("long");
        std::vector<AcquireStatus> others;
        bool lost = true;
        const auto o = executor.execute(id, "", [&](const idem::WorkContext& ctx) {
            for (int i = 0; i < 4; ++i) {
                std::this_thread::sleep_for(std::chrono::milliseconds(300));
                others.push_back(store->acquire(id).status); // a delivery during the work
            }
            lost = ctx.leaseLost.stop_requested();
            return idem::WorkResult::success("long done");
        });
        QCOMPARE(o.kind, OutcomeKind::Executed);
        QVERIFY(!lost);
        QCOMPARE(others, std::vector<AcquireStatus>(4, AcquireStatus::InProgress));
        QCOMPARE(o.attempt, std::int64_t(1));

        // without renewal the same work loses its lease to a takeover
        const std::string id2 = uniqueId("unrenewed");
        idem::ExecuteOptions noRenew;
        noRenew.renew = false;
        const auto o2 = executor.execute(id2, "", [&](const idem::WorkContext&) {
            std::this_thread::sleep_for(std::chrono::milliseconds(400));
            const auto taker = store->acquire(id2);
            if (taker.status != AcquireStatus::Acquired || !taker.takeover)
                return idem::WorkResult::failure("no takeover happened");
            return idem::WorkResult::success("too late");
        }, noRenew);
        QCOMPARE(o2.kind, OutcomeKind::LeaseLost);
    }

    void submitRunsOnPostgres()
    {
        auto store = makeStore(idem::Millis(2000));
        idem::Executor executor(*store);
        const std::string id = uniqueId("submit");
        auto f = executor.submit(id, "", [](const idem::WorkContext&) { return idem::WorkResult::success("async"); });
        const auto o = f.get();
        QCOMPARE(o.kind, OutcomeKind::Executed);
        std::vector<std::thread> pool;
        idem::ExecuteOptions onPool;
        onPool.runOn = [&](std::function<void()> task) { pool.emplace_back(std::move(task)); };
        auto replay = executor.submit(id, "", [](const idem::WorkContext&) { return idem::WorkResult::success("x"); },
                                      onPool);
        QCOMPARE(replay.get().response, std::string("async"));
        for (auto& t : pool)
            t.join();
        QVERIFY_THROWS_EXCEPTION(idem::UsageError, executor.submit("", "", [](const idem::WorkContext&) {
            return idem::WorkResult::success("");
        }));
    }

    // recovery points: an owner that checkpointed and died; the attempt that takes over is told
    // the phase and its data; a stale owner's checkpoint is refused
    void recoveryPointsReachTheTakeover()
    {
        auto store = makeStore(idem::Millis(200));
        idem::Executor executor(*store);
        const std::string id = uniqueId("phase");
        const auto first = store->acquire(id);
        QCOMPARE(store->checkpoint(first.ticket, "reserved", "r-1").status, OwnerStatus::Ok);
        QCOMPARE(store->checkpoint(first.ticket, "charged", std::string("ch\0_1", 5)).status, OwnerStatus::Ok);
        QVERIFY_THROWS_EXCEPTION(idem::UsageError, store->checkpoint(first.ticket, "", "x"));
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        std::string phase, data;
        const auto o = executor.execute(id, "", [&](const idem::WorkContext& ctx) {
            phase = ctx.phase;
            data = ctx.phaseData;
            if (!ctx.checkpoint("shipped", "s-1"))
                return idem::WorkResult::failure("checkpoint refused");
            return idem::WorkResult::success("done");
        });
        QCOMPARE(o.kind, OutcomeKind::Executed);
        QCOMPARE(phase, std::string("charged"));
        QCOMPARE(data, std::string("ch\0_1", 5));
        const auto stale = store->checkpoint(first.ticket, "late", "");
        QCOMPARE(stale.status, OwnerStatus::LeaseLost);
        QCOMPARE(stale.currentState, std::string("COMPLETED"));
        QCOMPARE(pgSql(url, "SELECT phase FROM idem.records WHERE id = '" + id + "'"), std::string("shipped"));

        // a first attempt is told nothing, also when an expired row of its id had a phase
        const std::string fresh = uniqueId("fresh");
        idem::PgStoreOptions shortKeep;
        shortKeep.lease = idem::Millis(50);
        shortKeep.staleKeep = idem::Millis(1);
        idem::PgStore quick(url, shortKeep);
        const auto gone = quick.acquire(fresh);
        QCOMPARE(quick.checkpoint(gone.ticket, "half", "h").status, OwnerStatus::Ok);
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        const auto again = quick.acquire(fresh);
        QCOMPARE(again.status, AcquireStatus::Acquired);
        QCOMPARE(again.ticket.attempt, std::int64_t(1));
        QVERIFY(again.phase.empty());
    }

    // the worker, a process of its own, checkpoints and is SIGKILLed; the next delivery resumes
    // from its recovery point and completes
    void killedWorkerResumesFromItsRecoveryPoint()
    {
        const QString worker = qEnvironmentVariable("IDEM_PGWORKER");
        if (worker.isEmpty())
            QSKIP("IDEM_PGWORKER is not set (ctest sets it)");
        const std::string id = uniqueId("killed");
        const QStringList args = {QString::fromStdString(url), QString::fromStdString(id), QStringLiteral("3000")};
        QProcess first;
        first.start(worker, args);
        QVERIFY(first.waitForStarted());
        QTRY_VERIFY_WITH_TIMEOUT(first.canReadLine() || first.state() != QProcess::Running, 20'000);
        QCOMPARE(first.readLine().trimmed(), QByteArray("checkpointed"));
        const qint64 pid = first.processId();
        ::kill(static_cast<pid_t>(pid), SIGKILL);
        QVERIFY(first.waitForFinished(5000));
        QCOMPARE(first.exitStatus(), QProcess::CrashExit);

        // its lease (3 s: a sanitizer build's process start and connect take hundreds of ms) is
        // still live: a delivery now is told so
        QProcess early;
        early.start(worker, args);
        QVERIFY(early.waitForFinished(20'000));
        QVERIFY2(early.readAllStandardOutput().contains("outcome in_progress"), "the lease was not live");

        std::this_thread::sleep_for(std::chrono::milliseconds(3100)); // the lease ran out
        QProcess second;
        second.start(worker, args);
        QVERIFY(second.waitForFinished(20'000));
        const QString out = QString::fromUtf8(second.readAllStandardOutput());
        QCOMPARE(second.exitCode(), 0);
        QVERIFY2(out.contains(QStringLiteral("resumed charged charge-%1 attempt 2").arg(pid)), qPrintable(out));
        QVERIFY2(out.contains(QStringLiteral("outcome executed")), qPrintable(out));
        auto store = makeStore(idem::Millis(1000));
        QCOMPARE(store->acquire(id).response, "shipped after charge-" + std::to_string(pid));
    }

    // PostgreSQL away: Executor fails closed, the work does not run; back, it works again
    void failClosedWithTheServerStopped()
    {
        auto store = makeStore(idem::Millis(1000));
        idem::Executor executor(*store);
        QCOMPARE(executor.execute(uniqueId("warm"), "", [](const idem::WorkContext&) {
            return idem::WorkResult::success("");
        }).kind, OutcomeKind::Executed);
        pg->stop();
        bool ran = false;
        const auto o = executor.execute(uniqueId("down"), "", [&](const idem::WorkContext&) {
            ran = true;
            return idem::WorkResult::success("must not run");
        });
        QCOMPARE(o.kind, OutcomeKind::StoreUnavailable);
        QVERIFY(!ran);
        QVERIFY(!o.workRan);
        const Ctl down = idemctl({QStringLiteral("--url"), QString::fromStdString(url), QStringLiteral("run"),
                                  QStringLiteral("--key"), QStringLiteral("down"), QStringLiteral("--"),
                                  QStringLiteral("sh"), QStringLiteral("-c"), QStringLiteral("echo ran")});
        QCOMPARE(down.exit, 69);
        QVERIFY(!down.out.contains(QStringLiteral("ran")));
        QVERIFY2(down.err.contains(QStringLiteral("command not run")), qPrintable(down.err));
        pg->start();
        QCOMPARE(executor.execute(uniqueId("up"), "", [](const idem::WorkContext&) {
            return idem::WorkResult::success("");
        }).kind, OutcomeKind::Executed);
    }

    // a v1 schema (as the previous idem installed it, with a row in it) is upgraded in place
    void upgradeFromV1()
    {
        pgSql(url, "CREATE DATABASE old");
        const std::string old = pg->url("old");
        pgSql(old, "CREATE SCHEMA idem; CREATE TABLE idem.migrations (version integer PRIMARY KEY, "
                 "applied_at timestamptz NOT NULL DEFAULT now())");
        pgSql(old, std::string(idem::sql::v1));
        pgSql(old, "INSERT INTO idem.migrations (version) VALUES (1)");
        pgSql(old, "SELECT * FROM idem.acquire('from-v1', lease => '200 ms')");
        QVERIFY_THROWS_EXCEPTION(idem::ConfigError, idem::PgStore(old).acquire("needs-the-newest"));

        const QString oldUrl = QString::fromStdString(old);
        const Ctl up = idemctl({QStringLiteral("pg"), QStringLiteral("init"), QStringLiteral("--url"), oldUrl});
        QVERIFY2(up.exit == 0, qPrintable(up.err));
        QVERIFY2(up.out.contains(QStringLiteral("upgraded from version 1 to %1").arg(idem::kPgSchemaVersion)), qPrintable(up.out));
        const Ctl again = idemctl({QStringLiteral("pg"), QStringLiteral("init"), QStringLiteral("--url"), oldUrl});
        QVERIFY2(again.out.contains(QStringLiteral("version %1, nothing to do").arg(idem::kPgSchemaVersion)), qPrintable(again.out));
        std::this_thread::sleep_for(std::chrono::milliseconds(250));
        const auto taken = idem::PgStore(old).acquire("from-v1"); // the v1 row, its lease run out
        QCOMPARE(taken.status, AcquireStatus::Acquired);
        QVERIFY(taken.takeover);
        QVERIFY(taken.phase.empty());

        const int later = idem::kPgSchemaVersion + 1;
        pgSql(old, "INSERT INTO idem.migrations (version) VALUES (" + std::to_string(later) + ")");
        const Ctl newer = idemctl({QStringLiteral("pg"), QStringLiteral("init"), QStringLiteral("--url"), oldUrl});
        QCOMPARE(newer.exit, 1);
        QVERIFY2(newer.err.contains(QStringLiteral("version %1, newer than this idem knows (%2)").arg(later).arg(idem::kPgSchemaVersion)), qPrintable(newer.err));
    }
};

QTEST_GUILESS_MAIN(TestPgExecutor)

#include "tst_pgexecutor.moc"
