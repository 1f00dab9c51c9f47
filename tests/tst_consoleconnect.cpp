// The console's connections, offscreen, against real servers the tests start, kill, pause or lock
// down: clusters (every shard, replicas), a user who may not write, what the window shows when the
// data is not current, Sentinel failover, a hung server at close. tst_consolecredentials.cpp has
// Connect: what it remembers, passwords, TLS, and refusals retrying cannot fix.
#include "consoletest.h"
#include "historyrecorder.h"

#include <QDir>

class TestConsoleConnect : public ConsoleTest {
    Q_OBJECT

private slots:
    void initTestCase() { setUpCase(); }
    void init() { setUp(); }
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
        w.table()->selectAll(); // (with nothing selected, purge is off whatever else holds)
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
        QVERIFY(w.table()->selectionModel()->hasSelection()); // (off with nothing selected, whatever else holds)
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
        QVERIFY(w.actionNote().contains(u"Not connected"_s));
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
        const idemtest::ClosedPort closed;
        MainWindow::Options o = options();
        o.connection.url = u"redis://127.0.0.1:%1/0"_s.arg(closed.port());
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
        QVERIFY(!w.purgeAllAction()->isEnabled()); // (no row to select: the "selected" actions are off anyway)
        QTest::qWait(2100);
        QCOMPARE(w.chart()->sampleCount(), 0); // no line at zero
        QVERIFY(w.findChild<QWidget*>(u"bannerConnect"_s)->isVisible());
    }

    // A URL the worker refuses: the window says so, and no history directory is made for it
    void unusableUrlGetsNoHistory()
    {
        const QString unusable = u"foo://%1"_s.arg(QString::fromStdString(ns));
        const QString dir = HistoryRecorder::directoryFor(shownUrl(unusable), QString::fromStdString(ns));
        QVERIFY(!QDir(dir).exists());
        MainWindow::Options o = options();
        o.connection.url = unusable;
        MainWindow w(o);
        QSignalSpy links(&w, &MainWindow::linkStateChanged);
        w.show();
        QTRY_VERIFY_WITH_TIMEOUT(!links.isEmpty(), 5000);
        QTRY_VERIFY_WITH_TIMEOUT(w.bannerText().contains(u"cannot be used"_s), 5000);
        QTest::qWait(300);
        QVERIFY2(!QDir(dir).exists(), qPrintable(dir));
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
        QVERIFY(!w.purgeAllAction()->isEnabled()); // (no row to select: the "selected" actions are off anyway)
        const int third = set.waitForNewPrimary(promoted);
        QTRY_VERIFY2_WITH_TIMEOUT(linkText(w).contains(primary(third)), qPrintable(linkText(w)), 20000);
        QTRY_COMPARE_WITH_TIMEOUT(w.freshness(), MainWindow::Freshness::Live, 10000);
        for (const auto& change : links) // a failover is never taken for a refusal
            QVERIFY(change.at(0).value<ConsoleWorker::Link>() != ConsoleWorker::Link::Refused);
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
};

QTEST_MAIN(TestConsoleConnect)
#include "tst_consoleconnect.moc"
