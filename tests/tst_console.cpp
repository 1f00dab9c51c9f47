// The console's main window, offscreen, against real redis-servers: the inspector following
// actions and the filter, records other programs wrote (read as theirs, and what a purge takes of
// them), FAILED rows, live updates, exports and the chart, the rescan without keyspace
// notifications. tst_consoleactions.cpp has selection, force-fail, purge and their confirmation.
#include "consoletest.h"

class TestConsole : public ConsoleTest {
    Q_OBJECT

private slots:
    void initTestCase() { setUpCase(); }
    void init() { setUp(); }

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

    // Powertools for Java's hashes, whose field names carry their key: a row keeps only the guard's
    // digest of what the scan read, and the purge compares those same fields. A record renewed
    // after it was read stays.
    void powertoolsJavaRecordsPurged()
    {
        idem::Connection c(idemtest::sharedRedis());
        const qint64 now = QDateTime::currentMSecsSinceEpoch();
        const std::string expires = std::to_string(now / 1000 + 3600);
        const auto write = [&](const char* id, std::string_view status, qint64 inProgressUntil) {
            // as RedisPersistenceStore writes it: HSET of the key-named fields, then EXPIREAT
            const std::string key = "{" + ns + ":id:orders.Handler#" + id + "}";
            const std::string until = std::to_string(inProgressUntil);
            c.checked({"HSET", key, key + ":status", status, key + ":expiration", expires, key + ":validation",
                       "9e107d9d"});
            if (status == "COMPLETED")
                c.checked({"HSET", key, key + ":data", "{\"orderId\":7}"});
            else
                c.checked({"HSET", key, key + ":in-progress-expiration", until});
            c.checked({"EXPIREAT", key, expires});
            return key;
        };
        const std::string done = write("done", "COMPLETED", 0);
        const std::string stale = write("stale", "INPROGRESS", now - 60'000);
        const std::string renewed = write("renewed", "INPROGRESS", now - 60'000);
        MainWindow::Options o = options();
        o.connection.pattern = QString::fromStdString("{" + ns + ":id:*");
        MainWindow w(o);
        QSignalSpy scans(&w, &MainWindow::scanCompleted);
        QSignalSpy actions(&w, &MainWindow::actionCompleted);
        w.show();
        QVERIFY(scans.wait(10000));
        QCOMPARE(w.model()->rowCount(), 3);
        for (const std::string& key : {done, stale, renewed})
            QCOMPARE(w.model()->row(w.model()->rowOfKey(QString::fromStdString(key))).format,
                     idem::RecordFormat::PowertoolsJava);
        QCOMPARE(w.model()->row(w.model()->rowOfKey(QString::fromStdString(done))).state, idem::RecordState::Completed);

        // its owner renews the lock after the console read it: what the operator saw is gone
        const KeyRow seen = w.model()->row(w.model()->rowOfKey(QString::fromStdString(renewed)));
        c.checked({"HSET", renewed, renewed + ":in-progress-expiration", std::to_string(now + 600'000)});
        idem::MonitorOptions mo;
        mo.keyNamespace = ns;
        idem::Monitor monitor(c, mo);
        QVERIFY(!monitor.unlinkIfUnchanged(seen.toGuardRecord(), idem::Actor{"tester", "renewed meanwhile"}));
        QCOMPARE(idem::reply::integer(c.checked({"EXISTS", renewed}).get()), std::int64_t(1));

        // the completed record and the stale lock, purged through the confirmation
        w.table()->clearSelection();
        for (const std::string& key : {done, stale}) {
            const int row = w.model()->rowOfKey(QString::fromStdString(key));
            const QModelIndex i = w.proxy()->mapFromSource(w.model()->index(row, 0));
            w.table()->selectionModel()->select(i, QItemSelectionModel::Select | QItemSelectionModel::Rows);
        }
        QString summary;
        answerConfirmation(&summary, u"its lambda was redeployed"_s);
        w.purgeSelected();
        QVERIFY2(summary.contains(u"2 keys"_s), qPrintable(summary));
        QVERIFY(actions.wait(10000));
        QCOMPARE(actions.last().at(0).value<ActionResult>().changed, 2);
        QVERIFY2(w.actionNote().contains(u"purge: 2 of 2 key(s) changed"_s), qPrintable(w.actionNote()));
        QCOMPARE(idem::reply::integer(c.checked({"EXISTS", done, stale}).get()), std::int64_t(0));
        QCOMPARE(idem::reply::integer(c.checked({"EXISTS", renewed}).get()), std::int64_t(1));
    }

    // Another program's hash with a status word of its own (an RQ job that failed) is no FAILED
    // record: unknown, with its word, in the table and the counters alike, and "Purge all filtered"
    // leaves it whichever filter shows it
    void anotherProgramsFailedJobIsNotFailed()
    {
        const std::string job = ns + "-rq:job:5c1e";
        idem::Connection c(idemtest::sharedRedis());
        c.checked({"HSET", job, "status", "failed", "origin", "default", "description", "billing.tasks.charge('o-5')",
                   "started_at", "2020-01-01T00:00:01.002003Z", "ended_at", "2020-01-01T00:00:03.004005Z",
                   "exc_info", "Traceback (most recent call last): ...", "worker_name", "w-1"});
        MainWindow::Options o = options();
        o.connection.pattern = QString::fromStdString(ns + "*");
        MainWindow w(o);
        QSignalSpy scans(&w, &MainWindow::scanCompleted);
        w.show();
        QVERIFY(scans.wait(10000));
        const int row = w.model()->rowOfKey(QString::fromStdString(job));
        QVERIFY(row >= 0);
        QCOMPARE(w.model()->row(row).state, idem::RecordState::Unknown);
        QCOMPARE(w.model()->data(w.model()->index(row, KeyTableModel::Note)).toString(), u"status failed"_s);
        QCOMPARE(w.model()->stats().failed, std::size_t(0));
        QCOMPARE(w.model()->stats().unknown, std::size_t(1));
        selectStateFilter(w, idem::StateFilter::Failed);
        QCOMPARE(w.proxy()->rowCount(), 0);
        selectStateFilter(w, idem::StateFilter::Unknown);
        QCOMPARE(w.proxy()->rowCount(), 1);
        QString summary;
        cancelConfirmation(&summary); // (none opens: nothing it may take)
        w.purgeFiltered();
        QVERIFY2(summary.isEmpty(), qPrintable(summary));
        QVERIFY2(w.actionNote().contains(u"Nothing to purge"_s), qPrintable(w.actionNote()));
        // picked by hand, the confirmation says idem cannot tell whether it is in use
        selectKey(w, QString::fromStdString(job));
        cancelConfirmation(&summary);
        w.purgeSelected();
        QVERIFY2(summary.contains(u"cannot tell whether"_s), qPrintable(summary));
        QCOMPARE(idem::reply::integer(c.checked({"EXISTS", job}).get()), std::int64_t(1));
    }

    // The inspector is read again after each action, and cleared when the filter hides its row
    void inspectorFollowsActionsAndTheFilter()
    {
        idem::Connection(idemtest::sharedRedis()).checked({"SET", ns + ":{plain-lock}", "PROCESSING", "EX", "600"});
        MainWindow w(options());
        QSignalSpy scans(&w, &MainWindow::scanCompleted);
        QSignalSpy actions(&w, &MainWindow::actionCompleted);
        QSignalSpy inspected(&w, &MainWindow::inspected);
        w.show();
        QVERIFY(scans.wait(10000));
        // a status word alone has no fields: no header over nothing
        selectKey(w, recordKey("plain-lock"));
        QTRY_VERIFY_WITH_TIMEOUT(w.inspector()->toPlainText().contains(u"PROCESSING"_s), 5000);
        QVERIFY2(!w.inspector()->toPlainText().contains(u"all fields"_s), qPrintable(w.inspector()->toPlainText()));
        selectKey(w, recordKey("stuck-1"));
        QTRY_VERIFY_WITH_TIMEOUT(w.inspector()->toPlainText().contains(u"stale"_s), 5000);
        QVERIFY(w.inspector()->toPlainText().contains(u"all fields"_s));
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

    // The chart's legend says what the counters say, at every moment: samples are drawn every
    // other second, the counters change every second and as data arrives
    void chartLegendSaysWhatTheCountersSay()
    {
        MainWindow w(options());
        QSignalSpy scans(&w, &MainWindow::scanCompleted);
        w.show();
        QVERIFY(scans.wait(10000));
        QTRY_VERIFY_WITH_TIMEOUT(w.chart()->sampleCount() >= 1, 5000);
        const auto counter = [&w](const QString& name) {
            return w.findChild<QToolButton*>(u"counter-"_s + name)->text().section(u'\n', 1);
        };
        const auto legend = [&w](CountsChart::Series s) { return w.chart()->legend().at(s).section(u' ', -1); };
        QCOMPARE(legend(CountsChart::Completed), u"2"_s);
        QCOMPARE(legend(CountsChart::Stale), u"3"_s);
        // a completed record every 300 ms for 5 s, seen through keyspace notifications
        QElapsedTimer t;
        t.start();
        int n = 0;
        while (t.elapsed() < 5000) {
            if (t.elapsed() >= n * 300) {
                auto a = store->acquire("legend-" + std::to_string(n++), "");
                store->complete(a.ticket, "done");
            }
            QTest::qWait(20);
            QCOMPARE(legend(CountsChart::Completed), counter(u"completed"_s));
            QCOMPARE(legend(CountsChart::Stale), counter(u"stale"_s));
        }
        QTRY_COMPARE_WITH_TIMEOUT(counter(u"completed"_s), QString::number(2 + n), 3000);
        QCOMPARE(legend(CountsChart::Completed), counter(u"completed"_s));
    }

    void chartTicksAreRound()
    {
        QCOMPARE(CountsChart::niceTicks(11, 4), (QVector<double>{0, 5, 10, 15}));
        QCOMPARE(CountsChart::niceTicks(287, 5), (QVector<double>{0, 100, 200, 300}));
        QCOMPARE(CountsChart::niceTicks(8, 5), (QVector<double>{0, 2, 4, 6, 8}));
        QCOMPARE(CountsChart::niceTicks(0, 5), (QVector<double>{0, 1}));
        QCOMPARE(CountsChart::niceTicks(1'000'000, 3), (QVector<double>{0, 500'000, 1'000'000}));
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
        // the status bar says why first (where it is cut, the reason is still read), then what it does
        const QString live = w.findChild<ElidedLabel*>(u"liveUpdates"_s)->text();
        QVERIFY2(live.startsWith(u"keyspace notifications are off"_s) && live.endsWith(u"rescanning every 0.3 s"_s),
                 qPrintable(live));
        s.acquire("second", "");
        QTRY_COMPARE_WITH_TIMEOUT(w.model()->rowCount(), 2, 5000); // found by the next rescan
    }
};

QTEST_MAIN(TestConsole)
#include "tst_console.moc"
