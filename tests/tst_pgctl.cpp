// idemctl on a postgresql:// URL (or libpq's key=value form, over the unix socket): run gives
// exactly-once under 32 concurrent deliveries; inspect, force-fail, purge, list and stats act on
// schema idem; `pg sweep` deletes expired rows in bounded batches; Redis-only options are refused;
// an operator command on a row a transaction holds gives up after --lock-timeout (75). Refused
// logins, expired rows and uncommitted first acquires are tst_pgctlops's, --table
// tst_pgtablectl's.
#include "idem/errors.h"
#include "idem/pg/localpostgres.h"
#include "idem/pg/pgstore.h"
#include "idem/pg/schema.h"
#include "pgfixture.h"
#include "testsupport.h"

#include <libpq-fe.h>

#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <thread>

using idem::AcquireStatus;
using idemtest::Ctl;
using idemtest::idemctlAt;
using idemtest::finishIdemctl;
using idemtest::pgSql;
using idemtest::startIdemctl;

namespace {

QString uniqueId(const char* prefix) { return QString::fromStdString(idemtest::uniqueNamespace(prefix)); }

} // namespace

class TestPgCtl : public QObject {
    Q_OBJECT

    std::unique_ptr<idem::LocalPostgres> pg;
    QString url;    // postgresql://idem@127.0.0.1:<port>/postgres
    QString socket; // host=<dir> port=<port> user=idem dbname=postgres

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
        const Ctl first =
            idemctlAt(url, {QStringLiteral("run"), QStringLiteral("--key"), key, QStringLiteral("--payload-file"),
                            payload, QStringLiteral("--"), QStringLiteral("echo"), QStringLiteral("once")});
        QCOMPARE(first.exit, 0);
        QCOMPARE(first.out, QStringLiteral("once\n"));
        QFile other(dir.filePath(QStringLiteral("q.json")));
        QVERIFY(other.open(QIODevice::WriteOnly));
        other.write("{\"amount\":11}");
        other.close();
        QCOMPARE(
            idemctlAt(url, {QStringLiteral("run"), QStringLiteral("--key"), key, QStringLiteral("--payload-file"),
                            other.fileName(), QStringLiteral("--"), QStringLiteral("echo"), QStringLiteral("twice")})
                .exit,
            65);
        // in progress elsewhere: 75
        const std::string held = uniqueId("held").toStdString();
        QCOMPARE(idem::PgStore(pg->url()).acquire(held).status, AcquireStatus::Acquired);
        const Ctl busy = idemctlAt(url, {QStringLiteral("run"), QStringLiteral("--key"), QString::fromStdString(held),
                                         QStringLiteral("--"), QStringLiteral("echo"), QStringLiteral("no")});
        QCOMPARE(busy.exit, 75);
        QVERIFY(busy.out.isEmpty());
        // a terminal failure stored: 79 for the duplicates
        const QString term = uniqueId("term");
        QCOMPARE(idemctlAt(url, {QStringLiteral("run"), QStringLiteral("--key"), term, QStringLiteral("--on-failure"),
                                 QStringLiteral("terminal"), QStringLiteral("--"), QStringLiteral("false")})
                     .exit,
                 1);
        QCOMPARE(idemctlAt(url, {QStringLiteral("run"), QStringLiteral("--key"), term, QStringLiteral("--"),
                                 QStringLiteral("true")})
                     .exit,
                 79);
        // Redis-only options are refused with one line
        const Ctl replicas =
            idemctlAt(url, {QStringLiteral("run"), QStringLiteral("--key"), key, QStringLiteral("--min-replicas"),
                            QStringLiteral("1"), QStringLiteral("--"), QStringLiteral("true")});
        QCOMPARE(replicas.exit, 64);
        QCOMPARE(replicas.err.count(QLatin1Char('\n')), 1);
        const Ctl ns = idemctlAt(url, {QStringLiteral("--namespace"), QStringLiteral("x"), QStringLiteral("list")});
        QCOMPARE(ns.exit, 64);
        QVERIFY2(ns.err.contains(QStringLiteral("--namespace is for Redis")), qPrintable(ns.err));
        QCOMPARE(idemctlAt(url, {QStringLiteral("audit")}).exit, 64);
        const Ctl acl = idemctlAt(url, {QStringLiteral("acl"), QStringLiteral("monitor"), QStringLiteral("--user"),
                                        QStringLiteral("mon"), QStringLiteral("--nopass")});
        QVERIFY2(acl.exit == 64 && acl.err.contains(QStringLiteral("Redis")) && acl.err.count(QLatin1Char('\n')) == 1,
                 qPrintable(acl.err));
        QCOMPARE(idemctlAt(url, {QStringLiteral("purge"), QStringLiteral("--stale"), QStringLiteral("--yes")}).exit,
                 64);
    }

    void inspectForceFailPurge()
    {
        const QString key = uniqueId("admin");
        idem::PgStore store(pg->url());
        const auto a = store.acquire(key.toStdString());
        QCOMPARE(store.checkpoint(a.ticket, "reserved", "r").status, idem::OwnerStatus::Ok);

        const Ctl shown = idemctlAt(url, {QStringLiteral("inspect"), key});
        QVERIFY2(shown.exit == 0, qPrintable(shown.err));
        QVERIFY2(shown.out.contains(QStringLiteral("started")), qPrintable(shown.out));
        QVERIFY2(shown.out.contains(QStringLiteral("phase      reserved")), qPrintable(shown.out));
        QVERIFY2(shown.out.contains(QStringLiteral("fence      %1").arg(a.ticket.fence)), qPrintable(shown.out));
        const Ctl json = idemctlAt(socket, {QStringLiteral("inspect"), key, QStringLiteral("--json")});
        QCOMPARE(json.exit, 0);
        const QJsonObject o = QJsonDocument::fromJson(json.out.toUtf8()).object();
        QCOMPARE(o.value(QStringLiteral("state")).toString(), QStringLiteral("STARTED"));
        QCOMPARE(o.value(QStringLiteral("phase")).toString(), QStringLiteral("reserved"));
        QCOMPARE(o.value(QStringLiteral("fence")).toInteger(), a.ticket.fence);

        const Ctl ff = idemctlAt(url, {QStringLiteral("force-fail"), key, QStringLiteral("--reason"),
                                       QStringLiteral("stuck"), QStringLiteral("--by"), QStringLiteral("ops")});
        QVERIFY2(ff.exit == 0, qPrintable(ff.err));
        QVERIFY2(ff.out.contains(QStringLiteral("was STARTED, now FAILED retryable")), qPrintable(ff.out));
        QCOMPARE(store.complete(a.ticket, "late").status, idem::OwnerStatus::LeaseLost);
        QCOMPARE(pgSql(pg->url(), "SELECT by || ':' || reason FROM idem.operations WHERE id = '" + key.toStdString() +
                                    "' AND op = 'force_fail'"),
                 std::string("ops:stuck"));

        const Ctl purged =
            idemctlAt(url, {QStringLiteral("purge"), key, QStringLiteral("--reason"), QStringLiteral("rerun")});
        QVERIFY2(purged.exit == 0, qPrintable(purged.err));
        QVERIFY2(purged.out.contains(QStringLiteral("was FAILED")), qPrintable(purged.out));
        QCOMPARE(idemctlAt(url, {QStringLiteral("inspect"), key}).exit, 66);
        QCOMPARE(idemctlAt(url, {QStringLiteral("purge"), key}).exit, 66);
        QCOMPARE(idemctlAt(url, {QStringLiteral("force-fail"), key}).exit, 66);

        // COMPLETED is refused by force-fail (1)
        const std::string done = uniqueId("done").toStdString();
        const auto d = store.acquire(done);
        QCOMPARE(store.complete(d.ticket, "ok").status, idem::OwnerStatus::Ok);
        QCOMPARE(idemctlAt(url, {QStringLiteral("force-fail"), QString::fromStdString(done)}).exit, 1);
        QCOMPARE(idemctlAt(url, {QStringLiteral("inspect"), QStringLiteral("--key"), QStringLiteral("k")}).exit, 64);
    }

    // purge as on Redis: a live lock is refused unless --live, and what changed between the read
    // and the delete is kept (the work running again beside a lock it did not see)
    void purgeKeepsLiveLocksAndWhatChanged()
    {
        idem::PgStore store(pg->url());
        const QString live = uniqueId("live");
        const auto a = store.acquire(live.toStdString(), "", idem::Millis(300000));
        QCOMPARE(a.status, idem::AcquireStatus::Acquired);
        const Ctl refused = idemctlAt(url, {QStringLiteral("purge"), live});
        QCOMPARE(refused.exit, 1);
        QVERIFY2(refused.err.contains(QStringLiteral("live lock")) && refused.err.contains(QStringLiteral("--live")),
                 qPrintable(refused.err));
        QCOMPARE(store.inspect(live.toStdString())->state, idem::RecordState::Started);
        const Ctl forced = idemctlAt(url, {QStringLiteral("purge"), live, QStringLiteral("--live")});
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
        QProcess* purge = startIdemctl({QStringLiteral("--url"), url, QStringLiteral("purge"), QString::fromStdString(id),
                                        QStringLiteral("--lock-timeout"), QStringLiteral("2m")},
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
        const Ctl absent = idemctlAt(url, {QStringLiteral("purge"), uniqueId("absent")});
        QCOMPARE(absent.exit, 66);
        QVERIFY2(absent.err.contains(QStringLiteral("no record")), qPrintable(absent.err));
    }

    // force-fail and purge on a row a running transaction holds (a service's transactional work)
    // wait at most --lock-timeout (5s by default), then say so in one line and exit 75, nothing done
    void operatorCommandsOnAHeldRowGiveUp()
    {
        idem::PgStore store(pg->url());
        const std::string live = uniqueId("heldlive").toStdString(), done = uniqueId("helddone").toStdString();
        QCOMPARE(store.acquire(live, "", idem::Millis(300000)).status, AcquireStatus::Acquired);
        QCOMPARE(store.complete(store.acquire(done).ticket, "receipt").status, idem::OwnerStatus::Ok);
        std::unique_ptr<PGconn, decltype(&PQfinish)> worker(PQconnectdb(pg->url().c_str()), &PQfinish);
        idemtest::workSql(worker.get(), "BEGIN");
        idemtest::workSql(worker.get(), "SELECT 1 FROM idem.records WHERE id IN ('" + live + "', '" + done +
                                            "') FOR UPDATE");
        const QString quick = QStringLiteral("300ms");
        const QList<QStringList> commands = {
            {QStringLiteral("force-fail"), QString::fromStdString(live), QStringLiteral("--lock-timeout"), quick},
            {QStringLiteral("purge"), QString::fromStdString(live), QStringLiteral("--live"), QStringLiteral("--lock-timeout"),
             quick},
            {QStringLiteral("purge"), QString::fromStdString(done), QStringLiteral("--lock-timeout"), quick},
            {QStringLiteral("purge"), QString::fromStdString(done)}, // the default: 5 s
        };
        for (const QStringList& command : commands) {
            QElapsedTimer took;
            took.start();
            const Ctl busy = idemctlAt(url, command);
            QVERIFY2(busy.exit == 75, qPrintable(command.join(u' ') + u' ' + QString::number(busy.exit) + busy.err));
            QCOMPARE(busy.err.count(QLatin1Char('\n')), 1);
            QVERIFY2(busy.err.contains(QStringLiteral("a running transaction holds the row")) &&
                         busy.err.contains(QStringLiteral("nothing done")),
                     qPrintable(busy.err));
            QVERIFY2(took.elapsed() < 30'000, qPrintable(QString::number(took.elapsed())));
        }
        idemtest::workSql(worker.get(), "ROLLBACK");
        QCOMPARE(store.inspect(live)->rawStatus, std::string("STARTED"));
        QCOMPARE(store.inspect(done)->rawStatus, std::string("COMPLETED"));
        QCOMPARE(pgSql(pg->url(), "SELECT count(*) FROM idem.operations WHERE id IN ('" + live + "', '" + done + "')"),
                 std::string("0"));
        // bad input, and Redis (whose scripts never wait): 64
        QCOMPARE(idemctlAt(url, {QStringLiteral("purge"), QString::fromStdString(done),
                                 QStringLiteral("--lock-timeout"), QStringLiteral("soon")})
                     .exit,
                 64);
        QCOMPARE(idemctlAt(QStringLiteral("redis://127.0.0.1:1/0"),
                           {QStringLiteral("purge"), QStringLiteral("x"), QStringLiteral("--lock-timeout"),
                            QStringLiteral("1s")})
                     .exit,
                 64);
        const Ctl purged = idemctlAt(url, {QStringLiteral("purge"), QString::fromStdString(done)}); // free again
        QVERIFY2(purged.exit == 0, qPrintable(purged.err));
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
        const Ctl shown = idemctlAt(dbUrl, {QStringLiteral("inspect"), QStringLiteral("r1"), QStringLiteral("--json")});
        QVERIFY2(shown.exit == 0, qPrintable(shown.err));
        QCOMPARE(QJsonDocument::fromJson(shown.out.toUtf8()).object().value(QStringLiteral("state")).toString(),
                 QStringLiteral("MALFORMED"));
        const Ctl refused = idemctlAt(dbUrl, {QStringLiteral("purge"), QStringLiteral("r1")});
        QCOMPARE(refused.exit, 1);
        QVERIFY2(refused.err.contains(QStringLiteral("RESERVED")) && refused.err.contains(QStringLiteral("--live")),
                 qPrintable(refused.err));
        QCOMPARE(pgSql(db, "SELECT state FROM idem.records WHERE id = 'r1'"), std::string("RESERVED"));
        const Ctl forced = idemctlAt(dbUrl, {QStringLiteral("purge"), QStringLiteral("r1"), QStringLiteral("--live")});
        QVERIFY2(forced.exit == 0, qPrintable(forced.err));

        const int later = idem::kPgSchemaVersion + 1;
        pgSql(db, "INSERT INTO idem.migrations (version) VALUES (" + std::to_string(later) + ")");
        QVERIFY_THROWS_EXCEPTION(idem::SchemaTooNewError, idem::PgStore(db).inspect("r1"));
        for (const QStringList& command : {QStringList{QStringLiteral("list")},
                                           QStringList{QStringLiteral("purge"), QStringLiteral("r2"), QStringLiteral("--live")},
                                           QStringList{QStringLiteral("run"), QStringLiteral("--key"), QStringLiteral("r3"),
                                                       QStringLiteral("--"), QStringLiteral("true")}}) {
            const Ctl c = idemctlAt(dbUrl, command);
            QVERIFY2(c.exit == 69 && c.err.count(QLatin1Char('\n')) == 1 &&
                         c.err.contains(QStringLiteral("newer than this idem knows")),
                     qPrintable(command.join(QLatin1Char(' ')) + QStringLiteral(": ") + c.err));
        }
        QCOMPARE(pgSql(db, "SELECT count(*) FROM idem.records"), std::string("0"));
    }

    // list and stats walk the table by keyset pages (1000 rows each): 2500 rows, three pages. stats
    // gives the fields Redis's stats give, and counts every row under one of them (a newer
    // schema's state word as malformed)
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
        pgSql(db, "ALTER DOMAIN idem.record_state DROP CONSTRAINT record_state_check; "
                  "INSERT INTO idem.records (id, state, fence, expires_at, created_at, started_at) "
                  "VALUES ('y-newer', 'RESERVED', nextval('idem.fence'), now() + interval '1 h', now(), now())");
        const QString dbUrl = QString::fromStdString(db);

        const Ctl all = idemctlAt(dbUrl, {QStringLiteral("list")});
        QVERIFY2(all.exit == 0, qPrintable(all.err));
        QCOMPARE(all.out.count(QLatin1Char('\n')), 1 + 2504);
        QVERIFY2(all.err.contains(QStringLiteral("2504 record(s)")), qPrintable(all.err));
        const Ctl stale =
            idemctlAt(dbUrl, {QStringLiteral("list"), QStringLiteral("--stale"), QStringLiteral("--json")});
        QCOMPARE(stale.exit, 0);
        QCOMPARE(stale.out.count(QLatin1Char('\n')), 1);
        QCOMPARE(QJsonDocument::fromJson(stale.out.toUtf8()).object().value(QStringLiteral("id")).toString(),
                 QStringLiteral("s-stale"));
        const Ctl started =
            idemctlAt(dbUrl, {QStringLiteral("list"), QStringLiteral("--state"), QStringLiteral("started")});
        QVERIFY2(started.out.contains(QStringLiteral("s-live")) && started.out.contains(QStringLiteral("s-stale")),
                 qPrintable(started.out));

        const Ctl stats = idemctlAt(dbUrl, {QStringLiteral("stats"), QStringLiteral("--json")});
        QVERIFY2(stats.exit == 0, qPrintable(stats.err));
        const QJsonObject s = QJsonDocument::fromJson(stats.out.toUtf8()).object();
        QCOMPARE(s.value(QStringLiteral("total")).toInt(), 2504);
        QCOMPARE(s.value(QStringLiteral("completed")).toInt(), 2500);
        QCOMPARE(s.value(QStringLiteral("started")).toInt(), 2);
        QCOMPARE(s.value(QStringLiteral("stale")).toInt(), 1);
        QCOMPARE(s.value(QStringLiteral("expired")).toInt(), 1);
        // every field Redis's stats have (docs/operations.md), no more, and each row under one state
        const QStringList fields = {QStringLiteral("total"),     QStringLiteral("started"),   QStringLiteral("stale"),
                                    QStringLiteral("blocked"),   QStringLiteral("completed"), QStringLiteral("failed"),
                                    QStringLiteral("expired"),   QStringLiteral("malformed"), QStringLiteral("foreign"),
                                    QStringLiteral("other_programs"), QStringLiteral("unknown"), QStringLiteral("no_ttl")};
        QStringList keys = s.keys();
        keys.sort();
        QStringList wanted = fields;
        wanted.sort();
        QCOMPARE(keys, wanted);
        QCOMPARE(s.value(QStringLiteral("malformed")).toInt(), 1);
        QCOMPARE(s.value(QStringLiteral("no_ttl")).toInt(), 0);
        int states = 0;
        for (const char* state : {"started", "completed", "failed", "expired", "malformed", "foreign", "unknown"})
            states += s.value(QLatin1String(state)).toInt();
        QCOMPARE(states, 2504);
        const Ctl text = idemctlAt(dbUrl, {QStringLiteral("stats")});
        QVERIFY2(text.exit == 0, qPrintable(text.err));
        for (const char* line : {"total      2504\n", "started    2 (stale 1, blocked 0)\n", "malformed  1\n",
                                 "foreign    0 (other programs' data 0)\n", "unknown    0\n", "no TTL     0\n",
                                 "expired    1 (counted as absent; idemctl pg sweep deletes them)\n"})
            QVERIFY2(text.out.contains(QLatin1String(line)), qPrintable(text.out));
        QCOMPARE(idemctlAt(dbUrl, {QStringLiteral("list"), QStringLiteral("--pattern"), QStringLiteral("c-*")}).exit,
                 64);
    }

    // pg sweep: expired rows go in batches of --batch, live ones (and a held row) stay
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

        const Ctl one = idemctlAt(dbUrl, sweep + QStringList{QStringLiteral("--batch"), QStringLiteral("10"),
                                                             QStringLiteral("--max-batches"), QStringLiteral("1")});
        QVERIFY2(one.exit == 0, qPrintable(one.err));
        QVERIFY2(one.out.contains(QStringLiteral("swept 10 expired row(s) in 1 batch(es) of up to 10; more remain")),
                 qPrintable(one.out));
        // the oldest expiry went first
        QCOMPARE(pgSql(db, "SELECT count(*) FROM idem.records WHERE id IN ('old-25', 'old-16')"), std::string("0"));
        QCOMPARE(pgSql(db, "SELECT count(*) FROM idem.records WHERE id = 'old-15'"), std::string("1"));

        const Ctl rest = idemctlAt(dbUrl, sweep + QStringList{QStringLiteral("--batch"), QStringLiteral("10")});
        QVERIFY2(rest.out.contains(QStringLiteral("swept 15 expired row(s) in 2 batch(es)")), qPrintable(rest.out));
        QCOMPARE(pgSql(db, "SELECT string_agg(id, ',') FROM idem.records"), std::string("live"));
        const Ctl none = idemctlAt(dbUrl, sweep);
        QVERIFY2(none.out.contains(QStringLiteral("swept 0 expired row(s) in 1 batch(es) of up to 1000")),
                 qPrintable(none.out));

        // a row another transaction holds is skipped, not waited for
        pgSql(db, "UPDATE idem.records SET expires_at = now() - interval '1 s' WHERE id = 'live'");
        std::unique_ptr<PGconn, decltype(&PQfinish)> holder(PQconnectdb(db.c_str()), &PQfinish);
        PQclear(PQexec(holder.get(), "BEGIN"));
        PQclear(PQexec(holder.get(), "SELECT * FROM idem.records WHERE id = 'live' FOR UPDATE"));
        const Ctl skipped = idemctlAt(dbUrl, sweep);
        QVERIFY2(skipped.out.contains(QStringLiteral("swept 0 expired")), qPrintable(skipped.out));
        PQclear(PQexec(holder.get(), "ROLLBACK"));
        QVERIFY(idemctlAt(dbUrl, sweep).out.contains(QStringLiteral("swept 1 expired")));

        QCOMPARE(idemctlAt(dbUrl, sweep + QStringList{QStringLiteral("--batch"), QStringLiteral("0")}).exit, 64);
        QCOMPARE(idemctlAt(dbUrl, {QStringLiteral("pg"), QStringLiteral("init"), QStringLiteral("--batch"),
                                   QStringLiteral("5")})
                     .exit,
                 64);
        pg->stop();
        const Ctl away = idemctlAt(dbUrl, sweep);
        pg->start();
        QCOMPARE(away.exit, 69);
        QCOMPARE(away.err.count(QLatin1Char('\n')), 1);
    }
};

QTEST_GUILESS_MAIN(TestPgCtl)

#include "tst_pgctl.moc"
