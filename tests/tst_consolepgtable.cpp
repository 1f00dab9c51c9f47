// The console on another program's table (--table) touches nothing of schema idem, against a
// private PostgreSQL (tests/pgfixture.h): a role granted only SELECT and DELETE on a hand-written
// idempotency_keys table reads it, in a database without schema idem and in one with it (where
// reading idem.records is refused to that role), and the console opens no listening connection
// and registers no watcher: idem's triggers stay quiet, which would otherwise serialise the
// commits of every service of that database while the console is open. Its data is polled, and
// the status bar says so. idemctl's --table reads need no more.
#include "consoletest.h"
#include "pgfixture.h"

#include <libpq-fe.h>

class TestConsolePgTable : public QObject {
    Q_OBJECT

    std::unique_ptr<idem::LocalPostgres> pg;
    QTemporaryDir tmp;

    std::string as(const std::string& role, const std::string& database) const
    {
        std::string u = pg->url(database);
        return u.replace(u.find("idem@"), 4, role);
    }
    static std::string sessionsOf(const std::string& admin, const std::string& role, const std::string& database)
    {
        return idemtest::pgSql(admin, "SELECT count(*) FROM pg_stat_activity WHERE usename = '" + role +
                                          "' AND datname = '" + database + "'");
    }

private slots:
    void initTestCase()
    {
        QStandardPaths::setTestModeEnabled(true);
        pg = idemtest::startPostgres(false);
        const std::string admin = pg->url();
        idemtest::pgSql(admin, "CREATE ROLE keys_reader LOGIN");  // the table's SELECT and DELETE, nothing else
        idemtest::pgSql(admin, "CREATE ROLE keys_monitor LOGIN"); // the same, and schema idem's monitor
        for (const std::string db : {"plain", "withidem"}) {
            idemtest::pgSql(admin, "CREATE DATABASE " + db);
            idemtest::pgSql(pg->url(db),
                            "CREATE TABLE idempotency_keys (key text PRIMARY KEY, status text NOT NULL, response bytea, "
                            "locked_at timestamptz, created_at timestamptz NOT NULL DEFAULT now()); "
                            "INSERT INTO idempotency_keys (key, status, response, locked_at) VALUES "
                            "('k-live', 'STARTED', NULL, now()), ('k-old', 'STARTED', NULL, now() - interval '2 hours'), "
                            "('k-done', 'COMPLETED', 'the answer', NULL); "
                            "GRANT SELECT, DELETE ON idempotency_keys TO keys_reader, keys_monitor");
        }
        const QString withIdem = QString::fromStdString(pg->url("withidem"));
        const auto init = idemtest::idemctlAt(withIdem, {u"pg"_s, u"init"_s});
        QVERIFY2(init.exit == 0, qPrintable(init.err));
        const auto monitor = idemtest::idemctlAt(withIdem, {u"acl"_s, u"monitor"_s, u"--user"_s, u"keys_monitor"_s});
        QVERIFY2(monitor.exit == 0, qPrintable(monitor.err));
        idemtest::pgSql(pg->url("withidem"), monitor.out.toStdString());
        // what the review found: this role may not so much as look up a name in schema idem
        QCOMPARE(idemtest::sqlstateOf(as("keys_reader", "withidem"), "SELECT to_regclass('idem.records')"),
                 std::string("42501"));
        QCOMPARE(idemtest::sqlstateOf(as("keys_reader", "withidem"), "SELECT count(*) FROM idempotency_keys"),
                 std::string());
    }

    void readsTheTableAndNothingOfIdem_data()
    {
        QTest::addColumn<QString>("database");
        QTest::addColumn<QString>("role");
        QTest::addColumn<bool>("purgeAudited"); // the database has schema idem: a purge keeps its row there
        QTest::newRow("no schema idem") << u"plain"_s << u"keys_reader"_s << false;
        QTest::newRow("schema idem, no right on it") << u"withidem"_s << u"keys_reader"_s << true;
        QTest::newRow("schema idem, its monitor") << u"withidem"_s << u"keys_monitor"_s << true;
    }

    void readsTheTableAndNothingOfIdem()
    {
        QFETCH(QString, database);
        QFETCH(QString, role);
        QFETCH(bool, purgeAudited);
        const std::string db = database.toStdString(), admin = pg->url(db);
        // whoever listens on idem's channel hears of idem.records' changes only while a watcher is registered
        std::unique_ptr<PGconn, decltype(&PQfinish)> listener(PQconnectdb(admin.c_str()), &PQfinish);
        QCOMPARE(PQstatus(listener.get()), CONNECTION_OK);
        idemtest::workSql(listener.get(), "LISTEN idem_records");

        MainWindow::Options o;
        o.connection.url = QString::fromStdString(as(role.toStdString(), db));
        o.connection.table = u"idempotency_keys"_s;
        o.connection.scanCount = 100;
        o.connection.rescanIntervalMs = 500;
        o.auditPath = tmp.filePath(database + role + u".jsonl"_s);
        MainWindow w(o);
        QSignalSpy links(&w, &MainWindow::linkStateChanged);
        QSignalSpy scans(&w, &MainWindow::scanCompleted);
        QSignalSpy actions(&w, &MainWindow::actionCompleted);
        w.show();
        QTRY_COMPARE_WITH_TIMEOUT(w.model()->rowCount(), 3, 10000);
        QCOMPARE(lastLink(links), ConsoleWorker::Link::Connected); // not refused
        QVERIFY2(!w.bannerText().contains(u"refused"_s), qPrintable(w.bannerText()));
        QCOMPARE(consoletest::stateOf(w, u"k-done"_s), idem::RecordState::Completed);
        QCOMPARE(consoletest::stateOf(w, u"k-live"_s), idem::RecordState::Started);
        QVERIFY(w.model()->row(w.model()->rowOfKey(u"k-old"_s)).isStale(QDateTime::currentMSecsSinceEpoch()));

        // polled, and it says so: not "live"
        const QString live = w.findChild<ElidedLabel*>(u"liveUpdates"_s)->text();
        QVERIFY2(live.contains(u"re-reading every 0.5 s"_s) && !live.startsWith(u"live"_s), qPrintable(live));
        idemtest::pgSql(admin, "INSERT INTO idempotency_keys (key, status, response) VALUES ('k-new', 'COMPLETED', 'x')");
        QTRY_COMPARE_WITH_TIMEOUT(consoletest::stateOf(w, u"k-new"_s), idem::RecordState::Completed, 5000);
        idemtest::pgSql(admin, "DELETE FROM idempotency_keys WHERE key = 'k-new'");
        QTRY_COMPARE_WITH_TIMEOUT(w.model()->rowOfKey(u"k-new"_s), -1, 5000);

        // no watcher registered, and one connection, the table's: no listening one beside it
        if (purgeAudited) {
            QCOMPARE(idemtest::pgSql(admin, "SELECT count(*) FROM idem.watchers"), std::string("0"));
            // so idem's triggers stay quiet: an acquire in idem.records notifies nobody
            QCOMPARE(idemtest::pgSql(admin, "SELECT outcome FROM idem.acquire('elsewhere-" + role.toStdString() + "')"),
                     std::string("acquired"));
            QTest::qWait(300);
            QVERIFY(PQconsumeInput(listener.get()));
            PGnotify* heard = PQnotifies(listener.get());
            QVERIFY2(!heard, heard ? heard->extra : "");
        }
        QCOMPARE(sessionsOf(admin, role.toStdString(), db), std::string("1"));
        const qsizetype scansBefore = scans.count();
        QTest::qWait(2500); // heartbeats and rescans on that one connection, and still nothing else
        QVERIFY(scans.count() > scansBefore);
        QCOMPARE(lastLink(links), ConsoleWorker::Link::Connected);
        QCOMPARE(sessionsOf(admin, role.toStdString(), db), std::string("1"));

        // a stale lock purged through the confirmation. Its row lock (FOR UPDATE) needs UPDATE too:
        // without it the purge is refused in words and nothing deleted. With it, DELETE does the rest,
        // unless the database has schema idem, where the purge must also keep its audit row in
        // idem.operations (the operator role's INSERT): refused in words then, nothing deleted
        const auto purgeOld = [&](const QString& why) {
            selectKey(w, u"k-old"_s);
            // (after a reconnect the rows may be the last connection's: the action waits for this one)
            for (int i = 0; i < 200 && !w.purgeAction()->isEnabled(); ++i)
                QTest::qWait(50);
            QString summary;
            answerConfirmation(&summary, why);
            w.purgeAction()->trigger();
            if (!actions.wait(10000))
                return ActionResult{};
            return actions.last().at(0).value<ActionResult>();
        };
        const ActionResult locked = purgeOld(u"its worker died"_s);
        QCOMPARE(locked.changed, 0);
        QVERIFY2(locked.error.contains(u"permission denied for table idempotency_keys"_s), qPrintable(locked.error));
        QCOMPARE(idemtest::pgSql(admin, "SELECT count(*) FROM idempotency_keys WHERE key = 'k-old'"), std::string("1"));
        idemtest::pgSql(admin, "GRANT UPDATE ON idempotency_keys TO " + role.toStdString());
        w.connectTo(o.connection); // (the refusal turned the actions off until the next connection)
        QTRY_COMPARE_WITH_TIMEOUT(w.model()->rowCount(), 3, 10000);
        QCOMPARE(sessionsOf(admin, role.toStdString(), db), std::string("1"));
        const ActionResult purged = purgeOld(u"its worker died"_s);
        if (!purgeAudited) {
            QCOMPARE(purged.changed, 1);
            QCOMPARE(idemtest::pgSql(admin, "SELECT count(*) FROM idempotency_keys WHERE key = 'k-old'"), std::string("0"));
            QTRY_COMPARE_WITH_TIMEOUT(w.model()->rowOfKey(u"k-old"_s), -1, 5000);
        } else {
            QCOMPARE(purged.changed, 0);
            QVERIFY2(purged.error.contains(u"idem.operations"_s) && purged.error.contains(u"permission denied"_s),
                     qPrintable(purged.error));
            QCOMPARE(idemtest::pgSql(admin, "SELECT count(*) FROM idempotency_keys WHERE key = 'k-old'"), std::string("1"));
        }
        idemtest::pgSql(admin, "REVOKE UPDATE ON idempotency_keys FROM " + role.toStdString());
    }

    // idemctl's --table reads, as the role with the table's SELECT only, beside schema idem
    void idemctlReadsAsTheTableRole()
    {
        const QString url = QString::fromStdString(as("keys_reader", "withidem"));
        const auto list = idemtest::idemctlAt(url, {u"list"_s, u"--table"_s, u"idempotency_keys"_s});
        QVERIFY2(list.exit == 0 && list.out.contains(u"k-done"_s) && list.err.contains(u"3 record(s)"_s),
                 qPrintable(list.out + list.err));
        const auto stats = idemtest::idemctlAt(url, {u"stats"_s, u"--table"_s, u"idempotency_keys"_s, u"--json"_s});
        QVERIFY2(stats.exit == 0 && stats.out.contains(u"\"total\":3"_s), qPrintable(stats.out + stats.err));
        const auto inspect = idemtest::idemctlAt(url, {u"inspect"_s, u"k-done"_s, u"--table"_s, u"idempotency_keys"_s});
        QVERIFY2(inspect.exit == 0 && inspect.out.contains(u"the answer"_s), qPrintable(inspect.out + inspect.err));
    }
};

QTEST_MAIN(TestConsolePgTable)
#include "tst_consolepgtable.moc"
