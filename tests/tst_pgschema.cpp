// Schema idem's versions on a private PostgreSQL: an older schema with records upgraded in place,
// `idemctl pg init` (install, nothing to do, a newer schema refused, bad input, PostgreSQL away).
// The upgrade to v5's roles is tst_pgroles's; from v6 to v7 the operator's functions keep theirs.
#include "idem/errors.h"
#include "idem/pg/localpostgres.h"
#include "idem/pg/pgstore.h"
#include "idem/pg/schema.h"
#include "pgfixture.h"
#include "testsupport.h"

#include <libpq-fe.h>

#include <QtTest>

#include <memory>
#include <optional>

using idem::AcquireStatus;
using idem::OwnerStatus;
using idemtest::Ctl;
using idemtest::idemctl;
using idemtest::pgSql;

class TestPgSchema : public QObject {
    Q_OBJECT

    std::unique_ptr<idem::LocalPostgres> pg;
    std::string url;

private slots:
    void initTestCase()
    {
        pg = idemtest::startPostgres(false);
        url = pg->url();
    }
    void cleanupTestCase() { pg.reset(); }

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

    // A v6 schema whose operator was granted its rights then upgrades to v7 in place: force_fail,
    // purge and purge_seen keep their grants, run as the schema's owner with their own search_path
    // (as their shared lock, idem.locked_row, does: nobody may run it), and answer as v6 did: an
    // uncommitted first acquire is waited for (55P03 past lock_timeout), then absent once rolled
    // back, with no fence drawn; a committed row is force-failed and purged
    void upgradeFromV6KeepsTheOperatorsFunctions()
    {
        pgSql(url, "CREATE DATABASE fromv6");
        const std::string db = pg->url("fromv6");
        QCOMPARE(idem::installPgSchema(db, 6).after, 6);
        pgSql(db, "CREATE ROLE v6_operator LOGIN");
        for (const std::string& grant : idem::pgRoleGrants("operator", "v6_operator"))
            pgSql(db, grant);
        std::string op = db;
        op.replace(op.find("idem@"), 4, "v6_operator");
        QCOMPARE(idem::installPgSchema(db, 7).before, 6);
        QCOMPARE(idem::pgSchemaVersion(db), 7);

        QCOMPARE(pgSql(db, "SELECT string_agg(p.proname || ' ' || p.prosecdef || ' ' || array_to_string(p.proconfig, '/') "
                           "|| ' ' || has_function_privilege('v6_operator', p.oid, 'EXECUTE') || ' ' || "
                           "has_function_privilege('public', p.oid, 'EXECUTE'), '; ' ORDER BY p.proname) "
                           "FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'idem' "
                           "AND p.proname IN ('force_fail', 'purge', 'purge_seen', 'locked_row')"),
                 std::string("force_fail true search_path=pg_catalog, pg_temp true false; "
                             "locked_row true search_path=pg_catalog, pg_temp false false; "
                             "purge true search_path=pg_catalog, pg_temp true false; "
                             "purge_seen true search_path=pg_catalog, pg_temp true false"));
        QCOMPARE(idemtest::sqlstateOf(op, "SELECT * FROM idem.locked_row('x', 'me')"), std::string("42501"));

        // a first acquire not yet committed: each waits for it, then gives up
        std::unique_ptr<PGconn, decltype(&PQfinish)> worker(PQconnectdb(db.c_str()), &PQfinish);
        idemtest::workSql(worker.get(), "BEGIN");
        idemtest::workSql(worker.get(), "SELECT * FROM idem.acquire('held')");
        const std::string fence = pgSql(db, "SELECT last_value FROM idem.fence");
        for (const char* call : {"idem.force_fail('held')", "idem.purge('held')",
                                 "idem.purge_seen('held', NULL, NULL, NULL, NULL, NULL)"})
            QCOMPARE(idemtest::sqlstateOf(op, std::string("SET lock_timeout = '200ms'; SELECT * FROM ") + call),
                     std::string("55P03"));
        idemtest::workSql(worker.get(), "ROLLBACK");
        for (const char* call : {"idem.force_fail('held')", "idem.purge('held')",
                                 "idem.purge_seen('held', NULL, NULL, NULL, NULL, NULL)"})
            QCOMPARE(pgSql(op, std::string("SELECT outcome FROM ") + call), std::string("not_found"));
        QCOMPARE(pgSql(db, "SELECT last_value FROM idem.fence"), fence);
        QCOMPARE(pgSql(db, "SELECT count(*) FROM idem.records"), std::string("0"));

        idem::PgStore store(db);
        QCOMPARE(store.acquire("stuck").status, AcquireStatus::Acquired);
        QCOMPARE(pgSql(op, "SELECT outcome || ' ' || previous_state FROM idem.force_fail('stuck')"),
                 std::string("ok STARTED"));
        QCOMPARE(pgSql(op, "SELECT outcome || ' ' || previous_state FROM idem.purge('stuck')"),
                 std::string("ok FAILED"));
        QCOMPARE(pgSql(db, "SELECT string_agg(op || ' ' || session_role, ', ' ORDER BY op) FROM idem.operations "
                           "WHERE id = 'stuck'"),
                 std::string("force_fail v6_operator, purge v6_operator"));
    }

    // v1-v6 installed by the schema's own role, v7 by another (the superuser): the helpers v6 and
    // v7 add go to the functions' owner, or an operator's force-fail and purge are refused (42501)
    void upgradeByAnotherRoleKeepsTheOperatorsFunctions()
    {
        pgSql(url, "CREATE ROLE schema_owner LOGIN");
        pgSql(url, "CREATE DATABASE byother OWNER schema_owner");
        std::string owner = pg->url("byother");
        owner.replace(owner.find("idem@"), 4, "schema_owner");
        QCOMPARE(idem::installPgSchema(owner, 6).after, 6);
        const std::string db = pg->url("byother");
        pgSql(db, "CREATE ROLE other_operator LOGIN");
        for (const std::string& grant : idem::pgRoleGrants("operator", "other_operator"))
            pgSql(db, grant);
        QCOMPARE(idem::installPgSchema(db, 7).before, 6); // as idem, a superuser
        QCOMPARE(pgSql(db, "SELECT string_agg(p.proname || ' ' || pg_get_userbyid(p.proowner), ', ' ORDER BY "
                           "p.proname) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE "
                           "n.nspname = 'idem' AND p.proname IN ('force_fail', 'locked_row', 'committed_meanwhile')"),
                 std::string("committed_meanwhile schema_owner, force_fail schema_owner, locked_row schema_owner"));
        std::string op = db;
        op.replace(op.find("idem@"), 4, "other_operator");
        idem::PgStore store(db);
        QCOMPARE(store.acquire("stuck").status, AcquireStatus::Acquired);
        QCOMPARE(pgSql(op, "SELECT outcome || ' ' || previous_state FROM idem.force_fail('stuck')"),
                 std::string("ok STARTED"));
        QCOMPARE(pgSql(op, "SELECT outcome FROM idem.purge('absent')"), std::string("not_found"));
        QCOMPARE(pgSql(op, "SELECT outcome || ' ' || previous_state FROM idem.purge('stuck')"),
                 std::string("ok FAILED"));
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
        // a URL libpq cannot read: one line, 64, before anything connects (it was 69, "unavailable")
        for (const char* bad : {"postgresql://[::1/ctl", "postgresql://idem@127.0.0.1:notaport/ctl",
                                "postgresql://idem@127.0.0.1/ctl?no_such_option=1", "host=127.0.0.1 port"}) {
            for (const QStringList& command : {QStringList{QStringLiteral("pg"), QStringLiteral("init")},
                                               QStringList{QStringLiteral("list")}}) {
                const Ctl malformed = idemctl(QStringList{QStringLiteral("--url"), QString::fromLatin1(bad)} + command);
                QVERIFY2(malformed.exit == 64, qPrintable(QString::number(malformed.exit) + malformed.err));
                QCOMPARE(malformed.err.count(QLatin1Char('\n')), 1);
                QVERIFY2(malformed.err.contains(QStringLiteral("not a PostgreSQL URL")), qPrintable(malformed.err));
            }
        }
        QVERIFY_THROWS_EXCEPTION(idem::UsageError, idem::PgStore("postgresql://h:99999/db").acquire("x"));
        const idemtest::ClosedPort closed;
        const Ctl away = idemctl({QStringLiteral("pg"), QStringLiteral("init"), QStringLiteral("--url"),
                                  QStringLiteral("postgresql://idem@127.0.0.1:%1/ctl").arg(closed.port())});
        QCOMPARE(away.exit, 69);
        QCOMPARE(away.err.count(QLatin1Char('\n')), 1);
    }
};

QTEST_GUILESS_MAIN(TestPgSchema)
#include "tst_pgschema.moc"
