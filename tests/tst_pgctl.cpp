// idemctl on a postgresql:// URL (or libpq's key=value form, over the unix socket): run gives
// exactly-once under 32 concurrent deliveries; inspect, force-fail, purge, list and stats act on
// schema idem; `pg sweep` deletes expired rows in bounded batches; Redis-only options are refused.
#include "idem/errors.h"
#include "idem/pg/localpostgres.h"
#include "idem/pg/pgstore.h"
#include "idem/pg/schema.h"
#include "pgfixture.h"
#include "testsupport.h"

#include <libpq-fe.h>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <thread>

using idem::AcquireStatus;
using idemtest::Ctl;
using idemtest::finishIdemctl;
using idemtest::pgSql;
using idemtest::startIdemctl;

namespace {

QString uniqueId(const char* prefix) { return QString::fromStdString(idemtest::uniqueNamespace(prefix)); }

// A table name of this test's own (letters, digits and '_')
std::string uniqueTable(const char* prefix)
{
    std::string name = idemtest::uniqueNamespace(prefix);
    std::replace(name.begin(), name.end(), '-', '_');
    return name;
}

} // namespace

class TestPgCtl : public QObject {
    Q_OBJECT

    std::unique_ptr<idem::LocalPostgres> pg;
    QString url;    // postgresql://idem@127.0.0.1:<port>/postgres
    QString socket; // host=<dir> port=<port> user=idem dbname=postgres

    Ctl idemctl(QStringList args, const QString& on = {})
    {
        args.prepend(on.isEmpty() ? url : on);
        args.prepend(QStringLiteral("--url"));
        return idemtest::idemctl(args);
    }

private slots:
    void initTestCase()
    {
        pg = idemtest::startPostgres();
        url = QString::fromStdString(pg->url());
        socket = QString::fromStdString(pg->socketConninfo());
    }
    void cleanupTestCase() { pg.reset(); }

    // 32 deliveries of one key at once, through idemctl run on PostgreSQL: the command runs once,
    // every delivery prints its output and exits with its code (the later ones wait for it)
    void runIsExactlyOnceUnder32ConcurrentDeliveries_data()
    {
        QTest::addColumn<bool>("overSocket");
        QTest::newRow("postgresql:// URI") << false;
        QTest::newRow("key=value over the unix socket") << true;
    }
    void runIsExactlyOnceUnder32ConcurrentDeliveries()
    {
        QFETCH(bool, overSocket);
        QTemporaryDir dir;
        const QString marks = dir.filePath(QStringLiteral("runs"));
        const QString key = uniqueId("run");
        QObject owner;
        std::vector<QProcess*> procs;
        for (int i = 0; i < 32; ++i)
            procs.push_back(startIdemctl({QStringLiteral("--url"), overSocket ? socket : url, QStringLiteral("run"),
                                          QStringLiteral("--key"), key, QStringLiteral("--lease"), QStringLiteral("5s"),
                                          QStringLiteral("--wait"), QStringLiteral("30s"), QStringLiteral("--"),
                                          QStringLiteral("sh"), QStringLiteral("-c"),
                                          QStringLiteral("echo x >> '%1'; sleep 0.3; echo charged; exit 3").arg(marks)},
                                         &owner));
        for (QProcess* p : procs) {
            const Ctl c = finishIdemctl(p);
            QVERIFY2(c.exit == 3, qPrintable(c.err));
            QCOMPARE(c.out, QStringLiteral("charged\n"));
        }
        QFile f(marks);
        QVERIFY(f.open(QIODevice::ReadOnly));
        QCOMPARE(f.readAll(), QByteArray("x\n"));
        const idem::AcquireResult a = idem::PgStore(pg->url()).acquire(key.toStdString());
        QCOMPARE(a.status, AcquireStatus::Duplicate);
        QVERIFY(a.response.find("\"exit_code\":3") != std::string::npos);
    }

    void runStatesAndExitCodes()
    {
        const QString key = uniqueId("codes");
        QTemporaryDir dir;
        const QString payload = dir.filePath(QStringLiteral("p.json"));
        QFile f(payload);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("{\"amount\":10}");
        f.close();
        const Ctl first = idemctl({QStringLiteral("run"), QStringLiteral("--key"), key, QStringLiteral("--payload-file"),
                                   payload, QStringLiteral("--"), QStringLiteral("echo"), QStringLiteral("once")});
        QCOMPARE(first.exit, 0);
        QCOMPARE(first.out, QStringLiteral("once\n"));
        QFile other(dir.filePath(QStringLiteral("q.json")));
        QVERIFY(other.open(QIODevice::WriteOnly));
        other.write("{\"amount\":11}");
        other.close();
        QCOMPARE(idemctl({QStringLiteral("run"), QStringLiteral("--key"), key, QStringLiteral("--payload-file"),
                          other.fileName(), QStringLiteral("--"), QStringLiteral("echo"), QStringLiteral("twice")})
                     .exit,
                 65);
        // in progress elsewhere: 75
        const std::string held = uniqueId("held").toStdString();
        QCOMPARE(idem::PgStore(pg->url()).acquire(held).status, AcquireStatus::Acquired);
        const Ctl busy = idemctl({QStringLiteral("run"), QStringLiteral("--key"), QString::fromStdString(held),
                                  QStringLiteral("--"), QStringLiteral("echo"), QStringLiteral("no")});
        QCOMPARE(busy.exit, 75);
        QVERIFY(busy.out.isEmpty());
        // a terminal failure stored: 79 for the duplicates
        const QString term = uniqueId("term");
        QCOMPARE(idemctl({QStringLiteral("run"), QStringLiteral("--key"), term, QStringLiteral("--on-failure"),
                          QStringLiteral("terminal"), QStringLiteral("--"), QStringLiteral("false")})
                     .exit,
                 1);
        QCOMPARE(idemctl({QStringLiteral("run"), QStringLiteral("--key"), term, QStringLiteral("--"),
                          QStringLiteral("true")})
                     .exit,
                 79);
        // Redis-only options are refused with one line
        const Ctl replicas = idemctl({QStringLiteral("run"), QStringLiteral("--key"), key,
                                      QStringLiteral("--min-replicas"), QStringLiteral("1"), QStringLiteral("--"),
                                      QStringLiteral("true")});
        QCOMPARE(replicas.exit, 64);
        QCOMPARE(replicas.err.count(QLatin1Char('\n')), 1);
        const Ctl ns = idemctl({QStringLiteral("--namespace"), QStringLiteral("x"), QStringLiteral("list")});
        QCOMPARE(ns.exit, 64);
        QVERIFY2(ns.err.contains(QStringLiteral("--namespace is for Redis")), qPrintable(ns.err));
        QCOMPARE(idemctl({QStringLiteral("audit")}).exit, 64);
        const Ctl acl = idemctl({QStringLiteral("acl"), QStringLiteral("monitor"), QStringLiteral("--user"),
                                 QStringLiteral("mon"), QStringLiteral("--nopass")});
        QVERIFY2(acl.exit == 64 && acl.err.contains(QStringLiteral("Redis")) && acl.err.count(QLatin1Char('\n')) == 1,
                 qPrintable(acl.err));
        QCOMPARE(idemctl({QStringLiteral("purge"), QStringLiteral("--stale"), QStringLiteral("--yes")}).exit, 64);
    }

    void inspectForceFailPurge()
    {
        const QString key = uniqueId("admin");
        idem::PgStore store(pg->url());
        const auto a = store.acquire(key.toStdString());
        QCOMPARE(store.checkpoint(a.ticket, "reserved", "r").status, idem::OwnerStatus::Ok);

        const Ctl shown = idemctl({QStringLiteral("inspect"), key});
        QVERIFY2(shown.exit == 0, qPrintable(shown.err));
        QVERIFY2(shown.out.contains(QStringLiteral("started")), qPrintable(shown.out));
        QVERIFY2(shown.out.contains(QStringLiteral("phase      reserved")), qPrintable(shown.out));
        QVERIFY2(shown.out.contains(QStringLiteral("fence      %1").arg(a.ticket.fence)), qPrintable(shown.out));
        const Ctl json = idemctl({QStringLiteral("inspect"), key, QStringLiteral("--json")}, socket);
        QCOMPARE(json.exit, 0);
        const QJsonObject o = QJsonDocument::fromJson(json.out.toUtf8()).object();
        QCOMPARE(o.value(QStringLiteral("state")).toString(), QStringLiteral("STARTED"));
        QCOMPARE(o.value(QStringLiteral("phase")).toString(), QStringLiteral("reserved"));
        QCOMPARE(o.value(QStringLiteral("fence")).toInteger(), a.ticket.fence);

        const Ctl ff = idemctl({QStringLiteral("force-fail"), key, QStringLiteral("--reason"), QStringLiteral("stuck"),
                                QStringLiteral("--by"), QStringLiteral("ops")});
        QVERIFY2(ff.exit == 0, qPrintable(ff.err));
        QVERIFY2(ff.out.contains(QStringLiteral("was STARTED, now FAILED retryable")), qPrintable(ff.out));
        QCOMPARE(store.complete(a.ticket, "late").status, idem::OwnerStatus::LeaseLost);
        QCOMPARE(pgSql(pg->url(), "SELECT by || ':' || reason FROM idem.operations WHERE id = '" + key.toStdString() +
                                    "' AND op = 'force_fail'"),
                 std::string("ops:stuck"));

        const Ctl purged = idemctl({QStringLiteral("purge"), key, QStringLiteral("--reason"), QStringLiteral("rerun")});
        QVERIFY2(purged.exit == 0, qPrintable(purged.err));
        QVERIFY2(purged.out.contains(QStringLiteral("was FAILED")), qPrintable(purged.out));
        QCOMPARE(idemctl({QStringLiteral("inspect"), key}).exit, 66);
        QCOMPARE(idemctl({QStringLiteral("purge"), key}).exit, 66);
        QCOMPARE(idemctl({QStringLiteral("force-fail"), key}).exit, 66);

        // COMPLETED is refused by force-fail (1)
        const std::string done = uniqueId("done").toStdString();
        const auto d = store.acquire(done);
        QCOMPARE(store.complete(d.ticket, "ok").status, idem::OwnerStatus::Ok);
        QCOMPARE(idemctl({QStringLiteral("force-fail"), QString::fromStdString(done)}).exit, 1);
        QCOMPARE(idemctl({QStringLiteral("inspect"), QStringLiteral("--key"), QStringLiteral("k")}).exit, 64);
    }

    // purge as on Redis: a live lock is refused unless --live, and what changed between the read
    // and the delete is kept (the work running again beside a lock it did not see)
    void purgeKeepsLiveLocksAndWhatChanged()
    {
        idem::PgStore store(pg->url());
        const QString live = uniqueId("live");
        const auto a = store.acquire(live.toStdString(), "", idem::Millis(300000));
        QCOMPARE(a.status, idem::AcquireStatus::Acquired);
        const Ctl refused = idemctl({QStringLiteral("purge"), live});
        QCOMPARE(refused.exit, 1);
        QVERIFY2(refused.err.contains(QStringLiteral("live lock")) && refused.err.contains(QStringLiteral("--live")),
                 qPrintable(refused.err));
        QCOMPARE(store.inspect(live.toStdString())->state, idem::RecordState::Started);
        const Ctl forced = idemctl({QStringLiteral("purge"), live, QStringLiteral("--live")});
        QVERIFY2(forced.exit == 0 && forced.out.contains(QStringLiteral("was STARTED")), qPrintable(forced.err));
        QVERIFY(!store.inspect(live.toStdString()));

        // read FAILED; a delivery takes it over (attempt 2) before the delete: kept, nothing logged
        const std::string id = uniqueId("changed").toStdString();
        const auto first = store.acquire(id);
        QCOMPARE(store.fail(first.ticket, idem::FailPolicy::Retryable, "boom").status, idem::OwnerStatus::Ok);
        const auto seen = store.inspect(id);
        QVERIFY(seen && seen->state == idem::RecordState::Failed);
        const auto again = store.acquire(id);
        QCOMPARE(again.status, idem::AcquireStatus::Acquired);
        const idem::AdminResult r = store.purge(id, "bob", "rerun", &*seen);
        QCOMPARE(r.status, idem::AdminStatus::Refused);
        QVERIFY2(r.reason.find("changed since it was read (now STARTED, attempt 2)") != std::string::npos, r.reason.c_str());
        QCOMPARE(store.inspect(id)->state, idem::RecordState::Started);
        QCOMPARE(pgSql(pg->url(), "SELECT count(*) FROM idem.operations WHERE id = '" + id + "'"), std::string("0"));
        // what is read now is what goes; the row lock was released (a second connection takes it)
        const auto now = store.inspect(id);
        QCOMPARE(store.complete(again.ticket, "done").status, idem::OwnerStatus::Ok);
        QCOMPARE(store.purge(id, "bob", "rerun", &*now).status, idem::AdminStatus::Refused); // STARTED -> COMPLETED
        const auto done = store.inspect(id);
        QCOMPARE(store.purge(id, "bob", "rerun", &*done).status, idem::AdminStatus::Ok);
        QVERIFY(!store.inspect(id));
        QCOMPARE(store.purge(id, "bob", "rerun", &*done).status, idem::AdminStatus::NotFound);
    }

    // an expired row is purged only as it was read: a delivery that takes it over between the
    // read and the delete (its transaction still open) keeps its fresh lock
    void purgeOfAnExpiredRowKeepsATakeoverMeanwhile()
    {
        idem::PgStoreOptions o;
        o.lease = idem::Millis(100);
        o.staleKeep = idem::Millis(100);
        idem::PgStore store(pg->url(), o);
        const std::string id = uniqueId("expired").toStdString();
        const auto first = store.acquire(id);
        QCOMPARE(first.status, AcquireStatus::Acquired);
        QTRY_COMPARE(store.inspect(id)->state, idem::RecordState::Expired);

        std::unique_ptr<PGconn, decltype(&PQfinish)> worker(PQconnectdb(pg->url().c_str()), &PQfinish);
        PQclear(PQexec(worker.get(), "BEGIN"));
        PGresult* took = PQexec(worker.get(),
                                ("SELECT outcome FROM idem.acquire('" + id + "', lease => '5 minutes')").c_str());
        QCOMPARE(std::string(PQgetvalue(took, 0, 0)), std::string("acquired"));
        PQclear(took);
        QObject owner;
        QProcess* purge = startIdemctl({QStringLiteral("--url"), url, QStringLiteral("purge"), QString::fromStdString(id)},
                                       &owner);
        // the purge read the expired row and now waits for the worker's row lock
        QTRY_VERIFY_WITH_TIMEOUT(
            pgSql(pg->url(), "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'") == "1", 20'000);
        PQclear(PQexec(worker.get(), "COMMIT"));
        const Ctl refused = finishIdemctl(purge);
        QCOMPARE(refused.exit, 1);
        QVERIFY2(refused.err.contains(QStringLiteral("changed since it was read")), qPrintable(refused.err));
        const auto kept = store.inspect(id);
        QVERIFY(kept && kept->state == idem::RecordState::Started && kept->fence > first.fence);
        QCOMPARE(pgSql(pg->url(), "SELECT count(*) FROM idem.operations WHERE id = '" + id + "'"), std::string("0"));

        // an absent row: said so, nothing done (as for a missing Redis key)
        const Ctl absent = idemctl({QStringLiteral("purge"), uniqueId("absent")});
        QCOMPARE(absent.exit, 66);
        QVERIFY2(absent.err.contains(QStringLiteral("no record")), qPrintable(absent.err));
    }

    // a newer schema's state word is not read as FAILED, nor purged without --live; a schema
    // newer than this idem is not used at all
    void aNewerSchemasStateAndVersion()
    {
        pgSql(pg->url(), "CREATE DATABASE newer");
        const std::string db = pg->url("newer");
        idem::installPgSchema(db);
        pgSql(db, "ALTER DOMAIN idem.record_state DROP CONSTRAINT record_state_check; "
                  "INSERT INTO idem.records (id, state, token, fence, lease_until, expires_at, created_at, started_at) "
                  "VALUES ('r1', 'RESERVED', gen_random_uuid(), nextval('idem.fence'), now() - interval '1 s', "
                  "now() + interval '1 h', now(), now())");
        const QString dbUrl = QString::fromStdString(db);
        const Ctl shown = idemctl({QStringLiteral("inspect"), QStringLiteral("r1"), QStringLiteral("--json")}, dbUrl);
        QVERIFY2(shown.exit == 0, qPrintable(shown.err));
        QCOMPARE(QJsonDocument::fromJson(shown.out.toUtf8()).object().value(QStringLiteral("state")).toString(),
                 QStringLiteral("MALFORMED"));
        const Ctl refused = idemctl({QStringLiteral("purge"), QStringLiteral("r1")}, dbUrl);
        QCOMPARE(refused.exit, 1);
        QVERIFY2(refused.err.contains(QStringLiteral("RESERVED")) && refused.err.contains(QStringLiteral("--live")),
                 qPrintable(refused.err));
        QCOMPARE(pgSql(db, "SELECT state FROM idem.records WHERE id = 'r1'"), std::string("RESERVED"));
        const Ctl forced = idemctl({QStringLiteral("purge"), QStringLiteral("r1"), QStringLiteral("--live")}, dbUrl);
        QVERIFY2(forced.exit == 0, qPrintable(forced.err));

        const int later = idem::kPgSchemaVersion + 1;
        pgSql(db, "INSERT INTO idem.migrations (version) VALUES (" + std::to_string(later) + ")");
        QVERIFY_THROWS_EXCEPTION(idem::SchemaTooNewError, idem::PgStore(db).inspect("r1"));
        for (const QStringList& command : {QStringList{QStringLiteral("list")},
                                           QStringList{QStringLiteral("purge"), QStringLiteral("r2"), QStringLiteral("--live")},
                                           QStringList{QStringLiteral("run"), QStringLiteral("--key"), QStringLiteral("r3"),
                                                       QStringLiteral("--"), QStringLiteral("true")}}) {
            const Ctl c = idemctl(command, dbUrl);
            QVERIFY2(c.exit == 69 && c.err.count(QLatin1Char('\n')) == 1 &&
                         c.err.contains(QStringLiteral("newer than this idem knows")),
                     qPrintable(command.join(QLatin1Char(' ')) + QStringLiteral(": ") + c.err));
        }
        QCOMPARE(pgSql(db, "SELECT count(*) FROM idem.records"), std::string("0"));
    }

    // list and stats walk the table by keyset pages (1000 rows each): 2500 rows, three pages
    void listAndStats()
    {
        pgSql(pg->url(), "CREATE DATABASE listing");
        const std::string db = pg->url("listing");
        idem::installPgSchema(db);
        pgSql(db, "INSERT INTO idem.records (id, state, fence, expires_at, created_at, started_at, response) "
                "SELECT 'c-' || lpad(n::text, 5, '0'), 'COMPLETED', nextval('idem.fence'), now() + interval '1 h', "
                "now(), now(), 'r' FROM generate_series(1, 2500) AS n");
        idem::PgStore store(db);
        const auto live = store.acquire("s-live");
        QCOMPARE(live.status, AcquireStatus::Acquired);
        pgSql(db, "INSERT INTO idem.records (id, state, token, fence, lease_until, expires_at, created_at, started_at) "
                "VALUES ('s-stale', 'STARTED', gen_random_uuid(), nextval('idem.fence'), now() - interval '1 s', "
                "now() + interval '1 h', now(), now()), "
                "('x-expired', 'COMPLETED', NULL, nextval('idem.fence'), NULL, now() - interval '1 s', now(), now())");
        const QString dbUrl = QString::fromStdString(db);

        const Ctl all = idemctl({QStringLiteral("list")}, dbUrl);
        QVERIFY2(all.exit == 0, qPrintable(all.err));
        QCOMPARE(all.out.count(QLatin1Char('\n')), 1 + 2503);
        QVERIFY2(all.err.contains(QStringLiteral("2503 record(s)")), qPrintable(all.err));
        const Ctl stale = idemctl({QStringLiteral("list"), QStringLiteral("--stale"), QStringLiteral("--json")}, dbUrl);
        QCOMPARE(stale.exit, 0);
        QCOMPARE(stale.out.count(QLatin1Char('\n')), 1);
        QCOMPARE(QJsonDocument::fromJson(stale.out.toUtf8()).object().value(QStringLiteral("id")).toString(),
                 QStringLiteral("s-stale"));
        const Ctl started = idemctl({QStringLiteral("list"), QStringLiteral("--state"), QStringLiteral("started")}, dbUrl);
        QVERIFY2(started.out.contains(QStringLiteral("s-live")) && started.out.contains(QStringLiteral("s-stale")),
                 qPrintable(started.out));

        const Ctl stats = idemctl({QStringLiteral("stats"), QStringLiteral("--json")}, dbUrl);
        QVERIFY2(stats.exit == 0, qPrintable(stats.err));
        const QJsonObject s = QJsonDocument::fromJson(stats.out.toUtf8()).object();
        QCOMPARE(s.value(QStringLiteral("total")).toInt(), 2503);
        QCOMPARE(s.value(QStringLiteral("completed")).toInt(), 2500);
        QCOMPARE(s.value(QStringLiteral("started")).toInt(), 2);
        QCOMPARE(s.value(QStringLiteral("stale")).toInt(), 1);
        QCOMPARE(s.value(QStringLiteral("expired")).toInt(), 1);
        QCOMPARE(idemctl({QStringLiteral("list"), QStringLiteral("--pattern"), QStringLiteral("c-*")}, dbUrl).exit, 64);
    }

    // pg sweep: expired rows go in batches of --batch, live ones (and a held row) stay
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

        const Ctl list = idemctl({QStringLiteral("list"), QStringLiteral("--table"), t, QStringLiteral("--json")});
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
        const Ctl stats = idemctl({QStringLiteral("stats"), QStringLiteral("--table"), t, QStringLiteral("--stale-after"),
                                   QStringLiteral("3h"), QStringLiteral("--json")});
        QVERIFY2(stats.exit == 0, qPrintable(stats.err));
        const QJsonObject st = QJsonDocument::fromJson(stats.out.toUtf8()).object();
        QCOMPARE(st.value(QStringLiteral("total")).toInt(), 1505);
        QCOMPARE(st.value(QStringLiteral("started")).toInt(), 2);
        QCOMPARE(st.value(QStringLiteral("stale")).toInt(), 0);
        QCOMPARE(st.value(QStringLiteral("malformed")).toInt(), 1);

        // the stored bytes come back as they are; a binary response is not mangled
        const Ctl one = idemctl({QStringLiteral("inspect"), QStringLiteral("c-done"), QStringLiteral("--table"), t,
                                 QStringLiteral("--json")});
        QVERIFY2(one.exit == 0, qPrintable(one.err));
        const QJsonArray found = QJsonDocument::fromJson(one.out.toUtf8()).array();
        QCOMPARE(found.size(), 1);
        QCOMPARE(found[0].toObject().value(QStringLiteral("table")).toString(), t);
        const Ctl text = idemctl({QStringLiteral("inspect"), QStringLiteral("b-old"), QStringLiteral("--table"), t});
        QVERIFY2(text.exit == 0 && text.out.contains(QStringLiteral("read-only")) && text.out.contains(QStringLiteral("STALE")),
                 qPrintable(text.out));
        QCOMPARE(idemctl({QStringLiteral("inspect"), QStringLiteral("nope"), QStringLiteral("--table"), t}).exit, 66);

        // written only as asked, guarded: purge deletes a row whose work is over and keeps a live
        // lock, a status word it does not know and a row a transaction holds; force-fail refuses
        const auto purge = [&](const char* key) {
            return idemctl({QStringLiteral("purge"), QString::fromLatin1(key), QStringLiteral("--table"), t,
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
        const Ctl ff = idemctl({QStringLiteral("force-fail"), QStringLiteral("b-old"), QStringLiteral("--table"), t});
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
        const Ctl k1 = idemctl({QStringLiteral("inspect"), QStringLiteral("k1"), QStringLiteral("--table"), b,
                                QStringLiteral("--json")});
        QVERIFY2(k1.exit == 0, qPrintable(k1.err));
        const QJsonArray users = QJsonDocument::fromJson(k1.out.toUtf8()).array();
        QCOMPARE(users.size(), 2); // one per user
        QCOMPARE(users[0].toObject().value(QStringLiteral("id")).toString(), QStringLiteral("user_id=7 k1"));
        QCOMPARE(users[0].toObject().value(QStringLiteral("stale")).toBool(), false);
        QCOMPARE(users[1].toObject().value(QStringLiteral("stale")).toBool(), true); // unlocked: a retry resumes it
        // a row of such a table is named with its user; the key alone names none
        QCOMPARE(idemctl({QStringLiteral("purge"), QStringLiteral("k1"), QStringLiteral("--table"), b}).exit, 64);
        const Ctl resumed = idemctl({QStringLiteral("purge"), QStringLiteral("user_id=7 k1"), QStringLiteral("--table"), b});
        QVERIFY2(resumed.exit == 1 && resumed.err.contains(QStringLiteral("live lock")), qPrintable(resumed.err));
        const Ctl bl = idemctl({QStringLiteral("stats"), QStringLiteral("--table"), b, QStringLiteral("--json")});
        const QJsonObject bs = QJsonDocument::fromJson(bl.out.toUtf8()).object();
        QCOMPARE(bs.value(QStringLiteral("completed")).toInt(), 1);
        QCOMPARE(bs.value(QStringLiteral("started")).toInt(), 2);

        // what is not a table of idempotency keys, or not there, is said in one line
        pgSql(u, "CREATE TABLE IF NOT EXISTS plain_things (key text PRIMARY KEY, colour text)");
        for (const char* missing : {"plain_things", "no_such_table"}) {
            const Ctl bad = idemctl({QStringLiteral("list"), QStringLiteral("--table"), QString::fromLatin1(missing)});
            QVERIFY2(bad.exit != 0 && !bad.err.trimmed().contains(QLatin1Char('\n')) &&
                         bad.err.contains(QString::fromLatin1(missing)),
                     qPrintable(bad.err));
        }
        const Ctl redis = idemtest::idemctl({QStringLiteral("--url"), QStringLiteral("redis://127.0.0.1:1"),
                                             QStringLiteral("list"), QStringLiteral("--table"), t});
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
        const Ctl shared = idemctl({QStringLiteral("purge"), QStringLiteral("k"), QStringLiteral("--table"),
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
            return idemctl({QStringLiteral("purge"), QString::fromLatin1(key), QStringLiteral("--table"),
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
        const Ctl shown = idemctl({QStringLiteral("list"), QStringLiteral("--table"), QString::fromStdString(text),
                                   QStringLiteral("--state"), QStringLiteral("malformed"), QStringLiteral("--json")});
        QVERIFY2(shown.exit == 0 && shown.out.contains(QStringLiteral("MALFORMED")), qPrintable(shown.err + shown.out));
    }

    void sweepInBoundedBatches()
    {
        pgSql(pg->url(), "CREATE DATABASE sweeping");
        const std::string db = pg->url("sweeping");
        idem::installPgSchema(db);
        pgSql(db, "INSERT INTO idem.records (id, state, fence, expires_at, created_at, started_at) "
                "SELECT 'old-' || n, 'COMPLETED', nextval('idem.fence'), now() - n * interval '1 s', now(), now() "
                "FROM generate_series(1, 25) AS n");
        idem::PgStore store(db);
        QCOMPARE(store.acquire("live").status, AcquireStatus::Acquired);
        const QString dbUrl = QString::fromStdString(db);
        const QStringList sweep = {QStringLiteral("pg"), QStringLiteral("sweep")};

        const Ctl one = idemctl(sweep + QStringList{QStringLiteral("--batch"), QStringLiteral("10"),
                                                    QStringLiteral("--max-batches"), QStringLiteral("1")},
                                dbUrl);
        QVERIFY2(one.exit == 0, qPrintable(one.err));
        QVERIFY2(one.out.contains(QStringLiteral("swept 10 expired row(s) in 1 batch(es) of up to 10; more remain")),
                 qPrintable(one.out));
        // the oldest expiry went first
        QCOMPARE(pgSql(db, "SELECT count(*) FROM idem.records WHERE id IN ('old-25', 'old-16')"), std::string("0"));
        QCOMPARE(pgSql(db, "SELECT count(*) FROM idem.records WHERE id = 'old-15'"), std::string("1"));

        const Ctl rest = idemctl(sweep + QStringList{QStringLiteral("--batch"), QStringLiteral("10")}, dbUrl);
        QVERIFY2(rest.out.contains(QStringLiteral("swept 15 expired row(s) in 2 batch(es)")), qPrintable(rest.out));
        QCOMPARE(pgSql(db, "SELECT string_agg(id, ',') FROM idem.records"), std::string("live"));
        const Ctl none = idemctl(sweep, dbUrl);
        QVERIFY2(none.out.contains(QStringLiteral("swept 0 expired row(s) in 1 batch(es) of up to 1000")),
                 qPrintable(none.out));

        // a row another transaction holds is skipped, not waited for
        pgSql(db, "UPDATE idem.records SET expires_at = now() - interval '1 s' WHERE id = 'live'");
        std::unique_ptr<PGconn, decltype(&PQfinish)> holder(PQconnectdb(db.c_str()), &PQfinish);
        PQclear(PQexec(holder.get(), "BEGIN"));
        PQclear(PQexec(holder.get(), "SELECT * FROM idem.records WHERE id = 'live' FOR UPDATE"));
        const Ctl skipped = idemctl(sweep, dbUrl);
        QVERIFY2(skipped.out.contains(QStringLiteral("swept 0 expired")), qPrintable(skipped.out));
        PQclear(PQexec(holder.get(), "ROLLBACK"));
        QVERIFY(idemctl(sweep, dbUrl).out.contains(QStringLiteral("swept 1 expired")));

        QCOMPARE(idemctl(sweep + QStringList{QStringLiteral("--batch"), QStringLiteral("0")}, dbUrl).exit, 64);
        QCOMPARE(idemctl({QStringLiteral("pg"), QStringLiteral("init"), QStringLiteral("--batch"), QStringLiteral("5")},
                         dbUrl)
                     .exit,
                 64);
        pg->stop();
        const Ctl away = idemctl(sweep, dbUrl);
        pg->start();
        QCOMPARE(away.exit, 69);
        QCOMPARE(away.err.count(QLatin1Char('\n')), 1);
    }
};

QTEST_GUILESS_MAIN(TestPgCtl)

#include "tst_pgctl.moc"
