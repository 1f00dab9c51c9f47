// idemctl on a postgresql:// URL, what is not the everyday path: a login the server refuses is 77
// and a database it does not have 64, not "unavailable"; a row past its expiry has no time left
// (0, never "unknown" or negative); force-fail and purge on an id whose first acquire a
// transaction has not committed wait for it (75 after --lock-timeout), never "no record". The
// everyday commands are tst_pgctl's, --table tst_pgtablectl's.
#include "idem/errors.h"
#include "idem/pg/localpostgres.h"
#include "idem/pg/pgstore.h"
#include "pgfixture.h"
#include "testsupport.h"

#include <libpq-fe.h>

#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>

using idemtest::Ctl;
using idemtest::idemctlAt;
using idemtest::finishIdemctl;
using idemtest::pgSql;
using idemtest::startIdemctl;

namespace {

QString uniqueId(const char* prefix) { return QString::fromStdString(idemtest::uniqueNamespace(prefix)); }

} // namespace

class TestPgCtlOps : public QObject {
    Q_OBJECT

    std::unique_ptr<idem::LocalPostgres> pg;
    QString url; // postgresql://idem@127.0.0.1:<port>/postgres

    // idemctl ARGS, left waiting on a lock the worker's transaction holds, then that transaction
    // ended with `end` (COMMIT or ROLLBACK): what the command did with what it ended with. A
    // command that never waited is exit -1, saying so
    Ctl idemctlWhileItWaits(const QStringList& args, PGconn* worker, const char* end)
    {
        QObject owner;
        QProcess* p = startIdemctl(QStringList{QStringLiteral("--url"), url} + args, &owner);
        const bool waited = QTest::qWaitFor(
            [&] { return pgSql(pg->url(), "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'") == "1"; },
            20'000);
        idemtest::workSql(worker, end);
        Ctl c = finishIdemctl(p);
        if (!waited)
            c = Ctl{-1, c.out, QStringLiteral("never waited for the transaction's lock: ") + c.err};
        return c;
    }

private slots:
    void initTestCase()
    {
        pg = idemtest::startPostgres();
        url = QString::fromStdString(pg->url());
    }
    void cleanupTestCase() { pg.reset(); }

    // What retrying cannot fix is not "store unavailable" (69): a login the server refuses is 77 as
    // credentials Redis refuses are, a database that does not exist 64, each in one line naming what
    // to check (never the password); a server that is not there stays 69
    void refusedLoginAndMissingDatabase()
    {
        pgSql(pg->url(), "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'app') THEN "
                         "CREATE ROLE app LOGIN PASSWORD 'right'; END IF; END $$");
        {
            // these roles, and only they, must give a password or are turned away (the fixture
            // trusts every other one)
            QFile f(QString::fromStdString(pg->dir() + "/data/pg_hba.conf"));
            QVERIFY(f.open(QIODevice::ReadOnly));
            const QByteArray rest = f.readAll();
            f.close();
            if (!rest.startsWith("host all app ")) {
                QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
                f.write("host all app 127.0.0.1/32 scram-sha-256\nhost all turnedaway 127.0.0.1/32 reject\n" + rest);
                f.close();
                pgSql(pg->url(), "SELECT pg_reload_conf()");
            }
        }
        pgSql(pg->url(), "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'turnedaway') THEN "
                         "CREATE ROLE turnedaway LOGIN; END IF; END $$");
        // a database no one but its owner may connect to: 42501 for app, which may log in
        if (pgSql(pg->url(), "SELECT count(*) FROM pg_database WHERE datname = 'closed'") == "0")
            pgSql(pg->url(), "CREATE DATABASE closed");
        pgSql(pg->url(), "REVOKE CONNECT ON DATABASE closed FROM PUBLIC");
        const QString at = QStringLiteral("127.0.0.1:%1").arg(pg->port());
        QTRY_VERIFY_WITH_TIMEOUT( // (the reload is asynchronous)
            idemctlAt(QStringLiteral("postgresql://app:WRONG@%1/postgres").arg(at), {QStringLiteral("list")})
                .err.contains(QStringLiteral("password authentication failed")),
            10'000);

        struct Case {
            QString url, said, check;
            int exit;
        };
        const QList<Case> cases = {
            {QStringLiteral("postgresql://app:WRONG@%1/postgres").arg(at), QStringLiteral("credentials refused: "),
             QStringLiteral("password authentication failed for user \"app\""), 77},
            {QStringLiteral("postgresql://app@%1/postgres").arg(at), QStringLiteral("credentials refused: "),
             QStringLiteral("no password supplied"), 77},
            {QStringLiteral("postgresql://nobody@%1/postgres").arg(at), QStringLiteral("credentials refused: "),
             QStringLiteral("role \"nobody\" does not exist"), 77},
            {QStringLiteral("postgresql://app:right@%1/closed").arg(at), QStringLiteral("no CONNECT right: "),
             QStringLiteral("GRANT CONNECT ON DATABASE"), 77},
            {QStringLiteral("postgresql://turnedaway@%1/postgres").arg(at), QStringLiteral("login refused: "),
             QStringLiteral("pg_hba.conf rejects connection"), 77},
            {QStringLiteral("postgresql://idem@%1/nosuchdb").arg(at), QStringLiteral("no such database: "),
             QStringLiteral("database \"nosuchdb\" does not exist"), 64},
            {QStringLiteral("postgresql://idem@127.0.0.1:1/postgres"), QStringLiteral("store unavailable: "),
             QString(), 69},
        };
        QTemporaryDir dir;
        const QString ran = dir.filePath(QStringLiteral("ran"));
        for (const Case& c : cases) {
            const QList<QStringList> commands = {
                {QStringLiteral("list")},
                {QStringLiteral("stats"), QStringLiteral("--json")},
                {QStringLiteral("inspect"), QStringLiteral("x")},
                {QStringLiteral("purge"), QStringLiteral("x")},
                {QStringLiteral("pg"), QStringLiteral("init")},
                {QStringLiteral("run"), QStringLiteral("--key"), QStringLiteral("x"), QStringLiteral("--"),
                 QStringLiteral("touch"), ran},
            };
            for (const QStringList& command : commands) {
                const Ctl r = idemctlAt(c.url, command);
                const QString what = c.url + u' ' + command.join(u' ') + u' ' + QString::number(r.exit) + u' ' + r.err;
                QVERIFY2(r.exit == c.exit, qPrintable(what));
                QVERIFY2(r.err.count(QLatin1Char('\n')) == 1, qPrintable(what));
                QVERIFY2(r.err.contains(c.said) && r.err.contains(c.check), qPrintable(what));
                QVERIFY2(!r.err.contains(QStringLiteral("WRONG")), qPrintable(what)); // never the password
                if (c.exit != 69) {
                    QVERIFY2(r.err.contains(QStringLiteral("retrying will not help")) &&
                                 r.err.contains(QStringLiteral("--url or $IDEM_URL")),
                             qPrintable(what));
                    QVERIFY2(!r.err.contains(QStringLiteral("unavailable")), qPrintable(what));
                }
                if (command.first() == QStringLiteral("run"))
                    QVERIFY2(r.err.contains(QStringLiteral("command not run")), qPrintable(what));
            }
        }
        QVERIFY(!QFile::exists(ran));
        const Ctl let =
            idemctlAt(QStringLiteral("postgresql://app:right@%1/postgres").arg(at), {QStringLiteral("list")});
        QVERIFY2(let.exit == 77 && let.err.contains(QStringLiteral("role 'app'")), qPrintable(let.err)); // no grant yet

        // the server's words in another language (lc_messages) are not guessed at: unavailable, as before
        QCOMPARE(idem::pgRefusalOf("connection to server at \"db\" (10.0.0.5), port 5432 failed: FATAL:  "
                                   "Passwort-Authentifizierung für Benutzer »app« fehlgeschlagen"),
                 idem::PgRefusal::None);
        // nor is a socket's path that happens to hold the words: only the server's own count
        QCOMPARE(idem::pgRefusalOf("connection to server on socket \"/run/database \"x\" does not exist/"
                                   ".s.PGSQL.5432\" failed: No such file or directory"),
                 idem::PgRefusal::None);
        QCOMPARE(idem::pgRefusalOf("connection to server at \"127.0.0.1\", port 5432 failed: FATAL:  the database "
                                   "system is starting up"),
                 idem::PgRefusal::None);
    }

    // a row past its expiry (kept until swept, counted as absent) has no time left, and list, its
    // JSON and inspect say the same: a TTL of 0, never "unknown", "-" or a negative count
    void expiredRowHasNoTimeLeft()
    {
        idem::PgStore store(pg->url());
        const std::string id = uniqueId("gone").toStdString();
        const auto a = store.acquire(id);
        QCOMPARE(store.complete(a.ticket, "receipt", idem::Millis(1000)).status, idem::OwnerStatus::Ok);
        QTRY_COMPARE_WITH_TIMEOUT(store.inspect(id)->state, idem::RecordState::Expired, 5000);
        const auto rec = store.inspect(id);
        QCOMPARE(rec->ttlMs, std::int64_t(0));
        QVERIFY(rec->expiresMs && *rec->expiresMs > 0);
        const QString qid = QString::fromStdString(id);

        const Ctl json = idemctlAt(url, {QStringLiteral("list"), QStringLiteral("--state"), QStringLiteral("expired"),
                                         QStringLiteral("--json")});
        QVERIFY2(json.exit == 0, qPrintable(json.err));
        bool found = false;
        for (const QString& line : json.out.split(QLatin1Char('\n'), Qt::SkipEmptyParts)) {
            const QJsonObject o = QJsonDocument::fromJson(line.toUtf8()).object();
            QVERIFY2(o.value(QStringLiteral("ttl_ms")).toInteger() == 0, qPrintable(line)); // every expired row
            if (o.value(QStringLiteral("id")).toString() != qid)
                continue;
            found = true;
            QCOMPARE(o.value(QStringLiteral("state")).toString(), QStringLiteral("EXPIRED"));
            QCOMPARE(o.value(QStringLiteral("expires_ms")).toInteger(), qint64(*rec->expiresMs));
        }
        QVERIFY2(found, qPrintable(json.out));
        const Ctl text = idemctlAt(url, {QStringLiteral("list"), QStringLiteral("--state"), QStringLiteral("expired")});
        QVERIFY2(text.exit == 0, qPrintable(text.err));
        const QStringList lines = text.out.split(QLatin1Char('\n'));
        const auto row =
            std::find_if(lines.begin(), lines.end(), [&](const QString& l) { return l.startsWith(qid + u' '); });
        QVERIFY2(row != lines.end(), qPrintable(text.out));
        QVERIFY2(row->simplified().startsWith(qid + QStringLiteral(" EXPIRED 0ms ")), qPrintable(*row));
        const Ctl shown = idemctlAt(url, {QStringLiteral("inspect"), qid});
        QVERIFY2(shown.exit == 0, qPrintable(shown.err));
        QVERIFY2(shown.out.contains(QStringLiteral("ttl        0ms\n")), qPrintable(shown.out));
        const Ctl inspected = idemctlAt(url, {QStringLiteral("inspect"), qid, QStringLiteral("--json")});
        const QJsonObject j = QJsonDocument::fromJson(inspected.out.toUtf8()).object();
        QCOMPARE(j.value(QStringLiteral("ttl_ms")).toInteger(), qint64(0));
    }

    // a service's transaction that acquired an id for the first time and has not committed holds a
    // row no other transaction sees: force-fail and purge wait for it as for a row it holds (75
    // after --lock-timeout), never "no record"; what it commits meanwhile is acted on as a row seen
    // at once (purge: "changed since it was read"), what it rolls back is absent (66). The probe
    // that finds this out leaves nothing behind: no row, no fence
    void operatorCommandsOnAnUncommittedFirstAcquire()
    {
        const std::string held = uniqueId("held").toStdString();
        const QString qheld = QString::fromStdString(held);
        std::unique_ptr<PGconn, decltype(&PQfinish)> worker(PQconnectdb(pg->url().c_str()), &PQfinish);
        const auto acquireOpen = [&](const std::string& id) {
            idemtest::workSql(worker.get(), "BEGIN");
            PGresult* took = PQexec(worker.get(), ("SELECT outcome FROM idem.acquire('" + id + "')").c_str());
            const std::string outcome = PQntuples(took) == 1 ? PQgetvalue(took, 0, 0) : "";
            PQclear(took);
            return outcome;
        };
        QCOMPARE(acquireOpen(held), std::string("acquired"));
        QCOMPARE(pgSql(pg->url(), "SELECT count(*) FROM idem.records WHERE id = '" + held + "'"), std::string("0"));

        const QString wait = QStringLiteral("--lock-timeout"), quick = QStringLiteral("300ms");
        for (const QStringList& command :
             {QStringList{QStringLiteral("force-fail"), qheld, wait, quick},
              QStringList{QStringLiteral("purge"), qheld, wait, quick},
              QStringList{QStringLiteral("purge"), qheld, QStringLiteral("--live"), wait, quick}}) {
            const Ctl busy = idemctlAt(url, command);
            QVERIFY2(busy.exit == 75, qPrintable(command.join(u' ') + u' ' + QString::number(busy.exit) + busy.err));
            QCOMPARE(busy.err.count(QLatin1Char('\n')), 1);
            QVERIFY2(busy.err.contains(QStringLiteral("a running transaction holds the row")) &&
                         busy.err.contains(QStringLiteral("nothing done")),
                     qPrintable(busy.err));
        }
        idem::PgStoreOptions o;
        o.operatorLockTimeout = idem::Millis(200);
        idem::PgStore store(pg->url(), o);
        QCOMPARE(store.forceFail(held, "stuck", false, "ops").status, idem::AdminStatus::Busy);
        QCOMPARE(store.purge(held, "ops").status, idem::AdminStatus::Busy);

        // committed while a purge waits: read as absent, it is not purged now
        const Ctl changed = idemctlWhileItWaits({QStringLiteral("purge"), qheld, wait, QStringLiteral("2m")},
                                                worker.get(), "COMMIT");
        QVERIFY2(changed.exit == 1 && changed.err.contains(QStringLiteral("changed since it was read (now STARTED")),
                 qPrintable(QString::number(changed.exit) + changed.err));
        QCOMPARE(store.inspect(held)->rawStatus, std::string("STARTED"));
        QCOMPARE(pgSql(pg->url(), "SELECT count(*) FROM idem.operations WHERE id = '" + held + "'"), std::string("0"));

        // rolled back while a force-fail waits: the id is absent, and the probe left no row
        const std::string gone = uniqueId("rolledback").toStdString();
        QCOMPARE(acquireOpen(gone), std::string("acquired"));
        const Ctl absent = idemctlWhileItWaits(
            {QStringLiteral("force-fail"), QString::fromStdString(gone), wait, QStringLiteral("2m")}, worker.get(),
            "ROLLBACK");
        QVERIFY2(absent.exit == 66 && absent.err.contains(QStringLiteral("no record")),
                 qPrintable(QString::number(absent.exit) + absent.err));

        // an id nobody holds: 66 at once; the probes' rows and notifications went with their
        // subtransactions, and no fence was drawn for them
        const std::string fenceBefore = pgSql(pg->url(), "SELECT last_value FROM idem.fence");
        const QString nobody = uniqueId("nobody");
        QCOMPARE(idemctlAt(url, {QStringLiteral("force-fail"), nobody}).exit, 66);
        QCOMPARE(idemctlAt(url, {QStringLiteral("purge"), nobody}).exit, 66);
        QCOMPARE(idemctlAt(url, {QStringLiteral("purge"), nobody, QStringLiteral("--live")}).exit, 66);
        QCOMPARE(pgSql(pg->url(), "SELECT last_value FROM idem.fence"), fenceBefore);
        QCOMPARE(pgSql(pg->url(), "SELECT count(*) FROM idem.records WHERE id IN ('" + gone + "', '" +
                                      nobody.toStdString() + "') OR expires_at = '-infinity'"),
                 std::string("0"));
    }
};

QTEST_GUILESS_MAIN(TestPgCtlOps)

#include "tst_pgctlops.moc"
