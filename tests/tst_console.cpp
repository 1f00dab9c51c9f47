// The console's main window, offscreen, against the fixture's redis-server: filters,
// force-fail and purge through the confirmation dialog, read-only mode, live updates, export.
#include "confirmdialog.h"
#include "consoleworker.h"
#include "keyfilterproxy.h"
#include "keytablemodel.h"
#include "mainwindow.h"
#include "racelabwidget.h"
#include "timelineview.h"
#include "testsupport.h"

#include "idem/redis/localserver.h"
#include "idem/engine/store.h"

#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QImage>
#include <QLabel>
#include <QTableWidget>
#include <QTabWidget>
#include <QLineEdit>
#include <QStatusBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTableView>
#include <QTemporaryDir>
#include <QCheckBox>
#include <QJsonArray>
#include <QJsonDocument>
#include <QTextBrowser>
#include <QElapsedTimer>
#include <QtTest>

namespace {
// Answers the next modal ConfirmDialog: checks what it says, types a reason, presses OK.
void answerConfirmation(QString* summary, const QString& reason, bool terminal = false)
{
    QTimer::singleShot(0, [=] {
        auto* dialog = qobject_cast<ConfirmDialog*>(QApplication::activeModalWidget());
        if (!dialog)
            return;
        *summary = dialog->summary();
        auto* ok = dialog->findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok);
        if (ok->isEnabled()) { // must not be enabled before a reason is given
            dialog->reject();
            return;
        }
        QTest::keyClicks(dialog->findChild<QLineEdit*>(QStringLiteral("reason")), reason);
        if (terminal)
            dialog->findChild<QCheckBox*>(QStringLiteral("terminal"))->setChecked(true);
        QTest::mouseClick(ok, Qt::LeftButton);
    });
}

void selectStateFilter(MainWindow& w, idem::StateFilter f)
{
    for (int i = 0; i < w.stateBox()->count(); ++i)
        if (w.stateBox()->itemData(i).toInt() == static_cast<int>(f))
            w.stateBox()->setCurrentIndex(i);
}
} // namespace

class TestConsole : public QObject {
    Q_OBJECT

    QTemporaryDir tmp;
    std::unique_ptr<idem::ConnectionPool> pool;
    std::unique_ptr<idem::Store> store;
    std::string ns;

    MainWindow::Options options(bool readOnly = false)
    {
        MainWindow::Options o;
        o.connection.url = QString::fromStdString(idemtest::sharedRedisUrl());
        o.connection.keyNamespace = QString::fromStdString(ns);
        o.readOnly = readOnly;
        o.auditPath = tmp.filePath(QString::fromStdString(ns) + QStringLiteral("-audit.jsonl"));
        return o;
    }

private slots:
    void initTestCase()
    {
        QStandardPaths::setTestModeEnabled(true);
        pool = std::make_unique<idem::ConnectionPool>(idemtest::sharedRedis(), 2);
    }

    void init()
    {
        ns = idemtest::uniqueNamespace("ui");
        idem::StoreOptions so;
        so.keyNamespace = ns;
        store = std::make_unique<idem::Store>(*pool, so);
        for (const char* id : {"stuck-1", "stuck-2", "stuck-3"})
            store->acquire(id, "", idem::Millis(1));
        for (const char* id : {"done-1", "done-2"}) {
            auto a = store->acquire(id, "");
            store->complete(a.ticket, "{\"ok\":true}");
        }
        store->acquire("running", "", idem::Millis(60000));
        idem::Connection c(idemtest::sharedRedis());
        c.checked({"RPUSH", ns + ":{not-a-record}", "x"});
        QThread::msleep(5);
    }

    void filtersForceFailAndPurge()
    {
        MainWindow w(options());
        QSignalSpy scans(&w, &MainWindow::scanCompleted);
        QSignalSpy actions(&w, &MainWindow::actionCompleted);
        w.show();
        QVERIFY(scans.wait(10000));
        QCOMPARE(w.model()->rowCount(), 7);

        // filters
        QTest::keyClicks(w.filterEdit(), QStringLiteral("done"));
        QCOMPARE(w.proxy()->rowCount(), 2);
        w.filterEdit()->clear();
        selectStateFilter(w, idem::StateFilter::Malformed);
        QCOMPARE(w.proxy()->rowCount(), 0);
        selectStateFilter(w, idem::StateFilter::Foreign); // a list: a valid key of something else
        QCOMPARE(w.proxy()->rowCount(), 1);
        selectStateFilter(w, idem::StateFilter::Stale);
        QCOMPARE(w.proxy()->rowCount(), 3);

        // the inspector shows the selected record
        w.table()->selectRow(0);
        QTRY_VERIFY_WITH_TIMEOUT(w.inspector()->toPlainText().contains(QStringLiteral("stale")), 5000);

        // force-fail all three stale locks, through the confirmation
        w.table()->selectAll();
        QString summary;
        answerConfirmation(&summary, QStringLiteral("workers died in the outage"));
        w.forceFailAction()->trigger();
        QVERIFY(summary.contains(QStringLiteral("3 keys")));
        QVERIFY(summary.contains(QStringLiteral("3 stale STARTED")));
        QVERIFY(actions.wait(10000));
        QCOMPARE(actions.last().at(0).value<ActionResult>().changed, 3);
        for (const char* id : {"stuck-1", "stuck-2", "stuck-3"}) {
            const auto r = store->inspect(id);
            QCOMPARE(r->state, idem::RecordState::Failed);
            QCOMPARE(r->opReason, std::string("workers died in the outage"));
            QVERIFY(r->opBy.find("idem-console") != std::string::npos);
        }
        QTRY_COMPARE_WITH_TIMEOUT(w.proxy()->rowCount(), 0, 5000); // no longer stale
        const auto audit = w.auditTrail()->entries();
        QCOMPARE(audit.size(), 1);
        QCOMPARE(audit.first().action, QStringLiteral("force-fail (retryable)"));
        QCOMPARE(audit.first().changed, 3);
        QCOMPARE(audit.first().why, QStringLiteral("workers died in the outage"));

        // purge the completed ones
        selectStateFilter(w, idem::StateFilter::Completed);
        QCOMPARE(w.proxy()->rowCount(), 2);
        w.table()->selectAll();
        answerConfirmation(&summary, QStringLiteral("replay after the fix"));
        w.purgeAction()->trigger();
        QVERIFY(summary.contains(QStringLiteral("2 COMPLETED")));
        QVERIFY(actions.wait(10000));
        QCOMPARE(actions.last().at(0).value<ActionResult>().changed, 2);
        QVERIFY(!store->inspect("done-1"));
        QVERIFY(!store->inspect("done-2"));
        QTRY_COMPARE_WITH_TIMEOUT(w.proxy()->rowCount(), 0, 5000);
        QCOMPARE(w.auditTrail()->entries().size(), 2);
        QCOMPARE(store->inspect("running")->state, idem::RecordState::Started); // untouched
    }

    // Another library's records beside idem's: read as that library means them, named in the
    // confirmation with warnings for live locks and completed results, and keys that are not
    // records left out of a purge of everything the filter shows
    void anotherLibrarysRecordsAndTheConfirmation()
    {
        const std::string ptKey = ns + "-checkout#HXoPuS989n9jdP6e7H2ySg==";
        const qint64 deadline = QDateTime::currentMSecsSinceEpoch() + 600'000;
        idem::Connection c(idemtest::sharedRedis());
        c.checked({"SET", ptKey,
                   "{\"status\":\"INPROGRESS\",\"expiration\":9999999999,\"in_progress_expiration\":" +
                       std::to_string(deadline) + "}",
                   "EX", "600"});
        MainWindow::Options o = options();
        o.connection.pattern = QString::fromStdString(ns + "*");
        MainWindow w(o);
        QSignalSpy scans(&w, &MainWindow::scanCompleted);
        QSignalSpy actions(&w, &MainWindow::actionCompleted);
        w.show();
        QVERIFY(scans.wait(10000));
        QCOMPARE(w.model()->rowCount(), 8);
        const int pt = w.model()->rowOfKey(QString::fromStdString(ptKey));
        QVERIFY(pt >= 0);
        QCOMPARE(w.model()->row(pt).format, idem::RecordFormat::Powertools);
        QCOMPARE(w.model()->row(pt).state, idem::RecordState::Started);
        QCOMPARE(w.model()->data(w.model()->index(pt, KeyTableModel::Format)).toString(), QStringLiteral("powertools"));

        // everything the filter shows: the list (foreign) is left out, and the dialog says so
        QString summary;
        QTimer::singleShot(0, [&] {
            if (auto* d = qobject_cast<ConfirmDialog*>(QApplication::activeModalWidget())) {
                summary = d->summary();
                d->reject();
            }
        });
        w.purgeFiltered();
        QVERIFY2(summary.contains(QStringLiteral("7 keys")), qPrintable(summary));
        QVERIFY2(summary.contains(QStringLiteral("6 idem")) && summary.contains(QStringLiteral("1 powertools")),
                 qPrintable(summary));
        QVERIFY2(summary.contains(QStringLiteral("left out")), qPrintable(summary));
        QVERIFY2(summary.contains(QStringLiteral("live lock")), qPrintable(summary)); // "running" and the Powertools one
        QVERIFY2(summary.contains(QStringLiteral("2 COMPLETED record(s)")), qPrintable(summary));

        // the Powertools lock alone, purged through the confirmation: deleted, idem's untouched
        w.table()->clearSelection();
        w.table()->selectRow(w.proxy()->mapFromSource(w.model()->index(pt, 0)).row());
        answerConfirmation(&summary, QStringLiteral("its lambda was killed"));
        w.purgeSelected();
        QVERIFY2(summary.contains(QStringLiteral("Written by: 1 powertools")), qPrintable(summary));
        QVERIFY2(summary.contains(QStringLiteral("never writes its own fields")), qPrintable(summary));
        QVERIFY(actions.wait(10000));
        QCOMPARE(actions.last().at(0).value<ActionResult>().changed, 1);
        QCOMPARE(idem::reply::integer(c.checked({"EXISTS", ptKey}).get()), std::int64_t(0));
        QVERIFY(store->inspect("running"));
        QCOMPARE(idem::reply::integer(c.checked({"EXISTS", ns + ":{not-a-record}"}).get()), std::int64_t(1));
    }

    // on a node of a multi-primary cluster the console says, above the table, that keys on the
    // other primaries are not listed; on a standalone server it says nothing
    void clusterCoverageWarning()
    {
        {
            MainWindow w(options());
            QSignalSpy scans(&w, &MainWindow::scanCompleted);
            w.show();
            QVERIFY(scans.wait(10000));
            QVERIFY(!w.findChild<QLabel*>(QStringLiteral("coverageWarning"))->isVisible());
        }
        idemtest::LocalCluster cluster(3);
        MainWindow::Options o = options();
        o.connection.url = QString::fromStdString(cluster.url(1));
        MainWindow w(o);
        QSignalSpy scans(&w, &MainWindow::scanCompleted);
        w.show();
        QVERIFY(scans.wait(10000));
        auto* warning = w.findChild<QLabel*>(QStringLiteral("coverageWarning"));
        QVERIFY(warning->isVisible());
        QVERIFY2(warning->text().contains(QStringLiteral("this node holds 5461 of 16384 hash slots (3 primaries)")),
                 qPrintable(warning->text()));
    }

    // an action asked of a worker that has no connection is answered at once, and tries nothing
    void actionsWithoutConnectionAnswerNotConnected()
    {
        ConsoleWorker worker; // never told to connect
        QSignalSpy done(&worker, &ConsoleWorker::actionDone);
        KeyRow row;
        row.key = QByteArray(ns.c_str()) + ":{running}";
        worker.forceFail({row, row}, QStringLiteral("reason"), false, QStringLiteral("tester"));
        worker.purge({row}, QStringLiteral("reason"), QStringLiteral("tester"));
        QCOMPARE(done.count(), 2);
        const auto ff = done.at(0).at(0).value<ActionResult>();
        const auto pg = done.at(1).at(0).value<ActionResult>();
        QCOMPARE(ff.action, QStringLiteral("force-fail"));
        QCOMPARE(ff.requested, 2);
        QCOMPARE(ff.error, QStringLiteral("not connected"));
        QCOMPARE(ff.changed, 0);
        QCOMPARE(pg.action, QStringLiteral("purge"));
        QCOMPARE(pg.requested, 1);
        QCOMPARE(pg.error, QStringLiteral("not connected"));
        const auto rec = store->inspect("running");
        QVERIFY(rec);
        QCOMPARE(rec->state, idem::RecordState::Started); // untouched
    }

    void cancelAndReadOnlyChangeNothing()
    {
        MainWindow w(options(true));
        QSignalSpy scans(&w, &MainWindow::scanCompleted);
        w.show();
        QVERIFY(scans.wait(10000));
        QVERIFY(w.isReadOnly());
        QVERIFY(!w.purgeAction()->isEnabled());
        QVERIFY(!w.forceFailAction()->isEnabled());
        w.table()->selectAll();
        w.purgeSelected(); // even if called directly: refused, no dialog
        QVERIFY(!QApplication::activeModalWidget());
        QCOMPARE(w.model()->rowCount(), 7);

        w.setReadOnly(false);
        QVERIFY(w.purgeAction()->isEnabled());
        QTimer::singleShot(0, [] {
            if (auto* d = qobject_cast<ConfirmDialog*>(QApplication::activeModalWidget()))
                d->reject();
        });
        QSignalSpy actions(&w, &MainWindow::actionCompleted);
        w.purgeAction()->trigger();
        QVERIFY(!actions.wait(500));
        QVERIFY(store->inspect("done-1").has_value());
        QCOMPARE(w.auditTrail()->entries().size(), 0);
        w.setReadOnly(true); // the setting is remembered: leave it off for the next test
        w.setReadOnly(false);
    }

    void liveUpdatesAndExport()
    {
        MainWindow w(options());
        QSignalSpy scans(&w, &MainWindow::scanCompleted);
        w.show();
        QVERIFY(scans.wait(10000));
        // keyspace notifications (the fixture enables them): a new key shows without a rescan
        auto a = store->acquire("arrives-later", "");
        QTRY_VERIFY_WITH_TIMEOUT(w.model()->rowOfKey(QString::fromStdString(store->recordKey("arrives-later"))) >= 0, 3000);
        store->complete(a.ticket, "done");
        QTRY_COMPARE_WITH_TIMEOUT(
            w.model()->row(w.model()->rowOfKey(QString::fromStdString(store->recordKey("arrives-later")))).state,
            idem::RecordState::Completed, 3000);
        store->purge("arrives-later", "test");
        QTRY_VERIFY_WITH_TIMEOUT(w.model()->rowOfKey(QString::fromStdString(store->recordKey("arrives-later"))) < 0, 3000);

        const QString csv = tmp.filePath(QStringLiteral("view.csv")), json = tmp.filePath(QStringLiteral("view.json"));
        QVERIFY(w.exportTo(csv));
        QVERIFY(w.exportTo(json));
        QFile c(csv);
        QVERIFY(c.open(QIODevice::ReadOnly));
        const auto lines = c.readAll().trimmed().split('\n');
        QCOMPARE(lines.size(), 1 + w.proxy()->rowCount());
        QVERIFY(lines.first().startsWith("key,ID,State"));
        QFile j(json);
        QVERIFY(j.open(QIODevice::ReadOnly));
        QCOMPARE(QJsonDocument::fromJson(j.readAll()).array().size(), w.proxy()->rowCount());
    }

    // The Race Lab tab: the forced interleaving step by step, all four strategies side by side,
    // exports, and the lab's keys showing in the live table.
    void raceLab()
    {
        MainWindow w(options());
        QSignalSpy scans(&w, &MainWindow::scanCompleted);
        w.show();
        QVERIFY(scans.wait(10000));
        const int before = w.model()->rowCount();
        RaceLabWidget* lab = w.raceLab();
        w.tabs()->setCurrentWidget(lab);
        lab->strategyBox()->setCurrentIndex(lab->strategyBox()->findText(QStringLiteral("naive")));
        lab->forcedBox()->setChecked(true);
        lab->teachingBox()->setChecked(true);
        QSignalSpy done(lab, &RaceLabWidget::finished);
        QTest::mouseClick(lab->fireButton(), Qt::LeftButton);
        QVERIFY(done.wait(30000));
        QCOMPARE(lab->results().size(), 1);
        QCOMPARE(lab->results().first().doubleExecutions, 1);
        QCOMPARE(lab->resultTable()->item(0, 4)->text(), QStringLiteral("1"));
        QCOMPARE(lab->resultTable()->item(0, 4)->foreground().color(), QColor(231, 76, 60));
        // teaching mode: one sentence a step, ending with the double execution
        QStringList steps;
        QCOMPARE(lab->timeline()->revealed(), 0);
        while (lab->nextStepButton()->isEnabled() && steps.size() < 50) {
            QTest::mouseClick(lab->nextStepButton(), Qt::LeftButton);
            steps << lab->stepLabel()->text();
        }
        QVERIFY(steps.size() >= 6);
        QVERIFY(steps.first().startsWith(QStringLiteral("Step 1 of")));
        QVERIFY(steps.join(u'\n').contains(QStringLiteral("ran twice")));
        QVERIFY(steps.last().contains(QStringLiteral("an event ran twice")));
        QCOMPARE(lab->timeline()->revealed(), lab->timeline()->eventCount());
        // the lab's keys live under the console's namespace: the key table shows them
        QTRY_VERIFY_WITH_TIMEOUT(w.model()->rowCount() > before, 5000);

        // all four, side by side, with crashes and pauses
        lab->forcedBox()->setChecked(false);
        lab->teachingBox()->setChecked(false);
        lab->strategyBox()->setCurrentIndex(0);
        QTest::mouseClick(lab->fireButton(), Qt::LeftButton);
        QVERIFY(done.wait(60000));
        QCOMPARE(lab->results().size(), 4);
        QCOMPARE(lab->resultTable()->rowCount(), 4);
        const auto& luaRun = lab->results().last();
        QCOMPARE(luaRun.strategy, idem::Strategy::Lua);
        QCOMPARE(luaRun.doubleExecutions, 0);
        QCOMPARE(luaRun.lost, 0);
        // the four timelines side by side, each titled with what its ledger counted
        QVERIFY(lab->findChild<QLabel*>(QStringLiteral("sideTitle0"))->isVisible());
        QVERIFY(lab->findChild<QLabel*>(QStringLiteral("sideTitle0"))->text().contains(QStringLiteral("naive")));
        QVERIFY(lab->findChild<QLabel*>(QStringLiteral("sideTitle3"))->text().contains(QStringLiteral("lua")));

        const QString csv = tmp.filePath(QStringLiteral("race.csv")), png = tmp.filePath(QStringLiteral("race.png"));
        QVERIFY(lab->exportTable(csv));
        QFile c(csv);
        QVERIFY(c.open(QIODevice::ReadOnly));
        QCOMPARE(c.readAll().trimmed().split('\n').size(), 5);
        QVERIFY(lab->exportTimeline(png));
        QVERIFY(QImage(png).width() > 100);
    }

    // Without keyspace notifications the console rescans on an interval; after a drop it
    // reconnects by itself and says so in the status bar.
    void fallbackRescanAndReconnect()
    {
        idem::LocalServer server; // notify-keyspace-events off
        idem::ConnectionPool p(server.connectionOptions(), 1);
        idem::StoreOptions so;
        so.keyNamespace = "fb";
        idem::Store s(p, so);
        s.acquire("first", "");
        MainWindow::Options o = options();
        o.connection.url = QString::fromStdString(server.url());
        o.connection.keyNamespace = QStringLiteral("fb");
        o.connection.rescanIntervalMs = 300;
        MainWindow w(o);
        QSignalSpy scans(&w, &MainWindow::scanCompleted);
        QSignalSpy links(&w, &MainWindow::linkStateChanged);
        w.show();
        QVERIFY(scans.wait(10000));
        QCOMPARE(w.model()->rowCount(), 1);
        s.acquire("second", "");
        QTRY_COMPARE_WITH_TIMEOUT(w.model()->rowCount(), 2, 5000); // found by the next rescan
        QVERIFY(w.statusBar()->findChildren<QLabel*>().size() > 0);

        server.kill();
        QTRY_VERIFY_WITH_TIMEOUT(!links.isEmpty() && links.last().at(0).value<ConsoleWorker::Link>() ==
                                                         ConsoleWorker::Link::Retrying,
                                 10000);
        bool saysRetrying = false;
        for (QLabel* l : w.statusBar()->findChildren<QLabel*>())
            saysRetrying = saysRetrying || l->text().contains(QStringLiteral("retrying"));
        QVERIFY(saysRetrying);
        server.start(); // same port; the data is gone (no persistence), the console follows
        QTRY_VERIFY_WITH_TIMEOUT(links.last().at(0).value<ConsoleWorker::Link>() == ConsoleWorker::Link::Connected,
                                 15000);
        QTRY_COMPARE_WITH_TIMEOUT(w.model()->rowCount(), 0, 5000);
    }

    // Closing the console while Redis hangs (SIGSTOP) and the worker waits on it: the window goes
    // at once; before, the destructor waited for the worker's 3 s command timeout.
    void closesAtOnceWhenRedisHangs()
    {
        idem::LocalServer server;
        MainWindow::Options o = options();
        o.connection.url = QString::fromStdString(server.url());
        o.connection.rescanIntervalMs = 60000;
        auto w = std::make_unique<MainWindow>(o);
        QSignalSpy scans(w.get(), &MainWindow::scanCompleted);
        w->show();
        QVERIFY(scans.wait(10000));
        server.pause();
        w->refresh(); // the worker now blocks on the paused server
        QTest::qWait(300);
        QElapsedTimer closing;
        closing.start();
        w.reset();
        const qint64 ms = closing.elapsed();
        server.resume();
        QVERIFY2(ms < 1500, qPrintable(QStringLiteral("closing took %1 ms").arg(ms)));
    }
};

QTEST_MAIN(TestConsole)
#include "tst_console.moc"
