// The console's actions on idem's records, offscreen, against the fixture's redis-server: filters,
// selection, force-fail and purge through the confirmation (what it names, what it asks for,
// cancel), read-only, and a worker with no connection. tst_console.cpp has the views.
#include "consoletest.h"

class TestConsoleActions : public ConsoleTest {
    Q_OBJECT

private slots:
    void initTestCase() { setUpCase(); }
    void init() { setUp(); }

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
        QVERIFY(w.actionNote().contains(u"force-fail: 3 of 3"_s));
        auto* note = w.findChild<ElidedLabel*>(u"actionNote"_s); // seen: a passing message had no room
        QVERIFY(note->isVisible() && note->width() > 100);
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

        // force-fail of another library's lock: no failure is kept for it, so "Terminal" is not offered
        request.kind = ConfirmDialog::Kind::ForceFail;
        request.byState = {{u"STARTED"_s, 1}};
        request.byFormat = {{u"powertools"_s, 1}};
        ConfirmDialog foreign(request);
        QVERIFY(!foreign.findChild<QCheckBox*>(u"terminal"_s)->isEnabled());
        QVERIFY2(foreign.summary().contains(u"another library's record, released"_s), qPrintable(foreign.summary()));
        QVERIFY(!foreign.summary().contains(u"becomes FAILED"_s));
        request.byFormat = {{u"idem"_s, 1}};
        ConfirmDialog own(request);
        QVERIFY(own.findChild<QCheckBox*>(u"terminal"_s)->isEnabled());
        QVERIFY(!own.summary().contains(u"Another library"_s));
    }

    // "Purge selected" and "Force-fail selected" are off while nothing is selected, and say why;
    // on again with a selection
    void selectedActionsWantASelection()
    {
        MainWindow w(options());
        QSignalSpy scans(&w, &MainWindow::scanCompleted);
        w.show();
        QVERIFY(scans.wait(10000));
        QVERIFY(w.purgeAllAction()->isEnabled()); // connected and writable
        QVERIFY(w.forceFailAllAction()->isEnabled());
        const auto enabled = [&w](bool on) {
            for (QAction* a : {w.purgeAction(), w.forceFailAction()})
                if (a->isEnabled() != on)
                    return false;
            return true;
        };
        QVERIFY(enabled(false));
        QVERIFY2(w.purgeAction()->toolTip().contains(u"Select"_s), qPrintable(w.purgeAction()->toolTip()));
        QVERIFY2(w.forceFailAction()->toolTip().contains(u"Select the keys to force-fail"_s),
                 qPrintable(w.forceFailAction()->toolTip()));
        selectKey(w, recordKey("running"));
        QVERIFY(enabled(true));
        w.table()->clearSelection();
        QVERIFY(enabled(false));
        // a filter that hides the selected row leaves nothing selected
        selectKey(w, recordKey("running"));
        QVERIFY(enabled(true));
        QTest::keyClicks(w.filterEdit(), u"stuck"_s);
        QCOMPARE(w.proxy()->rowCount(), 3);
        QVERIFY(enabled(false));
        // its shortcut does nothing either: no dialog, no note
        const QString note = w.actionNote();
        QTest::keyClick(w.table(), Qt::Key_F, Qt::ControlModifier | Qt::ShiftModifier);
        QVERIFY(!QApplication::activeModalWidget());
        QCOMPARE(w.actionNote(), note);
    }

    // "Force-fail selected" is on only while the selection holds a row it takes (STARTED or FAILED),
    // and says why when not; purge takes them all. Added to such a selection, the other rows are
    // left out of the confirmation.
    void forceFailSelectedWantsARowItTakes()
    {
        MainWindow w(options());
        QSignalSpy scans(&w, &MainWindow::scanCompleted);
        w.show();
        QVERIFY(scans.wait(10000));
        const auto select = [&w](std::initializer_list<QString> keys) {
            w.table()->clearSelection();
            for (const QString& key : keys) {
                const QModelIndex i = w.proxy()->mapFromSource(w.model()->index(w.model()->rowOfKey(key), 0));
                w.table()->selectionModel()->select(i, QItemSelectionModel::Select | QItemSelectionModel::Rows);
            }
        };
        const QString notARecord = QString::fromStdString(ns) + u":{not-a-record}"_s;
        select({recordKey("done-1"), recordKey("done-2"), notARecord});
        QVERIFY(w.purgeAction()->isEnabled());
        QVERIFY(!w.forceFailAction()->isEnabled());
        QVERIFY2(w.forceFailAction()->toolTip().contains(u"only STARTED and FAILED"_s),
                 qPrintable(w.forceFailAction()->toolTip()));
        // its shortcut does nothing: no dialog, no note
        const QString note = w.actionNote();
        QTest::keyClick(w.table(), Qt::Key_F, Qt::ControlModifier | Qt::ShiftModifier);
        QVERIFY(!QApplication::activeModalWidget());
        QCOMPARE(w.actionNote(), note);

        // a FAILED record, then a stale lock: each is taken, and only it
        auto a = store->acquire("crashed", "");
        store->fail(a.ticket, idem::FailPolicy::Retryable, "exit 3");
        QTRY_VERIFY_WITH_TIMEOUT(stateOf(w, recordKey("crashed")) == idem::RecordState::Failed, 5000);
        select({recordKey("done-1"), recordKey("crashed")});
        QVERIFY(w.forceFailAction()->isEnabled());
        select({recordKey("done-1"), notARecord, recordKey("stuck-2")});
        QVERIFY(w.forceFailAction()->isEnabled());
        QString summary;
        cancelConfirmation(&summary);
        w.forceFailAction()->trigger();
        QVERIFY2(summary.contains(u"Force-fail 1 key on"_s) && summary.contains(u"stuck-2"_s) &&
                     !summary.contains(u"done-1"_s),
                 qPrintable(summary));
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
            w.table()->selectAll(); // (with nothing selected, purge and force-fail are off whatever else holds)
            for (QAction* a : {w.purgeAction(), w.forceFailAction(), w.purgeAllAction(), w.forceFailAllAction()})
                QVERIFY(!a->isEnabled());
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
            w.table()->selectAll();
            QVERIFY(w.purgeAction()->isEnabled());
            QVERIFY(w.forceFailAction()->isEnabled());
            w.readOnlyAction()->trigger(); // switched on by hand
            QVERIFY(w.isReadOnly());
            QVERIFY(!w.purgeAction()->isEnabled());
            QVERIFY(!w.forceFailAction()->isEnabled());
        }
        MainWindow w(options());
        QSignalSpy scans(&w, &MainWindow::scanCompleted);
        w.show();
        QVERIFY(scans.wait(10000));
        QVERIFY(!w.isReadOnly()); // not kept from the last session
        w.table()->selectAll();
        QVERIFY(w.purgeAction()->isEnabled());
        QVERIFY(w.forceFailAction()->isEnabled());
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
};

QTEST_MAIN(TestConsoleActions)
#include "tst_consoleactions.moc"
