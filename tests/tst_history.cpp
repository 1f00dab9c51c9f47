// The console's history (issue 17): transitions recorded from keyspace notifications and from
// rescans, the log bounded, kept across restarts, nothing written lost when the recorder dies
// without a clean shutdown, and a key's timeline in words. The rewind is tst_rewind's.
#include "consoleworker.h"
#include "countschart.h"
#include "historycontroller.h"
#include "historyrecorder.h"
#include "inspectorpanel.h"
#include "keyfilterproxy.h"
#include "mainwindow.h"
#include "rewindbar.h"
#include "keytablemodel.h"
#include "historytestsupport.h"
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

namespace {
std::vector<idem::Transition> sources(const idem::HistoryIndex& index, const std::string& key)
{
    return index.timeline(key);
}

std::string words(const idem::HistoryIndex& index, const std::string& key, std::int64_t now)
{
    std::string out;
    for (const auto& l : idem::describeTimeline(index.timeline(key), now))
        out += l.text + "\n";
    return out;
}
} // namespace

class TestHistory : public QObject {
    Q_OBJECT
    QTemporaryDir tmp{QDir::tempPath() + u"/idem-history-XXXXXX"_s};

    // a worker on its own thread, as the console runs it, feeding `recorder` on this one
    struct Watch {
        QThread thread;
        ConsoleWorker* worker = new ConsoleWorker;
        Watch(HistoryRecorder& recorder, const ConnectionSettings& s)
        {
            worker->moveToThread(&thread);
            QObject::connect(&thread, &QThread::finished, worker, &QObject::deleteLater);
            HistoryRecorder::follow(worker, &recorder);
            // the rows would go to the model: taken in at once
            QObject::connect(worker, &ConsoleWorker::rowsArrived, worker, [w = worker] { w->batchConsumed(); });
            thread.start();
            QMetaObject::invokeMethod(worker, [w = worker, s] { w->open(s); });
        }
        ~Watch()
        {
            QMetaObject::invokeMethod(worker, [w = worker] { w->close(); }, Qt::BlockingQueuedConnection);
            thread.quit();
            thread.wait();
        }
    };

private Q_SLOTS:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

    void logRoundTripAndTornTail()
    {
        const std::string dir = tmp.filePath(u"torn"_s).toStdString();
        {
            idem::HistoryLog log(dir, {});
            QVERIFY(log.open().empty());
            std::vector<idem::Transition> batch;
            for (int i = 0; i < 10; ++i)
                batch.push_back(started(1000 + i, "k:{" + std::to_string(i) + "}", "owner-" + std::to_string(i)));
            batch[3].actor = "alice";
            batch[3].op = "force-fail";
            batch[4].flags = idem::Transition::Gone;
            log.append(batch);
            log.sync();
        }
        // a crash in the middle of a write: the last record is cut short
        const QString segment = QDir(QString::fromStdString(dir)).entryList({u"seg-*"_s}, QDir::Files).first();
        QFile f(QString::fromStdString(dir) + u'/' + segment);
        QVERIFY(f.open(QIODevice::ReadWrite));
        QVERIFY(f.resize(f.size() - 5));
        f.close();
        idem::HistoryLog again(dir, {});
        const auto read = again.open();
        QCOMPARE(read.size(), 9u);
        QCOMPARE(read[3].actor, "alice");
        QCOMPARE(read[3].op, "force-fail");
        QVERIFY(read[4].gone());
        QCOMPARE(read[8].owner, "owner-8");
        QCOMPARE(read[8].leaseUntilMs, 2008);
        // appending after a torn tail goes into a new segment: nothing is lost behind the cut
        again.append({started(5000, "k:{new}", "n")});
        idem::HistoryLog third(dir, {});
        QCOMPARE(third.open().size(), 10u);
    }

    void bounded()
    {
        idem::HistoryLimits limits;
        limits.maxTransitions = 1000;
        limits.maxAgeMs = 3'600'000;
        limits.segmentTransitions = 100;
        const std::string dir = tmp.filePath(u"bounded"_s).toStdString();
        idem::HistoryLog log(dir, limits);
        log.open();
        idem::HistoryIndex index(limits);
        for (int round = 0; round < 50; ++round) {
            std::vector<idem::Transition> batch;
            for (int i = 0; i < 100; ++i)
                batch.push_back(started(round * 100 + i, "k:{" + std::to_string(i % 37) + "}", std::to_string(round)));
            for (const auto& t : batch)
                index.add(t);
            log.append(batch);
            index.trim();
            log.trim(index.lastMs());
        }
        QCOMPARE(index.size(), 1000u);            // exactly the newest 1000 in memory
        QCOMPARE(index.firstMs(), 4000);
        QVERIFY(log.segments() <= 12u);           // on disk: whole segments, 1000 + one segment's worth
        idem::HistoryLog reread(dir, limits);
        const auto kept = reread.open();
        QVERIFY(kept.size() >= 1000u && kept.size() <= 1100u);
        QCOMPARE(kept.back().atMs, 4999);

        // by age: an hour back from the newest
        idem::HistoryIndex aged(limits);
        aged.add(started(0, "old", "a"));
        aged.add(started(3'600'001, "new", "b"));
        aged.trim();
        QCOMPARE(aged.size(), 1u);
        QCOMPARE(aged.firstMs(), 3'600'001);
    }

    void timelineWords()
    {
        idem::HistoryIndex index;
        index.add(started(1000, "k", "aaaaaaaa-1111-2222"));
        auto b = started(5000, "k", "bbbbbbbb-3333-4444", 2);
        index.add(b);
        auto done = b;
        done.atMs = 6000;
        done.state = idem::RecordState::Completed;
        done.leaseUntilMs = 0;
        index.add(done);
        idem::Transition gone;
        gone.atMs = 7000;
        gone.key = "k";
        gone.flags = idem::Transition::Gone;
        gone.actor = "alice";
        gone.op = "purge";
        index.add(gone);
        const std::string text = words(index, "k", 8000);
        QCOMPARE(QString::fromStdString(text), u"STARTED by aaaaaaaa…\n"
                                               "lease of aaaaaaaa… expired\n"
                                               "taken over by bbbbbbbb…, attempt 2\n"
                                               "COMPLETED by bbbbbbbb…\n"
                                               "purged by alice\n"_s);
        // a lock first seen after its lease had run out: the expiry comes first, as it happened
        idem::HistoryIndex late;
        auto seen = started(3000, "s", "cccccccc-5555-6666");
        seen.leaseUntilMs = 2500;
        seen.source = idem::Transition::Scan; // read by a scan: "first seen"
        late.add(seen);
        QCOMPARE(QString::fromStdString(words(late, "s", 4000)), u"lease of cccccccc… expired\n"
                                                                  "STARTED by cccccccc… (first seen)\n"_s);
        // the event log export: each start by a new owner is an event of that id
        std::ostringstream log;
        idem::writeEventLog(log, idem::eventsFromHistory(index.between(0, 9000), "idempotency"));
        std::istringstream in(log.str());
        const auto events = idem::parseEventLog(in);
        QCOMPARE(events.size(), 2u);
        QCOMPARE(events[1].atMs, 5000);
        QVERIFY(events[1].payload.find("bbbbbbbb-3333-4444") != std::string::npos);
    }

    // idemctl capture --from-history: the same events from the directory, read only
    void idemctlCapturesHistory()
    {
        const QString dir = tmp.filePath(u"cli"_s);
        {
            idem::HistoryLog log(dir.toStdString(), {});
            log.open();
            log.append({started(1000, "shop:{a}", "A"), started(2000, "shop:{a}", "B", 2), started(3000, "shop:{b}", "C")});
        }
        const auto files = QDir(dir).entryList(QDir::Files);
        QProcess p;
        p.start(idemtest::idemctlPath(), {u"capture"_s, u"--from-history"_s, dir, u"--namespace"_s, u"shop"_s});
        QVERIFY(p.waitForFinished(10000));
        QCOMPARE(p.exitCode(), 0);
        std::istringstream in(p.readAllStandardOutput().toStdString());
        const auto events = idem::parseEventLog(in);
        QCOMPARE(events.size(), 3u);
        QCOMPARE(events[0].id, "a");
        QCOMPARE(events[1].id, "a");
        QCOMPARE(events[2].atMs, 3000);
        QCOMPARE(QDir(dir).entryList(QDir::Files), files); // nothing written there
        p.start(idemtest::idemctlPath(), {u"capture"_s, u"--from-history"_s, tmp.filePath(u"none"_s)});
        QVERIFY(p.waitForFinished(10000));
        QVERIFY(p.exitCode() != 0);
        QVERIFY(p.readAllStandardError().contains("not a history directory"));
    }

    // keyspace notifications (the fixture's server has them): each change of a record is recorded,
    // with its source, the owner, attempt and lease, and who purged it (its meta key)
    void fromNotifications()
    {
        const std::string ns = idemtest::uniqueNamespace("hn");
        idem::ConnectionPool pool(idemtest::sharedRedis(), 1);
        idem::StoreOptions so;
        so.keyNamespace = ns;
        idem::Store store(pool, so);
        store.acquire("seed", ""); // a first scan has something to see
        HistoryRecorder recorder;
        recorder.open(tmp.filePath(u"notif"_s), QString::fromStdString(ns));
        ConnectionSettings s;
        s.url = QString::fromStdString(idemtest::sharedRedisUrl());
        s.keyNamespace = QString::fromStdString(ns);
        Watch watch(recorder, s);
        const std::string key = store.recordKey("order-42");
        QTRY_VERIFY_WITH_TIMEOUT(recorder.index().latest(store.recordKey("seed")), 10000);
        const auto a = store.acquire("order-42", "", 400ms);
        QTRY_VERIFY_WITH_TIMEOUT(recorder.index().latest(key), 5000);
        QThread::msleep(600); // A's lease runs out
        const auto b = store.acquire("order-42", "");
        QVERIFY(b.status == idem::AcquireStatus::Acquired && b.takeover);
        QTRY_COMPARE_WITH_TIMEOUT(recorder.index().latest(key)->attempt, 2, 5000);
        store.complete(b.ticket, "done");
        QTRY_COMPARE_WITH_TIMEOUT(recorder.index().latest(key)->state, idem::RecordState::Completed, 5000);
        store.purge("order-42", "ops-alice", "test");
        QTRY_VERIFY_WITH_TIMEOUT(recorder.index().latest(key)->gone(), 5000);
        const auto ts = sources(recorder.index(), key);
        QCOMPARE(ts.size(), 4u);
        for (const auto& t : ts)
            QCOMPARE(t.source, idem::Transition::Notification);
        QCOMPARE(ts[0].owner, a.ticket.token);
        QCOMPARE(ts[1].owner, b.ticket.token);
        QCOMPARE(ts[3].actor, "ops-alice");
        QCOMPARE(ts[3].op, "purge");
        const std::string text = words(recorder.index(), key, ts.back().atMs);
        QVERIFY2(text.find("expired\ntaken over by") != std::string::npos, text.c_str());
        QVERIFY2(text.find("attempt 2") != std::string::npos, text.c_str());
        QVERIFY2(text.find("purged by ops-alice") != std::string::npos, text.c_str());
        // written within a flush interval, and read back by a fresh recorder (a restart)
        QTRY_COMPARE_WITH_TIMEOUT(recorder.pending(), 0, 2000);
        HistoryRecorder again;
        again.open(tmp.filePath(u"notif"_s), QString::fromStdString(ns));
        QCOMPARE(again.index().timeline(key).size(), 4u);
        // the inspector's timeline, in words and server times
        QSignalSpy html(&again, &HistoryRecorder::timelineReady);
        again.requestTimeline(QString::fromStdString(key), ts.back().atMs);
        QCOMPARE(html.size(), 1);
        QVERIFY(html.first().at(1).toString().contains(u"taken over by"_s));
    }

    // no notifications: rescans find the changes, and a key a completed scan did not see is gone
    void fromRescans()
    {
        idem::LocalServer server; // notify-keyspace-events off
        idem::ConnectionPool pool(server.connectionOptions(), 1);
        idem::StoreOptions so;
        so.keyNamespace = "hr";
        idem::Store store(pool, so);
        const auto a = store.acquire("one", "");
        HistoryRecorder recorder;
        recorder.open(tmp.filePath(u"rescan"_s), u"hr"_s);
        ConnectionSettings s;
        s.url = QString::fromStdString(server.connectionOptions().describe());
        s.keyNamespace = u"hr"_s;
        s.rescanIntervalMs = 300;
        Watch watch(recorder, s);
        const std::string key = store.recordKey("one");
        QTRY_VERIFY_WITH_TIMEOUT(recorder.index().latest(key), 10000);
        store.complete(a.ticket, "ok");
        QTRY_COMPARE_WITH_TIMEOUT(recorder.index().latest(key)->state, idem::RecordState::Completed, 5000);
        store.purge("one", "bob");
        QTRY_VERIFY_WITH_TIMEOUT(recorder.index().latest(key)->gone(), 5000);
        const auto ts = recorder.index().timeline(key);
        QCOMPARE(ts.size(), 3u); // rescans that saw nothing new added nothing
        for (const auto& t : ts)
            QCOMPARE(t.source, idem::Transition::Scan);
    }

    // The recorder dies without close() (a killed console runs no destructor): every batch it
    // flushed is on disk.
    void killedLosesNothingWritten()
    {
        const QString dir = tmp.filePath(u"killed"_s);
        auto* recorder = new HistoryRecorder; // never deleted: no destructor runs, as under SIGKILL
        recorder->open(dir, u"k"_s);
        QVector<KeyRow> rows;
        for (int i = 0; i < 500; ++i) {
            KeyRow r;
            r.key = "k:{" + QByteArray::number(i) + '}';
            r.state = idem::RecordState::Started;
            r.type = KeyRow::Type::Hash;
            r.guard = QByteArray(KeyRow::kDigestBytes, '\0') + "tok-" + QByteArray::number(i);
            rows.push_back(r);
        }
        QSignalSpy written(recorder, &HistoryRecorder::extentChanged);
        recorder->observe(rows, {}, 1000, 1, true);
        QVERIFY(written.wait(2000)); // the batch went out with write() + fdatasync
        rows.resize(10);
        for (KeyRow& r : rows)
            r.state = idem::RecordState::Completed;
        recorder->observe(rows, {}, 2000, 1, true); // still pending when it "dies"
        HistoryRecorder reader;
        reader.open(dir, u"k"_s);
        QCOMPARE(reader.index().size(), 500u);
        QCOMPARE(reader.index().latest("k:{7}")->owner, "tok-7");
        recorder->blockSignals(true);
        recorder->setParent(this); // (freed with the test, after the check)
    }

    // A real kill: a child process (this binary, IDEM_HISTORY_CHILD=dir) records without end and
    // says after each batch written how many transitions it has; SIGKILL at a random moment, then
    // every transition it said was written is read back.
    void sigkillLosesNothingWritten()
    {
        const QString dir = tmp.filePath(u"sigkill"_s);
        QProcess child;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(u"IDEM_HISTORY_CHILD"_s, dir);
        child.setProcessEnvironment(env);
        child.start(QCoreApplication::applicationFilePath(), {});
        QVERIFY(child.waitForStarted());
        qint64 said = 0;
        QByteArray out;
        QElapsedTimer clock;
        clock.start();
        while (said < 3000 && clock.elapsed() < 10000) {
            child.waitForReadyRead(200);
            out += child.readAllStandardOutput();
            const auto lines = out.split('\n');
            for (const QByteArray& l : lines)
                if (l.startsWith("written "))
                    said = std::max(said, l.mid(8).toLongLong());
        }
        QVERIFY2(said >= 3000, out.constData());
        child.kill(); // SIGKILL: no destructor, no flush
        QVERIFY(child.waitForFinished());
        QCOMPARE(child.exitStatus(), QProcess::CrashExit);
        out += child.readAllStandardOutput();
        for (const QByteArray& l : out.split('\n'))
            if (l.startsWith("written "))
                said = std::max(said, l.mid(8).toLongLong());
        idem::HistoryLog log(dir.toStdString(), {});
        const auto kept = log.open();
        QVERIFY2(static_cast<qint64>(kept.size()) >= said,
                 qPrintable(u"%1 read back, %2 said written"_s.arg(kept.size()).arg(said)));
    }

};

// the child of sigkillLosesNothingWritten: records until it is killed
static int recordUntilKilled(int argc, char** argv, const QString& dir)
{
    QCoreApplication app(argc, argv);
    HistoryRecorder recorder;
    recorder.open(dir, u"k"_s);
    QObject::connect(&recorder, &HistoryRecorder::extentChanged, [](qint64, qint64, qint64 n) {
        std::printf("written %lld\n", static_cast<long long>(n));
        std::fflush(stdout);
    });
    int version = 0;
    QTimer feed;
    QObject::connect(&feed, &QTimer::timeout, [&] {
        QVector<KeyRow> rows;
        ++version;
        for (int i = 0; i < 100; ++i) {
            KeyRow r;
            r.key = "k:{" + QByteArray::number(i) + '}';
            r.state = idem::RecordState::Started;
            r.attempt = version;
            rows.push_back(r);
        }
        recorder.observe(rows, {}, version, 1, true);
    });
    feed.start(10);
    return app.exec();
}

int main(int argc, char** argv)
{
    if (const QString dir = qEnvironmentVariable("IDEM_HISTORY_CHILD"); !dir.isEmpty())
        return recordUntilKilled(argc, argv, dir);
    QApplication app(argc, argv);
    TestHistory test;
    QTEST_SET_MAIN_SOURCE_PATH
    return QTest::qExec(&test, argc, argv);
}
#include "tst_history.moc"
