// Schema idem's least-privilege roles (v5) on a private PostgreSQL: LOGIN roles given the GRANTs
// `idemctl acl ROLE --user NAME` prints, each connected as itself. The service runs the state
// machine, also in its own transaction with a business write, and can neither purge nor touch the
// tables; the monitor reads and watches; the operator purges and force-fails only through the
// functions, whose audit rows name the session's role; a role without grants gets nothing, and
// idemctl says so (77). An older schema, with the grants a DBA gave before v5, upgrades in place.
#include "idem/errors.h"
#include "idem/pg/localpostgres.h"
#include "idem/pg/pgstore.h"
#include "idem/pg/pgwatch.h"
#include "idem/pg/schema.h"
#include "pgfixture.h"
#include "testsupport.h"

#include <poll.h>

#include <QtTest>

#include <algorithm>
#include <optional>
#include <vector>

using idem::AcquireStatus;
using idem::AdminStatus;
using idem::OutcomeKind;
using idem::OwnerStatus;
using idemtest::Ctl;
using idemtest::pgSql;
using idemtest::sqlstateOf;

namespace {

std::string uniqueId(const char* prefix) { return idemtest::uniqueNamespace(prefix); }

// Whether one of `ids` is named by the watcher within `ms`
bool notified(idem::PgWatch& watch, const std::string& id, int ms)
{
    QElapsedTimer t;
    t.start();
    while (t.elapsed() < ms) {
        pollfd p{watch.socket(), POLLIN, 0};
        ::poll(&p, 1, 100);
        const auto changes = watch.take();
        if (std::find(changes.ids.begin(), changes.ids.end(), id) != changes.ids.end())
            return true;
    }
    return false;
}

} // namespace

class TestPgRoles : public QObject {
    Q_OBJECT

    std::unique_ptr<idem::LocalPostgres> pg;
    std::string db;  // database "roles", as the superuser that owns schema idem
    std::string svc, mon, op, nobody; // the same database as each LOGIN role

    // the URL of `database` as `role` (the private server trusts every local role)
    std::string as(const std::string& role, const std::string& database = "roles") const
    {
        std::string u = pg->url(database);
        return u.replace(u.find("idem@"), 4, role);
    }

    // what `idemctl acl ROLE --user NAME` prints, run by the schema's owner
    void grant(const char* role, const char* user, const std::string& database = "roles")
    {
        const Ctl printed = idemtest::idemctl({QStringLiteral("--url"), QString::fromStdString(pg->url(database)),
                                               QStringLiteral("acl"), QString::fromLatin1(role), QStringLiteral("--user"),
                                               QString::fromLatin1(user)});
        QVERIFY2(printed.exit == 0, qPrintable(printed.err));
        pgSql(pg->url(database), printed.out.toStdString());
    }

private slots:
    void initTestCase()
    {
        pg = idemtest::startPostgres(false);
        pgSql(pg->url(), "CREATE DATABASE roles");
        db = pg->url("roles");
        idem::installPgSchema(db);
        for (const char* role : {"svc_login", "mon_login", "op_login", "nobody_login"})
            pgSql(db, std::string("CREATE ROLE ") + role + " LOGIN");
        grant("service", "svc_login");
        grant("monitor", "mon_login");
        grant("operator", "op_login");
        svc = as("svc_login");
        mon = as("mon_login");
        op = as("op_login");
        nobody = as("nobody_login");
        // the service's own business table, its own right
        pgSql(db, "CREATE TABLE public.orders (id text PRIMARY KEY, note text); "
                  "GRANT INSERT, SELECT ON public.orders TO svc_login"); // (not idem.orders: "$user" is idem here)
    }
    void cleanupTestCase() { pg.reset(); }

    // the service runs the state machine, leased and transactional, and nothing else
    void serviceRunsTheStateMachineOnly()
    {
        idem::PgStoreOptions o;
        o.lease = idem::Millis(60'000);
        idem::PgStore store(svc, o);
        const std::string id = uniqueId("svc");
        const auto a = store.acquire(id, "fp");
        QCOMPARE(a.status, AcquireStatus::Acquired);
        QCOMPARE(store.renew(a.ticket).status, OwnerStatus::Ok);
        QCOMPARE(store.checkpoint(a.ticket, "charged", "ch_1").status, OwnerStatus::Ok);
        QCOMPARE(store.complete(a.ticket, "receipt").status, OwnerStatus::Ok);
        QCOMPARE(store.acquire(id, "fp").response, std::string("receipt"));
        const auto b = store.acquire(uniqueId("svcfail"));
        QCOMPARE(store.fail(b.ticket, idem::FailPolicy::Release).status, OwnerStatus::Ok);
        QCOMPARE(store.sweep(10).batches, std::int64_t(1));

        // the transactional mode: the record commits with the business write, a duplicate replays
        const std::string order = uniqueId("order");
        int runs = 0;
        const auto work = [&](const idem::PgWorkContext& ctx) {
            ++runs;
            idemtest::workSql(ctx.connection, "INSERT INTO orders VALUES ('" + ctx.id + "', 'once')");
            return idem::WorkResult::success("charged " + ctx.id);
        };
        const auto first = store.execute(order, "payload", work);
        QVERIFY2(first.kind == OutcomeKind::Executed, first.error.c_str());
        QCOMPARE(store.execute(order, "payload", work).kind, OutcomeKind::Replayed);
        QCOMPARE(runs, 1);
        QCOMPARE(pgSql(svc, "SELECT count(*) FROM orders WHERE id = '" + order + "'"), std::string("1"));

        // no way around the functions: 42501 for each
        for (const std::string& sql : std::vector<std::string>{
                 "DELETE FROM idem.records", "UPDATE idem.records SET state = 'FAILED'",
              "INSERT INTO idem.records (id, state, fence, expires_at, created_at, started_at) "
              "VALUES ('x', 'COMPLETED', 1, now() + interval '1 day', now(), now())",
              "SELECT count(*) FROM idem.records", "SELECT * FROM idem.purge('" + id + "')",
              "SELECT * FROM idem.force_fail('" + id + "')", "SELECT nextval('idem.fence')",
              "INSERT INTO idem.operations (at, op, id) VALUES (now(), 'purge', 'x')", "SELECT idem.watch('w')",
              "TRUNCATE idem.records"})
            QVERIFY2(sqlstateOf(svc, sql) == "42501", sql.c_str());
        try {
            store.purge(id, "svc", "mine");
            QFAIL("the service purged");
        } catch (const idem::PermissionError& e) {
            QCOMPARE(e.role(), std::string("svc_login"));
            QVERIFY2(e.denied().find("permission denied") != std::string::npos, e.what());
        }
        QCOMPARE(pgSql(db, "SELECT state FROM idem.records WHERE id = '" + id + "'"), std::string("COMPLETED"));

        // idemctl as the service: run works, purge is 77 in words
        const Ctl purge = idemtest::idemctl({QStringLiteral("--url"), QString::fromStdString(svc), QStringLiteral("purge"),
                                             QString::fromStdString(id)});
        QCOMPARE(purge.exit, 77);
        QCOMPARE(purge.err.count(QLatin1Char('\n')), 1);
        QVERIFY2(purge.err.contains(QStringLiteral("role 'svc_login' may not purge")) &&
                     purge.err.contains(QStringLiteral("the operator role has it")) &&
                     purge.err.contains(QStringLiteral("acl")),
                 qPrintable(purge.err));
        const Ctl run = idemtest::idemctl({QStringLiteral("--url"), QString::fromStdString(svc), QStringLiteral("run"),
                                           QStringLiteral("--key"), QString::fromStdString(uniqueId("cmd")),
                                           QStringLiteral("--"), QStringLiteral("echo"), QStringLiteral("ran")});
        QVERIFY2(run.exit == 0 && run.out.contains(QStringLiteral("ran")), qPrintable(run.err));
    }

    // the monitor lists, inspects, reads the audit and watches; it writes nothing
    void monitorReadsOnly()
    {
        idem::PgStore service(svc);
        const std::string id = uniqueId("mon");
        QCOMPARE(service.complete(service.acquire(id).ticket, "r").status, OwnerStatus::Ok);

        idem::PgStore store(mon);
        QVERIFY(store.inspect(id));
        QVERIFY(!store.page({}, 1000).records.empty());
        idem::PgWatch watch(mon); // registers through idem.watch: the triggers notify
        QVERIFY(watch.notifies());
        QVERIFY(watch.operations(10).size() <= 10);
        const std::string next = uniqueId("watched");
        QCOMPARE(service.acquire(next).status, AcquireStatus::Acquired);
        QVERIFY(notified(watch, next, 5000));

        for (const std::string& sql : std::vector<std::string>{
                 "DELETE FROM idem.records", "UPDATE idem.records SET state = 'FAILED'",
                 "SELECT * FROM idem.purge('" + id + "')", "SELECT * FROM idem.acquire('x')",
                                       "INSERT INTO idem.watchers VALUES ('w', now())", "DELETE FROM idem.operations"})
            QVERIFY2(sqlstateOf(mon, sql) == "42501", sql.c_str());
        const auto seen = store.inspect(id);
        QVERIFY(seen);
        QVERIFY_THROWS_EXCEPTION(idem::PermissionError, store.purge(id, "mon", "no", &*seen));
        QVERIFY_THROWS_EXCEPTION(idem::PermissionError, store.forceFail(next, "no", false, "mon"));
        QVERIFY_THROWS_EXCEPTION(idem::PermissionError, store.acquire("x"));
        QCOMPARE(pgSql(db, "SELECT state FROM idem.records WHERE id = '" + id + "'"), std::string("COMPLETED"));

        const QString url = QString::fromStdString(mon);
        const Ctl list = idemtest::idemctl({QStringLiteral("--url"), url, QStringLiteral("list")});
        QVERIFY2(list.exit == 0 && list.out.contains(QString::fromStdString(id)), qPrintable(list.err));
        QCOMPARE(idemtest::idemctl({QStringLiteral("--url"), url, QStringLiteral("stats")}).exit, 0);
        QCOMPARE(idemtest::idemctl({QStringLiteral("--url"), url, QStringLiteral("inspect"), QString::fromStdString(id)}).exit,
                 0);
        const Ctl purge =
            idemtest::idemctl({QStringLiteral("--url"), url, QStringLiteral("purge"), QString::fromStdString(id)});
        QCOMPARE(purge.exit, 77);
        QVERIFY2(purge.err.contains(QStringLiteral("role 'mon_login' may not purge")) &&
                     purge.err.contains(QStringLiteral("operator")),
                 qPrintable(purge.err));
        const Ctl forceFail = idemtest::idemctl(
            {QStringLiteral("--url"), url, QStringLiteral("force-fail"), QString::fromStdString(next)});
        QCOMPARE(forceFail.exit, 77);
    }

    // the operator purges and force-fails through the functions; each audit row names the
    // session's role beside the `by` it was given; it cannot rewrite the audit or run the machine
    void operatorActsThroughTheFunctionsOnly()
    {
        idem::PgStore service(svc);
        const std::string done = uniqueId("opdone"), stuck = uniqueId("opstuck");
        QCOMPARE(service.complete(service.acquire(done).ticket, "r").status, OwnerStatus::Ok);
        QCOMPARE(service.acquire(stuck).status, AcquireStatus::Acquired);

        idem::PgStore store(op);
        const auto seen = store.inspect(done);
        QVERIFY(seen);
        QCOMPARE(store.purge(done, "alice", "rerun", &*seen).status, AdminStatus::Ok);
        QCOMPARE(store.forceFail(stuck, "stuck", false, "alice").status, AdminStatus::Ok);
        QCOMPARE(pgSql(db, "SELECT string_agg(op || ' ' || by || ' ' || session_role, ', ' ORDER BY op) FROM "
                           "idem.operations WHERE id IN ('" + done + "', '" + stuck + "')"),
                 std::string("force_fail alice op_login, purge alice op_login"));
        // by default `by` is the session's role too
        const std::string plain = uniqueId("opplain");
        QCOMPARE(service.complete(service.acquire(plain).ticket, "r").status, OwnerStatus::Ok);
        QCOMPARE(pgSql(op, "SELECT outcome FROM idem.purge('" + plain + "')"), std::string("ok"));
        QCOMPARE(pgSql(db, "SELECT by || ' ' || session_role FROM idem.operations WHERE id = '" + plain + "'"),
                 std::string("op_login op_login"));

        for (const std::string& sql : std::vector<std::string>{
                 "DELETE FROM idem.records", "UPDATE idem.records SET state = 'FAILED'", "DELETE FROM idem.operations",
              "UPDATE idem.operations SET by = 'someone else'", "SELECT * FROM idem.acquire('x')",
              "INSERT INTO idem.operations (at, op, id, session_role) VALUES (now(), 'purge', 'x', 'someone else')"})
            QVERIFY2(sqlstateOf(op, sql) == "42501", sql.c_str());
        // what it may insert (a --table purge's row) names it all the same
        QCOMPARE(sqlstateOf(op, "INSERT INTO idem.operations (at, op, id, by) VALUES (now(), 'purge', 't: k', 'x')"),
                 std::string());
        QCOMPARE(pgSql(db, "SELECT session_role FROM idem.operations WHERE id = 't: k'"), std::string("op_login"));

        const std::string again = uniqueId("opctl");
        QCOMPARE(service.complete(service.acquire(again).ticket, "r").status, OwnerStatus::Ok);
        const Ctl purge = idemtest::idemctl({QStringLiteral("--url"), QString::fromStdString(op), QStringLiteral("purge"),
                                             QString::fromStdString(again), QStringLiteral("--by"), QStringLiteral("bob")});
        QVERIFY2(purge.exit == 0, qPrintable(purge.err));
        QCOMPARE(pgSql(db, "SELECT by || ' ' || session_role FROM idem.operations WHERE id = '" + again + "'"),
                 std::string("bob op_login"));
    }

    // PUBLIC may run none of the functions: a role without grants gets nothing, said in words
    void aRoleWithoutGrantsGetsNothing()
    {
        for (const std::string& sql : std::vector<std::string>{"SELECT * FROM idem.purge('x')", "SELECT * FROM idem.acquire('x')",
                                       "SELECT idem.sweep()", "SELECT count(*) FROM idem.records"})
            QVERIFY2(sqlstateOf(nobody, sql) == "42501", sql.c_str());
        const Ctl list = idemtest::idemctl({QStringLiteral("--url"), QString::fromStdString(nobody), QStringLiteral("list")});
        QCOMPARE(list.exit, 77);
        QCOMPARE(list.err.count(QLatin1Char('\n')), 1);
        QVERIFY2(list.err.contains(QStringLiteral("role 'nobody_login' may not list")) &&
                     list.err.contains(QStringLiteral("the monitor role has it")),
                 qPrintable(list.err));
        const Ctl run = idemtest::idemctl({QStringLiteral("--url"), QString::fromStdString(nobody), QStringLiteral("run"),
                                           QStringLiteral("--key"), QStringLiteral("k"), QStringLiteral("--"),
                                           QStringLiteral("true")});
        QCOMPARE(run.exit, 77); // the command not run
        QVERIFY2(run.err.contains(QStringLiteral("the service role has it")), qPrintable(run.err));
    }

    // what acl prints: one statement a line, for psql; options that mean Redis refused
    void aclPrintsGrants()
    {
        const QString url = QString::fromStdString(db);
        const Ctl service = idemtest::idemctl({QStringLiteral("--url"), url, QStringLiteral("acl"), QStringLiteral("service"),
                                               QStringLiteral("--user"), QStringLiteral("We \"quote\"")});
        QCOMPARE(service.exit, 0);
        QVERIFY2(service.out.startsWith(QStringLiteral("REVOKE ALL ON ALL TABLES IN SCHEMA idem FROM \"We \"\"quote\"\"\";\n")),
                 qPrintable(service.out));
        QVERIFY(service.out.contains(QStringLiteral("GRANT EXECUTE ON FUNCTION idem.acquire(")));
        QVERIFY(!service.out.contains(QStringLiteral("idem.purge")));
        QVERIFY(!service.out.contains(QStringLiteral("idem.records")));
        for (const QStringList& bad :
             {QStringList{QStringLiteral("service"), QStringLiteral("--user"), QStringLiteral("a"), QStringLiteral("--nopass")},
              QStringList{QStringLiteral("admin"), QStringLiteral("--user"), QStringLiteral("a")},
              QStringList{QStringLiteral("monitor")},
              QStringList{QStringLiteral("monitor"), QStringLiteral("--user"), QStringLiteral("a"),
                          QStringLiteral("--live-updates")}}) {
            const Ctl refused = idemtest::idemctl(QStringList{QStringLiteral("--url"), url, QStringLiteral("acl")} + bad);
            QVERIFY2(refused.exit == 64, qPrintable(bad.join(u' ') + refused.err));
            QCOMPARE(refused.err.count(QLatin1Char('\n')), 1);
        }
    }

    // a v4 schema with records, and grants a DBA gave a service role then (DML on the table, the
    // functions PUBLIC's): `idemctl pg init` upgrades it in place; the records answer as before,
    // and the role's printed GRANTs take back what the functions now do for it
    void upgradeFromV4()
    {
        pgSql(pg->url(), "CREATE DATABASE older");
        const std::string old = pg->url("older");
        QCOMPARE(idem::installPgSchema(old, 4).after, 4);
        pgSql(old, "CREATE ROLE legacy_svc LOGIN");
        pgSql(old, "GRANT USAGE ON SCHEMA idem TO legacy_svc; GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN "
                   "SCHEMA idem TO legacy_svc; GRANT USAGE ON SEQUENCE idem.fence TO legacy_svc");
        const std::string legacy = as("legacy_svc", "older");
        std::optional<idem::PgStore> before(std::in_place, legacy);
        const auto done = before->acquire("done");
        QCOMPARE(before->complete(done.ticket, "receipt").status, OwnerStatus::Ok);
        QCOMPARE(before->acquire("live").status, AcquireStatus::Acquired);
        QCOMPARE(before->purge("gone-before", "dba").status, AdminStatus::NotFound); // v4: anyone may run it
        QCOMPARE(sqlstateOf(legacy, "DELETE FROM idem.records WHERE id = 'nothing'"), std::string()); // and delete
        pgSql(old, "INSERT INTO idem.operations VALUES (now(), 'purge', 'earlier', 1, 'COMPLETED', 'dba', 'v4')");
        before.reset();

        const Ctl up = idemtest::idemctl({QStringLiteral("pg"), QStringLiteral("init"), QStringLiteral("--url"),
                                          QString::fromStdString(old)});
        QVERIFY2(up.exit == 0 && up.out.contains(QStringLiteral("upgraded from version 4 to %1").arg(idem::kPgSchemaVersion)),
                 qPrintable(up.out + up.err));
        QCOMPARE(pgSql(old, "SELECT coalesce(session_role, 'none') FROM idem.operations WHERE id = 'earlier'"),
                 std::string("none")); // not the installer's name

        grant("service", "legacy_svc", "older");
        idem::PgStore after(legacy);
        QCOMPARE(after.acquire("done").response, std::string("receipt"));
        QCOMPARE(after.acquire("live").status, AcquireStatus::InProgress);
        const auto fresh = after.acquire("fresh");
        QCOMPARE(fresh.status, AcquireStatus::Acquired);
        QVERIFY(fresh.ticket.fence > done.ticket.fence);
        QCOMPARE(sqlstateOf(legacy, "DELETE FROM idem.records WHERE id = 'done'"), std::string("42501"));
        QCOMPARE(sqlstateOf(legacy, "SELECT * FROM idem.purge('done')"), std::string("42501"));
        QCOMPARE(pgSql(old, "SELECT state FROM idem.records WHERE id = 'done'"), std::string("COMPLETED"));
        // the functions now run as their owner, with a search_path of their own
        QCOMPARE(pgSql(old, "SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
                            "WHERE n.nspname = 'idem' AND p.proname <> 'notify_changed' AND NOT p.prosecdef"),
                 std::string("0"));
    }
};

QTEST_GUILESS_MAIN(TestPgRoles)
#include "tst_pgroles.moc"
