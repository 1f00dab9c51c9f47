// The PostgreSQL store on a private PostgreSQL server this test starts (idem::LocalPostgres): the
// state machine as SQL functions, operator actions, PostgreSQL away, a database without the
// schema. The transactional mode is tst_pgtransactional's, schema versions tst_pgschema's.
#include "idem/errors.h"
#include "idem/pg/localpostgres.h"
#include "idem/pg/pgstore.h"
#include "idem/pg/schema.h"
#include "pgfixture.h"
#include "testsupport.h"

#include <libpq-fe.h>

#include <QtTest>

#include <optional>

using idem::AcquireStatus;
using idem::AdminStatus;
using idem::OutcomeKind;
using idem::OwnerStatus;
using idemtest::pgSql;

namespace {

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

    // an operator's action on a row a running transaction holds (the transactional mode's work)
    // waits at most the operator lock timeout, then answers Busy with nothing done
    void operatorActionOnAHeldRowIsBusy()
    {
        const std::string id = uniqueId("held");
        QCOMPARE(store->acquire(id).status, AcquireStatus::Acquired);
        std::unique_ptr<PGconn, decltype(&PQfinish)> other(PQconnectdb(url.c_str()), &PQfinish);
        idemtest::workSql(other.get(), "BEGIN");
        idemtest::workSql(other.get(), "SELECT 1 FROM idem.records WHERE id = '" + id + "' FOR UPDATE");
        idem::PgStoreOptions o;
        o.operatorLockTimeout = idem::Millis(300);
        idem::PgStore op(url, o);
        const auto seen = op.inspect(id); // reading never waits
        QVERIFY(seen);
        QElapsedTimer took;
        took.start();
        const idem::AdminResult ff = op.forceFail(id, "stuck", false, "alice");
        QCOMPARE(ff.status, AdminStatus::Busy);
        QVERIFY2(ff.reason.find("a running transaction holds the row") != std::string::npos, ff.reason.c_str());
        QCOMPARE(op.purge(id, "alice", "rerun", &*seen).status, AdminStatus::Busy);
        QCOMPARE(op.purge(id, "alice", "rerun").status, AdminStatus::Busy);
        QVERIFY2(took.elapsed() < 4000, qPrintable(QString::number(took.elapsed())));
        idemtest::workSql(other.get(), "ROLLBACK");
        QCOMPARE(op.inspect(id)->rawStatus, std::string("STARTED")); // nothing was done
        QCOMPARE(pgSql(url, "SELECT count(*) FROM idem.operations WHERE id = '" + id + "'"), std::string("0"));
        QCOMPARE(op.purge(id, "alice", "rerun", &*seen).status, AdminStatus::Ok); // once the row is free
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

};

QTEST_GUILESS_MAIN(TestPostgres)
#include "tst_postgres.moc"
