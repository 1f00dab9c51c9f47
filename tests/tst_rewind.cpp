// The console's rewind (issue 17): the rows, counts and chart of a past moment, exactly (with a
// model tester attached), a far jump swapped in whole, and the console playing it forward.
#include "consoleworker.h"
#include "historytestsupport.h"
#include "countschart.h"
#include "historycontroller.h"
#include "historyrecorder.h"
#include "inspectorpanel.h"
#include "keyfilterproxy.h"
#include "mainwindow.h"
#include "rewindbar.h"
#include "keytablemodel.h"
#include "testsupport.h"

#include "idem/engine/store.h"
#include "idem/lab/capture.h"
#include "idem/monitor/history.h"
#include "idem/redis/localserver.h"
#include "idem/redis/options.h"
#include "idem/redis/pool.h"

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QElapsedTimer>
#include <QLabel>
#include <QToolButton>
#include <QProcess>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTextBrowser>
#include <QTemporaryDir>
#include <QThread>
#include <QtTest>

#include <QSlider>
#include <QTableView>

#include <cstdio>
#include <limits>
#include <random>
#include <sstream>

using namespace Qt::StringLiterals;
using namespace std::chrono_literals;

using historytest::started;

class TestRewind : public QObject {
    Q_OBJECT
    QTemporaryDir tmp{QDir::tempPath() + u"/idem-rewind-XXXXXX"_s};

private Q_SLOTS:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

    // The rewind: the rows at a past moment, exactly, fed into a key table model with a tester
    void rewindShowsThePast()
    {
        idem::HistoryIndex index;
        index.add(started(1000, "ns:{a}", "A"));
        index.add(started(2000, "ns:{b}", "B"));
        auto done = started(3000, "ns:{a}", "A");
        done.state = idem::RecordState::Completed;
        index.add(done);
        idem::Transition gone;
        gone.atMs = 4000;
        gone.key = "ns:{b}";
        gone.flags = idem::Transition::Gone;
        index.add(gone);
        index.add(started(5000, "ns:{c}", "C", 3));

        KeyTableModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setKeyNamespace(u"ns"_s);
        const auto show = [&](std::int64_t at) {
            model.showSnapshot(HistoryRecorder::rowsOf(index, index.stateAt(at)), at);
            QMap<QString, QString> states;
            for (int r = 0; r < model.rowCount(); ++r)
                states[model.row(r).keyText()] =
                    QString::fromLatin1(idem::nameOf(model.row(r).state)) + u'/' + model.row(r).owner();
            return states;
        };
        QCOMPARE(show(500), (QMap<QString, QString>{}));
        QCOMPARE(show(2500), (QMap<QString, QString>{{u"ns:{a}"_s, u"STARTED/A"_s}, {u"ns:{b}"_s, u"STARTED/B"_s}}));
        QCOMPARE(show(3000), (QMap<QString, QString>{{u"ns:{a}"_s, u"COMPLETED/A"_s}, {u"ns:{b}"_s, u"STARTED/B"_s}}));
        QCOMPARE(show(4500), (QMap<QString, QString>{{u"ns:{a}"_s, u"COMPLETED/A"_s}}));
        QCOMPARE(show(9000), (QMap<QString, QString>{{u"ns:{a}"_s, u"COMPLETED/A"_s}, {u"ns:{c}"_s, u"STARTED/C"_s}}));
        QCOMPARE(model.row(model.rowOfKey(u"ns:{c}"_s)).attempt, 3);
        QCOMPARE(model.serverNowMs(), 9000); // the clock stands at the moment shown
        QCOMPARE(model.stats().completed, 1);
        QCOMPARE(show(2500).size(), 2); // and back again
    }

    // A jump that changes most keys comes whole (fresh) from the recorder and is swapped in with
    // one reset; a small step comes as changes. Either way the model equals stateAt.
    void farJumpIsSwappedWhole()
    {
        QTemporaryDir dir(tmp.path() + u"/far-XXXXXX"_s);
        HistoryRecorder recorder;
        recorder.open(dir.path(), u"ns"_s);
        const auto rowsAt = [](int keys, idem::RecordState state, int from = 0) {
            QVector<KeyRow> rows;
            for (int i = from; i < from + keys; ++i) {
                KeyRow r;
                r.key = "ns:{" + QByteArray::number(i) + '}';
                r.type = KeyRow::Type::Hash;
                r.format = idem::RecordFormat::Native;
                r.state = state;
                r.attempt = 1;
                r.guard = QByteArray(KeyRow::kDigestBytes, '\0') + "owner-" + QByteArray::number(i);
                rows.push_back(r);
            }
            return rows;
        };
        recorder.observe(rowsAt(2000, idem::RecordState::Started), {}, 1000, 1, true);
        recorder.observe(rowsAt(2000, idem::RecordState::Completed), {}, 2000, 2, true);
        recorder.observe(rowsAt(1, idem::RecordState::Started, 5000), {}, 3000, 3, true);
        recorder.flush();

        KeyTableModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QSignalSpy reset(&model, &QAbstractItemModel::modelReset);
        QSignalSpy ready(&recorder, &HistoryRecorder::snapshotReady);
        const auto rewind = [&](qint64 at, bool fresh) {
            recorder.requestSnapshot(at, 1, fresh);
            QCOMPARE(ready.size(), 1);
            const auto args = ready.takeFirst();
            const auto rows = args.at(1).value<QVector<KeyRow>>();
            if (args.at(4).toBool())
                model.replaceSnapshot(rows, at);
            else
                model.applySnapshotChanges(rows, args.at(2).toStringList(), at);
            const auto expected = recorder.index().stateAt(at);
            QCOMPARE(model.rowCount(), static_cast<int>(expected.size()));
            for (const idem::HistoryEntry* e : expected) {
                const QString key = QString::fromStdString(recorder.index().keyName(e->key));
                const int r = model.rowOfKey(key);
                QVERIFY2(r >= 0, qPrintable(key));
                QCOMPARE(model.row(r).state, static_cast<idem::RecordState>(e->state));
            }
        };
        rewind(1500, true); // the first rewind: whole
        QCOMPARE(reset.size(), 1);
        QCOMPARE(model.row(0).state, idem::RecordState::Started);
        rewind(2500, false); // 2000 of 2000 keys changed: sent whole all the same, one reset
        QCOMPARE(reset.size(), 2);
        QCOMPARE(model.stats().completed, 2000);
        rewind(3500, false); // one key came: a change, no reset
        QCOMPARE(reset.size(), 2);
        QCOMPARE(model.rowCount(), 2001);
        rewind(1500, false); // back again, far: whole
        QCOMPARE(reset.size(), 3);
        QCOMPARE(model.stats().started, 2000);
    }

    // Playing forward applies only the changes since the last moment shown; jumping back starts
    // over: either way the model holds exactly the state at the moment (checked against stateAt)
    void cursorMatchesStateAt()
    {
        idem::HistoryIndex index;
        std::mt19937 rng(5);
        for (int i = 0; i < 3000; ++i) {
            auto t = started(1000 + i * 10, "ns:{" + std::to_string(rng() % 60) + "}", "o" + std::to_string(rng() % 5),
                             static_cast<int>(rng() % 4));
            if (rng() % 7 == 0)
                t.flags = idem::Transition::Gone;
            else if (rng() % 3 == 0)
                t.state = idem::RecordState::Completed;
            index.add(t);
        }
        KeyTableModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        idem::HistoryIndex::Cursor cursor;
        const auto apply = [&](std::int64_t at) {
            QVector<KeyRow> rows;
            QStringList gone;
            const bool fresh = !cursor.valid;
            for (const std::uint32_t k : index.seek(cursor, at)) {
                const idem::HistoryEntry* e = index.bySequence(cursor.last[k]);
                if (!e || (e->flags & idem::Transition::Gone))
                    gone << QString::fromStdString(index.keyName(k));
                else
                    rows.push_back(HistoryRecorder::rowOf(index, *e));
            }
            if (fresh)
                model.showSnapshot(rows, at);
            else
                model.applySnapshotChanges(rows, gone, at);
        };
        const auto expected = [&](std::int64_t at) {
            QMap<QString, QString> out;
            for (const KeyRow& r : HistoryRecorder::rowsOf(index, index.stateAt(at)))
                out[r.keyText()] = QString::fromLatin1(idem::nameOf(r.state)) + r.owner() + QString::number(r.attempt);
            return out;
        };
        const auto shown = [&] {
            QMap<QString, QString> out;
            for (int r = 0; r < model.rowCount(); ++r)
                out[model.row(r).keyText()] = QString::fromLatin1(idem::nameOf(model.row(r).state)) +
                                              model.row(r).owner() + QString::number(model.row(r).attempt);
            return out;
        };
        std::int64_t at = 900;
        for (int step = 0; step < 200; ++step) {
            at = step % 20 == 19 ? 900 + static_cast<std::int64_t>(rng() % 31000) // a jump, often back
                                 : at + static_cast<std::int64_t>(rng() % 400);
            apply(at);
            QCOMPARE(shown(), expected(at));
        }
    }

    // The chart's counts over a window, walked from the state at its start, equal a count of
    // stateAt at every step: random transitions of many keys, leases that run out between steps and
    // on a step, several at one millisecond, a trimmed front, and the rewound table's own counters.
    void countsOverMatchesStateAt_data()
    {
        QTest::addColumn<std::size_t>("keep");
        QTest::addColumn<qint64>("step");
        QTest::newRow("whole, 100 ms") << std::size_t(1'000'000) << qint64(100);
        QTest::newRow("whole, 7 ms") << std::size_t(1'000'000) << qint64(7);
        QTest::newRow("trimmed, 250 ms") << std::size_t(4000) << qint64(250);
    }
    void countsOverMatchesStateAt()
    {
        QFETCH(std::size_t, keep);
        QFETCH(qint64, step);
        idem::HistoryLimits limits;
        limits.maxTransitions = keep;
        idem::HistoryIndex index(limits);
        std::mt19937 rng(17);
        const idem::RecordState states[] = {idem::RecordState::Started,   idem::RecordState::Started,
                                            idem::RecordState::Completed, idem::RecordState::Failed,
                                            idem::RecordState::Malformed, idem::RecordState::Expired,
                                            idem::RecordState::Foreign};
        std::int64_t at = 10'000;
        for (int i = 0; i < 6000; ++i) {
            at += static_cast<std::int64_t>(rng() % 12); // often several at one ms
            auto t = started(at, "ns:{" + std::to_string(rng() % 300) + "}", "o" + std::to_string(rng() % 9));
            t.state = states[rng() % std::size(states)];
            // leases from already over to well past the last transition; some with none
            t.leaseUntilMs = rng() % 5 == 0 ? 0 : at - 2000 + static_cast<std::int64_t>(rng() % 20'000);
            if (rng() % 9 == 0)
                t.flags = idem::Transition::Gone;
            index.add(t);
        }
        index.trim();
        QVERIFY(keep > 6000 || index.firstMs() > 10'000);

        const auto bruteForce = [&](std::int64_t t) {
            idem::StateCounts c;
            c.atMs = t;
            for (const idem::HistoryEntry* e : index.stateAt(t)) {
                switch (e->state) {
                case idem::RecordState::Started:
                    ++(e->leaseUntilMs > 0 && e->leaseUntilMs <= t ? c.stale : c.started);
                    break;
                case idem::RecordState::Completed: ++c.completed; break;
                case idem::RecordState::Failed: ++c.failed; break;
                case idem::RecordState::Malformed: ++c.malformed; break;
                default: break;
                }
            }
            return c;
        };
        const std::int64_t from = index.firstMs() + (index.lastMs() - index.firstMs()) / 3;
        const std::int64_t to = index.lastMs() + 25'000; // every lease runs out after the last transition
        const std::vector<idem::StateCounts> counts = index.countsOver(from, to, step);
        QCOMPARE(counts.size(), static_cast<std::size_t>((to - from) / step + 1));
        int staleWithoutTransition = 0; // leases that ran out between two steps with nothing recorded
        for (std::size_t i = 0; i < counts.size(); ++i) {
            const std::int64_t t = from + static_cast<std::int64_t>(i) * step;
            const idem::StateCounts expected = bruteForce(t);
            QVERIFY2(counts[i] == expected,
                     qPrintable(u"at %1: started %2/%3 stale %4/%5 completed %6/%7"_s.arg(t)
                                    .arg(counts[i].started).arg(expected.started)
                                    .arg(counts[i].stale).arg(expected.stale)
                                    .arg(counts[i].completed).arg(expected.completed)));
            if (i > 0 && t - step >= index.lastMs() && counts[i].stale > counts[i - 1].stale)
                ++staleWithoutTransition;
        }
        QVERIFY(staleWithoutTransition > 0);

        // the rewound table counts the same (what the counters show while rewound)
        KeyTableModel model;
        for (std::size_t i = 0; i < counts.size(); i += counts.size() / 7) {
            const std::int64_t t = counts[i].atMs;
            model.replaceSnapshot(HistoryRecorder::rowsOf(index, index.stateAt(t)), t);
            const idem::Stats s = model.stats();
            QCOMPARE(s.started - s.stale, counts[i].started);
            QCOMPARE(s.stale, counts[i].stale);
            QCOMPARE(s.completed, counts[i].completed);
            QCOMPARE(s.failed, counts[i].failed);
            QCOMPARE(s.malformed, counts[i].malformed);
        }
        QVERIFY(index.countsOver(to, from, step).empty());
        QVERIFY(index.countsOver(from, to, 0).empty());
    }

    // Live is the slider's right end, also before anything is recorded or with one moment only
    // (an empty range would put the handle at the left, where it reads as rewound)
    void sliderSitsAtTheLiveEnd()
    {
        RewindBar bar;
        auto* slider = bar.findChild<QSlider*>(u"rewindSlider"_s);
        QVERIFY(slider);
        for (const auto& [first, last, transitions] :
             {std::tuple<qint64, qint64, qint64>{0, 0, 0}, {5000, 5000, 1}, {5000, 9000, 3}}) {
            bar.setExtent(first, last, transitions);
            QVERIFY2(slider->maximum() > slider->minimum() && slider->value() == slider->maximum(),
                     qPrintable(u"%1..%2 at %3"_s.arg(slider->minimum()).arg(slider->maximum()).arg(slider->value())));
        }
    }

    // The console end to end: the inspector shows a key's history; the slider rewinds the table
    // (and the counters) to a past moment, actions are off, Live comes back to the live model
    void consoleRewinds()
    {
        const std::string ns = idemtest::uniqueNamespace("hw");
        idem::ConnectionPool pool(idemtest::sharedRedis(), 1);
        idem::StoreOptions so;
        so.keyNamespace = ns;
        idem::Store store(pool, so);
        const auto a = store.acquire("early", "");
        MainWindow::Options o;
        o.connection.url = QString::fromStdString(idemtest::sharedRedisUrl());
        o.connection.keyNamespace = QString::fromStdString(ns);
        o.auditPath = tmp.filePath(u"hw-audit.jsonl"_s);
        MainWindow w(o);
        QAbstractItemModelTester liveTester(w.liveModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        QAbstractItemModelTester proxyTester(w.proxy(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        QSignalSpy scans(&w, &MainWindow::scanCompleted);
        w.show();
        QVERIFY(scans.wait(10000));
        RewindBar* bar = w.history()->bar();
        QTRY_VERIFY_WITH_TIMEOUT(bar->findChild<QSlider*>(u"rewindSlider"_s)->isEnabled(), 3000);
        QThread::msleep(50);
        store.complete(a.ticket, "ok");
        const std::string later = store.recordKey("later");
        store.acquire("later", "");
        QTRY_COMPARE_WITH_TIMEOUT(w.liveModel()->rowCount(), 2, 3000);
        QTRY_COMPARE_WITH_TIMEOUT(w.liveModel()->row(w.liveModel()->rowOfKey(QString::fromStdString(store.recordKey("early")))).state,
                                  idem::RecordState::Completed, 3000);
        // the inspector: the selected key's history in words
        const int row = w.model()->rowOfKey(QString::fromStdString(store.recordKey("early")));
        w.table()->setCurrentIndex(w.proxy()->mapFromSource(w.model()->index(row, 0)));
        auto* history = w.findChild<QTextBrowser*>(u"inspectorHistory"_s);
        QTRY_VERIFY_WITH_TIMEOUT(history->toPlainText().contains(u"COMPLETED"_s), 3000);
        QVERIFY2(history->toPlainText().contains(u"STARTED by"_s), qPrintable(history->toPlainText()));

        // back to the first scan's moment: "early" STARTED, "later" not there yet
        QTRY_VERIFY_WITH_TIMEOUT(w.history()->recorder(), 100);
        QSignalSpy shown(w.history(), &HistoryController::snapshotShown);
        bar->rewindTo(0); // clamped to the oldest transition
        QVERIFY(shown.wait(3000));
        QVERIFY(w.history()->isRewound());
        QAbstractItemModelTester pastTester(w.model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        QCOMPARE(w.proxy()->rowCount(), 1);
        QCOMPARE(w.model()->row(0).state, idem::RecordState::Started);
        QVERIFY(w.findChild<QLabel*>(u"rewoundBanner"_s)->text().startsWith(u"REWOUND to"_s));
        w.table()->selectAll();
        QVERIFY(!w.purgeAction()->isEnabled()); // nothing is done to keys from the past
        // forward to the end (once the last changes are written): both keys, as live
        QTest::qWait(3 * HistoryRecorder::kFlushMs);
        bar->rewindTo(std::numeric_limits<qint64>::max());
        QVERIFY(shown.wait(3000));
        QCOMPARE(w.proxy()->rowCount(), 2);
        QCOMPARE(w.model()->row(w.model()->rowOfKey(QString::fromStdString(store.recordKey("early")))).state,
                 idem::RecordState::Completed);
        // while rewound the live model goes on taking changes
        store.acquire("meanwhile", "");
        QTRY_COMPARE_WITH_TIMEOUT(w.liveModel()->rowCount(), 3, 3000);
        QCOMPARE(w.proxy()->rowCount(), 2);
        bar->goLive();
        QVERIFY(!w.history()->isRewound());
        QCOMPARE(w.proxy()->rowCount(), 3);
        QVERIFY(w.findChild<QLabel*>(u"rewoundBanner"_s)->isHidden());
    }

    // Rewound further back than the live chart's ten minutes, the chart draws the history's counts
    // around the moment, and at the moment they are what the counters say; a moment asked for
    // meanwhile is never drawn over by an older answer; Live brings the live samples back.
    void consoleChartRewindsFarBack()
    {
        const std::string ns = idemtest::uniqueNamespace("hc");
        const std::string url = idemtest::sharedRedisUrl();
        const QString server = QString::fromStdString(idem::ConnectionOptions::fromUrl(url).describe());
        // A history written by an earlier run of the console, 30 to 15 minutes ago: many keys, each
        // moving between states, with leases that run out on their own.
        const std::int64_t now = QDateTime::currentMSecsSinceEpoch();
        const std::int64_t moment = now - 20 * 60'000, other = now - 26 * 60'000;
        {
            std::vector<idem::Transition> batch;
            std::mt19937 rng(23);
            const idem::RecordState states[] = {idem::RecordState::Started, idem::RecordState::Started,
                                                idem::RecordState::Completed, idem::RecordState::Failed,
                                                idem::RecordState::Malformed};
            for (std::int64_t at = now - 30 * 60'000; at < now - 15 * 60'000; at += 1000 + rng() % 2000) {
                auto t = started(at, ns + ":{k" + std::to_string(rng() % 50) + "}", "o" + std::to_string(rng() % 7));
                t.state = states[rng() % std::size(states)];
                t.leaseUntilMs = at + static_cast<std::int64_t>(rng() % 240'000);
                if (rng() % 10 == 0)
                    t.flags = idem::Transition::Gone;
                batch.push_back(t);
            }
            idem::HistoryLog log(HistoryRecorder::directoryFor(server, QString::fromStdString(ns)).toStdString(), {});
            QVERIFY(log.open().empty());
            log.append(batch);
            log.sync();
        }
        MainWindow::Options o;
        o.connection.url = QString::fromStdString(url);
        o.connection.keyNamespace = QString::fromStdString(ns);
        o.auditPath = tmp.filePath(u"hc-audit.jsonl"_s);
        MainWindow w(o);
        QSignalSpy scans(&w, &MainWindow::scanCompleted);
        w.show();
        QVERIFY(scans.wait(10000));
        RewindBar* bar = w.history()->bar();
        QTRY_VERIFY_WITH_TIMEOUT(bar->findChild<QSlider*>(u"rewindSlider"_s)->isEnabled(), 3000);
        auto* chart = w.findChild<CountsChart*>(u"countsChart"_s);
        QVERIFY(chart);
        QVERIFY(!chart->showsPast());

        QSignalSpy counts(w.history(), &HistoryController::countsShown);
        QSignalSpy shown(w.history(), &HistoryController::snapshotShown);
        bar->rewindTo(other);
        QVERIFY(shown.wait(5000));
        bar->rewindTo(moment); // while the chart's counts of `other` are worked out: the newer one ends up drawn
        QTRY_VERIFY_WITH_TIMEOUT(!counts.isEmpty() && counts.last().at(0).toLongLong() == moment, 5000);
        QTest::qWait(300);
        QCOMPARE(counts.last().at(0).toLongLong(), moment);
        QVERIFY(chart->showsPast());
        const qint64 offset = w.liveModel()->serverNowMs() - QDateTime::currentMSecsSinceEpoch();
        QVERIFY(std::abs(chart->markerMs() - (moment - offset)) < 1000);
        // the chart's ten minutes before the moment, in 2-second steps, and a little after it
        QVERIFY2(chart->sampleCount() > 280, qPrintable(QString::number(chart->sampleCount())));
        QVERIFY(chart->firstSampleMs() <= chart->markerMs() - 9 * 60'000);
        QCOMPARE(chart->segmentCount(), 1);

        const idem::Stats s = w.model()->stats();
        QVERIFY2(s.stale > 0 && s.started > s.stale && s.completed > 0 && s.failed > 0 && s.malformed > 0,
                 s.summary().c_str());
        QCOMPARE(chart->lastValue(CountsChart::Started), double(s.started - s.stale));
        QCOMPARE(chart->lastValue(CountsChart::Stale), double(s.stale));
        QCOMPARE(chart->lastValue(CountsChart::Completed), double(s.completed));
        QCOMPARE(chart->lastValue(CountsChart::Failed), double(s.failed));
        QCOMPARE(chart->lastValue(CountsChart::Malformed), double(s.malformed));
        const auto* stale = w.findChild<QToolButton*>(u"counter-stale"_s);
        QVERIFY(stale);
        QCOMPARE(stale->text().section(u'\n', 1), QString::number(s.stale));
        QCOMPARE(chart->legend().at(CountsChart::Stale).section(u' ', -1), QString::number(s.stale)); // the legend too
        QCOMPARE(chart->legend().at(CountsChart::Completed).section(u' ', -1), QString::number(s.completed));

        bar->goLive();
        QVERIFY(!chart->showsPast());
        QCOMPARE(chart->markerMs(), 0);
        // the live samples again (the live namespace is empty), the next one within two ticks
        QTRY_COMPARE_WITH_TIMEOUT(chart->lastValue(CountsChart::Completed), 0.0, 5000);
    }
};

QTEST_MAIN(TestRewind)
#include "tst_rewind.moc"
