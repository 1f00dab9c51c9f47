// idemctl on tables another program writes (--table, docs/postgres.md "Tables others write"):
// a seed-style table and a Stripe-style one read as records, list, stats and inspect, the guarded
// purge (never force-fail), a key three tenants share, lock times in zones and forms idem must
// read safely.
#include "idem/errors.h"
#include "idem/pg/localpostgres.h"
#include "idem/pg/schema.h"
#include "pgfixture.h"
#include "testsupport.h"

#include <libpq-fe.h>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include <algorithm>

using idemtest::Ctl;
using idemtest::idemctlAt;
using idemtest::pgSql;

namespace {

// A table name of this test's own (letters, digits and '_')
std::string uniqueTable(const char* prefix)
{
    std::string name = idemtest::uniqueNamespace(prefix);
    std::replace(name.begin(), name.end(), '-', '_');
    return name;
}

} // namespace

class TestPgTableCtl : public QObject {
    Q_OBJECT

    std::unique_ptr<idem::LocalPostgres> pg;
    QString url; // postgresql://idem@127.0.0.1:<port>/postgres

private slots:
    void initTestCase()
    {
        pg = idemtest::startPostgres();
        url = QString::fromStdString(pg->url());
    }
    void cleanupTestCase() { pg.reset(); }

    // --table: a hand-written seed-style table and Brandur Leach's Stripe-style one, read as the
    // format profiles read other libraries' Redis records, and never written to
    void tablesOthersWrite()
    {
        const std::string seed = uniqueTable("seed");
        const std::string u = url.toStdString();
        pgSql(u, "CREATE TABLE " + seed + " (key text PRIMARY KEY, status text NOT NULL, response bytea, "
                 "locked_at timestamptz, created_at timestamptz NOT NULL DEFAULT now()); "
                 "INSERT INTO " + seed + " (key, status, response, locked_at) VALUES "
                 "('a-live', 'STARTED', NULL, now()), "
                 "('b-old', 'PROCESSING', NULL, now() - interval '2 hours'), "
                 "('c-done', 'COMPLETED', '\\x6f6b00ff'::bytea, NULL), "
                 "('d-failed', 'FAILED', NULL, NULL), "
                 "('e-odd', 'ON_HOLD', NULL, now())");
        // more rows than one page (1000): the pages walk the key
        pgSql(u, "INSERT INTO " + seed + " (key, status, response) SELECT 'z-' || lpad(n::text, 5, '0'), 'COMPLETED', "
                 "'r' FROM generate_series(1, 1500) AS n");
        const QString t = QString::fromStdString(seed);

        const Ctl list =
            idemctlAt(url, {QStringLiteral("list"), QStringLiteral("--table"), t, QStringLiteral("--json")});
        QVERIFY2(list.exit == 0, qPrintable(list.err));
        QMap<QString, QJsonObject> rows;
        for (const QString& line : list.out.split(QLatin1Char('\n'), Qt::SkipEmptyParts)) {
            const QJsonObject o = QJsonDocument::fromJson(line.toUtf8()).object();
            rows.insert(o.value(QStringLiteral("id")).toString(), o);
        }
        QCOMPARE(rows.size(), 1505);
        QCOMPARE(rows[QStringLiteral("a-live")].value(QStringLiteral("state")).toString(), QStringLiteral("STARTED"));
        QCOMPARE(rows[QStringLiteral("a-live")].value(QStringLiteral("stale")).toBool(), false);
        QCOMPARE(rows[QStringLiteral("b-old")].value(QStringLiteral("stale")).toBool(), true); // 2 h > 15 m
        QCOMPARE(rows[QStringLiteral("c-done")].value(QStringLiteral("state")).toString(), QStringLiteral("COMPLETED"));
        QCOMPARE(rows[QStringLiteral("d-failed")].value(QStringLiteral("state")).toString(), QStringLiteral("FAILED"));
        QCOMPARE(rows[QStringLiteral("e-odd")].value(QStringLiteral("state")).toString(), QStringLiteral("MALFORMED"));
        QCOMPARE(rows[QStringLiteral("c-done")].value(QStringLiteral("format")).toString(), QStringLiteral("sql-table"));

        // --stale-after moves the window; stats counts what list shows
        const Ctl stats =
            idemctlAt(url, {QStringLiteral("stats"), QStringLiteral("--table"), t, QStringLiteral("--stale-after"),
                            QStringLiteral("3h"), QStringLiteral("--json")});
        QVERIFY2(stats.exit == 0, qPrintable(stats.err));
        const QJsonObject st = QJsonDocument::fromJson(stats.out.toUtf8()).object();
        QCOMPARE(st.value(QStringLiteral("total")).toInt(), 1505);
        QCOMPARE(st.value(QStringLiteral("started")).toInt(), 2);
        QCOMPARE(st.value(QStringLiteral("stale")).toInt(), 0);
        QCOMPARE(st.value(QStringLiteral("malformed")).toInt(), 1);

        // the stored bytes come back as they are; a binary response is not mangled
        const Ctl one = idemctlAt(url, {QStringLiteral("inspect"), QStringLiteral("c-done"), QStringLiteral("--table"),
                                        t, QStringLiteral("--json")});
        QVERIFY2(one.exit == 0, qPrintable(one.err));
        const QJsonArray found = QJsonDocument::fromJson(one.out.toUtf8()).array();
        QCOMPARE(found.size(), 1);
        QCOMPARE(found[0].toObject().value(QStringLiteral("table")).toString(), t);
        const Ctl text =
            idemctlAt(url, {QStringLiteral("inspect"), QStringLiteral("b-old"), QStringLiteral("--table"), t});
        QVERIFY2(text.exit == 0 && text.out.contains(QStringLiteral("read-only")) && text.out.contains(QStringLiteral("STALE")),
                 qPrintable(text.out));
        QCOMPARE(idemctlAt(url, {QStringLiteral("inspect"), QStringLiteral("nope"), QStringLiteral("--table"), t}).exit,
                 66);

        // written only as asked, guarded: purge deletes a row whose work is over and keeps a live
        // lock, a status word it does not know and a row a transaction holds; force-fail refuses
        const auto purge = [&](const char* key) {
            return idemctlAt(url, {QStringLiteral("purge"), QString::fromLatin1(key), QStringLiteral("--table"), t,
                                   QStringLiteral("--reason"), QStringLiteral("test")});
        };
        const auto present = [&](const char* key) {
            return pgSql(u, "SELECT count(*) FROM " + seed + " WHERE key = '" + key + "'") == "1";
        };
        idem::installPgSchema(u); // idem.operations: where the purges are written
        const Ctl live = purge("a-live");
        QVERIFY2(live.exit == 1 && live.err.contains(QStringLiteral("live lock")), qPrintable(live.err));
        const Ctl odd = purge("e-odd");
        QVERIFY2(odd.exit == 1 && odd.err.contains(QStringLiteral("ON_HOLD")), qPrintable(odd.err));
        const Ctl ff =
            idemctlAt(url, {QStringLiteral("force-fail"), QStringLiteral("b-old"), QStringLiteral("--table"), t});
        QVERIFY2(ff.exit == 64 && ff.err.contains(QStringLiteral("failure word")), qPrintable(ff.err));
        QVERIFY(present("a-live") && present("e-odd"));
        QCOMPARE(pgSql(u, "SELECT status FROM " + seed + " WHERE key = 'b-old'"), std::string("PROCESSING"));
        {
            // a worker's open transaction holds d-failed: kept, whatever its status says
            std::unique_ptr<PGconn, decltype(&PQfinish)> worker(PQconnectdb(u.c_str()), &PQfinish);
            QCOMPARE(PQstatus(worker.get()), CONNECTION_OK);
            PQclear(PQexec(worker.get(), "BEGIN"));
            PGresult* held = PQexec(worker.get(), ("SELECT 1 FROM " + seed + " WHERE key = 'd-failed' FOR UPDATE").c_str());
            QCOMPARE(PQresultStatus(held), PGRES_TUPLES_OK);
            PQclear(held);
            const Ctl busy = purge("d-failed");
            QVERIFY2(busy.exit == 1 && busy.err.contains(QStringLiteral("transaction holds")), qPrintable(busy.err));
            QVERIFY(present("d-failed"));
            PQclear(PQexec(worker.get(), "ROLLBACK"));
        }
        for (const char* over : {"b-old", "c-done", "d-failed"}) {
            const Ctl done = purge(over);
            QVERIFY2(done.exit == 0 && done.out.contains(QStringLiteral("purged")), qPrintable(done.err));
            QVERIFY(!present(over));
        }
        QVERIFY2(purge("b-old").exit == 66, "gone: nothing to purge");
        // the store's audit trail names the table, the row, what it was and why
        QCOMPARE(pgSql(u, "SELECT previous_state || '/' || reason FROM idem.operations WHERE id = '" + seed + ": b-old'"),
                 std::string("stale STARTED/test"));

        // Brandur Leach's table: keys unique per user, a bigserial primary key, recovery points
        const std::string brandur = uniqueTable("stripe");
        pgSql(u, "CREATE TABLE " + brandur + " (id bigserial PRIMARY KEY, created_at timestamptz NOT NULL DEFAULT now(), "
                 "idempotency_key text NOT NULL, last_run_at timestamptz NOT NULL DEFAULT now(), locked_at timestamptz "
                 "DEFAULT now(), request_method text NOT NULL DEFAULT 'POST', request_path text NOT NULL DEFAULT '/rides', "
                 "response_code int, response_body jsonb, recovery_point text NOT NULL, user_id bigint NOT NULL, "
                 "UNIQUE (user_id, idempotency_key)); "
                 "INSERT INTO " + brandur + " (idempotency_key, recovery_point, user_id, locked_at, response_code, "
                 "response_body) VALUES ('k1', 'started', 7, now(), NULL, NULL), ('k1', 'ride_created', 8, NULL, NULL, "
                 "NULL), ('k2', 'finished', 7, NULL, 201, '{\"id\": 1}')");
        const QString b = QString::fromStdString(brandur);
        const Ctl k1 = idemctlAt(url, {QStringLiteral("inspect"), QStringLiteral("k1"), QStringLiteral("--table"), b,
                                       QStringLiteral("--json")});
        QVERIFY2(k1.exit == 0, qPrintable(k1.err));
        const QJsonArray users = QJsonDocument::fromJson(k1.out.toUtf8()).array();
        QCOMPARE(users.size(), 2); // one per user
        QCOMPARE(users[0].toObject().value(QStringLiteral("id")).toString(), QStringLiteral("user_id=7 k1"));
        QCOMPARE(users[0].toObject().value(QStringLiteral("stale")).toBool(), false);
        QCOMPARE(users[1].toObject().value(QStringLiteral("stale")).toBool(), true); // unlocked: a retry resumes it
        // a row of such a table is named with its user; the key alone names none
        QCOMPARE(idemctlAt(url, {QStringLiteral("purge"), QStringLiteral("k1"), QStringLiteral("--table"), b}).exit,
                 64);
        const Ctl resumed =
            idemctlAt(url, {QStringLiteral("purge"), QStringLiteral("user_id=7 k1"), QStringLiteral("--table"), b});
        QVERIFY2(resumed.exit == 1 && resumed.err.contains(QStringLiteral("live lock")), qPrintable(resumed.err));
        const Ctl bl =
            idemctlAt(url, {QStringLiteral("stats"), QStringLiteral("--table"), b, QStringLiteral("--json")});
        const QJsonObject bs = QJsonDocument::fromJson(bl.out.toUtf8()).object();
        QCOMPARE(bs.value(QStringLiteral("completed")).toInt(), 1);
        QCOMPARE(bs.value(QStringLiteral("started")).toInt(), 2);

        // what is not a table of idempotency keys, or not there, is said in one line
        pgSql(u, "CREATE TABLE IF NOT EXISTS plain_things (key text PRIMARY KEY, colour text)");
        for (const char* missing : {"plain_things", "no_such_table"}) {
            const Ctl bad =
                idemctlAt(url, {QStringLiteral("list"), QStringLiteral("--table"), QString::fromLatin1(missing)});
            QVERIFY2(bad.exit != 0 && !bad.err.trimmed().contains(QLatin1Char('\n')) &&
                         bad.err.contains(QString::fromLatin1(missing)),
                     qPrintable(bad.err));
        }
        const Ctl redis =
            idemctlAt(QStringLiteral("redis://127.0.0.1:1"), {QStringLiteral("list"), QStringLiteral("--table"), t});
        QVERIFY2(redis.exit == 64 && redis.err.contains(QStringLiteral("postgresql://")), qPrintable(redis.err));
    }

    // keys unique per tenant in a column idem does not know: a key alone names several rows, and
    // a purge by key deletes none of them
    void tablePurgeOfASharedKeyDeletesNothing()
    {
        const std::string table = uniqueTable("tenants");
        const std::string u = url.toStdString();
        pgSql(u, "CREATE TABLE " + table + " (id bigserial PRIMARY KEY, org_id bigint NOT NULL, idempotency_key text "
                 "NOT NULL, status text NOT NULL, response text, locked_at timestamptz, UNIQUE (org_id, "
                 "idempotency_key)); INSERT INTO " + table + " (org_id, idempotency_key, status, response) VALUES "
                 "(1, 'k', 'COMPLETED', 'a'), (2, 'k', 'COMPLETED', 'b'), (3, 'k', 'COMPLETED', 'c')");
        const Ctl shared = idemctlAt(url, {QStringLiteral("purge"), QStringLiteral("k"), QStringLiteral("--table"),
                                           QString::fromStdString(table)});
        QCOMPARE(shared.exit, 1);
        QVERIFY2(shared.err.count(QLatin1Char('\n')) == 1 && shared.err.contains(QStringLiteral("3 rows")) &&
                     shared.err.contains(QStringLiteral("cannot tell them apart")),
                 qPrintable(shared.err));
        QCOMPARE(pgSql(u, "SELECT count(*) FROM " + table), std::string("3"));
    }

    // a lock time idem cannot place is never read as old, nor as "nobody holds it": a timestamp
    // without time zone written by a session in New York, a text time that is not one, and
    // PostgreSQL's own text form of timestamptz
    void tableLockTimesReadSafely()
    {
        const std::string u = url.toStdString();
        const std::string naive = uniqueTable("naive");
        pgSql(u, "CREATE TABLE " + naive + " (key text PRIMARY KEY, status text NOT NULL, locked_at timestamp); "
                 "SET TimeZone = 'America/New_York'; INSERT INTO " + naive + " VALUES ('ny', 'STARTED', now()); "
                 "SET TimeZone = 'UTC'; INSERT INTO " + naive + " VALUES ('old', 'STARTED', now() - interval '13 hours')");
        const auto purge = [&](const std::string& table, const char* key) {
            return idemctlAt(url, {QStringLiteral("purge"), QString::fromLatin1(key), QStringLiteral("--table"),
                                   QString::fromStdString(table)});
        };
        const Ctl ny = purge(naive, "ny");
        QVERIFY2(ny.exit == 1 && ny.err.contains(QStringLiteral("live lock")), qPrintable(ny.err));
        // stale in every zone (13 h old at UTC, over an hour even if written at UTC-12): goes
        const Ctl old = purge(naive, "old");
        QVERIFY2(old.exit == 0 && old.out.contains(QStringLiteral("stale STARTED")), qPrintable(old.err));
        QCOMPARE(pgSql(u, "SELECT string_agg(key, ',') FROM " + naive), std::string("ny"));

        const std::string text = uniqueTable("textlock");
        pgSql(u, "CREATE TABLE " + text + " (key text PRIMARY KEY, status text NOT NULL, locked_at text); "
                 "SET TimeZone = 'UTC'; INSERT INTO " + text + " VALUES ('utc', 'STARTED', now()::text); "
                 "SET TimeZone = 'America/New_York'; INSERT INTO " + text + " VALUES ('ny', 'STARTED', now()::text), "
                 "('odd', 'STARTED', 'soon after lunch'), ('none', 'STARTED', NULL)");
        for (const char* live : {"utc", "ny"}) {
            const Ctl c = purge(text, live);
            QVERIFY2(c.exit == 1 && c.err.contains(QStringLiteral("live lock")), qPrintable(QString::fromLatin1(live) + c.err));
        }
        const Ctl odd = purge(text, "odd");
        QVERIFY2(odd.exit == 1 && odd.err.contains(QStringLiteral("not a time")), qPrintable(odd.err));
        const Ctl none = purge(text, "none"); // NULL: nobody holds it, the next request takes it over
        QVERIFY2(none.exit == 0, qPrintable(none.err));
        QCOMPARE(pgSql(u, "SELECT string_agg(key, ',' ORDER BY key) FROM " + text), std::string("ny,odd,utc"));
        const Ctl shown =
            idemctlAt(url, {QStringLiteral("list"), QStringLiteral("--table"), QString::fromStdString(text),
                            QStringLiteral("--state"), QStringLiteral("malformed"), QStringLiteral("--json")});
        QVERIFY2(shown.exit == 0 && shown.out.contains(QStringLiteral("MALFORMED")), qPrintable(shown.err + shown.out));
    }
};

QTEST_GUILESS_MAIN(TestPgTableCtl)
#include "tst_pgtablectl.moc"
