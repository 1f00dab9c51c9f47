// The console's race lab tab and window, offscreen: the lab on its own server and on the connected
// one, projector mode, layouts at small sizes, geometry, help and --help/--version without a
// display.
#include "consoletest.h"

#include <QSplitter>
#include <QSplitterHandle>

class TestConsoleWindow : public ConsoleTest {
    Q_OBJECT

private slots:
    void initTestCase() { setUpCase(); }
    void init() { setUp(); }

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

    // The table ends at a column's edge, never with one half behind its scrollbar: at 1280 wide the
    // Owner column is whole beside the inspector (it once sat behind the scrollbar), at other widths
    // the same rule; once the operator moves the divider, it stays where they put it
    void tableEndsAtAColumnEdge()
    {
        MainWindow w(options());
        QSignalSpy scans(&w, &MainWindow::scanCompleted);
        w.resize(1280, 800);
        w.show();
        QVERIFY(scans.wait(10000));
        QHeaderView* header = w.table()->horizontalHeader();
        const auto rightOf = [header](int c) { return header->sectionViewportPosition(c) + header->sectionSize(c); };
        const auto endsAtAnEdge = [&] {
            for (int c = 0; c < header->count(); ++c)
                if (!header->isSectionHidden(c) && rightOf(c) == w.table()->viewport()->width())
                    return true;
            return false;
        };
        QTRY_VERIFY2_WITH_TIMEOUT(endsAtAnEdge(), qPrintable(QString::number(w.table()->viewport()->width())), 3000);
        QVERIFY2(rightOf(KeyTableModel::Owner) <= w.table()->viewport()->width(),
                 qPrintable(u"%1 > %2"_s.arg(rightOf(KeyTableModel::Owner)).arg(w.table()->viewport()->width())));
        QVERIFY(w.inspectorPanel()->width() >= w.fontMetrics().averageCharWidth() * 48);
        for (const QSize size : {QSize(1024, 700), QSize(1600, 900)}) {
            w.resize(size);
            QTRY_VERIFY2_WITH_TIMEOUT(endsAtAnEdge(), qPrintable(u"%1 wide"_s.arg(size.width())), 3000);
        }

        // moved by hand: kept, through a resize of the window
        auto* split = w.findChild<QSplitter*>(u"tableAndInspector"_s);
        QSplitterHandle* handle = split->handle(1);
        const QPoint middle = handle->rect().center();
        QTest::mousePress(handle, Qt::LeftButton, {}, middle);
        QTest::mouseMove(handle, middle + QPoint(37, 0));
        QTest::mouseRelease(handle, Qt::LeftButton, {}, middle + QPoint(37, 0));
        QTest::qWait(100);
        QVERIFY(!endsAtAnEdge()); // (37 px off an edge)
        w.resize(1280, 800);
        QTest::qWait(200); // a fit would have come
        QVERIFY(!endsAtAnEdge());
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
                     out.contains("PASS   : TestConsoleWindow::windowFitsTheScreenAndRemembersItsGeometry()") &&
                     out.contains("PASS   : TestConsoleWindow::layoutFitsSmallScreens()"),
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
};

QTEST_MAIN(TestConsoleWindow)
#include "tst_consolewindow.moc"
