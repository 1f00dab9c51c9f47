// idem-console-shots: the console's screenshots, scene by scene, on a private redis-server with
// demo traffic. tools/screenshot.sh runs it under Xvfb at each screen size and palette; the
// window fills the screen as a maximised window would.
//
//   idem-console-shots --out DIR --palette light|dark [--scenes a,b,...] [--tag 1024x700-light]
//
// Scenes: console, inspector, confirm, racelab, teaching, projector, replay, disconnected, refused,
// gateway (a record the HTTP demo's gateway wrote, in the inspector).
// Each is saved as DIR/<scene>-<tag>.png (the whole screen, dialogs included).
#include "confirmdialog.h"
#include "connectdialog.h"
#include "countschart.h"
#include "historycontroller.h"
#include "keyfilterproxy.h"
#include "keytablemodel.h"
#include "mainwindow.h"
#include "racelabwidget.h"
#include "replaywidget.h"
#include "storeauditview.h"
#include "rewindbar.h"
#include "streampickerdialog.h"
#include "theme.h"
#include "timelineview.h"

#include "idem/format/httpanswer.h"
#include "idem/engine/store.h"
#include "idem/lab/demotraffic.h"
#include "idem/redis/pool.h"
#include "idem/redis/connection.h"
#include "idem/redis/localserver.h"
#include "idem/redis/reply.h"
#ifdef IDEM_SHOTS_HTTP_DEMO
#include "httpdemo.h"
#endif

#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QPushButton>
#include <QScreen>
#include <QSpinBox>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTableView>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QTextBrowser>
#include <QToolButton>
#include <cstdio>

using namespace Qt::StringLiterals;

namespace {
QString g_out, g_tag;

void save(const QString& scene)
{
    QApplication::processEvents();
    QTest::qWait(300);
    QScreen* screen = QGuiApplication::primaryScreen();
    QPixmap shot = screen->grabWindow(0);
    if (shot.isNull() || QGuiApplication::platformName() == u"offscreen"_s) // no screen to grab: the window
        shot = QApplication::activeWindow() ? QApplication::activeWindow()->grab() : QPixmap();
    const QString path = g_out + u'/' + scene + u'-' + g_tag + u".png"_s;
    if (!shot.toImage().convertToFormat(QImage::Format_RGB32).save(path, "PNG", 9))
        std::fprintf(stderr, "idem-console-shots: cannot write %s\n", qPrintable(path));
    else
        std::printf("%s\n", qPrintable(path));
}

bool waitFor(const std::function<bool()>& done, int ms)
{
    QElapsedTimer t;
    t.start();
    while (!done()) {
        if (t.elapsed() > ms)
            return false;
        QTest::qWait(50);
    }
    return true;
}

// Shows what a modal dialog opened by `open` looks like, then closes it.
void withModal(const std::function<void()>& open, const QString& scene)
{
    QTimer::singleShot(600, [scene] {
        save(scene);
        if (QWidget* modal = QApplication::activeModalWidget())
            QMetaObject::invokeMethod(modal, "reject", Qt::QueuedConnection);
    });
    open();
}

void selectFilter(MainWindow& w, idem::StateFilter f)
{
    for (int i = 0; i < w.stateBox()->count(); ++i)
        if (w.stateBox()->itemData(i).toInt() == static_cast<int>(f))
            w.stateBox()->setCurrentIndex(i);
}
} // namespace

int main(int argc, char** argv)
{
    QApplication app(argc, argv);
    QApplication::setApplicationVersion(u"0.1.0"_s);
    QStandardPaths::setTestModeEnabled(true); // no settings of the user's read or written
    const QStringList args = app.arguments();
    QString palette = u"light"_s;
    // what needs the demo's server first: "disconnected" kills it, "refused" connects elsewhere
    QStringList scenes = {u"console"_s, u"inspector"_s, u"confirm"_s, u"racelab"_s,      u"teaching"_s,
                          u"projector"_s, u"replay"_s,  u"audit"_s,   u"history"_s,      u"rewound"_s,
                          u"disconnected"_s, u"refused"_s};
    for (qsizetype i = 1; i + 1 < args.size(); i += 2) {
        if (args[i] == u"--out"_s)
            g_out = args[i + 1];
        else if (args[i] == u"--palette"_s)
            palette = args[i + 1];
        else if (args[i] == u"--scenes"_s)
            scenes = args[i + 1].split(u',');
        else if (args[i] == u"--tag"_s)
            g_tag = args[i + 1];
    }
    if (g_out.isEmpty()) {
        std::fprintf(stderr, "usage: idem-console-shots --out DIR [--palette light|dark] [--scenes a,b] [--tag T]\n");
        return 64;
    }
    QDir().mkpath(g_out);
    theme::apply(palette == u"dark"_s ? theme::Palette::Dark : theme::Palette::Light);
    const QRect screen = QGuiApplication::primaryScreen()->availableGeometry();
    if (g_tag.isEmpty())
        g_tag = u"%1x%2-%3"_s.arg(screen.width()).arg(screen.height()).arg(palette);

    QTemporaryDir tmp;
    idem::LocalServerOptions lo;
    lo.extraArgs = {"--notify-keyspace-events", "KEA"};
    idem::LocalServer server(lo);
    idem::DemoTraffic demo(server.connectionOptions());
    demo.seed();
    demo.start();
#ifdef IDEM_SHOTS_HTTP_DEMO
    idem::gateway::HttpDemo::Options ho;
    ho.redis = server.connectionOptions();
    idem::gateway::HttpDemoThread httpDemo(ho);
    if (QString why; !httpDemo.start(&why))
        std::fprintf(stderr, "idem-console-shots: the HTTP demo did not start: %s\n", qPrintable(why));
#endif

    MainWindow::Options o;
    o.connection.url = QString::fromStdString(server.url());
    o.connection.pattern = u"*"_s;
    o.titleNote = u"embedded demo redis-server"_s;
    o.auditPath = tmp.filePath(u"audit.jsonl"_s);
    MainWindow w(o);
    w.setGeometry(screen); // as maximised
    w.show();
    QSignalSpy scans(&w, &MainWindow::scanCompleted);
    scans.wait(10000);
    waitFor([&] { return w.chart()->sampleCount() >= 8; }, 30000); // a few samples of demo traffic
    RaceLabWidget* lab = w.raceLab();

    for (const QString& scene : scenes) {
        if (scene == u"console"_s) {
            w.tabs()->setCurrentIndex(0);
            save(scene);
        } else if (scene == u"inspector"_s) {
            w.tabs()->setCurrentIndex(0);
            selectFilter(w, idem::StateFilter::Stale);
            QSignalSpy inspected(&w, &MainWindow::inspected);
            w.table()->selectRow(0);
            inspected.wait(5000);
            save(scene);
        } else if (scene == u"confirm"_s) {
            w.tabs()->setCurrentIndex(0);
            selectFilter(w, idem::StateFilter::Stale);
            withModal([&] { w.purgeFiltered(); }, scene);
        } else if (scene == u"racelab"_s) {
            w.tabs()->setCurrentWidget(lab);
            lab->forcedBox()->setChecked(false);
            lab->teachingBox()->setChecked(false);
            lab->strategyBox()->setCurrentIndex(0);
            QSignalSpy done(lab, &RaceLabWidget::finished);
            lab->fireButton()->click();
            done.wait(60000);
            QTest::qWait(2500); // the timelines finish drawing themselves in
            save(scene);
        } else if (scene == u"teaching"_s || scene == u"projector"_s) {
            w.tabs()->setCurrentWidget(lab);
            if (lab->results().size() != 1 || !lab->teachingBox()->isChecked()) {
                lab->strategyBox()->setCurrentIndex(lab->strategyBox()->findText(u"naive"_s));
                lab->forcedBox()->setChecked(true);
                lab->teachingBox()->setChecked(true);
                QSignalSpy done(lab, &RaceLabWidget::finished);
                lab->fireButton()->click();
                done.wait(30000);
                for (int step = 0; step < 5; ++step) // up to B running it a second time
                    lab->nextStepButton()->click();
            }
            if (lab->projectorButton()->isChecked() != (scene == u"projector"_s))
                lab->projectorButton()->click();
            save(scene);
            if (lab->projectorButton()->isChecked())
                lab->projectorButton()->click();
        } else if (scene == u"replay"_s) {
            // a stream another program wrote: 120 payments over 30 s, captured, replayed as logged
            idem::Connection c(server.connectionOptions());
            for (int i = 0; i < 120; ++i)
                c.checked({"XADD", "payments:events", std::to_string(1700000000000LL + i * 250) + "-0", "id",
                           "pay-" + std::to_string(i), "payload", "{\"amount\":" + std::to_string(i * 7 % 500) + "}"});
            ReplayWidget* replay = w.replay();
            w.tabs()->setCurrentWidget(replay);
            QSignalSpy captured(replay, &ReplayWidget::captured);
            replay->captureButton()->click();
            auto* picker = replay->findChild<StreamPickerDialog*>();
            if (picker && waitFor([&] { return picker->table()->rowCount() > 0; }, 10000)) {
                if (QTableWidgetItem* item = picker->table()->findItems(u"payments:events"_s, Qt::MatchExactly).value(0))
                    picker->table()->selectRow(item->row());
                picker->accept();
                captured.wait(10000);
            }
            replay->duplicatesBox()->setValue(3);
            replay->crashBox()->setValue(0.1);
            replay->reorderBox()->setValue(200);
            replay->deliveryBox()->setCurrentIndex(1);
            replay->playButton()->click();
            QTest::qWait(4000); // under way: progress, events per second, live counts, the swimlanes
            save(scene);
            QSignalSpy done(replay, &ReplayWidget::finished);
            replay->stopButton()->click();
            done.wait(10000);
        } else if (scene == u"history"_s || scene == u"rewound"_s) {
            // order-42: started by A, A's lease runs out, B takes over (attempt 2) and completes
            w.tabs()->setCurrentIndex(0);
            selectFilter(w, idem::StateFilter::Any);
            idem::ConnectionPool pool(server.connectionOptions(), 1);
            idem::Store store(pool, {});
            const std::string key = store.recordKey("order-42");
            if (!w.history()->isRewound() && w.model()->rowOfKey(QString::fromStdString(key)) < 0) {
                store.acquire("order-42", "", std::chrono::milliseconds(1500));
                QTest::qWait(2500);
                const auto b = store.acquire("order-42", "");
                QTest::qWait(1500);
                store.complete(b.ticket, "{\"charged\":42}");
                QTest::qWait(1000);
            }
            if (scene == u"history"_s) {
                const int row = w.model()->rowOfKey(QString::fromStdString(key));
                w.table()->setCurrentIndex(w.proxy()->mapFromSource(w.model()->index(row, 0)));
                auto* history = w.findChild<QTextBrowser*>(u"inspectorHistory"_s);
                waitFor([&] { return history->toPlainText().contains(u"COMPLETED"_s); }, 5000);
                QTest::qWait(300);
                save(scene);
            } else {
                RewindBar* bar = w.history()->bar();
                QSignalSpy shown(w.history(), &HistoryController::snapshotShown);
                QSignalSpy counts(w.history(), &HistoryController::countsShown);
                bar->rewindTo(bar->firstMs() + (bar->lastMs() - bar->firstMs()) * 2 / 3);
                shown.wait(5000);
                if (counts.isEmpty()) // the chart of that moment too
                    counts.wait(5000);
                QTest::qWait(300);
                save(scene);
                bar->goLive();
            }
        } else if (scene == u"disconnected"_s) {
            w.tabs()->setCurrentIndex(0);
            selectFilter(w, idem::StateFilter::Any);
            QSignalSpy inspected(&w, &MainWindow::inspected);
            w.table()->selectRow(2);
            inspected.wait(5000);
            demo.stop();
            server.kill();
            waitFor([&] { return w.freshness() == MainWindow::Freshness::AsOf; }, 10000);
            QTest::qWait(4500); // the outage shows in the chart
            save(scene);
        } else if (scene == u"refused"_s) {
            idem::LocalServerOptions locked;
            locked.extraArgs = {"--requirepass", "s3cret"};
            idem::LocalServer guarded(locked);
            ConnectionSettings s = o.connection;
            s.url = QString::fromStdString(guarded.url());
            w.tabs()->setCurrentIndex(0);
            w.connectTo(s);
            waitFor([&] { return w.connectDialog() && w.connectDialog()->isVisible(); }, 10000);
            QTest::qWait(500);
            save(scene);
            if (w.connectDialog())
                w.connectDialog()->reject();
        } else if (scene == u"gateway"_s) {
            // an order the HTTP demo's gateway stored
            w.tabs()->setCurrentIndex(0);
            selectFilter(w, idem::StateFilter::Completed);
            QString key;
            idem::Connection c(server.connectionOptions());
            std::string cursor = "0";
            do {
                auto page = c.checked({"SCAN", cursor, "MATCH", "idempotency:*", "TYPE", "hash", "COUNT", "500"});
                cursor = idem::reply::str(idem::reply::element(page.get(), 0));
                const redisReply* list = idem::reply::element(page.get(), 1);
                for (std::size_t i = 0; key.isEmpty() && i < idem::reply::arraySize(list); ++i) {
                    const std::string k = idem::reply::str(idem::reply::element(list, i));
                    auto v = c.checked({"HGET", k, "response"});
                    if (!idem::reply::isString(v.get()))
                        continue;
                    if (const auto a = idem::decodeHttpAnswer(idem::reply::str(v.get())); a && a->route == "/orders")
                        key = QString::fromStdString(k);
                }
            } while (key.isEmpty() && cursor != "0");
            const int row = key.isEmpty() ? -1 : w.model()->rowOfKey(key);
            if (row < 0) {
                std::fprintf(stderr, "idem-console-shots: no gateway record to show\n");
                continue;
            }
            QSignalSpy inspected(&w, &MainWindow::inspected);
            const QModelIndex at = w.proxy()->mapFromSource(w.model()->index(row, 0));
            w.table()->selectRow(at.row());
            w.table()->scrollTo(at);
            if (!inspected.wait(5000))
                std::fprintf(stderr, "idem-console-shots: %s was not inspected (row %d)\n", qPrintable(key), at.row());
            QTest::qWait(300);
            w.inspector()->scrollToAnchor(u"http-answer"_s); // its method, route, status, headers and body
            QTest::qWait(200);
            save(scene);
        } else if (scene == u"audit"_s) {
            // what several operators did, from idemctl and consoles, in the store's audit stream
            idem::ConnectionPool pool(server.connectionOptions(), 1);
            idem::Store store(pool, idem::StoreOptions{.keyNamespace = o.connection.keyNamespace.toStdString(),
                                                       .lease = idem::Millis(60000)});
            const struct {
                const char* tool; const char* id; const char* who; const char* why; bool purge;
            } acts[] = {{"idemctl", "invoice-7731", "alice", "stuck after the 14:02 deploy", false},
                        {"idem-console", "invoice-7731", "alice", "re-run after the fix", true},
                        {"idemctl", "refund-2208", "bob", "poison message: bad currency", false},
                        {"idem-console", "order-1042", "carol", "customer asked to charge again", true}};
            for (const auto& a : acts) {
                idem::setToolName(a.tool);
                store.acquire(a.id);
                if (a.purge)
                    store.purge(a.id, a.who, a.why);
                else
                    store.forceFail(a.id, a.why, false, a.who);
            }
            idem::setToolName("idem-console");
            w.showAuditTrail();
            waitFor([&] { return w.storeAuditView() && w.storeAuditView()->table()->rowCount() >= 4; }, 10000);
            w.storeAuditView()->window()->setGeometry(screen.adjusted(12, 100, -12, -160));
            save(scene);
        } else {
            std::fprintf(stderr, "idem-console-shots: no scene '%s'\n", qPrintable(scene));
        }
    }
    demo.stop();
    return 0;
}
