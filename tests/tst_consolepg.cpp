// The console on a PostgreSQL store, offscreen, against a private PostgreSQL (tests/pgfixture.h):
// the table read in keyset pages, rows that change live through schema v4's NOTIFY (one by one,
// and a bulk delete too large to name), the inspector, force-fail and purge through the same
// confirmation and audit as on Redis; a table another program writes (--table), read on the rescan
// interval, purged only where its work is over, never otherwise written.
#include "consoletest.h"
#include "pgfixture.h"

#include "idem/pg/pgstore.h"
#include "idem/pg/pgwatch.h"

#include <libpq-fe.h>

#include <QComboBox>
#include <QFile>
#include <QLineEdit>

#include <csignal>

class TestConsolePg : public QObject {
    Q_OBJECT

    std::unique_ptr<idem::LocalPostgres> pg;
    QTemporaryDir tmp;

    MainWindow::Options options(int pageRows)
    {
        MainWindow::Options o;
        o.connection.url = QString::fromStdString(pg->url());
        o.connection.scanCount = pageRows;
        o.auditPath = tmp.filePath(u"audit.jsonl"_s);
        return o;
    }

private slots:
    void initTestCase()
    {
        QStandardPaths::setTestModeEnabled(true);
        pg = idemtest::startPostgres();
    }

    void urlsAreRecognised()
    {
        QVERIFY(isPostgresUrl(u"postgresql://u:secret@db.example:5433/app"_s));
        QVERIFY(isPostgresUrl(u"postgres://localhost/app"_s));
        QVERIFY(isPostgresUrl(u"host=/run/postgresql dbname=app"_s));
        QVERIFY(!isPostgresUrl(u"redis://127.0.0.1:6379/0"_s));
        QVERIFY(!isPostgresUrl(u"unix:///tmp/redis.sock"_s));
        QCOMPARE(postgresShown(u"postgresql://u:secret@db.example:5433/app"_s), u"postgresql://u@db.example:5433/app"_s);
        QVERIFY(!postgresShown(u"host=db password=secret dbname=app"_s).contains(u"secret"_s));
    }

    // what is shown of a PostgreSQL URL (status line, errors, recent list, title) never holds its
    // password however it is written, and the Connect dialog takes out the one libpq would read.
    // Each password holds "S3", which nothing else in these URLs does
    void shownUrlsHideThePassword_data()
    {
        QTest::addColumn<QString>("url");
        QTest::addColumn<QString>("shown");
        QTest::addColumn<QString>("taken"); // what postgresWithoutPassword moves to the Password field
        QTest::newRow("upper-case scheme") << u"POSTGRESQL://u:S3cret@h/db"_s << u"POSTGRESQL://u@h/db"_s << u"S3cret"_s;
        QTest::newRow("a query after it") << u"postgres://u:S3cret@h/db?sslmode=require"_s
                                          << u"postgres://u@h/db?sslmode=require"_s << u"S3cret"_s;
        QTest::newRow("@ and : in it") << u"postgresql://u:S3%40c:ret@h:5433/db"_s << u"postgresql://u@h:5433/db"_s
                                       << u"S3@c:ret"_s;
        QTest::newRow("? in it (libpq reads on to the @)") << u"postgresql://u:S3?cret@h/db"_s << u"postgresql://u@h/db"_s
                                                           << u"S3?cret"_s;
        QTest::newRow("a query parameter") << u"postgresql://u@h/db?sslmode=require&password=S3cret"_s
                                           << u"postgresql://u@h/db?sslmode=require&password=…"_s << QString();
        QTest::newRow("key=value, quoted") << u"host=h password='x S3 y' dbname=db"_s << u"host=h password=… dbname=db"_s
                                           << u"x S3 y"_s;
        QTest::newRow("key=value, an escaped quote") << u"host=h password = 'S3\\' y' dbname=db"_s
                                                     << u"host=h password=… dbname=db"_s << u"S3' y"_s;
        QTest::newRow("key=value, an escaped space") << u"host=h password=a\\ S3 dbname=db"_s
                                                     << u"host=h password=… dbname=db"_s << u"a S3"_s;
        QTest::newRow("a / in it (libpq cannot read it)") << u"postgresql://u:pa/S3ss@h/db"_s
                                                          << u"postgresql://u:…@h/db"_s << QString();
    }
    void shownUrlsHideThePassword()
    {
        QFETCH(QString, url);
        QFETCH(QString, shown);
        QFETCH(QString, taken);
        QCOMPARE(postgresShown(url), shown);
        QVERIFY2(!shownUrl(url).contains(u"S3"_s), qPrintable(shownUrl(url)));
        QString password;
        const QString rest = postgresWithoutPassword(url, &password);
        QCOMPARE(password, taken);
        QVERIFY2(taken.isEmpty() || !postgresShown(rest).contains(u"S3"_s), qPrintable(rest));
    }

    // a notification names each statement's ids, or says "too many": never over NOTIFY's limit
    void notificationsNameTheChangedIds()
    {
        idem::PgWatch watch(pg->url());
        QVERIFY(watch.notifies());
        idemtest::pgSql(pg->url(), "SELECT outcome FROM idem.acquire('n-\"quoted\"')");
        idem::PgWatch::Changes got;
        for (int i = 0; i < 100 && got.ids.empty(); ++i) {
            QThread::msleep(20);
            got = watch.take();
        }
        QCOMPARE(got.ids, std::vector<std::string>{"n-\"quoted\""});
        QVERIFY(!got.everything);
        idemtest::pgSql(pg->url(), "INSERT INTO idem.records (id, state, token, fence, lease_until, expires_at, created_at, "
                                   "started_at) SELECT 'bulk-' || repeat('x', 100) || g, 'STARTED', gen_random_uuid(), g, "
                                   "now() + interval '1 minute', now() + interval '1 hour', now(), now() "
                                   "FROM generate_series(1, 200) g");
        got = {};
        for (int i = 0; i < 100 && !got.everything; ++i) {
            QThread::msleep(20);
            got = watch.take();
        }
        QVERIFY(got.everything); // 200 ids of 100+ bytes: more than a payload holds

        // no watcher renewed in 30 s: the triggers send nothing (NOTIFY serialises commits)
        idemtest::pgSql(pg->url(), "UPDATE idem.watchers SET seen_at = now() - interval '31 seconds'");
        idemtest::pgSql(pg->url(), "SELECT outcome FROM idem.acquire('n-unwatched')");
        QThread::msleep(200);
        QVERIFY(watch.take().ids.empty());
        idemtest::pgSql(pg->url(), "UPDATE idem.watchers SET seen_at = now()");
        idemtest::pgSql(pg->url(), "SELECT outcome FROM idem.acquire('n-watched')");
        got = {};
        for (int i = 0; i < 100 && got.ids.empty(); ++i) {
            QThread::msleep(20);
            got = watch.take();
        }
        QCOMPARE(got.ids, std::vector<std::string>{"n-watched"});
        idemtest::pgSql(pg->url(), "DELETE FROM idem.records WHERE id LIKE 'bulk-%' OR id LIKE 'n-%'");
    }

    void snapshotLiveAndActions()
    {
        // more rows than one page: the snapshot reads 1200 rows 250 at a time
        idemtest::pgSql(pg->url(), "SELECT count(*) FROM generate_series(1, 1200) g, "
                                   "idem.acquire('p-' || lpad(g::text, 5, '0'), interval '10 minutes')");
        MainWindow w(options(250));
        QSignalSpy scans(&w, &MainWindow::scanCompleted);
        QSignalSpy actions(&w, &MainWindow::actionCompleted);
        w.show();
        QVERIFY(scans.wait(10000));
        QCOMPARE(scans.last().at(0).value<ScanSummary>().keysSeen, 1200);
        QCOMPARE(scans.last().at(0).value<ScanSummary>().pages, 5); // 4 full pages and a short one
        QTRY_COMPARE_WITH_TIMEOUT(w.model()->rowCount(), 1200, 5000);
        QVERIFY(w.windowTitle().contains(u"postgresql://"_s));

        // another connection acquires: the row appears without a rescan, STARTED, then stale
        idem::PgStore store(pg->url());
        const int scansBefore = static_cast<int>(scans.count());
        QCOMPARE(store.acquire("live-1", "", idem::Millis(300)).status, idem::AcquireStatus::Acquired);
        QTRY_COMPARE_WITH_TIMEOUT(consoletest::stateOf(w, u"live-1"_s), idem::RecordState::Started, 5000);
        QCOMPARE(static_cast<int>(scans.count()), scansBefore); // a notification, not a new snapshot
        QTRY_VERIFY_WITH_TIMEOUT(w.model()->row(w.model()->rowOfKey(u"live-1"_s)).isStale(QDateTime::currentMSecsSinceEpoch()), 5000);

        // the inspector shows the row
        selectKey(w, u"live-1"_s);
        QTRY_VERIFY_WITH_TIMEOUT(w.inspector()->toPlainText().contains(u"stale"_s), 5000);
        QVERIFY(w.inspector()->toPlainText().contains(u"fence"_s));

        // force-fail through the confirmation: idem.force_fail changed the row, the audit says so
        selectKey(w, u"live-1"_s);
        QString summary;
        answerConfirmation(&summary, u"its worker died"_s);
        w.forceFailAction()->trigger();
        QVERIFY(actions.wait(10000));
        QCOMPARE(actions.last().at(0).value<ActionResult>().changed, 1);
        QCOMPARE(store.inspect("live-1")->state, idem::RecordState::Failed);
        QCOMPARE(store.inspect("live-1")->opReason, std::string("its worker died"));
        QTRY_COMPARE_WITH_TIMEOUT(consoletest::stateOf(w, u"live-1"_s), idem::RecordState::Failed, 5000);
        QCOMPARE(w.auditTrail()->entries().size(), 1);
        QCOMPARE(w.auditTrail()->entries().first().why, u"its worker died"_s);

        // purge: the row goes from the table and from the window
        selectKey(w, u"live-1"_s);
        answerConfirmation(&summary, u"replay it"_s);
        w.purgeAction()->trigger();
        QVERIFY(actions.wait(10000));
        QCOMPARE(actions.last().at(0).value<ActionResult>().changed, 1);
        QVERIFY(!store.inspect("live-1"));
        QTRY_COMPARE_WITH_TIMEOUT(w.model()->rowOfKey(u"live-1"_s), -1, 5000);

        // purge what was read FAILED, but a delivery takes it over while the confirmation is open:
        // the row is compared under its lock before the delete, and kept
        const auto f = store.acquire("rerun-1");
        QCOMPARE(store.fail(f.ticket, idem::FailPolicy::Retryable, "boom").status, idem::OwnerStatus::Ok);
        QTRY_COMPARE_WITH_TIMEOUT(consoletest::stateOf(w, u"rerun-1"_s), idem::RecordState::Failed, 5000);
        selectKey(w, u"rerun-1"_s);
        idem::AcquireResult taken;
        QTimer::singleShot(0, [&] { taken = store.acquire("rerun-1", "", idem::Millis(300000)); }); // before the answer
        answerConfirmation(&summary, u"run it again"_s);
        w.purgeAction()->trigger();
        QVERIFY(actions.wait(10000));
        QCOMPARE(taken.status, idem::AcquireStatus::Acquired);
        const ActionResult kept = actions.last().at(0).value<ActionResult>();
        QCOMPARE(kept.changed, 0);
        QCOMPARE(kept.skipped, 1);
        QVERIFY2(kept.why.contains(u"changed since it was read"_s), qPrintable(kept.why));
        QCOMPARE(store.inspect("rerun-1")->state, idem::RecordState::Started);
        QCOMPARE(store.inspect("rerun-1")->attempt, 2);

        // purge a row a running transaction holds (a service's transactional work): after the
        // operator lock timeout (5 s) it is skipped with that reason; the window ran all along
        std::unique_ptr<PGconn, decltype(&PQfinish)> worker(PQconnectdb(pg->url().c_str()), &PQfinish);
        idemtest::workSql(worker.get(), "BEGIN");
        idemtest::workSql(worker.get(), "SELECT 1 FROM idem.records WHERE id = 'rerun-1' FOR UPDATE");
        selectKey(w, u"rerun-1"_s);
        int ticks = 0;
        QTimer guiTicks;
        connect(&guiTicks, &QTimer::timeout, &w, [&ticks] { ++ticks; });
        guiTicks.start(100);
        answerConfirmation(&summary, u"stuck"_s);
        w.purgeAction()->trigger();
        QVERIFY(actions.wait(20000));
        guiTicks.stop();
        const ActionResult busy = actions.last().at(0).value<ActionResult>();
        QCOMPARE(busy.skipped, 1);
        QVERIFY2(busy.why.contains(u"a running transaction holds the row"_s), qPrintable(busy.why));
        QVERIFY2(ticks >= 20, qPrintable(QString::number(ticks))); // the GUI thread did not wait those 5 s
        idemtest::workSql(worker.get(), "ROLLBACK");
        QCOMPARE(store.inspect("rerun-1")->state, idem::RecordState::Started);

        // a bulk delete too large to name in a notification: the window reads the table again
        idemtest::pgSql(pg->url(), "DELETE FROM idem.records WHERE id LIKE 'p-%'");
        QTRY_COMPARE_WITH_TIMEOUT(w.model()->rowCount(), 1, 5000);
        QCOMPARE(w.model()->rowOfKey(u"rerun-1"_s), 0);
    }

    // A row past its expiry (it counts as absent until swept) is EXPIRED with no time left: its TTL
    // 0, its deadline the row's expires_at; never "no TTL", in the column or the counts
    void expiredRowHasNoTimeLeft()
    {
        idem::PgStore store(pg->url());
        const auto a = store.acquire("gone-1");
        QCOMPARE(a.status, idem::AcquireStatus::Acquired);
        QCOMPARE(store.complete(a.ticket, "receipt", idem::Millis(1000)).status, idem::OwnerStatus::Ok);
        QTRY_COMPARE_WITH_TIMEOUT(store.inspect("gone-1")->state, idem::RecordState::Expired, 5000);
        const qint64 expires = store.inspect("gone-1")->expiresMs.value_or(-1);
        MainWindow w(options(100));
        QSignalSpy scans(&w, &MainWindow::scanCompleted);
        w.show();
        QVERIFY(scans.wait(10000));
        QTRY_COMPARE_WITH_TIMEOUT(consoletest::stateOf(w, u"gone-1"_s), idem::RecordState::Expired, 5000);
        const int row = w.model()->rowOfKey(u"gone-1"_s);
        const QModelIndex ttl = w.model()->index(row, KeyTableModel::Ttl);
        QVERIFY(!ttl.data(KeyTableModel::NoTtlRole).toBool());
        QCOMPARE(ttl.data().toString(), u"0ms"_s);
        QCOMPARE(w.model()->row(row).expiresAtMs, expires);
        QCOMPARE(w.model()->stats().noTtl, std::size_t(0)); // no row of schema idem lives forever
        QVERIFY(w.model()->stats().expired >= 1);
        idemtest::pgSql(pg->url(), "DELETE FROM idem.records WHERE id = 'gone-1'");
    }

    void anotherProgramsTable()
    {
        const std::string u = pg->url();
        const auto sql = [&](const std::string& q) { return idemtest::pgSql(u, q); };
        sql("CREATE TABLE seed_console (key text PRIMARY KEY, status text NOT NULL, response bytea, "
            "locked_at timestamptz, created_at timestamptz NOT NULL DEFAULT now()); "
            "INSERT INTO seed_console (key, status, response, locked_at) VALUES "
            "('a-live', 'STARTED', NULL, now()), ('b-old', 'PROCESSING', NULL, now() - interval '2 hours'), "
            "('c-done', 'COMPLETED', 'the answer', NULL), ('e-odd', 'ON_HOLD', NULL, now())");
        MainWindow::Options o = options(100);
        o.connection.table = u"seed_console"_s;
        o.connection.rescanIntervalMs = 500;
        MainWindow w(o);
        QSignalSpy actions(&w, &MainWindow::actionCompleted);
        w.show();
        QTRY_COMPARE_WITH_TIMEOUT(w.model()->rowCount(), 4, 10000);
        QCOMPARE(consoletest::stateOf(w, u"a-live"_s), idem::RecordState::Started);
        QCOMPARE(consoletest::stateOf(w, u"c-done"_s), idem::RecordState::Completed);
        QCOMPARE(consoletest::stateOf(w, u"e-odd"_s), idem::RecordState::Malformed); // a word idem does not know: not guessed
        QVERIFY(w.model()->row(w.model()->rowOfKey(u"b-old"_s)).isStale(QDateTime::currentMSecsSinceEpoch()));
        QVERIFY2(linkText(w).contains(u"seed_console"_s), qPrintable(linkText(w)));
        QCOMPARE(w.model()->stats().noTtl, std::size_t(0)); // no expiry kept is not "no TTL": not flagged
        QVERIFY2(w.findChild<ElidedLabel*>(u"liveUpdates"_s)->text().contains(u"no trigger"_s),
                 qPrintable(w.findChild<ElidedLabel*>(u"liveUpdates"_s)->text()));

        // the other program writes: the window follows on the rescan interval
        sql("INSERT INTO seed_console (key, status, response) VALUES ('f-new', 'COMPLETED', 'x')");
        QTRY_COMPARE_WITH_TIMEOUT(consoletest::stateOf(w, u"f-new"_s), idem::RecordState::Completed, 5000);
        sql("DELETE FROM seed_console WHERE key = 'f-new'");
        QTRY_COMPARE_WITH_TIMEOUT(w.model()->rowOfKey(u"f-new"_s), -1, 5000);
        selectKey(w, u"c-done"_s);
        QTRY_VERIFY_WITH_TIMEOUT(w.inspector()->toPlainText().contains(u"the answer"_s), 5000);

        // force-fail: off, and the tooltip says why
        selectKey(w, u"b-old"_s);
        QTRY_VERIFY_WITH_TIMEOUT(w.purgeAction()->isEnabled(), 5000);
        QVERIFY(!w.forceFailAction()->isEnabled());
        QVERIFY2(w.forceFailAction()->toolTip().contains(u"another program's"_s), qPrintable(w.forceFailAction()->toolTip()));
        QString summary;
        const std::string liveBefore = sql("SELECT status || ' ' || locked_at::text FROM seed_console WHERE key = 'a-live'");

        // purge a live lock, selected by hand and confirmed: kept, and the window says why
        selectKey(w, u"a-live"_s);
        answerConfirmation(&summary, u"by mistake"_s);
        w.purgeAction()->trigger();
        QVERIFY(actions.wait(10000));
        QVERIFY2(summary.contains(u"seed_console"_s), qPrintable(summary)); // the confirmation names the table
        const ActionResult kept = actions.last().at(0).value<ActionResult>();
        QCOMPARE(kept.changed, 0);
        QCOMPARE(kept.skipped, 1);
        QVERIFY2(kept.why.contains(u"live lock"_s), qPrintable(kept.why));
        QCOMPARE(sql("SELECT count(*) FROM seed_console WHERE key = 'a-live'"), std::string("1"));

        // a stale lock: deleted, gone from the window, in the local audit trail
        selectKey(w, u"b-old"_s);
        answerConfirmation(&summary, u"its worker died"_s);
        w.purgeAction()->trigger();
        QVERIFY(actions.wait(10000));
        QCOMPARE(actions.last().at(0).value<ActionResult>().changed, 1);
        QCOMPARE(sql("SELECT count(*) FROM seed_console WHERE key = 'b-old'"), std::string("0"));
        QTRY_COMPARE_WITH_TIMEOUT(w.model()->rowOfKey(u"b-old"_s), -1, 5000);
        QCOMPARE(w.auditTrail()->entries().last().why, u"its worker died"_s);
        // what it kept, it did not change
        QCOMPARE(sql("SELECT status || ' ' || locked_at::text FROM seed_console WHERE key = 'a-live'"), liveBefore);

        // a table that is not there: refused, the table field named, no retries
        MainWindow::Options bad = options(100);
        bad.connection.table = u"no_such_table"_s;
        MainWindow w2(bad);
        QSignalSpy links(&w2, &MainWindow::linkStateChanged);
        w2.show();
        QTRY_VERIFY_WITH_TIMEOUT(lastLink(links) == ConsoleWorker::Link::Refused, 10000);
        QVERIFY2(w2.bannerText().contains(u"no_such_table"_s), qPrintable(w2.bannerText()));
        QTRY_VERIFY_WITH_TIMEOUT(w2.connectDialog(), 3000);
        QVERIFY(w2.connectDialog()->fieldWidget(u"table"_s)->property("needsFix").toBool());
        QCOMPARE(qobject_cast<QLineEdit*>(w2.connectDialog()->fieldWidget(u"table"_s))->text(), u"no_such_table"_s);
        sql("DROP TABLE seed_console");
    }

    // A password PostgreSQL refuses, or none where one is needed: said in words, the password
    // field named, no retries (retrying cannot fix it)
    void refusedPasswordStopsRetries()
    {
        idemtest::pgSql(pg->url(), "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'guarded') THEN "
                                   "CREATE ROLE guarded LOGIN PASSWORD 'right'; END IF; END $$; "
                                   // what `idemctl acl monitor --user guarded` prints
                                   "GRANT USAGE ON SCHEMA idem TO guarded; "
                                   "GRANT SELECT ON idem.migrations, idem.records, idem.operations TO guarded; "
                                   "GRANT EXECUTE ON FUNCTION idem.watch(text), idem.unwatch(text) TO guarded");
        {
            // this role, and only it, must give a password (the fixture trusts every other one)
            const std::string hba = pg->dir() + "/data/pg_hba.conf";
            QFile f(QString::fromStdString(hba));
            QVERIFY(f.open(QIODevice::ReadOnly));
            const QByteArray rest = f.readAll();
            f.close();
            QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
            f.write("host all guarded 127.0.0.1/32 scram-sha-256\n" + rest);
            f.close();
            idemtest::pgSql(pg->url(), "SELECT pg_reload_conf()");
        }
        for (const QString& credentials : {u"guarded:wrong"_s, u"guarded"_s}) {
            MainWindow::Options o = options(100);
            o.connection.url = u"postgresql://%1@127.0.0.1:%2/postgres"_s.arg(credentials).arg(pg->port());
            MainWindow w(o);
            QSignalSpy links(&w, &MainWindow::linkStateChanged);
            w.show();
            QTRY_VERIFY_WITH_TIMEOUT(lastLink(links) == ConsoleWorker::Link::Refused, 10000);
            QVERIFY2(w.bannerText().contains(u"password"_s), qPrintable(w.bannerText()));
            QVERIFY2(!w.bannerText().contains(u"wrong"_s), qPrintable(w.bannerText())); // never the password itself
            QTRY_VERIFY_WITH_TIMEOUT(w.connectDialog(), 3000);
            QVERIFY(w.connectDialog()->fieldWidget(u"password"_s)->property("needsFix").toBool());
            const qsizetype changes = links.size();
            QTest::qWait(1500); // no retries
            QCOMPARE(links.size(), changes);
            // the field it names is the one to fix: the URL shows no password, the right one typed
            // there connects
            auto* url = qobject_cast<QComboBox*>(w.connectDialog()->fieldWidget(u"url"_s));
            QVERIFY2(!url->currentText().contains(u"wrong"_s), qPrintable(url->currentText()));
            qobject_cast<QLineEdit*>(w.connectDialog()->fieldWidget(u"password"_s))->setText(u"right"_s);
            w.connectDialog()->accept();
            QTRY_VERIFY_WITH_TIMEOUT(lastLink(links) == ConsoleWorker::Link::Connected, 10000);
        }
    }

    // A role PostgreSQL lets in and schema idem granted nothing (SQLSTATE 42501): the user is
    // usually right and lacks a grant, so the words say which grant and what prints it; the user
    // field is named (another user is the other way out), and nothing is retried
    void roleWithoutGrantIsToldTheGrant()
    {
        idemtest::pgSql(pg->url(), "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'ungranted') THEN "
                                   "CREATE ROLE ungranted LOGIN; END IF; END $$; "
                                   "CREATE TABLE IF NOT EXISTS public.ungranted_keys (key text PRIMARY KEY, status text NOT NULL, "
                                   "response bytea, locked_at timestamptz)");
        for (const QString& table : {QString(), u"ungranted_keys"_s}) {
            MainWindow::Options o = options(100);
            o.connection.url = u"postgresql://ungranted@127.0.0.1:%1/postgres"_s.arg(pg->port());
            o.connection.table = table;
            MainWindow w(o);
            QSignalSpy links(&w, &MainWindow::linkStateChanged);
            w.show();
            QTRY_VERIFY_WITH_TIMEOUT(lastLink(links) == ConsoleWorker::Link::Refused, 10000);
            const QString banner = w.bannerText();
            QVERIFY2(banner.contains(u"role 'ungranted'"_s) && banner.contains(u"connect as another user"_s) &&
                         !banner.contains(u"correct the user"_s),
                     qPrintable(banner));
            if (table.isEmpty()) {
                QVERIFY2(banner.contains(u"grant the role what it lacks (`idemctl --url postgresql://ungranted@"_s) &&
                             banner.contains(u"acl monitor --user ungranted` prints schema idem's GRANTs"_s),
                         qPrintable(banner));
            } else { // another program's table has grants of its own, and schema idem is not read
                QVERIFY2(banner.contains(u"grant the role what it lacks (on ungranted_keys: SELECT; UPDATE and DELETE to purge"_s) &&
                             banner.contains(u"permission denied for table ungranted_keys"_s) &&
                             !banner.contains(u"acl monitor"_s),
                         qPrintable(banner));
            }
            QTRY_VERIFY_WITH_TIMEOUT(w.connectDialog(), 3000);
            QVERIFY(w.connectDialog()->fieldWidget(u"user"_s)->property("needsFix").toBool());
            const qsizetype changes = links.size();
            QTest::qWait(1000); // no retries
            QCOMPARE(links.size(), changes);
        }
        idemtest::pgSql(pg->url(), "DROP TABLE public.ungranted_keys");
    }

    // Closing the console while PostgreSQL hangs (its backends stopped) and the worker waits on
    // it: libpq has no timeout of its own, so before the sockets were shut down this waited for ever.
    void closesAtOnceWhenPostgresHangs()
    {
        MainWindow::Options o = options(100);
        o.connection.rescanIntervalMs = 60000;
        auto w = std::make_unique<MainWindow>(o);
        QSignalSpy scans(w.get(), &MainWindow::scanCompleted);
        w->show();
        QVERIFY(scans.wait(10000));
        std::vector<pid_t> stopped;
        const std::string pids = idemtest::pgSql(pg->url(), "SELECT string_agg(pid::text, ' ') FROM pg_stat_activity "
                                                            "WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()");
        for (const QString& pid : QString::fromStdString(pids).split(u' ', Qt::SkipEmptyParts)) {
            stopped.push_back(static_cast<pid_t>(pid.toInt()));
            QCOMPARE(::kill(stopped.back(), SIGSTOP), 0);
        }
        QVERIFY(!stopped.empty()); // the console's own connections
        w->refresh(); // the worker now waits on a backend that does not answer
        QTest::qWait(300);
        QElapsedTimer closing;
        closing.start();
        w.reset();
        const qint64 ms = closing.elapsed();
        for (pid_t pid : stopped)
            ::kill(pid, SIGCONT);
        QVERIFY2(ms < 1500, qPrintable(u"closing took %1 ms"_s.arg(ms)));
    }
};

QTEST_MAIN(TestConsolePg)
#include "tst_consolepg.moc"
