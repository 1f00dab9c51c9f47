// The console's Replay tab, offscreen, against redis-servers of its own: a log opened and played on
// the private server with live counts (the connected server untouched), the same counts as
// `idemctl replay --json`, a capture from a stream of the connected server (left as it was), stop,
// and a replay into the connected server only by choice, after a confirmation, never read-only.
#include "mainwindow.h"
#include "replaylanes.h"
#include "replaywidget.h"
#include "timelineview.h"
#include "streampickerdialog.h"
#include "testsupport.h"

#include "idem/redis/localserver.h"
#include "idem/redis/reply.h"

#include <QApplication>
#include <QComboBox>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

#include <set>

using namespace Qt::StringLiterals;

namespace {
std::set<std::string> keysUnder(idem::Connection& c, const std::string& pattern)
{
    std::set<std::string> out;
    std::string cursor = "0";
    do {
        auto r = c.checked({"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"});
        cursor = idem::reply::str(idem::reply::element(r.get(), 0));
        const auto* keys = idem::reply::element(r.get(), 1);
        for (std::size_t i = 0; i < idem::reply::arraySize(keys); ++i)
            out.insert(idem::reply::str(idem::reply::element(keys, i)));
    } while (cursor != "0");
    return out;
}

QString writeLog(const QString& path, int events, int stepMs)
{
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly))
        return {};
    for (int i = 0; i < events; ++i)
        f.write(u"{\"id\":\"pay-%1\",\"payload\":{\"amount\":%2},\"at_ms\":%3}\n"_s.arg(i).arg(i * 7).arg(1000 + i * stepMs)
                    .toUtf8());
    return path;
}

// Answers the next message box with `button`, keeping its text.
void answer(QString* text, QMessageBox::StandardButton button)
{
    QTimer::singleShot(0, [=] {
        if (auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget())) {
            *text = box->text();
            box->button(button)->click();
        }
    });
}
} // namespace

class TestReplayConsole : public QObject {
    Q_OBJECT
    QTemporaryDir tmp;
    std::unique_ptr<idem::LocalServer> server; // "the connected server": the console watches it
    std::string streamBefore;
    std::set<std::string> keysBefore;

    MainWindow::Options options(bool readOnly = false) const
    {
        MainWindow::Options o;
        o.connection.url = QString::fromStdString(server->url());
        o.connection.keyNamespace = u"watched"_s;
        o.readOnly = readOnly;
        o.auditPath = tmp.filePath(u"audit.jsonl"_s);
        return o;
    }
    // The connected server holds what it held before (the replays ran elsewhere).
    void connectedUntouched()
    {
        idem::Connection c(server->connectionOptions());
        QCOMPARE(keysUnder(c, "*"), keysBefore);
        QCOMPARE(idem::reply::str(c.checked({"DUMP", "orders"}).get()), streamBefore);
    }
    ReplayWidget* openTab(MainWindow& w)
    {
        QSignalSpy scans(&w, &MainWindow::scanCompleted);
        w.show();
        if (!scans.wait(10000))
            return nullptr;
        w.tabs()->setCurrentWidget(w.replay());
        return w.replay();
    }

private slots:
    void initTestCase()
    {
        QStandardPaths::setTestModeEnabled(true);
        server = std::make_unique<idem::LocalServer>();
        idem::Connection c(server->connectionOptions());
        for (int i = 0; i < 25; ++i)
            c.checked({"XADD", "orders", "*", "id", "o-" + std::to_string(i), "payload", "{\"n\":" + std::to_string(i) + "}"});
        c.checked({"XADD", "orders", "*", "payload", "no id"});
        c.checked({"HSET", "watched:{order-1}", "state", "COMPLETED"});
        streamBefore = idem::reply::str(c.checked({"DUMP", "orders"}).get());
        keysBefore = keysUnder(c, "*");
    }

    void playsALogOnThePrivateServer()
    {
        MainWindow w(options());
        ReplayWidget* tab = openTab(w);
        QVERIFY(tab);
        QCOMPARE(w.tabs()->tabText(w.tabs()->indexOf(tab)), u"Replay"_s);
        QVERIFY(!tab->playButton()->isEnabled()); // nothing to play yet
        QVERIFY(!tab->openLog(tmp.filePath(u"missing.jsonl"_s)));
        const QString log = writeLog(tmp.filePath(u"events.jsonl"_s), 30, 10);
        QVERIFY(tab->openLog(log));
        QCOMPARE(tab->findChild<QTableWidget*>(u"logPreview"_s)->rowCount(), 30);
        QCOMPARE(tab->whereBox()->currentIndex(), 0); // the private server by default
        tab->speedBox()->setCurrentIndex(0);          // as fast as possible
        tab->duplicatesBox()->setValue(3);
        tab->crashBox()->setValue(0.2);
        tab->reorderBox()->setValue(20);
        QSignalSpy done(tab, &ReplayWidget::finished);
        QTest::mouseClick(tab->playButton(), Qt::LeftButton);
        QVERIFY(tab->running());
        QVERIFY(!tab->playButton()->isEnabled());
        QCOMPARE(tab->countLabel(u"lost"_s)->text(), u"—"_s); // not known until the end
        QVERIFY(done.wait(60000));
        QVERIFY(tab->lastWhere().contains(u"private"_s));
        QCOMPARE(tab->countLabel(u"executed"_s)->text(), u"30"_s);
        QCOMPARE(tab->countLabel(u"twice"_s)->text(), u"0"_s);
        QCOMPARE(tab->countLabel(u"lost"_s)->text(), u"0"_s);
        QVERIFY(tab->countLabel(u"deliveries"_s)->text().toInt() >= 90);
        QVERIFY(tab->countLabel(u"crashes"_s)->text().toInt() > 0);
        QCOMPARE(tab->progressBar()->value(), 1000);
        QVERIFY2(tab->statusLabel()->text().contains(u"exactly once"_s), qPrintable(tab->statusLabel()->text()));
        connectedUntouched();

        // the same counts as idemctl replay --json for the same seed
        auto r = idemtest::runIdemctl({u"replay"_s, log, u"--speed"_s, u"0"_s, u"--duplicates"_s, u"3"_s,
                                       u"--crash-rate"_s, u"0.2"_s, u"--reorder"_s, u"20ms"_s, u"--seed"_s, u"1"_s, u"--json"_s},
                                      60000);
        QCOMPARE(r.exitCode, 0);
        const auto cli = QJsonDocument::fromJson(r.out).object();
        const QString json = tmp.filePath(u"result.json"_s), csv = tmp.filePath(u"result.csv"_s);
        QVERIFY(tab->exportJson(json));
        QVERIFY(tab->exportCsv(csv));
        QFile jf(json);
        QVERIFY(jf.open(QIODevice::ReadOnly));
        const auto mine = QJsonDocument::fromJson(jf.readAll()).object();
        for (const auto* key : {"events", "executions", "double_executions", "lost", "via_stream"})
            QCOMPARE(mine.value(QLatin1StringView(key)), cli.value(QLatin1StringView(key)));
        QCOMPARE(mine.value(u"crash_rate"_s).toDouble(), 0.2);
        QCOMPARE(mine.value(u"reorder_ms"_s).toInt(), 20);
        // the swimlanes and the ids it wrote, and the lot as a picture
        QVERIFY(tab->lanes()->timeline()->eventCount() > 0);
        QCOMPARE(tab->lanes()->keyTable()->rowCount(), 30);
        const QString png = tmp.filePath(u"result.png"_s);
        QVERIFY(tab->exportPng(png));
        QImage picture(png);
        QVERIFY(!picture.isNull() && picture.width() > 100 && picture.height() > 100);
        QFile cf(csv);
        QVERIFY(cf.open(QIODevice::ReadOnly));
        const auto lines = cf.readAll().split('\n');
        QVERIFY(lines[0].startsWith("events,deliveries,executions,double_executions,lost"));
        QVERIFY(lines[1].startsWith("30,"));

        // through a stream group, still on the private server
        tab->deliveryBox()->setCurrentIndex(1);
        tab->duplicatesBox()->setValue(2);
        QSignalSpy failed(tab, &ReplayWidget::failed);
        QTest::mouseClick(tab->playButton(), Qt::LeftButton);
        QTRY_VERIFY2_WITH_TIMEOUT(done.count() == 2 || failed.count() > 0, qPrintable(tab->statusLabel()->text()), 70000);
        QVERIFY2(failed.isEmpty(), qPrintable(tab->statusLabel()->text()));
        QCOMPARE(tab->result()->executions, 30);
        QCOMPARE(tab->result()->doubleExecutions, 0);
        QCOMPARE(tab->result()->lost, 0);
        connectedUntouched();
    }

    void capturesAStreamOfTheConnectedServer()
    {
        MainWindow w(options(true)); // read-only: capturing reads, it is allowed
        ReplayWidget* tab = openTab(w);
        QVERIFY(tab);
        QVERIFY(tab->captureButton()->isEnabled());
        QTest::mouseClick(tab->captureButton(), Qt::LeftButton);
        auto* picker = tab->findChild<StreamPickerDialog*>();
        QVERIFY(picker);
        QTRY_COMPARE_WITH_TIMEOUT(picker->table()->rowCount(), 1, 10000);
        QCOMPARE(picker->table()->item(0, 0)->text(), u"orders"_s);
        QCOMPARE(picker->table()->item(0, 1)->text(), u"26"_s);
        QSignalSpy captured(tab, &ReplayWidget::captured);
        picker->accept();
        QVERIFY(captured.wait(10000));
        QCOMPARE(tab->findChild<QTableWidget*>(u"logPreview"_s)->rowCount(), 25);
        QVERIFY2(tab->statusLabel()->text().contains(u"skipped 1"_s), qPrintable(tab->statusLabel()->text()));
        QVERIFY(tab->statusLabel()->text().contains(u"no field \"id\""_s));
        QVERIFY(tab->playButton()->isEnabled());
        connectedUntouched();

        const QString saved = tmp.filePath(u"captured.jsonl"_s);
        QVERIFY(tab->saveLog(saved));
        MainWindow other(options());
        QVERIFY(other.replay()->openLog(saved));
    }

    void stopEndsAPacedReplay()
    {
        MainWindow w(options());
        ReplayWidget* tab = openTab(w);
        QVERIFY(tab);
        QVERIFY(tab->openLog(writeLog(tmp.filePath(u"slow.jsonl"_s), 200, 100))); // 20 s as logged
        tab->speedBox()->setCurrentIndex(3);                                        // x1
        QCOMPARE(tab->speedBox()->currentData().toDouble(), 1.0);
        QSignalSpy done(tab, &ReplayWidget::finished);
        QTest::mouseClick(tab->playButton(), Qt::LeftButton);
        QTRY_VERIFY_WITH_TIMEOUT(tab->progressBar()->format().contains(u"events/s"_s), 10000);
        QTRY_VERIFY_WITH_TIMEOUT(tab->countLabel(u"executed"_s)->text().toInt() > 0, 10000);
        QElapsedTimer t;
        t.start();
        QTest::mouseClick(tab->stopButton(), Qt::LeftButton);
        QVERIFY(done.wait(10000));
        QVERIFY2(t.elapsed() < 3000, qPrintable(QString::number(t.elapsed())));
        QVERIFY(tab->result()->cancelled);
        QVERIFY(tab->statusLabel()->text().contains(u"Stopped"_s));
        QCOMPARE(tab->countLabel(u"lost"_s)->text(), u"—"_s);
        QVERIFY(tab->playButton()->isEnabled());
    }

    // Step before Play starts a replay paused with one delivery; each step lets one more through,
    // nothing else moves while paused; Play resumes to the end; Pause holds a paced one, Stop ends it.
    void pauseAndStep()
    {
        MainWindow w(options());
        ReplayWidget* tab = openTab(w);
        QVERIFY(tab);
        QVERIFY(tab->openLog(writeLog(tmp.filePath(u"steps.jsonl"_s), 12, 1)));
        tab->speedBox()->setCurrentIndex(0); // as fast as possible: only the gate holds it
        tab->duplicatesBox()->setValue(1);
        tab->crashBox()->setValue(0);
        tab->consumersBox()->setValue(2);
        QVERIFY(!tab->pauseButton()->isEnabled());
        QVERIFY(tab->stepButton()->isEnabled());
        QSignalSpy done(tab, &ReplayWidget::finished);
        QTest::mouseClick(tab->stepButton(), Qt::LeftButton);
        QVERIFY(tab->running() && tab->paused());
        QTRY_COMPARE_WITH_TIMEOUT(tab->countLabel(u"executed"_s)->text(), u"1"_s, 10000);
        QTest::qWait(400);
        QCOMPARE(tab->countLabel(u"executed"_s)->text(), u"1"_s);
        QCOMPARE(tab->countLabel(u"deliveries"_s)->text(), u"1"_s);
        QVERIFY(!tab->pauseButton()->isEnabled());
        QVERIFY(tab->playButton()->isEnabled());
        QTest::mouseClick(tab->stepButton(), Qt::LeftButton);
        QTRY_COMPARE_WITH_TIMEOUT(tab->countLabel(u"executed"_s)->text(), u"2"_s, 10000);
        QTest::qWait(400);
        QCOMPARE(tab->countLabel(u"executed"_s)->text(), u"2"_s);
        QCOMPARE(tab->lanes()->keyTable()->rowCount(), 2);
        QVERIFY(tab->lanes()->timeline()->eventCount() >= 6); // acquired, ran, completed, each
        QTest::mouseClick(tab->playButton(), Qt::LeftButton); // resume
        QVERIFY(!tab->paused());
        QVERIFY(done.wait(30000));
        QCOMPARE(tab->result()->executions, 12);
        QCOMPARE(tab->result()->lost, 0);
        QCOMPARE(tab->lanes()->keyTable()->rowCount(), 12);

        QVERIFY(tab->openLog(writeLog(tmp.filePath(u"paced.jsonl"_s), 200, 100))); // 20 s as logged
        tab->speedBox()->setCurrentIndex(3);                                         // x1
        QTest::mouseClick(tab->playButton(), Qt::LeftButton);
        QTRY_VERIFY_WITH_TIMEOUT(tab->countLabel(u"executed"_s)->text().toInt() > 0, 10000);
        QTest::mouseClick(tab->pauseButton(), Qt::LeftButton);
        QTest::qWait(300); // what a consumer held finishes and is reported
        const QString held = tab->countLabel(u"executed"_s)->text();
        QTest::qWait(1000); // 10 events are due meanwhile as logged
        QCOMPARE(tab->countLabel(u"executed"_s)->text(), held);
        QElapsedTimer t;
        t.start();
        QTest::mouseClick(tab->stopButton(), Qt::LeftButton);
        QVERIFY(done.wait(10000));
        QVERIFY2(t.elapsed() < 3000, qPrintable(QString::number(t.elapsed())));
        QVERIFY(tab->result()->cancelled);
        QVERIFY(!tab->paused());
    }

    void connectedServerOnlyByChoiceNeverReadOnly()
    {
        {
            MainWindow w(options(true));
            ReplayWidget* tab = openTab(w);
            QVERIFY(tab);
            QVERIFY(!(tab->whereBox()->model()->index(1, 0).flags() & Qt::ItemIsEnabled));
            tab->whereBox()->setCurrentIndex(1); // even if picked anyway
            QCOMPARE(tab->whereBox()->currentIndex(), 0);
            QVERIFY(tab->openLog(writeLog(tmp.filePath(u"ro.jsonl"_s), 5, 1)));
            tab->speedBox()->setCurrentIndex(0);
            QSignalSpy done(tab, &ReplayWidget::finished);
            QTest::mouseClick(tab->playButton(), Qt::LeftButton);
            QVERIFY(done.wait(30000));
            QVERIFY(tab->lastWhere().contains(u"private"_s));
            connectedUntouched();
        }
        MainWindow w(options());
        ReplayWidget* tab = openTab(w);
        QVERIFY(tab);
        QTRY_VERIFY_WITH_TIMEOUT(tab->whereBox()->model()->index(1, 0).flags() & Qt::ItemIsEnabled, 5000);
        QVERIFY(tab->openLog(writeLog(tmp.filePath(u"conn.jsonl"_s), 10, 1)));
        tab->speedBox()->setCurrentIndex(0);
        tab->whereBox()->setCurrentIndex(1);
        QString asked;
        answer(&asked, QMessageBox::Cancel);
        QTest::mouseClick(tab->playButton(), Qt::LeftButton);
        QVERIFY2(asked.contains(QString::number(server->port())) && asked.contains(u"replay-console-"_s),
                 qPrintable(asked));
        QVERIFY(!tab->running());
        connectedUntouched(); // cancelled: nothing written

        QSignalSpy done(tab, &ReplayWidget::finished);
        answer(&asked, QMessageBox::Yes);
        QTest::mouseClick(tab->playButton(), Qt::LeftButton);
        QVERIFY(done.wait(30000));
        QCOMPARE(tab->result()->executions, 10);
        QCOMPARE(tab->lastWhere(), QString::fromStdString(server->connectionOptions().describe()));
        const std::string ns = tab->result()->keyNamespace;
        QVERIFY2(ns.starts_with("replay-console-") && asked.contains(QString::fromStdString(ns.substr(0, 21))),
                 ns.c_str());
        idem::Connection c(server->connectionOptions());
        std::set<std::string> now = keysUnder(c, "*");
        const auto written = keysUnder(c, "replay-console-*");
        QVERIFY(written.size() >= 10);
        for (const auto& k : written)
            now.erase(k);
        QCOMPARE(now, keysBefore); // nothing outside its own namespace
        for (const auto& k : written)
            c.checked({"DEL", k});

        // read-only switched on later: the connected server is no longer offered
        w.readOnlyAction()->trigger();
        QCOMPARE(tab->whereBox()->currentIndex(), 0);
        QVERIFY(!(tab->whereBox()->model()->index(1, 0).flags() & Qt::ItemIsEnabled));
    }
};

QTEST_MAIN(TestReplayConsole)
#include "tst_replayconsole.moc"
