// The transactional mode on a private PostgreSQL (idem::LocalPostgres): acquire, the business
// write and complete in one transaction; the work's failures; the backend killed before the
// commit; concurrent deliveries of one id (at read committed and under serializable); a
// duplicate's lock timeout, which leaves the work's own statements alone.
#include "idem/errors.h"
#include "idem/pg/localpostgres.h"
#include "idem/pg/pgstore.h"
#include "pgfixture.h"
#include "testsupport.h"

#include <libpq-fe.h>

#include <QtTest>

#include <atomic>
#include <thread>

using idem::AcquireStatus;
using idem::OutcomeKind;
using idemtest::pgSql;

namespace {

std::string uniqueId(const char* prefix) { return idemtest::uniqueNamespace(prefix); }

// What n deliveries of one id at once made of it
struct Deliveries {
    int executed = 0, replayed = 0;
    int runs = 0;         // times the work ran
    std::string failures; // the outcomes neither executed nor replayed, or with another response
};

// n executes of one id, each on its own thread and in its own transaction; the work writes an
// order row and holds the id 200 ms, so that the others wait on its row
Deliveries deliverAtOnce(idem::PgStore& store, const std::string& id, std::size_t n)
{
    std::atomic<int> runs{0};
    std::vector<idem::Outcome> outcomes(n);
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < n; ++i)
        threads.emplace_back([&, i] {
            outcomes[i] = store.execute(id, "same", [&](const idem::PgWorkContext& ctx) {
                ++runs;
                idemtest::workSql(ctx.connection, "INSERT INTO orders VALUES ('" + ctx.id + "', 'once')");
                std::this_thread::sleep_for(std::chrono::milliseconds(200));
                return idem::WorkResult::success("charged");
            });
        });
    for (auto& t : threads)
        t.join();
    Deliveries d;
    d.runs = runs.load();
    for (const auto& o : outcomes) {
        if (o.kind == OutcomeKind::Executed && o.response == "charged")
            ++d.executed;
        else if (o.kind == OutcomeKind::Replayed && o.response == "charged")
            ++d.replayed;
        else
            d.failures += "[" + std::to_string(static_cast<int>(o.kind)) + " " + o.response + " " + o.error + "]";
    }
    return d;
}

} // namespace

class TestPgTransactional : public QObject {
    Q_OBJECT

    std::unique_ptr<idem::LocalPostgres> pg;
    std::string url;
    std::unique_ptr<idem::PgStore> store;

private slots:
    void initTestCase()
    {
        pg = idemtest::startPostgres();
        url = pg->url();
        pgSql(url, "CREATE TABLE orders (id text PRIMARY KEY, note text)");
    }
    void cleanupTestCase()
    {
        store.reset();
        pg.reset();
    }
    void init()
    {
        idem::PgStoreOptions o;
        o.lease = idem::Millis(2000);
        store = std::make_unique<idem::PgStore>(url, o);
    }

    // acquire, the business write and complete in one transaction; a duplicate replays
    void transactionalRunsOnce()
    {
        const std::string id = uniqueId("tx");
        int runs = 0;
        auto work = [&](const idem::PgWorkContext& ctx) {
            ++runs;
            idemtest::workSql(ctx.connection, "INSERT INTO orders VALUES ('" + ctx.id + "', 'fence " +
                                        std::to_string(ctx.fence) + "')");
            return idem::WorkResult::success("order " + ctx.id);
        };
        const auto first = store->execute(id, R"({"amount": 10})", work);
        QCOMPARE(first.kind, OutcomeKind::Executed);
        QVERIFY(first.workRan);
        QCOMPARE(first.response, "order " + id);
        const auto again = store->execute(id, R"({ "amount":10 })", work);
        QCOMPARE(again.kind, OutcomeKind::Replayed);
        QCOMPARE(again.response, "order " + id);
        QVERIFY(!again.workRan);
        QCOMPARE(store->execute(id, R"({"amount": 11})", work).kind, OutcomeKind::PayloadMismatch);
        QCOMPARE(runs, 1);
        QCOMPARE(pgSql(url, "SELECT count(*) FROM orders WHERE id = '" + id + "'"), std::string("1"));
    }

    // the work's failure: release rolls back everything; retryable and terminal keep the failure
    // (not the work's writes); an exception counts as onException
    void transactionalFailures()
    {
        const std::string id = uniqueId("txf");
        auto failing = [&](idem::FailPolicy p) {
            return [&, p](const idem::PgWorkContext& ctx) {
                idemtest::workSql(ctx.connection, "INSERT INTO orders VALUES ('" + ctx.id + "', 'must vanish')");
                return idem::WorkResult::failure("declined", p);
            };
        };
        QCOMPARE(store->execute(id, "", failing(idem::FailPolicy::Release)).kind, OutcomeKind::Failed);
        QVERIFY(!store->inspect(id));
        QCOMPARE(store->execute(id, "", failing(idem::FailPolicy::Retryable)).kind, OutcomeKind::Failed);
        QCOMPARE(store->inspect(id)->state, idem::RecordState::Failed);
        QCOMPARE(store->execute(id, "", failing(idem::FailPolicy::Terminal)).attempt, std::int64_t(2));
        const auto stored = store->execute(id, "", failing(idem::FailPolicy::Release));
        QCOMPARE(stored.kind, OutcomeKind::Failed);
        QCOMPARE(stored.error, std::string("declined"));
        QVERIFY(!stored.workRan);
        QCOMPARE(pgSql(url, "SELECT count(*) FROM orders WHERE id = '" + id + "'"), std::string("0"));

        // a failed statement aborts the transaction: a failure, whatever the work returned
        const std::string id2 = uniqueId("txf");
        const auto broken = store->execute(id2, "", [](const idem::PgWorkContext& ctx) {
            try {
                idemtest::workSql(ctx.connection, "INSERT INTO no_such_table VALUES (1)");
            } catch (const std::exception&) {
            }
            return idem::WorkResult::success("looks fine");
        });
        QCOMPARE(broken.kind, OutcomeKind::Failed);
        QVERIFY(!store->inspect(id2));
        idem::PgExecuteOptions o;
        o.onException = idem::FailPolicy::Terminal;
        const auto thrown = store->execute(id2, "", [](const idem::PgWorkContext&) -> idem::WorkResult {
            throw std::runtime_error("boom");
        }, o);
        QCOMPARE(thrown.kind, OutcomeKind::Failed);
        QCOMPARE(store->acquire(id2).error, std::string("boom"));
    }

    // the backend is killed between the business write and the commit: neither the write nor the
    // record nor a lock remains, and the redelivery runs once
    void transactionalBackendKilledBeforeCommit()
    {
        const std::string id = uniqueId("kill");
        std::atomic<int> runs{0};
        bool kill = true;
        auto work = [&](const idem::PgWorkContext& ctx) {
            ++runs;
            idemtest::workSql(ctx.connection, "INSERT INTO orders VALUES ('" + ctx.id + "', 'attempt')");
            // from another connection, waiting until the backend is gone
            if (kill && pgSql(url, "SELECT pg_terminate_backend(" + std::to_string(PQbackendPID(ctx.connection)) +
                                     ", 10000)") != "t")
                throw std::runtime_error("the backend was not terminated");
            return idem::WorkResult::success("order " + ctx.id);
        };
        const auto killed = store->execute(id, "payload", work);
        QCOMPARE(killed.kind, OutcomeKind::StoreUnavailable);
        QVERIFY(killed.workRan);
        QVERIFY2(killed.error.find("PostgreSQL") != std::string::npos, killed.error.c_str());
        QCOMPARE(pgSql(url, "SELECT count(*) FROM orders WHERE id = '" + id + "'"), std::string("0"));
        QCOMPARE(pgSql(url, "SELECT count(*) FROM idem.records WHERE id = '" + id + "'"), std::string("0"));
        QCOMPARE(pgSql(url, "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation "
                          "WHERE c.relname IN ('records', 'orders') AND l.pid <> pg_backend_pid()"),
                 std::string("0"));

        kill = false;
        idem::PgExecuteOptions quick;
        quick.lockTimeout = idem::Millis(1000); // a lock left behind would answer InProgress
        const auto redelivered = store->execute(id, "payload", work, quick);
        QCOMPARE(redelivered.kind, OutcomeKind::Executed);
        QCOMPARE(store->execute(id, "payload", work, quick).kind, OutcomeKind::Replayed);
        QCOMPARE(runs.load(), 2);
        QCOMPARE(pgSql(url, "SELECT count(*) FROM orders WHERE id = '" + id + "'"), std::string("1"));
    }

    // 16 deliveries of one id at once, each its own transaction: one effect, 15 replays
    void sixteenConcurrentTransactions()
    {
        const std::string id = uniqueId("c16");
        const Deliveries d = deliverAtOnce(*store, id, 16);
        QCOMPARE(d.failures, std::string());
        QCOMPARE(d.executed, 1);
        QCOMPARE(d.replayed, 15);
        QCOMPARE(d.runs, 1);
        QCOMPARE(pgSql(url, "SELECT count(*) FROM orders WHERE id = '" + id + "'"), std::string("1"));
    }

    // a duplicate that may not wait: lock_timeout, then InProgress, the work not run; a blocking
    // acquire under a lock_timeout too
    void duplicateWithLockTimeoutIsInProgress()
    {
        const std::string id = uniqueId("lt");
        std::atomic<bool> inside{false};
        std::thread holder([&] {
            store->execute(id, "", [&](const idem::PgWorkContext&) {
                inside = true;
                std::this_thread::sleep_for(std::chrono::milliseconds(800));
                return idem::WorkResult::success("held");
            });
        });
        QTRY_VERIFY(inside.load());
        idem::PgExecuteOptions o;
        o.lockTimeout = idem::Millis(100);
        bool ran = false;
        const auto busy = store->execute(id, "", [&](const idem::PgWorkContext&) {
            ran = true;
            return idem::WorkResult::success("twice");
        }, o);
        // the blocking acquire on connections with a lock_timeout of their own says the same
        idem::PgStore strict(url + "?options=-c%20lock_timeout%3D100");
        const idem::AcquireResult held = strict.acquire(id);
        holder.join();
        QCOMPARE(busy.kind, OutcomeKind::InProgress);
        QVERIFY(!ran);
        QCOMPARE(held.status, AcquireStatus::InProgress);
        QCOMPARE(store->acquire(id).response, std::string("held"));
    }

    // lockTimeout bounds the duplicate's wait on the id only: the work's own statement, waiting
    // on a row another transaction holds for longer, is not cancelled
    void lockTimeoutLeavesTheWorksStatementsAlone()
    {
        const std::string id = uniqueId("ltwork");
        pgSql(url, "INSERT INTO orders VALUES ('" + id + "', 'before')");
        std::unique_ptr<PGconn, decltype(&PQfinish)> other(PQconnectdb(url.c_str()), &PQfinish);
        PQclear(PQexec(other.get(), "BEGIN"));
        PQclear(PQexec(other.get(), ("UPDATE orders SET note = 'other' WHERE id = '" + id + "'").c_str()));
        std::thread release([&] {
            std::this_thread::sleep_for(std::chrono::milliseconds(600));
            PQclear(PQexec(other.get(), "ROLLBACK"));
        });
        idem::PgExecuteOptions o;
        o.lockTimeout = idem::Millis(100);
        std::string during;
        const auto out = store->execute(id, "", [&](const idem::PgWorkContext& ctx) {
            idemtest::workSql(ctx.connection, "UPDATE orders SET note = 'work' WHERE id = '" + ctx.id + "'");
            std::unique_ptr<PGresult, decltype(&PQclear)> r(PQexec(ctx.connection, "SHOW lock_timeout"), &PQclear);
            during = PQgetvalue(r.get(), 0, 0);
            return idem::WorkResult::success("waited");
        }, o);
        release.join();
        QVERIFY2(out.kind == OutcomeKind::Executed, out.error.c_str());
        QCOMPARE(during, std::string("0")); // the session's own value, as before the acquire
        QCOMPARE(pgSql(url, "SELECT note FROM orders WHERE id = '" + id + "'"), std::string("work"));
    }

    // under serializable (or repeatable read) by default, the duplicates that waited for the
    // first transaction replay its result: their acquire runs again in a new snapshot
    void serializableDuplicatesReplay()
    {
        const std::string serializable = url + "?options=-c%20default_transaction_isolation%3Dserializable";
        QCOMPARE(pgSql(serializable, "SHOW transaction_isolation"), std::string("serializable"));
        idem::PgStore strict(serializable);
        const std::string id = uniqueId("ser");
        const Deliveries d = deliverAtOnce(strict, id, 6);
        QCOMPARE(d.failures, std::string());
        QCOMPARE(d.executed, 1);
        QCOMPARE(d.replayed, 5);
        QCOMPARE(d.runs, 1);
        QCOMPARE(pgSql(url, "SELECT count(*) FROM orders WHERE id = '" + id + "'"), std::string("1"));
    }
};

QTEST_GUILESS_MAIN(TestPgTransactional)
#include "tst_pgtransactional.moc"
