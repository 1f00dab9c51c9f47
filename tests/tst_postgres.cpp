// The PostgreSQL store on a private PostgreSQL server this test starts (idem::LocalPostgres): the
// state machine as SQL functions, the transactional mode with its backend killed before the commit,
// 16 concurrent transactions on one id, PostgreSQL away, and `idemctl pg init`.
#include "idem/errors.h"
#include "idem/pg/localpostgres.h"
#include "idem/pg/pgstore.h"
#include "idem/pg/schema.h"
#include "pgfixture.h"
#include "testsupport.h"

#include <libpq-fe.h>

#include <QtTest>

#include <atomic>
#include <map>
#include <optional>
#include <thread>

using idem::AcquireStatus;
using idem::AdminStatus;
using idem::OutcomeKind;
using idem::OwnerStatus;
using idemtest::Ctl;
using idemtest::pgSql;
using idemtest::idemctl;

namespace {

// A statement of the work, on the transaction's connection; a failure throws.
void workSql(PGconn* c, const std::string& query)
{
    std::unique_ptr<PGresult, decltype(&PQclear)> r(PQexec(c, query.c_str()), &PQclear);
    if (PQresultStatus(r.get()) != PGRES_COMMAND_OK && PQresultStatus(r.get()) != PGRES_TUPLES_OK)
        throw std::runtime_error(PQresultErrorMessage(r.get()));
}

std::string uniqueId(const char* prefix) { return idemtest::uniqueNamespace(prefix); }

} // namespace

class TestPostgres : public QObject {
    Q_OBJECT

    std::unique_ptr<idem::LocalPostgres> pg; // one server for this process, stopped at its end
    std::string url;
    std::unique_ptr<idem::PgStore> store;

    idem::PgStore& quickStore(idem::Millis lease)
    {
        idem::PgStoreOptions o;
        o.lease = lease;
        store = std::make_unique<idem::PgStore>(url, o);
        return *store;
    }

private slots:
    void initTestCase()
    {
        pg = idemtest::startPostgres(false); // installed here, to see what the first install says
        url = pg->url();
        const idem::PgSchemaChange first = idem::installPgSchema(url);
        QCOMPARE(first.before, 0);
        QCOMPARE(first.after, idem::kPgSchemaVersion);
        const idem::PgSchemaChange again = idem::installPgSchema(pg->socketConninfo()); // and over the socket
        QCOMPARE(again.before, idem::kPgSchemaVersion);
        pgSql(url, "CREATE TABLE orders (id text PRIMARY KEY, note text)");
    }
    void cleanupTestCase()
    {
        store.reset();
        pg.reset();
    }
    void init() { quickStore(idem::Millis(2000)); }

    void acquireDuplicateInProgressMismatch()
    {
        const std::string id = uniqueId("a");
        const auto a = store->acquire(id, "fp-1");
        QCOMPARE(a.status, AcquireStatus::Acquired);
        QCOMPARE(a.ticket.attempt, std::int64_t(1));
        QVERIFY(a.ticket.fence > 0);
        QVERIFY(!a.ticket.token.empty());
        QVERIFY(!a.takeover);
        QVERIFY(a.ticket.leaseUntilMs > a.serverNowMs);

        const auto busy = store->acquire(id, "fp-1");
        QCOMPARE(busy.status, AcquireStatus::InProgress);
        QVERIFY(busy.remainingMs > 0 && busy.remainingMs <= 2000);
        QCOMPARE(busy.fence, a.ticket.fence);

        const auto other = store->acquire(id, "fp-2");
        QCOMPARE(other.status, AcquireStatus::Mismatch);
        QCOMPARE(other.storedFingerprint, std::string("fp-1"));

        const std::string binary("receipt\0\xff\x01", 10); // bytea: any bytes
        QCOMPARE(store->complete(a.ticket, binary).status, OwnerStatus::Ok);
        QCOMPARE(store->complete(a.ticket, binary).status, OwnerStatus::Ok); // a retry of a lost reply

        const auto dup = store->acquire(id, "fp-1");
        QCOMPARE(dup.status, AcquireStatus::Duplicate);
        QCOMPARE(dup.response, binary);
        QCOMPARE(store->acquire(id).status, AcquireStatus::Duplicate); // no fingerprint: not checked
        QCOMPARE(store->acquire(id, "fp-2").status, AcquireStatus::Mismatch);

        const auto rec = store->inspect(id);
        QVERIFY(rec);
        QCOMPARE(rec->state, idem::RecordState::Completed);
        QCOMPARE(*rec->response, binary);
        QCOMPARE(rec->fingerprint, std::string("fp-1"));
        QVERIFY(rec->ttlMs > 23 * 3'600'000LL);
        QVERIFY(!store->inspect(uniqueId("never")));
    }

    void failPolicies()
    {
        const std::string id = uniqueId("f");
        auto a = store->acquire(id);
        idem::Ticket wrong = a.ticket;
        wrong.token = "00000000-0000-0000-0000-000000000000";
        const auto lost = store->fail(wrong, idem::FailPolicy::Terminal, "no");
        QCOMPARE(lost.status, OwnerStatus::LeaseLost);
        QCOMPARE(lost.currentState, std::string("STARTED"));

        // release: the row goes, the next delivery is a first attempt with a higher fence
        QCOMPARE(store->fail(a.ticket, idem::FailPolicy::Release, "flaky").status, OwnerStatus::Ok);
        QVERIFY(!store->inspect(id));
        auto b = store->acquire(id);
        QCOMPARE(b.status, AcquireStatus::Acquired);
        QCOMPARE(b.ticket.attempt, std::int64_t(1));
        QVERIFY(b.ticket.fence > a.ticket.fence);

        // retryable: FAILED kept, the next acquire is attempt 2
        QCOMPARE(store->fail(b.ticket, idem::FailPolicy::Retryable, "try later").status, OwnerStatus::Ok);
        QCOMPARE(store->inspect(id)->state, idem::RecordState::Failed);
        QVERIFY(!store->inspect(id)->terminal);
        auto c = store->acquire(id);
        QCOMPARE(c.status, AcquireStatus::Acquired);
        QCOMPARE(c.ticket.attempt, std::int64_t(2));
        QVERIFY(c.ticket.fence > b.ticket.fence);
        QVERIFY(!c.takeover);

        // terminal: duplicates get the failure back
        QCOMPARE(store->fail(c.ticket, idem::FailPolicy::Terminal, "card declined").status, OwnerStatus::Ok);
        const auto d = store->acquire(id);
        QCOMPARE(d.status, AcquireStatus::FailedTerminal);
        QCOMPARE(d.error, std::string("card declined"));
        QVERIFY(store->inspect(id)->terminal);
        QCOMPARE(store->complete(c.ticket, "late").status, OwnerStatus::LeaseLost);
    }

    void leaseTakeoverWithHigherFence()
    {
        quickStore(idem::Millis(800)); // long enough for the second acquire under sanitizers
        const std::string id = uniqueId("t");
        const auto a = store->acquire(id);
        QCOMPARE(a.status, AcquireStatus::Acquired);
        QCOMPARE(store->acquire(id).status, AcquireStatus::InProgress);
        QTest::qWait(1000);
        QVERIFY(store->inspect(id)->stale);
        const auto b = store->acquire(id);
        QCOMPARE(b.status, AcquireStatus::Acquired);
        QVERIFY(b.takeover);
        QCOMPARE(b.ticket.attempt, std::int64_t(2));
        QVERIFY(b.ticket.fence > a.ticket.fence);
        QVERIFY(b.ticket.token != a.ticket.token);

        const auto late = store->complete(a.ticket, "from the first owner");
        QCOMPARE(late.status, OwnerStatus::LeaseLost);
        QCOMPARE(late.currentState, std::string("STARTED"));
        QCOMPARE(store->renew(a.ticket).status, OwnerStatus::LeaseLost);
        QCOMPARE(store->complete(b.ticket, "from the second").status, OwnerStatus::Ok);
        QCOMPARE(store->acquire(id).response, std::string("from the second"));
    }

    void completeAfterLeaseRanOutWhenNobodyTookOver()
    {
        quickStore(idem::Millis(200));
        const std::string id = uniqueId("late");
        const auto a = store->acquire(id);
        QTest::qWait(300);
        QCOMPARE(store->complete(a.ticket, "still mine").status, OwnerStatus::Ok);
        QCOMPARE(store->acquire(id).status, AcquireStatus::Duplicate);
    }

    void renewExtendsTheLease()
    {
        quickStore(idem::Millis(500));
        const std::string id = uniqueId("r");
        const auto a = store->acquire(id);
        QTest::qWait(300);
        const auto r = store->renew(a.ticket, idem::Millis(2000));
        QCOMPARE(r.status, OwnerStatus::Ok);
        QVERIFY(r.leaseUntilMs >= a.ticket.leaseUntilMs + 1500);
        QVERIFY(r.serverNowMs > 0);
        QTest::qWait(400); // past the first lease
        QCOMPARE(store->acquire(id).status, AcquireStatus::InProgress);
        QVERIFY(!store->inspect(id)->stale);
        QCOMPARE(store->renew(idem::Ticket{uniqueId("none"), a.ticket.token, 0, 0, 0}).currentState,
                 std::string("missing"));
    }

    void forceFail()
    {
        const std::string id = uniqueId("ff");
        const auto a = store->acquire(id);
        const auto ff = store->forceFail(id, "stuck for an hour", false, "alice");
        QCOMPARE(ff.status, AdminStatus::Ok);
        QCOMPARE(ff.previousState, std::string("STARTED"));
        const auto rec = store->inspect(id);
        QCOMPARE(rec->state, idem::RecordState::Failed);
        QCOMPARE(rec->op, std::string("force_fail"));
        QCOMPARE(rec->opBy, std::string("alice"));
        QCOMPARE(rec->opReason, std::string("stuck for an hour"));
        QVERIFY(rec->owner.empty());
        // the running owner finds out at its next renewal or completion
        QCOMPARE(store->renew(a.ticket).status, OwnerStatus::LeaseLost);
        QCOMPARE(store->complete(a.ticket, "too late").currentState, std::string("FAILED"));
        // retryable: the next delivery runs again
        const auto b = store->acquire(id);
        QCOMPARE(b.status, AcquireStatus::Acquired);
        QCOMPARE(b.ticket.attempt, std::int64_t(2));
        QCOMPARE(store->complete(b.ticket, "done").status, OwnerStatus::Ok);
        const auto refused = store->forceFail(id, "oops", true, "alice");
        QCOMPARE(refused.status, AdminStatus::Refused);
        QCOMPARE(refused.previousState, std::string("COMPLETED"));
        QCOMPARE(store->forceFail(uniqueId("none"), "", false, "alice").status, AdminStatus::NotFound);

        const std::string id2 = uniqueId("ff");
        store->acquire(id2);
        QCOMPARE(store->forceFail(id2, "poison message", true, "bob").status, AdminStatus::Ok);
        const auto t = store->acquire(id2);
        QCOMPARE(t.status, AcquireStatus::FailedTerminal);
        QCOMPARE(t.error, std::string("poison message"));
    }

    void purgeKeepsFencesRising()
    {
        const std::string id = uniqueId("p");
        const auto a = store->acquire(id);
        store->complete(a.ticket, "one");
        const auto p = store->purge(id, "carol", "rerun");
        QCOMPARE(p.status, AdminStatus::Ok);
        QCOMPARE(p.previousState, std::string("COMPLETED"));
        QCOMPARE(store->purge(id, "carol").status, AdminStatus::NotFound);
        const auto b = store->acquire(id);
        QCOMPARE(b.status, AcquireStatus::Acquired);
        QCOMPARE(b.ticket.attempt, std::int64_t(1));
        QVERIFY(b.ticket.fence > a.ticket.fence);
        QCOMPARE(pgSql(url, "SELECT by || ' ' || reason || ' ' || fence FROM idem.operations WHERE op = 'purge' "
                          "AND id = '" + id + "'"),
                 "carol rerun " + std::to_string(a.ticket.fence));
    }

    void expiredRowsCountAsAbsent()
    {
        const std::string id = uniqueId("x");
        const auto a = store->acquire(id, "fp");
        QCOMPARE(store->complete(a.ticket, "kept briefly", idem::Millis(600)).status, OwnerStatus::Ok);
        QCOMPARE(store->acquire(id, "fp").status, AcquireStatus::Duplicate);
        QTest::qWait(800);
        QCOMPARE(store->inspect(id)->state, idem::RecordState::Expired);
        QCOMPARE(store->purge(id, "x").status, AdminStatus::NotFound);
        const std::string id2 = uniqueId("x");
        const auto b = store->acquire(id2, "fp");
        store->complete(b.ticket, "kept briefly", idem::Millis(200));
        QTest::qWait(300);
        const auto c = store->acquire(id2, "another payload"); // absent: no mismatch either
        QCOMPARE(c.status, AcquireStatus::Acquired);
        QCOMPARE(c.ticket.attempt, std::int64_t(1));
        QVERIFY(c.ticket.fence > b.ticket.fence);
    }

    void badArguments()
    {
        QVERIFY_THROWS_EXCEPTION(idem::UsageError, store->acquire(""));
        QVERIFY_THROWS_EXCEPTION(idem::UsageError, store->acquire(std::string("a\0b", 3)));
        QVERIFY_THROWS_EXCEPTION(idem::UsageError, store->acquire(std::string(1025, 'x')));
        const auto a = store->acquire(uniqueId("big"));
        QVERIFY_THROWS_EXCEPTION(idem::UsageError, store->complete(a.ticket, std::string(512 * 1024 + 1, 'r')));
    }

    // acquire, the business write and complete in one transaction; a duplicate replays
    void transactionalRunsOnce()
    {
        const std::string id = uniqueId("tx");
        int runs = 0;
        auto work = [&](const idem::PgWorkContext& ctx) {
            ++runs;
            workSql(ctx.connection, "INSERT INTO orders VALUES ('" + ctx.id + "', 'fence " +
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
                workSql(ctx.connection, "INSERT INTO orders VALUES ('" + ctx.id + "', 'must vanish')");
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
                workSql(ctx.connection, "INSERT INTO no_such_table VALUES (1)");
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
            workSql(ctx.connection, "INSERT INTO orders VALUES ('" + ctx.id + "', 'attempt')");
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
        std::atomic<int> runs{0};
        std::vector<idem::Outcome> outcomes(16);
        std::vector<std::thread> threads;
        for (std::size_t i = 0; i < outcomes.size(); ++i)
            threads.emplace_back([&, i] {
                outcomes[i] = store->execute(id, "same", [&](const idem::PgWorkContext& ctx) {
                    ++runs;
                    workSql(ctx.connection, "INSERT INTO orders VALUES ('" + ctx.id + "', 'once')");
                    std::this_thread::sleep_for(std::chrono::milliseconds(200)); // the others wait on the row
                    return idem::WorkResult::success("charged");
                });
            });
        for (auto& t : threads)
            t.join();
        std::map<OutcomeKind, int> kinds;
        for (const auto& o : outcomes) {
            ++kinds[o.kind];
            QVERIFY2(o.kind == OutcomeKind::Executed || o.kind == OutcomeKind::Replayed, o.error.c_str());
            QCOMPARE(o.response, std::string("charged"));
        }
        QCOMPARE(kinds[OutcomeKind::Executed], 1);
        QCOMPARE(kinds[OutcomeKind::Replayed], 15);
        QCOMPARE(runs.load(), 1);
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
            workSql(ctx.connection, "UPDATE orders SET note = 'work' WHERE id = '" + ctx.id + "'");
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
        idem::PgStore strict(url + "?options=-c%20default_transaction_isolation%3Dserializable");
        QCOMPARE(pgSql(url + "?options=-c%20default_transaction_isolation%3Dserializable",
                       "SHOW transaction_isolation"),
                 std::string("serializable"));
        const std::string id = uniqueId("ser");
        std::atomic<int> runs{0};
        std::vector<idem::Outcome> outcomes(6);
        std::vector<std::thread> threads;
        for (std::size_t i = 0; i < outcomes.size(); ++i)
            threads.emplace_back([&, i] {
                outcomes[i] = strict.execute(id, "same", [&](const idem::PgWorkContext& ctx) {
                    ++runs;
                    workSql(ctx.connection, "INSERT INTO orders VALUES ('" + ctx.id + "', 'once')");
                    std::this_thread::sleep_for(std::chrono::milliseconds(200));
                    return idem::WorkResult::success("charged");
                });
            });
        for (auto& t : threads)
            t.join();
        std::map<OutcomeKind, int> kinds;
        for (const auto& o : outcomes) {
            ++kinds[o.kind];
            QVERIFY2(o.kind == OutcomeKind::Executed || o.kind == OutcomeKind::Replayed, o.error.c_str());
        }
        QCOMPARE(kinds[OutcomeKind::Executed], 1);
        QCOMPARE(kinds[OutcomeKind::Replayed], 5);
        QCOMPARE(runs.load(), 1);
        QCOMPARE(pgSql(url, "SELECT count(*) FROM orders WHERE id = '" + id + "'"), std::string("1"));
    }

    // PostgreSQL away: every call throws IoError, execute does not run the work; back again, the
    // store reconnects (its idle connections died with the server)
    void failClosedWhenPostgresIsAway()
    {
        const std::string id = uniqueId("down");
        QCOMPARE(store->acquire(uniqueId("warm")).status, AcquireStatus::Acquired); // an idle connection
        pg->stop();
        QVERIFY_THROWS_EXCEPTION(idem::IoError, store->acquire(id));
        QVERIFY_THROWS_EXCEPTION(idem::IoError, store->inspect(id));
        bool ran = false;
        const auto o = store->execute(id, "", [&](const idem::PgWorkContext&) {
            ran = true;
            return idem::WorkResult::success("must not run");
        });
        QCOMPARE(o.kind, OutcomeKind::StoreUnavailable);
        QVERIFY(!o.workRan);
        QVERIFY(!ran);
        QVERIFY2(o.error.find("PostgreSQL unavailable") != std::string::npos, o.error.c_str());
        idem::PgStore fresh(url);
        QVERIFY_THROWS_EXCEPTION(idem::IoError, fresh.acquire(id));

        pg->start();
        QCOMPARE(store->acquire(uniqueId("warm")).status, AcquireStatus::Acquired);
        QCOMPARE(store->execute(id, "", [](const idem::PgWorkContext&) { return idem::WorkResult::success("up"); }).kind,
                 OutcomeKind::Executed);
        // a server restarted under idle connections: the next call still answers
        pg->stop();
        pg->start();
        QCOMPARE(store->acquire(id).status, AcquireStatus::Duplicate);
        QCOMPARE(store->execute(id, "", [](const idem::PgWorkContext&) { return idem::WorkResult::success("x"); }).kind,
                 OutcomeKind::Replayed);
    }

    void schemaMissingIsAConfigError()
    {
        pgSql(url, "CREATE DATABASE bare");
        idem::PgStore bare(pg->url("bare"));
        try {
            bare.acquire("x");
            QFAIL("acquire without schema idem");
        } catch (const idem::ConfigError& e) {
            QVERIFY2(std::string(e.what()).find("idemctl pg init") != std::string::npos, e.what());
        }
        const auto o = bare.execute("x", "", [](const idem::PgWorkContext&) { return idem::WorkResult::success(""); });
        QCOMPARE(o.kind, OutcomeKind::StoreUnavailable);
        QVERIFY(!o.workRan);
        QCOMPARE(idem::pgSchemaVersion(pg->url("bare")), 0);
    }

    // A v2 schema with records in every state upgrades in place: each record answers as before,
    // fences keep rising, and the constraints still hold.
    void upgradeKeepsRecords()
    {
        pgSql(url, "CREATE DATABASE upgrade");
        const std::string db = pg->url("upgrade");
        QCOMPARE(idem::installPgSchema(db, 2).after, 2);
        QCOMPARE(idem::pgSchemaVersion(db), 2);
        idem::PgStoreOptions o;
        o.lease = idem::Millis(1000);
        std::optional<idem::PgStore> old(std::in_place, db, o);
        const auto done = old->acquire("done", "fp");
        QCOMPARE(old->complete(done.ticket, "receipt").status, OwnerStatus::Ok);
        const auto stale = old->acquire("stale");
        QCOMPARE(old->checkpoint(stale.ticket, "charged", "ch_1").status, OwnerStatus::Ok);
        const auto dead = old->acquire("dead");
        QCOMPARE(old->fail(dead.ticket, idem::FailPolicy::Terminal, "card declined").status, OwnerStatus::Ok);
        old.reset(); // its connections hold plans of the old functions

        const idem::PgSchemaChange up = idem::installPgSchema(db);
        QCOMPARE(up.before, 2);
        QCOMPARE(up.after, idem::kPgSchemaVersion);
        idem::PgStore store(db, o);
        const auto dup = store.acquire("done", "fp");
        QCOMPARE(dup.status, AcquireStatus::Duplicate);
        QCOMPARE(dup.response, std::string("receipt"));
        QCOMPARE(store.acquire("done", "other").status, AcquireStatus::Mismatch);
        QCOMPARE(store.acquire("dead").status, AcquireStatus::FailedTerminal);
        QCOMPARE(store.acquire("stale").status, AcquireStatus::InProgress);
        QTRY_VERIFY_WITH_TIMEOUT(store.inspect("stale")->stale, 5000);
        const auto taken = store.acquire("stale");
        QCOMPARE(taken.status, AcquireStatus::Acquired);
        QVERIFY(taken.takeover);
        QCOMPARE(taken.ticket.attempt, std::int64_t(2));
        QVERIFY(taken.ticket.fence > stale.ticket.fence);
        QCOMPARE(taken.phase, std::string("charged"));
        QCOMPARE(taken.phaseData, std::string("ch_1"));
        const auto fresh = store.acquire("fresh");
        QCOMPARE(fresh.status, AcquireStatus::Acquired);
        QVERIFY(fresh.ticket.fence > taken.ticket.fence);
        QCOMPARE(store.complete(fresh.ticket, "ok").status, OwnerStatus::Ok);

        // the table's constraints, now domains, still refuse what they refused
        QVERIFY_THROWS_EXCEPTION(idem::ReplyError, pgSql(db, "SELECT * FROM idem.acquire('')"));
        QVERIFY_THROWS_EXCEPTION(idem::ReplyError,
                                 pgSql(db, "UPDATE idem.records SET state = 'DONE' WHERE id = 'done'"));
        QVERIFY_THROWS_EXCEPTION(idem::ReplyError,
                                 pgSql(db, "UPDATE idem.records SET policy = 'sometimes' WHERE id = 'dead'"));
        QCOMPARE(idem::installPgSchema(db).before, idem::kPgSchemaVersion); // nothing left to do
    }

    void idemctlPgInit()
    {
        pgSql(url, "CREATE DATABASE ctl");
        const QString ctlUrl = QString::fromStdString(pg->url("ctl"));
        const Ctl first = idemctl({QStringLiteral("pg"), QStringLiteral("init"), QStringLiteral("--url"), ctlUrl});
        QVERIFY2(first.exit == 0, qPrintable(first.err));
        QVERIFY2(first.out.contains(QStringLiteral("installed version %1").arg(idem::kPgSchemaVersion)), qPrintable(first.out));
        const Ctl second = idemctl({QStringLiteral("--url"), ctlUrl, QStringLiteral("pg"), QStringLiteral("init")});
        QVERIFY2(second.exit == 0, qPrintable(second.err));
        QVERIFY2(second.out.contains(QStringLiteral("nothing to do")), qPrintable(second.out));
        QCOMPARE(idem::pgSchemaVersion(pg->url("ctl")), idem::kPgSchemaVersion);
        QCOMPARE(idem::PgStore(pg->url("ctl")).acquire("works").status, AcquireStatus::Acquired);

        // a newer schema (as a later idem would leave it): refused, nothing changed
        const int later = idem::kPgSchemaVersion + 1;
        pgSql(pg->url("ctl"), "INSERT INTO idem.migrations (version) VALUES (" + std::to_string(later) + ")");
        const Ctl newer = idemctl({QStringLiteral("pg"), QStringLiteral("init"), QStringLiteral("--url"), ctlUrl});
        QCOMPARE(newer.exit, 1);
        QVERIFY2(newer.err.contains(QStringLiteral("version %1, newer than this idem knows (%2)")
                                        .arg(later)
                                        .arg(idem::kPgSchemaVersion)),
                 qPrintable(newer.err));
        QCOMPARE(newer.err.count(QLatin1Char('\n')), 1);
        QCOMPARE(idem::pgSchemaVersion(pg->url("ctl")), later);
        QVERIFY_THROWS_EXCEPTION(idem::SchemaTooNewError, idem::installPgSchema(pg->url("ctl")));

        // bad input: one line, exit 64; PostgreSQL away: 69
        const Ctl noUrl = idemctl({QStringLiteral("pg"), QStringLiteral("init")});
        QCOMPARE(noUrl.exit, 64);
        QCOMPARE(noUrl.err.count(QLatin1Char('\n')), 1);
        QCOMPARE(idemctl({QStringLiteral("pg"), QStringLiteral("init"), QStringLiteral("--url"),
                          QStringLiteral("redis://127.0.0.1:6379/0")}).exit,
                 64);
        QCOMPARE(idemctl({QStringLiteral("pg"), QStringLiteral("upgrade"), QStringLiteral("--url"), ctlUrl}).exit, 64);
        const idemtest::ClosedPort closed;
        const Ctl away = idemctl({QStringLiteral("pg"), QStringLiteral("init"), QStringLiteral("--url"),
                                  QStringLiteral("postgresql://idem@127.0.0.1:%1/ctl").arg(closed.port())});
        QCOMPARE(away.exit, 69);
        QCOMPARE(away.err.count(QLatin1Char('\n')), 1);
    }
};

QTEST_GUILESS_MAIN(TestPostgres)
#include "tst_postgres.moc"
