// The console's main window, offscreen, against real redis-servers (the fixture's, and private
// ones the tests kill, pause or lock with a password): filters, force-fail and purge through the
// confirmation, read-only, what it shows when the data is not current, refusals retrying cannot
// fix, the inspector following actions, exports, the race lab, and layouts at small sizes.
#include "confirmdialog.h"
#include "connectdialog.h"
#include "consoleworker.h"
#include "countschart.h"
#include "elidedlabel.h"
#include "frozentableview.h"
#include "inspectorpanel.h"
#include "keyfilterproxy.h"
#include "keytablemodel.h"
#include "mainwindow.h"
#include "racelabwidget.h"
#include "settings.h"
#include "theme.h"
#include "timelineview.h"
#include "idem/redis/cluster.h"
#include "testsupport.h"

#include "idem/engine/store.h"
#include "idem/errors.h"
#include "idem/monitor/monitor.h"
#include "idem/redis/localserver.h"

#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QElapsedTimer>
#include <QFile>
#include <QHeaderView>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QProcess>
#include <QPushButton>
#include <QScrollArea>
#include <QSignalSpy>
#include <QStackedWidget>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTextBrowser>
#include <QToolButton>
#include <QtTest>

#include <set>

using namespace Qt::StringLiterals;

namespace {
// Answers the next modal ConfirmDialog: keeps what it says, checks that OK waits for a reason (and,
// for more than one key, for their number typed), gives them, presses OK. A dialog still open
// after that is cancelled, so a test never hangs on it.
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
        QTest::keyClicks(dialog->findChild<QLineEdit*>(u"reason"_s), reason);
        if (auto* typed = dialog->findChild<QLineEdit*>(u"typedCount"_s)) {
            if (ok->isEnabled() || dialog->keyCount() < 2) { // a bulk action needs its size typed
                dialog->reject();
                return;
            }
            QTest::keyClicks(typed, QString::number(dialog->keyCount()));
        }
        if (terminal)
            dialog->findChild<QCheckBox*>(u"terminal"_s)->setChecked(true);
        QTest::mouseClick(ok, Qt::LeftButton);
        if (dialog->isVisible())
            dialog->reject();
    });
}

// Cancels the next modal ConfirmDialog, keeping what it said.
void cancelConfirmation(QString* summary, bool* typedCount = nullptr)
{
    QTimer::singleShot(0, [=] {
        if (auto* d = qobject_cast<ConfirmDialog*>(QApplication::activeModalWidget())) {
            *summary = d->summary();
            if (typedCount)
                *typedCount = d->needsTypedCount();
            d->reject();
        }
    });
}

void selectStateFilter(MainWindow& w, idem::StateFilter f)
{
    for (int i = 0; i < w.stateBox()->count(); ++i)
        if (w.stateBox()->itemData(i).toInt() == static_cast<int>(f))
            w.stateBox()->setCurrentIndex(i);
}

void selectKey(MainWindow& w, const QString& key)
{
    const int source = w.model()->rowOfKey(key);
    QVERIFY(source >= 0);
    const QModelIndex i = w.proxy()->mapFromSource(w.model()->index(source, 0));
    QVERIFY(i.isValid());
    w.table()->selectionModel()->setCurrentIndex(i, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
}

ConsoleWorker::Link lastLink(const QSignalSpy& links)
{
    return links.isEmpty() ? ConsoleWorker::Link::Disconnected : links.last().at(0).value<ConsoleWorker::Link>();
}

QString linkText(const MainWindow& w) { return w.findChild<ElidedLabel*>(u"linkState"_s)->text(); }

QSet<std::string> keysUnder(idem::Connection& c, const std::string& pattern)
{
    QSet<std::string> keys;
    std::string cursor = "0";
    do {
        auto r = c.checked({"SCAN", cursor, "MATCH", pattern, "COUNT", "500"});
        cursor = idem::reply::str(idem::reply::element(r.get(), 0));
        const redisReply* list = idem::reply::element(r.get(), 1);
        for (std::size_t i = 0; i < idem::reply::arraySize(list); ++i)
            keys.insert(idem::reply::str(idem::reply::element(list, i)));
    } while (cursor != "0");
    return keys;
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
        o.auditPath = tmp.filePath(QString::fromStdString(ns) + u"-audit.jsonl"_s);
        return o;
    }
    MainWindow::Options optionsFor(const idem::LocalServer& server, const QString& keyNamespace)
    {
        MainWindow::Options o = options();
        o.connection.url = QString::fromStdString(server.url());
        o.connection.keyNamespace = keyNamespace;
        return o;
    }
    QString recordKey(const char* id) const { return QString::fromStdString(store->recordKey(id)); }

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
        QCOMPARE(w.freshness(), MainWindow::Freshness::Live);
        QVERIFY(!w.banner()->isVisible());

        // filters
        QTest::keyClicks(w.filterEdit(), u"done"_s);
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
        QTRY_VERIFY_WITH_TIMEOUT(w.inspector()->toPlainText().contains(u"stale"_s), 5000);

        // force-fail all three stale locks, through the confirmation
        w.table()->selectAll();
        QString summary;
        answerConfirmation(&summary, u"workers died in the outage"_s);
        w.forceFailAction()->trigger();
        QVERIFY2(summary.contains(u"3 keys"_s), qPrintable(summary));
        QVERIFY(summary.contains(u"3 stale STARTED"_s));
        QVERIFY(actions.wait(10000));
        QCOMPARE(actions.last().at(0).value<ActionResult>().changed, 3);
        for (const char* id : {"stuck-1", "stuck-2", "stuck-3"}) {
            const auto r = store->inspect(id);
            QCOMPARE(r->state, idem::RecordState::Failed);
            QCOMPARE(r->opReason, std::string("workers died in the outage"));
            QVERIFY(r->opBy.find("idem-console") != std::string::npos);
        }
        QTRY_COMPARE_WITH_TIMEOUT(w.proxy()->rowCount(), 0, 5000); // no longer stale
        // the action's result is in the status bar beside the connection's state, not instead of it
        QVERIFY(w.statusBar()->currentMessage().contains(u"force-fail: 3 of 3"_s));
        auto* link = w.findChild<ElidedLabel*>(u"linkState"_s);
        QVERIFY(link->isVisible());
        QVERIFY(link->text().contains(u"connected to"_s));
        const auto audit = w.auditTrail()->entries();
        QCOMPARE(audit.size(), 1);
        QCOMPARE(audit.first().action, u"force-fail (retryable)"_s);
        QCOMPARE(audit.first().changed, 3);
        QCOMPARE(audit.first().why, u"workers died in the outage"_s);

        // purge the completed ones
        selectStateFilter(w, idem::StateFilter::Completed);
        QCOMPARE(w.proxy()->rowCount(), 2);
        w.table()->selectAll();
        answerConfirmation(&summary, u"replay after the fix"_s);
        w.purgeAction()->trigger();
        QVERIFY(summary.contains(u"2 COMPLETED"_s));
        QVERIFY(actions.wait(10000));
        QCOMPARE(actions.last().at(0).value<ActionResult>().changed, 2);
        QVERIFY(!store->inspect("done-1"));
        QVERIFY(!store->inspect("done-2"));
        QTRY_COMPARE_WITH_TIMEOUT(w.proxy()->rowCount(), 0, 5000);
        QCOMPARE(w.auditTrail()->entries().size(), 2);
        QCOMPARE(store->inspect("running")->state, idem::RecordState::Started); // untouched
        // the store keeps them too, for every operator's console and idemctl to see
        const auto stored = store->audit(10);
        QCOMPARE(stored.size(), std::size_t(5));
        for (std::size_t i = 0; i < stored.size(); ++i) {
            QCOMPARE(stored[i].action, std::string(i < 2 ? "purge" : "force-fail retryable"));
            QCOMPARE(stored[i].why, std::string(i < 2 ? "replay after the fix" : "workers died in the outage"));
            QVERIFY(stored[i].by.find("idem-console") != std::string::npos);
        }
        QCOMPARE(stored[0].was, std::string("COMPLETED"));
        QVERIFY(!store->meta("done-1").empty()); // the purged record's fence is kept
    }

    // A confirmation names the server and the keys (a sample, the count by state and by format),
    // warns on its own for live locks and for COMPLETED records, and for more than one key wants
    // their number typed; one key needs only a reason.
    void confirmationNamesServerAndKeys()
    {
        MainWindow w(options());
        QSignalSpy scans(&w, &MainWindow::scanCompleted);
        w.show();
        QVERIFY(scans.wait(10000));
        QString summary;
        bool typed = false;
        cancelConfirmation(&summary, &typed);
        w.purgeFiltered();
        const QString server = QString::fromStdString(idemtest::sharedRedis().describe());
        QVERIFY2(summary.contains(u"Purge 6 keys on "_s + server), qPrintable(summary));
        for (const char* id : {"stuck-1", "stuck-2", "stuck-3", "done-1", "done-2", "running"})
            QVERIFY2(summary.contains(QLatin1String(id)), id);
        QVERIFY(summary.contains(u"3 stale STARTED"_s) && summary.contains(u"2 COMPLETED"_s) &&
                summary.contains(u"1 STARTED"_s));
        QVERIFY(summary.contains(u"Written by: 6 idem"_s));
        QVERIFY(summary.contains(u"1 live lock"_s));
        QVERIFY(summary.contains(u"2 COMPLETED record(s): the stored result goes"_s));
        QVERIFY(typed);

        // the dialog itself: OK waits for the reason and the typed count, each warning on its own
        ConfirmDialog::Request request;
        request.kind = ConfirmDialog::Kind::Purge;
        request.server = server;
        request.keys = 12;
        request.byState = {{u"COMPLETED"_s, 12}};
        request.byFormat = {{u"idem"_s, 12}};
        for (int i = 0; i < 12; ++i)
            request.sample << u"order-%1"_s.arg(i);
        request.sample = request.sample.mid(0, ConfirmDialog::kSampleSize);
        request.completed = 12;
        request.liveLocks = 2;
        ConfirmDialog dialog(request);
        auto* ok = dialog.findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok);
        QVERIFY(dialog.findChild<QLabel*>(u"liveWarning"_s));
        QVERIFY(dialog.findChild<QLabel*>(u"completedWarning"_s));
        QVERIFY(dialog.summary().contains(u"order-7 … and 4 more"_s));
        QTest::keyClicks(dialog.findChild<QLineEdit*>(u"reason"_s), u"cleanup"_s);
        QVERIFY(!ok->isEnabled());
        QTest::keyClicks(dialog.findChild<QLineEdit*>(u"typedCount"_s), u"11"_s);
        QVERIFY(!ok->isEnabled());
        dialog.findChild<QLineEdit*>(u"typedCount"_s)->setText(u"12"_s);
        QVERIFY(ok->isEnabled());

        // one key: a reason is enough
        request.keys = 1;
        request.sample = {u"order-1"_s};
        ConfirmDialog single(request);
        QVERIFY(!single.needsTypedCount());
        QTest::keyClicks(single.findChild<QLineEdit*>(u"reason"_s), u"cleanup"_s);
        QVERIFY(single.findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok)->isEnabled());
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
        QCOMPARE(w.model()->data(w.model()->index(pt, KeyTableModel::Format)).toString(), u"powertools"_s);

        // everything the filter shows: the list (foreign) is left out, and the dialog says so
        QString summary;
        cancelConfirmation(&summary);
        w.purgeFiltered();
        QVERIFY2(summary.contains(u"7 keys"_s), qPrintable(summary));
        QVERIFY2(summary.contains(u"6 idem"_s) && summary.contains(u"1 powertools"_s), qPrintable(summary));
        QVERIFY2(summary.contains(u"left out"_s), qPrintable(summary));
        QVERIFY2(summary.contains(u"live lock"_s), qPrintable(summary)); // "running" and the Powertools one
        QVERIFY2(summary.contains(u"2 COMPLETED record(s)"_s), qPrintable(summary));

        // the Powertools lock alone, purged through the confirmation: deleted, idem's untouched
        w.table()->clearSelection();
        w.table()->selectRow(w.proxy()->mapFromSource(w.model()->index(pt, 0)).row());
        answerConfirmation(&summary, u"its lambda was killed"_s);
        w.purgeSelected();
        QVERIFY2(summary.contains(u"Written by: 1 powertools"_s), qPrintable(summary));
        QVERIFY2(summary.contains(u"never writes its own fields"_s), qPrintable(summary));
        QVERIFY(actions.wait(10000));
        QCOMPARE(actions.last().at(0).value<ActionResult>().changed, 1);
        QCOMPARE(idem::reply::integer(c.checked({"EXISTS", ptKey}).get()), std::int64_t(0));
        QVERIFY(store->inspect("running"));
        QCOMPARE(idem::reply::integer(c.checked({"EXISTS", ns + ":{not-a-record}"}).get()), std::int64_t(1));
    }

    // given one node of a three-primary cluster the console lists the records of every shard,
    // each with the node it was read from (a Node column, shown only on a cluster)
    void clusterShowsEveryShard()
    {
        {
            MainWindow w(options());
            QSignalSpy scans(&w, &MainWindow::scanCompleted);
            w.show();
            QVERIFY(scans.wait(10000));
            QVERIFY(w.table()->isColumnHidden(KeyTableModel::Node));
        }
        idemtest::LocalCluster cluster(3);
        idem::ConnectionPool pool(cluster.node(0), 1);
        idem::Store cstore(pool, idem::StoreOptions{.keyNamespace = ns});
        std::map<QString, QString> nodeOf; // id -> the primary serving its slot
        for (int i = 0; i < 90; ++i) {
            const std::string id = "c-" + std::to_string(i);
            QCOMPARE(cstore.acquire(id, "").status, idem::AcquireStatus::Acquired);
            const int slot = idem::hashSlot(cstore.recordKey(id));
            for (const auto& shard : [&] {
                     idem::Connection c(cluster.node(0));
                     return idem::clusterShards(c);
                 }())
                for (const auto& [first, last] : shard.ranges)
                    if (slot >= first && slot <= last)
                        nodeOf[QString::fromStdString(id)] = QString::fromStdString(shard.primary);
        }
        MainWindow::Options o = options();
        o.connection.url = QString::fromStdString(cluster.url(1));
        MainWindow w(o);
        QSignalSpy scans(&w, &MainWindow::scanCompleted);
        w.show();
        QVERIFY(scans.wait(10000));
        QTRY_COMPARE(w.model()->rowCount(), 90);
        QVERIFY(!w.table()->isColumnHidden(KeyTableModel::Node));
        QSet<QString> nodes;
        for (int r = 0; r < w.model()->rowCount(); ++r) {
            const QString id = w.model()->data(w.model()->index(r, KeyTableModel::Id)).toString();
            const QString node = w.model()->data(w.model()->index(r, KeyTableModel::Node)).toString();
            QCOMPARE(node, nodeOf[id]);
            nodes.insert(node);
        }
        QCOMPARE(nodes.size(), 3);
    }

    // "Read keys from: Replicas" on a cluster with a replica per primary: every record is read from
    // a replica (the Node column names replicas only), and a purge still reaches the primaries
    void clusterReadFromReplicas()
    {
        idemtest::LocalCluster cluster(3, 3);
        idem::ConnectionPool pool(cluster.node(0), 1);
        idem::Store cstore(pool, idem::StoreOptions{.keyNamespace = ns});
        for (int i = 0; i < 60; ++i) {
            auto a = cstore.acquire("r-" + std::to_string(i), "");
            cstore.complete(a.ticket, "ok");
        }
        cluster.waitForReplication();
        std::set<QString> primaries, replicas;
        {
            idem::Connection c(cluster.node(0));
            for (const auto& shard : idem::clusterShards(c)) {
                primaries.insert(QString::fromStdString(shard.primary));
                for (const auto& r : shard.replicas)
                    replicas.insert(QString::fromStdString(r));
            }
        }
        QCOMPARE(replicas.size(), std::size_t(3));

        ConnectDialog dialog(nullptr); // the choice in Connect becomes the setting
        qobject_cast<QComboBox*>(dialog.fieldWidget(u"read-from"_s))->setCurrentIndex(1);
        QVERIFY(dialog.settings().readFromReplicas);

        MainWindow::Options o = options();
        o.connection.url = QString::fromStdString(cluster.url(0));
        o.connection.readFromReplicas = dialog.settings().readFromReplicas;
        MainWindow w(o);
        QSignalSpy scans(&w, &MainWindow::scanCompleted);
        QSignalSpy actions(&w, &MainWindow::actionCompleted);
        w.show();
        QVERIFY(scans.wait(10000));
        QTRY_COMPARE_WITH_TIMEOUT(w.model()->rowCount(), 60, 5000);
        std::set<QString> readFrom;
        for (int r = 0; r < w.model()->rowCount(); ++r)
            readFrom.insert(w.model()->data(w.model()->index(r, KeyTableModel::Node)).toString());
        QVERIFY2(readFrom == replicas, qPrintable(QStringList(readFrom.begin(), readFrom.end()).join(u' ')));

        QTest::keyClicks(w.filterEdit(), u"r-7"_s);
        QCOMPARE(w.proxy()->rowCount(), 1);
        w.table()->selectAll();
        QString summary;
        answerConfirmation(&summary, u"run it again"_s);
        w.purgeAction()->trigger();
        QVERIFY(actions.wait(10000));
        QCOMPARE(actions.last().at(0).value<ActionResult>().changed, 1);
        QVERIFY(!cstore.inspect("r-7"));                     // gone from its primary
        QCOMPARE(cstore.inspect("r-8")->state, idem::RecordState::Completed); // and nothing else
    }

    // a recent URL brings back the TLS files, namespace and read-from it was connected with, never
    // a password or "insecure"
    void connectRemembersARecentUrlsSettings()
    {
        ConnectionSettings s;
        s.url = u"rediss://10.1.2.3:6380/0"_s;
        s.user = u"ops"_s;
        s.password = u"secret"_s;
        s.keyNamespace = u"payments"_s;
        s.readFromReplicas = true;
        s.tlsCa = u"ca.pem"_s;
        s.tlsCert = u"client.pem"_s;
        s.tlsKey = u"client.key"_s;
        s.tlsServerName = u"redis.internal"_s;
        s.tlsInsecure = true;
        Settings::instance().addRecentUrl(s.url);
        Settings::instance().rememberConnection(s.url, s);

        ConnectDialog dialog(nullptr); // opens on the most recent URL, with its settings
        auto* url = qobject_cast<QComboBox*>(dialog.fieldWidget(u"url"_s));
        QCOMPARE(url->currentText(), s.url);
        QCOMPARE(dialog.settings().tlsCa, s.tlsCa);
        qobject_cast<QLineEdit*>(dialog.fieldWidget(u"tls-ca"_s))->clear();
        url->setCurrentText(u"redis://127.0.0.1:1/0"_s); // another URL, then back to the recent one
        url->setCurrentText(s.url);
        const ConnectionSettings back = dialog.settings();
        QCOMPARE(back.user, s.user);
        QCOMPARE(back.keyNamespace, s.keyNamespace);
        QVERIFY(back.readFromReplicas);
        QCOMPARE(back.tlsCa, s.tlsCa);
        QCOMPARE(back.tlsCert, s.tlsCert);
        QCOMPARE(back.tlsKey, s.tlsKey);
        QCOMPARE(back.tlsServerName, s.tlsServerName);
        QVERIFY(back.password.isEmpty());
        QVERIFY(!back.tlsInsecure);
    }

    // an action asked of a worker that has no connection is answered at once, and tries nothing
    void actionsWithoutConnectionAnswerNotConnected()
    {
        ConsoleWorker worker; // never told to connect
        QSignalSpy done(&worker, &ConsoleWorker::actionDone);
        KeyRow row;
        row.key = QByteArray(ns.c_str()) + ":{running}";
        worker.forceFail({row, row}, u"reason"_s, false, u"tester"_s);
        worker.purge({row}, u"reason"_s, u"tester"_s);
        QCOMPARE(done.count(), 2);
        const auto ff = done.at(0).at(0).value<ActionResult>();
        const auto pg = done.at(1).at(0).value<ActionResult>();
        QCOMPARE(ff.action, u"force-fail"_s);
        QCOMPARE(ff.requested, 2);
        QCOMPARE(ff.error, u"not connected"_s);
        QCOMPARE(ff.changed, 0);
        QCOMPARE(pg.action, u"purge"_s);
        QCOMPARE(pg.requested, 1);
        QCOMPARE(pg.error, u"not connected"_s);
        const auto rec = store->inspect("running");
        QVERIFY(rec);
        QCOMPARE(rec->state, idem::RecordState::Started); // untouched
    }

    // --read-only cannot be switched off in the window; the toggle's own state is for the session
    // only: a window opened after one that was switched read-only comes up writable
    void readOnlyFromTheCommandLineSurvivesTheToggle()
    {
        {
            MainWindow w(options(true));
            QSignalSpy scans(&w, &MainWindow::scanCompleted);
            w.show();
            QVERIFY(scans.wait(10000));
            QVERIFY(w.isReadOnly());
            QVERIFY(w.readOnlyLock().contains(u"--read-only"_s));
            QVERIFY(w.readOnlyAction()->isChecked());
            QVERIFY(!w.readOnlyAction()->isEnabled());
            w.readOnlyAction()->trigger(); // disabled: nothing happens
            w.setReadOnly(false);          // even called directly: refused
            QVERIFY(w.isReadOnly());
            QVERIFY(w.readOnlyAction()->isChecked());
            for (QAction* a : {w.purgeAction(), w.forceFailAction(), w.purgeAllAction(), w.forceFailAllAction()})
                QVERIFY(!a->isEnabled());
            w.table()->selectAll();
            w.purgeSelected(); // refused, no dialog
            QVERIFY(!QApplication::activeModalWidget());
            QCOMPARE(w.model()->rowCount(), 7);
            selectKey(w, recordKey("done-1"));
            QTRY_VERIFY_WITH_TIMEOUT(w.inspector()->toPlainText().contains(u"COMPLETED"_s), 5000);
            QVERIFY(!w.inspectorPanel()->purgeButton()->isEnabled());
        }
        {
            MainWindow w(options());
            QSignalSpy scans(&w, &MainWindow::scanCompleted);
            w.show();
            QVERIFY(scans.wait(10000));
            QVERIFY(!w.isReadOnly());
            QVERIFY(w.readOnlyAction()->isEnabled());
            w.readOnlyAction()->trigger(); // switched on by hand
            QVERIFY(w.isReadOnly());
            QVERIFY(!w.purgeAction()->isEnabled());
        }
        MainWindow w(options());
        QSignalSpy scans(&w, &MainWindow::scanCompleted);
        w.show();
        QVERIFY(scans.wait(10000));
        QVERIFY(!w.isReadOnly()); // not kept from the last session
        QVERIFY(w.purgeAction()->isEnabled());
    }

    void cancelChangesNothing()
    {
        MainWindow w(options());
        QSignalSpy scans(&w, &MainWindow::scanCompleted);
        w.show();
        QVERIFY(scans.wait(10000));
        w.table()->selectAll();
        QString summary;
        cancelConfirmation(&summary);
        QSignalSpy actions(&w, &MainWindow::actionCompleted);
        w.purgeAction()->trigger();
        QVERIFY(!summary.isEmpty());
        QVERIFY(!actions.wait(500));
        QVERIFY(store->inspect("done-1").has_value());
        QCOMPARE(w.auditTrail()->entries().size(), 0);
    }

    // A user whose ACL forbids writes: the console says so and stays read-only, toggle and all
    void userWithoutWritePermissionIsReadOnly()
    {
        idem::LocalServer server;
        idem::Connection admin(server.connectionOptions());
        admin.checked({"ACL", "SETUSER", "viewer", "on", ">look", "~*", "&*", "+@all", "-@write"});
        admin.checked({"HSET", "ro:{a}", "state", "COMPLETED", "token", "t", "fence", "1"});
        MainWindow::Options o = optionsFor(server, u"ro"_s);
        o.connection.url = u"redis://viewer:look@127.0.0.1:%1/0"_s.arg(server.port());
        MainWindow w(o);
        QSignalSpy scans(&w, &MainWindow::scanCompleted);
        w.show();
        QVERIFY(scans.wait(10000));
        QCOMPARE(w.model()->rowCount(), 1);
        QTRY_VERIFY_WITH_TIMEOUT(w.readOnlyLock().contains(u"NOPERM"_s), 5000);
        QVERIFY(w.isReadOnly() || !w.readOnlyLock().isEmpty());
        QVERIFY(!w.readOnlyAction()->isEnabled());
        QVERIFY(w.readOnlyAction()->isChecked());
        QVERIFY(!w.purgeAction()->isEnabled());
        QVERIFY(w.readOnlyAction()->toolTip().contains(u"viewer"_s));
    }

    // Redis killed while connected: at once a banner says since when and how old the data is; the
    // counters and rows turn grey, countdowns stop, the chart leaves a gap, the actions and the
    // inspector's buttons are off, and force-fail asks nothing. When the server is back the data
    // is read again and the inspector re-reads its record.
    void disconnectedStateDisablesActionsAndMarksDataStale()
    {
        idem::LocalServer server;
        idem::ConnectionPool p(server.connectionOptions(), 1);
        idem::StoreOptions so;
        so.keyNamespace = "dc";
        idem::Store s(p, so);
        s.acquire("held", "", idem::Millis(600'000));
        s.acquire("stuck", "", idem::Millis(1));
        MainWindow w(optionsFor(server, u"dc"_s));
        QSignalSpy scans(&w, &MainWindow::scanCompleted);
        QSignalSpy inspected(&w, &MainWindow::inspected);
        w.show();
        QVERIFY(scans.wait(10000));
        QCOMPARE(w.model()->rowCount(), 2);
        selectKey(w, u"dc:{held}"_s);
        QVERIFY(inspected.wait(5000));
        QVERIFY(w.inspectorPanel()->forceFailButton()->isEnabled());
        QTRY_VERIFY_WITH_TIMEOUT(w.chart()->sampleCount() >= 1, 5000);

        server.kill();
        // the heartbeat notices within its interval, not at the next scan
        QTRY_COMPARE_WITH_TIMEOUT(w.freshness(), MainWindow::Freshness::AsOf, ConsoleWorker::kHeartbeatMs + 3000);
        QVERIFY(w.banner()->isVisible());
        QVERIFY2(w.bannerText().contains(u"lost at"_s) && w.bannerText().contains(u"as of"_s),
                 qPrintable(w.bannerText()));
        for (QAction* a : {w.purgeAction(), w.forceFailAction(), w.purgeAllAction(), w.forceFailAllAction()})
            QVERIFY(!a->isEnabled());
        QVERIFY(!w.inspectorPanel()->forceFailButton()->isEnabled());
        QVERIFY(w.inspectorPanel()->findChild<QLabel*>(u"inspectorStale"_s)->isVisible());
        QVERIFY(w.model()->isFrozen());
        const int held = w.model()->rowOfKey(u"dc:{held}"_s);
        const QString ttl = w.model()->data(w.model()->index(held, KeyTableModel::Ttl)).toString();
        const QString lease = w.model()->data(w.model()->index(held, KeyTableModel::Lease)).toString();
        QTest::qWait(1300);
        QCOMPARE(w.model()->data(w.model()->index(held, KeyTableModel::Ttl)).toString(), ttl); // stopped
        QCOMPARE(w.model()->data(w.model()->index(held, KeyTableModel::Lease)).toString(), lease);
        QCOMPARE(w.model()->data(w.model()->index(held, 0), Qt::ForegroundRole).value<QColor>(),
                 theme::staleText(QApplication::palette()));
        QVERIFY(w.counter(0)->text().contains(u"2"_s)); // the last counts, greyed: not a dash, not zero
        QCOMPARE(w.counter(0)->palette().color(QPalette::ButtonText), theme::staleText(w.palette()));
        w.table()->selectAll();
        w.forceFailSelected(); // no dialog: it says at once that it cannot
        QVERIFY(!QApplication::activeModalWidget());
        QVERIFY(w.statusBar()->currentMessage().contains(u"Not connected"_s));
        QCOMPARE(w.findChild<ElidedLabel*>(u"liveUpdates"_s)->text(), u"no live updates"_s);
        QTest::qWait(2200); // the chart records the outage
        const int before = inspected.count();

        server.start(); // same port; the data is gone (no persistence), the console follows
        QTRY_COMPARE_WITH_TIMEOUT(w.freshness(), MainWindow::Freshness::Live, 20000);
        QVERIFY(!w.banner()->isVisible());
        QVERIFY(!w.model()->isFrozen());
        QTRY_COMPARE_WITH_TIMEOUT(w.model()->rowCount(), 0, 5000);
        QTRY_VERIFY_WITH_TIMEOUT(inspected.count() > before, 5000); // read again: now it is gone
        QTRY_VERIFY_WITH_TIMEOUT(w.inspector()->toPlainText().contains(u"gone"_s), 5000);
        QTRY_COMPARE_WITH_TIMEOUT(w.chart()->segmentCount(), 2, 5000); // a gap for the outage
    }

    // A server that cannot be reached, never connected: "—" everywhere, not an empty healthy store
    void neverConnectedShowsNoData()
    {
        MainWindow::Options o = options();
        o.connection.url = u"redis://127.0.0.1:%1/0"_s.arg(idem::freeLoopbackPort());
        MainWindow w(o);
        QSignalSpy links(&w, &MainWindow::linkStateChanged);
        w.show();
        QTRY_VERIFY_WITH_TIMEOUT(!links.isEmpty() && links.last().at(0).value<ConsoleWorker::Link>() ==
                                                         ConsoleWorker::Link::Retrying,
                                 5000);
        QCOMPARE(w.freshness(), MainWindow::Freshness::NoData);
        for (int i = 0; i < 11; ++i)
            QVERIFY2(w.counter(i)->text().endsWith(u"—"_s), qPrintable(w.counter(i)->text()));
        QVERIFY2(w.bannerText().contains(u"Cannot reach"_s), qPrintable(w.bannerText()));
        QVERIFY(!w.purgeAction()->isEnabled());
        QTest::qWait(2100);
        QCOMPARE(w.chart()->sampleCount(), 0); // no line at zero
        QVERIFY(w.findChild<QWidget*>(u"bannerConnect"_s)->isVisible());
    }

    // A server that wants a password, given none: no retries, the reason in words in the banner,
    // and Connect opens with the password field marked. With the password given there, it connects.
    void refusedPasswordStopsRetriesAndOpensConnect()
    {
        idem::LocalServerOptions lo;
        lo.extraArgs = {"--requirepass", "s3cret"};
        idem::LocalServer server(lo);
        MainWindow w(optionsFor(server, u"pw"_s));
        QSignalSpy links(&w, &MainWindow::linkStateChanged);
        w.show();
        QTRY_VERIFY_WITH_TIMEOUT(!links.isEmpty() && links.last().at(0).value<ConsoleWorker::Link>() ==
                                                         ConsoleWorker::Link::Refused,
                                 5000);
        QVERIFY2(w.bannerText().contains(u"needs a password, and none was given"_s), qPrintable(w.bannerText()));
        QVERIFY2(w.bannerText().contains(u"Connect"_s), qPrintable(w.bannerText()));
        QCOMPARE(w.freshness(), MainWindow::Freshness::NoData);
        QTRY_VERIFY_WITH_TIMEOUT(w.connectDialog() && w.connectDialog()->isVisible(), 3000);
        QWidget* field = w.connectDialog()->fieldWidget(u"password"_s);
        QVERIFY(field->property("needsFix").toBool());
        QVERIFY(!w.connectDialog()->fieldWidget(u"url"_s)->property("needsFix").toBool());
        QVERIFY(w.connectDialog()->findChild<QLabel*>(u"problem"_s)->text().contains(u"password"_s));
        const qsizetype changes = links.size();
        QTest::qWait(2500); // retrying stopped: nothing more happens
        QCOMPARE(links.size(), changes);

        qobject_cast<QLineEdit*>(field)->setText(u"s3cret"_s);
        w.connectDialog()->accept();
        QTRY_COMPARE_WITH_TIMEOUT(w.freshness(), MainWindow::Freshness::Live, 10000);

        // a wrong one in the URL: refused too, in other words
        MainWindow::Options o = optionsFor(server, u"pw"_s);
        o.connection.url = u"redis://:wrong@127.0.0.1:%1/0"_s.arg(server.port());
        MainWindow w2(o);
        QSignalSpy links2(&w2, &MainWindow::linkStateChanged);
        w2.show();
        QTRY_VERIFY_WITH_TIMEOUT(!links2.isEmpty() && links2.last().at(0).value<ConsoleWorker::Link>() ==
                                                          ConsoleWorker::Link::Refused,
                                 5000);
        QVERIFY2(w2.bannerText().contains(u"refused the user name or password"_s), qPrintable(w2.bannerText()));
        QTRY_VERIFY_WITH_TIMEOUT(w2.connectDialog(), 3000);
        QVERIFY(w2.connectDialog()->fieldWidget(u"password"_s)->property("needsFix").toBool());
    }

    // Connect's TLS fields and the Sentinel password become the connection's options, for the URLs
    // they fit; what does not fit is refused with the field named, before anything is tried
    void connectDialogMapsTlsAndSentinelSettings()
    {
        ConnectDialog dialog(nullptr);
        ConnectionSettings given;
        given.url = u"rediss://127.0.0.1:6380/2"_s;
        given.tlsCa = u"ca.pem"_s;
        given.tlsCert = u"client.pem"_s;
        given.tlsKey = u"client.key"_s;
        given.tlsServerName = u"redis.internal"_s;
        given.tlsInsecure = true;
        dialog.setSettings(given);
        QVERIFY(dialog.fieldWidget(u"tls-ca"_s)->isEnabled());
        QVERIFY(!dialog.fieldWidget(u"sentinel-password"_s)->isEnabled());
        QVERIFY(dialog.findChild<QWidget*>(u"tls-ca-pick"_s)); // a file picker beside each file
        QVERIFY(dialog.findChild<QWidget*>(u"tls-key-pick"_s));
        ConnectionSettings s = dialog.settings();
        idem::ConnectionOptions o = connectionOptions(s);
        QVERIFY(o.tls.enabled);
        QCOMPARE(o.tls.caFile, std::string("ca.pem"));
        QCOMPARE(o.tls.certFile, std::string("client.pem"));
        QCOMPARE(o.tls.keyFile, std::string("client.key"));
        QCOMPARE(o.tls.serverName, std::string("redis.internal"));
        QVERIFY(o.tls.insecure);
        QCOMPARE(o.db, 2);

        // a plaintext URL: the TLS fields are greyed out and not used
        qobject_cast<QComboBox*>(dialog.fieldWidget(u"url"_s))->setCurrentText(u"redis://127.0.0.1:6379/0"_s);
        QVERIFY(!dialog.fieldWidget(u"tls-ca"_s)->isEnabled());
        QVERIFY(!dialog.fieldWidget(u"tls-insecure"_s)->isEnabled());
        s = dialog.settings();
        QVERIFY(s.tlsCa.isEmpty() && !s.tlsInsecure);
        QVERIFY(!connectionOptions(s).tls.enabled);

        // Sentinel: the sentinels' password for redis-sentinel:// and rediss-sentinel:// URLs
        qobject_cast<QComboBox*>(dialog.fieldWidget(u"url"_s))
            ->setCurrentText(u"rediss-sentinel://:pw@127.0.0.1:26379,127.0.0.1:26380/0#mymaster"_s);
        QVERIFY(dialog.fieldWidget(u"sentinel-password"_s)->isEnabled());
        QVERIFY(dialog.fieldWidget(u"tls-ca"_s)->isEnabled());
        qobject_cast<QLineEdit*>(dialog.fieldWidget(u"sentinel-password"_s))->setText(u"sentinel-pw"_s);
        o = connectionOptions(dialog.settings());
        QVERIFY(o.viaSentinel() && o.tls.enabled);
        QCOMPARE(o.sentinel.nodes.size(), std::size_t(2));
        QCOMPARE(o.sentinel.master, std::string("mymaster"));
        QCOMPARE(o.sentinel.password, std::string("sentinel-pw"));
        QCOMPARE(o.password, std::string("pw"));

        // settings that do not fit the URL name the field to change
        ConnectionSettings wrong;
        wrong.url = u"redis://127.0.0.1:6379/0"_s;
        wrong.tlsCa = u"ca.pem"_s;
        try {
            (void)connectionOptions(wrong);
            QFAIL("a CA file for a plaintext URL was taken");
        } catch (const idem::ConfigError& e) {
            QCOMPARE(e.field(), std::string("tls-ca"));
        }
        wrong.tlsCa.clear();
        wrong.sentinelPassword = u"x"_s;
        try {
            (void)connectionOptions(wrong);
            QFAIL("a Sentinel password for a plain URL was taken");
        } catch (const idem::ConfigError& e) {
            QCOMPARE(e.field(), std::string("sentinel-password"));
        }
    }

    // A TLS-only server whose CA the console is not given: no retries, the reason in words, and
    // Connect opens with the CA file marked; with the CA file chosen there, it connects.
    void tlsRefusalOpensConnectOnTheCaFile()
    {
        const idemtest::TestCerts& certs = idemtest::TestCerts::get();
        idem::LocalServer server(certs.serverOptions());
        MainWindow w(optionsFor(server, u"tls"_s));
        QVERIFY(server.url().starts_with("rediss://"));
        QSignalSpy links(&w, &MainWindow::linkStateChanged);
        w.show();
        QTRY_VERIFY_WITH_TIMEOUT(lastLink(links) == ConsoleWorker::Link::Refused, 5000);
        QVERIFY2(w.bannerText().contains(u"TLS connection"_s) && w.bannerText().contains(u"CA file"_s),
                 qPrintable(w.bannerText()));
        QTRY_VERIFY_WITH_TIMEOUT(w.connectDialog() && w.connectDialog()->isVisible(), 3000);
        QWidget* ca = w.connectDialog()->fieldWidget(u"tls-ca"_s);
        QVERIFY(ca->property("needsFix").toBool());
        QVERIFY(ca->isEnabled());
        QVERIFY(!w.connectDialog()->fieldWidget(u"url"_s)->property("needsFix").toBool());
        const qsizetype changes = links.size();
        QTest::qWait(2500); // retrying stopped
        QCOMPARE(links.size(), changes);
        QVERIFY(!w.findChild<QLabel*>(u"insecureTls"_s)->isVisible());

        // redis:// to a TLS port: the URL is what to correct
        MainWindow::Options plain = optionsFor(server, u"tls"_s);
        plain.connection.url = u"redis://127.0.0.1:%1/0"_s.arg(server.port());
        MainWindow w0(plain);
        QSignalSpy links0(&w0, &MainWindow::linkStateChanged);
        w0.show();
        QTRY_VERIFY_WITH_TIMEOUT(lastLink(links0) == ConsoleWorker::Link::Refused, 8000);
        QVERIFY2(w0.bannerText().contains(u"do not agree on TLS"_s), qPrintable(w0.bannerText()));
        QTRY_VERIFY_WITH_TIMEOUT(w0.connectDialog(), 3000);
        QVERIFY(w0.connectDialog()->fieldWidget(u"url"_s)->property("needsFix").toBool());

        qobject_cast<QLineEdit*>(ca)->setText(QString::fromStdString(certs.path("ca.pem")));
        w.connectDialog()->accept();
        QTRY_COMPARE_WITH_TIMEOUT(w.freshness(), MainWindow::Freshness::Live, 10000);
        QVERIFY(!w.windowTitle().contains(u"NOT VERIFIED"_s));

        // a server that wants a client certificate, given none: the certificate is the field
        idem::LocalServer mutual(certs.serverOptions("server.pem", true));
        MainWindow::Options o = optionsFor(mutual, u"tls"_s);
        o.connection.tlsCa = QString::fromStdString(certs.path("ca.pem"));
        MainWindow w2(o);
        QSignalSpy links2(&w2, &MainWindow::linkStateChanged);
        w2.show();
        QTRY_VERIFY_WITH_TIMEOUT(lastLink(links2) == ConsoleWorker::Link::Refused, 5000);
        QTRY_VERIFY_WITH_TIMEOUT(w2.connectDialog(), 3000);
        QVERIFY2(w2.connectDialog()->fieldWidget(u"tls-cert"_s)->property("needsFix").toBool(),
                 qPrintable(w2.bannerText()));
        o.connection.tlsCert = QString::fromStdString(certs.path("client.pem"));
        o.connection.tlsKey = QString::fromStdString(certs.path("client.key"));
        MainWindow w3(o);
        w3.show();
        QTRY_COMPARE_WITH_TIMEOUT(w3.freshness(), MainWindow::Freshness::Live, 10000);
    }

    // No verification: it connects to a server whose certificate nothing vouches for, and says
    // so in the title (first, where it is not cut off) and in the status bar
    void insecureTlsIsAWarningInTitleAndStatusBar()
    {
        const idemtest::TestCerts& certs = idemtest::TestCerts::get();
        idem::LocalServer server(certs.serverOptions("other-server.pem"));
        MainWindow::Options o = optionsFor(server, u"tls"_s);
        o.connection.tlsInsecure = true;
        MainWindow w(o);
        w.show();
        QTRY_COMPARE_WITH_TIMEOUT(w.freshness(), MainWindow::Freshness::Live, 10000);
        QVERIFY2(w.windowTitle().startsWith(u"⚠ TLS NOT VERIFIED"_s), qPrintable(w.windowTitle()));
        auto* label = w.findChild<QLabel*>(u"insecureTls"_s);
        QVERIFY(label->isVisible());
        QVERIFY(label->text().contains(u"not verified"_s));
        QVERIFY(w.statusBar()->isAncestorOf(label));

        // connecting elsewhere without it: the warning goes
        w.connectTo(optionsFor(server, u"tls"_s).connection);
        QVERIFY(!label->isVisible());
        QVERIFY(!w.windowTitle().contains(u"NOT VERIFIED"_s));
    }

    // Through Sentinel: the status bar names the primary. A primary demoted by SENTINEL FAILOVER
    // goes on answering reads: the console notices it from the sentinels and names the new one.
    // A primary that dies: "failing over", then the new primary, without a restart or a click.
    void sentinelFailoverIsSaidAndTheNewPrimaryNamed()
    {
        idemtest::LocalSentinelSet set(2);
        MainWindow::Options o = options();
        o.connection.url = QString::fromStdString(set.url());
        MainWindow w(o);
        QSignalSpy links(&w, &MainWindow::linkStateChanged);
        w.show();
        QTRY_COMPARE_WITH_TIMEOUT(w.freshness(), MainWindow::Freshness::Live, 10000);
        const auto primary = [&](int node) { return u"primary 127.0.0.1:%1"_s.arg(set.node(node).port()); };
        QVERIFY2(linkText(w).contains(primary(0)), qPrintable(linkText(w)));

        idem::Connection(set.sentinel(0).connectionOptions()).checked({"SENTINEL", "FAILOVER", "mymaster"});
        const int promoted = set.waitForNewPrimary(0);
        QTRY_VERIFY2_WITH_TIMEOUT(linkText(w).contains(primary(promoted)), qPrintable(linkText(w)), 15000);
        QTRY_COMPARE_WITH_TIMEOUT(w.freshness(), MainWindow::Freshness::Live, 10000);
        set.waitForReplicas(2);

        set.node(promoted).kill();
        QTRY_VERIFY_WITH_TIMEOUT(linkText(w).contains(u"failing over"_s), 5000);
        QVERIFY2(linkText(w).contains(primary(promoted) + u" lost"_s), qPrintable(linkText(w)));
        QVERIFY2(w.bannerText().contains(u"failing over"_s), qPrintable(w.bannerText()));
        QVERIFY(!w.purgeAction()->isEnabled());
        const int third = set.waitForNewPrimary(promoted);
        QTRY_VERIFY2_WITH_TIMEOUT(linkText(w).contains(primary(third)), qPrintable(linkText(w)), 20000);
        QTRY_COMPARE_WITH_TIMEOUT(w.freshness(), MainWindow::Freshness::Live, 10000);
        for (const auto& change : links) // a failover is never taken for a refusal
            QVERIFY(change.at(0).value<ConsoleWorker::Link>() != ConsoleWorker::Link::Refused);
    }

    // The inspector is read again after each action, and cleared when the filter hides its row
    void inspectorFollowsActionsAndTheFilter()
    {
        MainWindow w(options());
        QSignalSpy scans(&w, &MainWindow::scanCompleted);
        QSignalSpy actions(&w, &MainWindow::actionCompleted);
        QSignalSpy inspected(&w, &MainWindow::inspected);
        w.show();
        QVERIFY(scans.wait(10000));
        selectKey(w, recordKey("stuck-1"));
        QTRY_VERIFY_WITH_TIMEOUT(w.inspector()->toPlainText().contains(u"stale"_s), 5000);
        QVERIFY(w.inspectorPanel()->forceFailButton()->isEnabled());

        // force-fail from the inspector's own button: one key, a reason is enough
        QString summary;
        answerConfirmation(&summary, u"stuck since the deploy"_s);
        QTest::mouseClick(w.inspectorPanel()->forceFailButton(), Qt::LeftButton);
        QVERIFY2(summary.contains(u"Force-fail 1 key on"_s) && summary.contains(u"stuck-1"_s), qPrintable(summary));
        QVERIFY(actions.wait(10000));
        // read again: the operator's reason is in the record now, and it is no longer a stale lock
        QTRY_VERIFY_WITH_TIMEOUT(w.inspector()->toPlainText().contains(u"stuck since the deploy"_s), 5000);
        QVERIFY(w.inspector()->toPlainText().contains(u"retryable"_s));
        QVERIFY2(!w.inspector()->toPlainText().contains(u"⚠ stale"_s), qPrintable(w.inspector()->toPlainText()));

        // a filter that hides the row: the inspector shows nothing the table does not
        QTest::keyClicks(w.filterEdit(), u"done"_s);
        QTRY_VERIFY_WITH_TIMEOUT(w.inspectorPanel()->key().isEmpty(), 2000);
        QVERIFY(w.inspector()->toPlainText().isEmpty());

        // purge from the inspector: it says the record is gone
        selectKey(w, recordKey("done-1"));
        QTRY_VERIFY_WITH_TIMEOUT(w.inspector()->toPlainText().contains(u"COMPLETED"_s), 5000);
        answerConfirmation(&summary, u"run it again"_s);
        QTest::mouseClick(w.inspectorPanel()->purgeButton(), Qt::LeftButton);
        QVERIFY(actions.wait(10000));
        QTRY_VERIFY_WITH_TIMEOUT(w.inspector()->toPlainText().contains(u"gone"_s) ||
                                     w.inspectorPanel()->key().isEmpty(),
                                 5000);
        QVERIFY(!store->inspect("done-1"));
    }

    // FAILED rows are tinted, and their error is in the table: a search finds it
    void failedRowsColouredAndErrorSearchable()
    {
        auto a = store->acquire("crashed-job", "");
        store->fail(a.ticket, idem::FailPolicy::Retryable, "worker exited with status 3");
        MainWindow w(options());
        QSignalSpy scans(&w, &MainWindow::scanCompleted);
        w.show();
        QVERIFY(scans.wait(10000));
        const int r = w.model()->rowOfKey(recordKey("crashed-job"));
        QVERIFY(r >= 0);
        QCOMPARE(w.model()->data(w.model()->index(r, KeyTableModel::State)).toString(), u"FAILED"_s);
        QVERIFY(w.model()->data(w.model()->index(r, KeyTableModel::Id), Qt::BackgroundRole).isValid());
        QCOMPARE(w.model()->data(w.model()->index(r, KeyTableModel::Note)).toString(), u"worker exited with status 3"_s);
        QTest::keyClicks(w.filterEdit(), u"exited"_s);
        QCOMPARE(w.proxy()->rowCount(), 1);
        // Esc clears the text, then the state
        selectStateFilter(w, idem::StateFilter::Failed);
        w.filterEdit()->setFocus();
        QTest::keyClick(w.filterEdit(), Qt::Key_Escape);
        QCOMPARE(w.filterEdit()->text(), QString());
        QTest::keyClick(w.table(), Qt::Key_Escape);
        QCOMPARE(w.proxy()->stateFilter(), idem::StateFilter::Any);
    }

    void liveUpdatesAndExport()
    {
        MainWindow w(options());
        QSignalSpy scans(&w, &MainWindow::scanCompleted);
        w.show();
        QVERIFY(scans.wait(10000));
        // keyspace notifications (the fixture enables them): a new key shows without a rescan
        auto a = store->acquire("arrives-later", "");
        QTRY_VERIFY_WITH_TIMEOUT(w.model()->rowOfKey(recordKey("arrives-later")) >= 0, 3000);
        store->complete(a.ticket, "done");
        QTRY_COMPARE_WITH_TIMEOUT(w.model()->row(w.model()->rowOfKey(recordKey("arrives-later"))).state,
                                  idem::RecordState::Completed, 3000);
        store->purge("arrives-later", "test");
        QTRY_VERIFY_WITH_TIMEOUT(w.model()->rowOfKey(recordKey("arrives-later")) < 0, 3000);

        // exports hold raw values: ISO 8601 times, milliseconds, the whole owner token, and when
        // the data was read
        const QString csv = tmp.filePath(u"view.csv"_s), json = tmp.filePath(u"view.json"_s);
        QVERIFY(w.exportTo(csv));
        QVERIFY(w.exportTo(json));
        QFile c(csv);
        QVERIFY(c.open(QIODevice::ReadOnly));
        const auto lines = c.readAll().trimmed().split('\n');
        QCOMPARE(lines.size(), 1 + w.proxy()->rowCount());
        QVERIFY2(lines.first().startsWith("key,id,state,stale,"), lines.first().constData());
        QVERIFY(lines.first().endsWith(",captured_at"));
        QFile j(json);
        QVERIFY(j.open(QIODevice::ReadOnly));
        const QJsonObject doc = QJsonDocument::fromJson(j.readAll()).object();
        const QDateTime captured = QDateTime::fromString(doc.value(u"captured_at"_s).toString(), Qt::ISODateWithMs);
        QVERIFY(captured.isValid());
        QVERIFY(std::abs(captured.msecsTo(QDateTime::currentDateTimeUtc())) < 60'000);
        QCOMPARE(doc.value(u"live"_s).toBool(), true);
        const QJsonArray rows = doc.value(u"rows"_s).toArray();
        QCOMPARE(rows.size(), w.proxy()->rowCount());
        bool sawRunning = false;
        for (const QJsonValue& v : rows) {
            const QJsonObject o = v.toObject();
            QVERIFY(o.value(u"ttl_ms"_s).isDouble());
            if (o.value(u"id"_s).toString() != u"running"_s)
                continue;
            sawRunning = true;
            const auto rec = store->inspect("running");
            QCOMPARE(o.value(u"owner"_s).toString(), QString::fromStdString(rec->owner)); // whole
            QVERIFY(o.value(u"owner"_s).toString().size() > 12);
            QVERIFY(QDateTime::fromString(o.value(u"lease_until"_s).toString(), Qt::ISODateWithMs).isValid());
            QVERIFY(QDateTime::fromString(o.value(u"created_at"_s).toString(), Qt::ISODateWithMs).isValid());
            QVERIFY(o.value(u"age_ms"_s).isDouble());
            QVERIFY(o.value(u"lease_remaining_ms"_s).toDouble() > 50'000);
            QCOMPARE(o.value(u"state"_s).toString(), u"STARTED"_s);
        }
        QVERIFY(sawRunning);
    }

    // The chart keeps each server's history: after Connect to another server it starts empty (no
    // line from one server's count to the other's), and the first server's comes back with it
    void chartKeepsEachServersHistory()
    {
        idem::LocalServer other;
        MainWindow w(options());
        QSignalSpy scans(&w, &MainWindow::scanCompleted);
        w.show();
        QVERIFY(scans.wait(10000));
        QTRY_VERIFY_WITH_TIMEOUT(w.chart()->sampleCount() >= 1, 5000);
        QCOMPARE(w.chart()->lastValue(CountsChart::Stale), 3.0);
        const QString first = w.server();
        ConnectionSettings s = options().connection;
        s.url = QString::fromStdString(other.url());
        w.connectTo(s);
        QCOMPARE(w.chart()->sampleCount(), 0);
        QVERIFY(scans.wait(10000));
        QTRY_VERIFY_WITH_TIMEOUT(w.chart()->sampleCount() >= 1, 5000);
        QCOMPARE(w.chart()->lastValue(CountsChart::Stale), 0.0);
        w.connectTo(options().connection);
        QCOMPARE(w.server(), first);
        QVERIFY(w.chart()->sampleCount() >= 1); // its own history, kept
        QCOMPARE(w.chart()->lastValue(CountsChart::Stale), 3.0);
    }

    void chartTicksAreRound()
    {
        QCOMPARE(CountsChart::niceTicks(11, 4), (QVector<double>{0, 5, 10, 15}));
        QCOMPARE(CountsChart::niceTicks(287, 5), (QVector<double>{0, 100, 200, 300}));
        QCOMPARE(CountsChart::niceTicks(8, 5), (QVector<double>{0, 2, 4, 6, 8}));
        QCOMPARE(CountsChart::niceTicks(0, 5), (QVector<double>{0, 1}));
        QCOMPARE(CountsChart::niceTicks(1'000'000, 3), (QVector<double>{0, 500'000, 1'000'000}));
    }

    // The Race Lab tab: on a private redis-server by default - the watched server gets no key -,
    // the forced interleaving told step by step in the trace's order with the counts at the end,
    // all four strategies side by side, exports
    void raceLabOnItsOwnServerTeachesInOrder()
    {
        // the watched server is a private one: the shared server's keys change with whatever other
        // tests run beside this one
        idem::LocalServer watched;
        MainWindow w(optionsFor(watched, QString::fromStdString(ns)));
        QSignalSpy scans(&w, &MainWindow::scanCompleted);
        w.show();
        QVERIFY(scans.wait(10000));
        idem::Connection shared(watched.connectionOptions());
        const auto before = keysUnder(shared, "*");
        RaceLabWidget* lab = w.raceLab();
        w.tabs()->setCurrentWidget(lab);
        QCOMPARE(lab->whereBox()->currentIndex(), 0); // private by default
        lab->strategyBox()->setCurrentIndex(lab->strategyBox()->findText(u"naive"_s));
        lab->forcedBox()->setChecked(true);
        lab->teachingBox()->setChecked(true);
        QSignalSpy done(lab, &RaceLabWidget::finished);
        QTest::mouseClick(lab->fireButton(), Qt::LeftButton);
        QVERIFY(done.wait(30000));
        QVERIFY2(lab->lastWhere().contains(u"private"_s), qPrintable(lab->lastWhere()));
        QCOMPARE(keysUnder(shared, "*"), before); // the watched server: not one key more
        QCOMPARE(lab->results().size(), 1);
        QCOMPARE(lab->results().first().doubleExecutions, 1);
        QVERIFY(!lab->resultsShown()); // the counts are the end of the story
        QStringList steps;
        QCOMPARE(lab->timeline()->revealed(), 0);
        while (lab->nextStepButton()->isEnabled() && steps.size() < 50) {
            QTest::mouseClick(lab->nextStepButton(), Qt::LeftButton);
            steps << lab->stepLabel()->text();
            if (lab->nextStepButton()->isEnabled())
                QVERIFY(!lab->resultsShown());
        }
        // A reads, B reads, A runs it and marks it done, B runs it too
        QCOMPARE(steps.size(), 7);
        QVERIFY2(steps[0].startsWith(u"Step 1 of 6. A reads ev-0"_s), qPrintable(steps[0]));
        QVERIFY2(steps[1].startsWith(u"Step 2 of 6. B reads ev-0"_s), qPrintable(steps[1]));
        QVERIFY2(steps[2].contains(u"A runs the side effect"_s), qPrintable(steps[2]));
        for (int i = 0; i < 4; ++i) // nothing ran twice before the second execution
            QVERIFY2(!steps[i].contains(u"twice"_s) && !steps[i].contains(u"2 times"_s), qPrintable(steps[i]));
        QVERIFY2(steps[4].contains(u"B runs the side effect for ev-0 too"_s) && steps[4].contains(u"2 times"_s),
                 qPrintable(steps[4]));
        QVERIFY(steps.last().contains(u"an event ran twice"_s));
        QVERIFY(lab->resultsShown());
        QCOMPARE(lab->resultTable()->item(0, 4)->text(), u"1"_s);
        QCOMPARE(lab->timeline()->revealed(), lab->timeline()->eventCount());

        // all four, side by side, with crashes and pauses
        lab->forcedBox()->setChecked(false);
        lab->teachingBox()->setChecked(false);
        lab->strategyBox()->setCurrentIndex(0);
        QTest::mouseClick(lab->fireButton(), Qt::LeftButton);
        QVERIFY(done.wait(60000));
        QCOMPARE(lab->results().size(), 4);
        QCOMPARE(lab->resultTable()->rowCount(), 4);
        QVERIFY(lab->resultsShown());
        const auto& luaRun = lab->results().last();
        QCOMPARE(luaRun.strategy, idem::Strategy::Lua);
        QCOMPARE(luaRun.doubleExecutions, 0);
        QCOMPARE(luaRun.lost, 0);
        QVERIFY(lab->findChild<QLabel*>(u"sideTitle0"_s)->isVisible());
        QVERIFY(lab->findChild<QLabel*>(u"sideTitle0"_s)->text().contains(u"naive"_s));
        QVERIFY(lab->findChild<QLabel*>(u"sideTitle3"_s)->text().contains(u"lua"_s));
        QVERIFY(!lab->findChild<QLabel*>(u"sideTitle3"_s)->text().contains(u"inherit"_s));
        QCOMPARE(keysUnder(shared, "*"), before);

        const QString csv = tmp.filePath(u"race.csv"_s), png = tmp.filePath(u"race.png"_s);
        QVERIFY(lab->exportTable(csv));
        QFile c(csv);
        QVERIFY(c.open(QIODevice::ReadOnly));
        QCOMPARE(c.readAll().trimmed().split('\n').size(), 5);
        QVERIFY(lab->exportTimeline(png));
        QVERIFY(QImage(png).width() > 100);
    }

    // On the connected server, when asked: it says so first, writes under racelab: only - nothing
    // in the watched namespace -, every key it writes expires within 10 minutes, and a console
    // watching everything shows them as the lab's, never as malformed
    void raceLabOnTheConnectedServerKeepsToItsNamespace()
    {
        idem::LocalServer server;
        idem::ConnectionPool p(server.connectionOptions(), 1);
        idem::StoreOptions so;
        so.keyNamespace = "watched";
        idem::Store s(p, so);
        s.acquire("order-1", "", idem::Millis(600'000));
        idem::Connection c(server.connectionOptions());
        const auto watchedBefore = keysUnder(c, "watched:*");
        MainWindow::Options o = optionsFor(server, u"watched"_s);
        o.connection.pattern = u"*"_s; // it sees everything on the server
        MainWindow w(o);
        QSignalSpy scans(&w, &MainWindow::scanCompleted);
        w.show();
        QVERIFY(scans.wait(10000));
        RaceLabWidget* lab = w.raceLab();
        QTRY_VERIFY_WITH_TIMEOUT(lab->whereBox()->model()->index(1, 0).flags() & Qt::ItemIsEnabled, 5000);
        lab->whereBox()->setCurrentIndex(1);
        QVERIFY(lab->findChild<QLabel*>(u"whereNote"_s)->text().contains(u"racelab:"_s));
        lab->strategyBox()->setCurrentIndex(0); // all four
        lab->forcedBox()->setChecked(true);
        QString asked;
        QTimer::singleShot(0, [&] {
            if (auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget())) {
                asked = box->text();
                box->button(QMessageBox::Yes)->click();
            }
        });
        QSignalSpy done(lab, &RaceLabWidget::finished);
        QTest::mouseClick(lab->fireButton(), Qt::LeftButton);
        QVERIFY2(asked.contains(u"racelab:"_s) && asked.contains(QString::number(server.port())), qPrintable(asked));
        QVERIFY(done.wait(30000));
        QCOMPARE(lab->lastWhere(), QString::fromStdString(server.connectionOptions().describe()));
        QCOMPARE(keysUnder(c, "watched:*"), watchedBefore); // untouched
        const auto labKeys = keysUnder(c, "racelab:*");
        QVERIFY(labKeys.size() >= 4);
        QCOMPARE(keysUnder(c, "*").size(), watchedBefore.size() + labKeys.size());
        for (const std::string& k : labKeys) {
            const auto ttl = idem::reply::integer(c.checked({"PTTL", k}).get());
            QVERIFY2(ttl > 0 && ttl <= idem::kLabTtlMs, k.c_str());
        }
        w.refresh();
        QTRY_COMPARE_WITH_TIMEOUT(w.model()->rowCount(), static_cast<int>(watchedBefore.size() + labKeys.size()), 10000);
        for (int r = 0; r < w.model()->rowCount(); ++r) {
            const KeyRow& row = w.model()->row(r);
            if (!idem::isLabKey(row.key.toStdString()))
                continue;
            QCOMPARE(row.state, idem::RecordState::Foreign);
            QVERIFY(row.lab());
            QVERIFY(row.note.contains(u"race lab"_s));
        }
        QCOMPARE(w.model()->stats().malformed, std::size_t(0));

        // read-only: the lab may not write on the connected server
        w.readOnlyAction()->trigger();
        QVERIFY(!(lab->whereBox()->model()->index(1, 0).flags() & Qt::ItemIsEnabled));
        QCOMPARE(lab->whereBox()->currentIndex(), 0);
    }

    // Projector mode: one strategy large, a bigger font and labelled marks, the settings out of
    // the way; the minimum width does not grow
    void raceLabProjectorMode()
    {
        RaceLabWidget lab;
        lab.resize(1000, 650);
        lab.show();
        const int normalMin = lab.minimumSizeHint().width();
        lab.strategyBox()->setCurrentIndex(lab.strategyBox()->findText(u"watch"_s));
        lab.forcedBox()->setChecked(true);
        lab.teachingBox()->setChecked(true);
        QSignalSpy done(&lab, &RaceLabWidget::finished);
        lab.fireButton()->click();
        QVERIFY(done.wait(30000));
        const int pointSize = lab.font().pointSize();
        lab.projectorButton()->click();
        QVERIFY(lab.timeline()->projector());
        QVERIFY(!lab.findChild<QScrollArea*>(u"labControls"_s)->isVisible());
        QVERIFY(lab.font().pointSizeF() >= pointSize * 1.4);
        QVERIFY(lab.minimumSizeHint().width() <= std::max(normalMin, 1000));
        QVERIFY(lab.minimumSizeHint().width() <= 1024 - 20);
        // the marks carry words, and a stall is cut out of the axis instead of stretching it
        QCOMPARE(TimelineView::markLabel(idem::TraceKind::Executed, idem::Strategy::Naive, 2), u"runs it AGAIN"_s);
        std::vector<idem::TraceEvent> trace;
        for (const qint64 t : {0, 3, 6, 9, 12, 470, 473})
            trace.push_back(idem::TraceEvent{0, "ev-0", idem::TraceKind::Read, t, 0, static_cast<int>(trace.size())});
        const auto axis = TimelineView::layoutAxis(trace, 0, 700, 0);
        QCOMPARE(axis.breaks.size(), std::size_t(1));
        QVERIFY(axis.x[4] > 700 * 0.4); // the first five are not packed into the first 15 %
        while (lab.nextStepButton()->isEnabled())
            lab.nextStepButton()->click();
        QVERIFY(lab.resultsShown());
        lab.projectorButton()->click();
        QVERIFY(lab.findChild<QScrollArea*>(u"labControls"_s)->isVisible());
    }

    // At 1024x700 and with a larger font the window fits: nothing asks for more width or height
    void layoutFitsSmallScreens()
    {
        for (const double scale : {1.0, 1.4}) {
            QFont f = QApplication::font();
            const QFont original = f;
            f.setPointSizeF(f.pointSizeF() * scale);
            QApplication::setFont(f);
            {
                MainWindow w(options());
                w.show();
                const QSize min = w.minimumSizeHint().expandedTo(w.minimumSize());
                QVERIFY2(min.width() <= 1024 && min.height() <= 700,
                         qPrintable(u"x%1: %2x%3"_s.arg(scale).arg(min.width()).arg(min.height())));
                // columns wide enough for what they show at this font
                const QFontMetrics fm = w.table()->fontMetrics();
                QVERIFY(w.table()->columnWidth(KeyTableModel::State) > fm.horizontalAdvance(u"FAILED (terminal)"_s));
                QVERIFY(w.table()->columnWidth(KeyTableModel::Format) > fm.horizontalAdvance(u"express-idempotency"_s));
                // the id column stays put while the others scroll
                auto* frozen = static_cast<FrozenTableView*>(w.table())->frozenView();
                QVERIFY(frozen->isVisible());
                QCOMPARE(frozen->columnWidth(0), w.table()->columnWidth(0));
                QVERIFY(frozen->isColumnHidden(1));
                // settings made on the table after its model was set reach the frozen column too
                QCOMPARE(frozen->selectionBehavior(), QAbstractItemView::SelectRows);
                QCOMPARE(frozen->selectionMode(), QAbstractItemView::ExtendedSelection);
                QVERIFY(frozen->alternatingRowColors());
                QCOMPARE(frozen->font(), w.table()->font());
                w.tabs()->setCurrentWidget(w.raceLab());
                QVERIFY2(w.raceLab()->minimumSizeHint().width() <= 1000,
                         qPrintable(u"x%1: %2"_s.arg(scale).arg(w.raceLab()->minimumSizeHint().width())));
                const QSize labMin = w.minimumSizeHint().expandedTo(w.minimumSize());
                QVERIFY2(labMin.width() <= 1024 && labMin.height() <= 700,
                         qPrintable(u"x%1: %2x%3"_s.arg(scale).arg(labMin.width()).arg(labMin.height())));
            }
            QApplication::setFont(original);
        }
    }

    // The first size fits the screen it opens on; a size given later comes back
    void windowFitsTheScreenAndRemembersItsGeometry()
    {
        Settings::instance().setWindowGeometry({}); // a first start
        QRect given;
        {
            MainWindow w(options());
            w.show();
            const QRect avail = w.screen()->availableGeometry();
            qInfo("screen %dx%d", avail.width(), avail.height());
            QVERIFY2(avail.contains(w.frameGeometry()), qPrintable(u"%1,%2 %3x%4 on %5x%6"_s.arg(w.x()).arg(w.y())
                                                                      .arg(w.width()).arg(w.height())
                                                                      .arg(avail.width()).arg(avail.height())));
            w.setGeometry(QRect(avail.topLeft() + QPoint(10, 10), w.minimumSizeHint().expandedTo(QSize(700, 500))));
            given = w.geometry();
            w.close();
        }
        MainWindow w(options());
        w.show();
        QCOMPARE(w.size(), given.size());
    }

    // The same on a 1024x700 screen with window frames (#14: it ran off the right and bottom
    // edges): this test binary again, on an offscreen screen of that size
    void windowFitsA1024x700Screen()
    {
        if (qEnvironmentVariableIsSet("IDEM_SMALL_SCREEN_CHILD"))
            QSKIP("the child itself");
        QFile config(tmp.filePath(u"screen-1024x700.json"_s));
        QVERIFY(config.open(QIODevice::WriteOnly));
        config.write(R"({"windowFrameMargins": true, "screens": [{"name": "small", "x": 0, "y": 0, "width": 1024,
                        "height": 700, "logicalDpi": 96, "logicalBaseDpi": 96, "dpr": 1}]})");
        config.close();
        QProcess child;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(u"QT_QPA_PLATFORM"_s, u"offscreen:configfile="_s + config.fileName());
        env.insert(u"IDEM_SMALL_SCREEN_CHILD"_s, u"1"_s);
        child.setProcessEnvironment(env);
        child.setProcessChannelMode(QProcess::MergedChannels);
        child.start(QCoreApplication::applicationFilePath(),
                    {u"windowFitsTheScreenAndRemembersItsGeometry"_s, u"layoutFitsSmallScreens"_s});
        QVERIFY(child.waitForFinished(120000));
        const QByteArray out = child.readAll();
        QVERIFY2(child.exitStatus() == QProcess::NormalExit && child.exitCode() == 0, out.constData());
        QVERIFY2(out.contains("screen 1024x700") && out.contains(" 0 failed") &&
                     out.contains("PASS   : TestConsole::windowFitsTheScreenAndRemembersItsGeometry()") &&
                     out.contains("PASS   : TestConsole::layoutFitsSmallScreens()"),
                 out.constData());
    }

    // Help ▸ Keyboard shortcuts lists every shortcut of the menus, and Esc
    void helpListsTheShortcuts()
    {
        MainWindow w(options());
        w.show();
        QStringList listed;
        QTimer::singleShot(0, [&] {
            auto* dialog = qobject_cast<QDialog*>(QApplication::activeModalWidget());
            if (!dialog)
                return;
            auto* table = dialog->findChild<QTableWidget*>(u"shortcutTable"_s);
            for (int r = 0; r < table->rowCount(); ++r)
                listed << table->item(r, 0)->text() + u" = "_s + table->item(r, 1)->text();
            dialog->reject();
        });
        w.showShortcuts();
        const QString all = listed.join(u'\n');
        for (const char* expected : {"Ctrl+F = Filter", "Esc = Clear the filter", "Ctrl+O = Connect…", "F1 = Keyboard shortcuts…",
                                     "Ctrl+Shift+F = Force-fail selected…", "Del = Purge selected…"})
            QVERIFY2(all.contains(QString::fromUtf8(expected)), qPrintable(all));
    }

    // --help and --version answer without a display
    void helpAndVersionWithoutDisplay()
    {
        const QString console = qEnvironmentVariable("IDEM_CONSOLE");
        QVERIFY2(QFileInfo::exists(console), "IDEM_CONSOLE names the idem-console under test");
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        for (const char* v : {"DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"})
            env.remove(QString::fromLatin1(v));
        const auto run = [&](const QStringList& args, QByteArray* out) {
            QProcess p;
            p.setProcessEnvironment(env);
            p.start(console, args);
            if (!p.waitForFinished(20000))
                return -1;
            *out = p.readAllStandardOutput() + p.readAllStandardError();
            return p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -2;
        };
        QByteArray out;
        QCOMPARE(run({u"--help"_s}, &out), 0);
        QVERIFY2(out.contains("--read-only") && out.contains("--palette"), out.constData());
        QCOMPARE(run({u"--version"_s}, &out), 0);
        QVERIFY2(out.contains("idem-console 0."), out.constData());
        QCOMPARE(run({u"--bogus"_s}, &out), 64);
        QVERIFY(out.contains("Unknown option 'bogus'"));
        QCOMPARE(run({}, &out), 1); // no display: a sentence, not an abort in the platform plugin
        QVERIFY2(out.contains("no display"), out.constData());
        // idemctl's global TLS and Sentinel flags, checked as it checks them
        QCOMPARE(run({u"--help"_s}, &out), 0);
        for (const char* flag : {"--tls-ca", "--tls-cert", "--tls-key", "--tls-server-name", "--tls-insecure",
                                 "--sentinel-password", "rediss://", "redis-sentinel://"})
            QVERIFY2(out.contains(flag), flag);
        QCOMPARE(run({u"--url"_s, u"redis://127.0.0.1:6379/0"_s, u"--tls-ca"_s, u"ca.pem"_s}, &out), 64);
        QVERIFY2(out.contains("--tls-ca") && out.contains("not a TLS URL"), out.constData());
        QCOMPARE(run({u"--url"_s, u"redis://127.0.0.1:6379/0"_s, u"--sentinel-password"_s, u"x"_s}, &out), 64);
        QVERIFY2(out.contains("redis-sentinel://"), out.constData());
        QCOMPARE(run({u"--tls-insecure"_s}, &out), 64); // the embedded server speaks plaintext
        QVERIFY2(out.contains("need --url"), out.constData());
        QCOMPARE(run({u"--url"_s, u"rediss://127.0.0.1:6379/0"_s, u"--tls-key"_s, u""_s}, &out), 64);
        QVERIFY2(out.contains("must not be empty"), out.constData());
        // a right one goes on to need a display, with the warning printed first
        QCOMPARE(run({u"--url"_s, u"rediss://127.0.0.1:6379/0"_s, u"--tls-insecure"_s}, &out), 1);
        QVERIFY2(out.contains("warning: --tls-insecure"), out.constData());
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
        QVERIFY2(ms < 1500, qPrintable(u"closing took %1 ms"_s.arg(ms)));
    }

    // Without keyspace notifications the console rescans on an interval
    void fallbackRescan()
    {
        idem::LocalServer server; // notify-keyspace-events off
        idem::ConnectionPool p(server.connectionOptions(), 1);
        idem::StoreOptions so;
        so.keyNamespace = "fb";
        idem::Store s(p, so);
        s.acquire("first", "");
        MainWindow::Options o = optionsFor(server, u"fb"_s);
        o.connection.rescanIntervalMs = 300;
        MainWindow w(o);
        QSignalSpy scans(&w, &MainWindow::scanCompleted);
        w.show();
        QVERIFY(scans.wait(10000));
        QCOMPARE(w.model()->rowCount(), 1);
        s.acquire("second", "");
        QTRY_COMPARE_WITH_TIMEOUT(w.model()->rowCount(), 2, 5000); // found by the next rescan
    }
};

QTEST_MAIN(TestConsole)
#include "tst_console.moc"
