// Replaying an event log through idem: directly, and at least once through a Redis Stream with a
// consumer group that takes over what a killed consumer left pending (XAUTOCLAIM).
#include "idem/errors.h"
#include "idem/format/jsonscan.h"
#include "idem/lab/replay.h"
#include "testsupport.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>
#include <atomic>
#include <mutex>
#include <sstream>
#include <thread>

namespace {
std::vector<idem::ReplayEvent> makeLog(int n)
{
    std::ostringstream log;
    for (int i = 0; i < n; ++i)
        log << R"({"id":"pay-)" << i << R"(","payload":{"amount":)" << (i * 7 % 500) << R"(},"at_ms":)" << i * 10
            << "}\n";
    std::istringstream in(log.str());
    return idem::parseEventLog(in);
}
} // namespace

class TestReplay : public QObject {
    Q_OBJECT
private slots:
    void parsesEventLogs()
    {
        std::istringstream good("{\"id\":\"a\",\"payload\":{\"x\":1},\"at_ms\":5}\n\n{\"id\":7}\n");
        const auto events = idem::parseEventLog(good);
        QCOMPARE(events.size(), std::size_t(2));
        QCOMPARE(events[0].id, std::string("a"));
        QCOMPARE(events[0].payload, std::string(R"({"x":1})"));
        QCOMPARE(events[0].atMs, std::int64_t(5));
        QCOMPARE(events[1].id, std::string("7"));
        const char* bad[] = {"{\"id\":\"a\"}\n{oops\n", "{\"payload\":1}\n", "{\"id\":\"a\",\"at_ms\":\"soon\"}\n",
                             "[1,2]\n", "{\"id\":\"\"}\n"};
        for (const char* text : bad) {
            std::istringstream in(text);
            try {
                idem::parseEventLog(in);
                QFAIL(text);
            } catch (const idem::UsageError& e) {
                QVERIFY2(std::string(e.what()).find("line") != std::string::npos, e.what());
            }
        }
    }

    // A payload as deep as idem's JSON reader takes (json::valid, the console's: 128 levels) is replayed; a
    // deeper line is refused with its number, never stored as a payload nothing else can read.
    void nestingAsDeepAsIdemReads()
    {
        const auto line = [](int levels) {
            return "{\"id\":\"deep\",\"payload\":" + std::string(static_cast<std::size_t>(levels), '[') +
                   std::string(static_cast<std::size_t>(levels), ']') + "}\n";
        };
        std::istringstream ok(line(128));
        const auto events = idem::parseEventLog(ok);
        QCOMPARE(events.size(), std::size_t(1));
        QVERIFY(idem::json::valid(events[0].payload));
        std::istringstream deep("\n" + line(129));
        try {
            idem::parseEventLog(deep);
            QFAIL("a payload 129 levels deep was taken");
        } catch (const idem::UsageError& e) {
            QVERIFY2(std::string(e.what()).starts_with("event log line 2: JSON nested deeper than 128"), e.what());
        }
    }

    void directWithDuplicatesReorderingAndCrashes()
    {
        const auto log = makeLog(40);
        idem::ReplayOptions o;
        o.speed = 5;
        o.duplicates = 3;
        o.reorder = idem::Millis(40);
        o.crashRate = 0.2;
        o.lease = idem::Millis(150);
        o.keyNamespace = idemtest::uniqueNamespace("rp");
        const auto r = idem::replay(idemtest::sharedRedis(), log, o);
        QVERIFY(!r.timedOut);
        QVERIFY(r.crashes > 0);
        QCOMPARE(r.events, 40);
        QCOMPARE(r.executions, 40);
        QCOMPARE(r.doubleExecutions, 0);
        QCOMPARE(r.lost, 0);
        QVERIFY(r.deliveries >= 120);
    }

    void streamAfterAConsumerIsKilled()
    {
        const auto log = makeLog(40);
        idem::ReplayOptions o;
        o.speed = 0;
        o.duplicates = 2;
        o.viaStream = true;
        o.consumers = 3;
        o.killConsumerAfter = 2; // the first consumer to take a third message dies holding it
        o.lease = idem::Millis(200);
        o.keyNamespace = idemtest::uniqueNamespace("st");
        const auto r = idem::replay(idemtest::sharedRedis(), log, o);
        QVERIFY(!r.timedOut);
        QVERIFY(r.crashes >= 1);
        QVERIFY(r.claimed >= 1); // its pending message was taken over with XAUTOCLAIM
        QCOMPARE(r.executions, 40);
        QCOMPARE(r.doubleExecutions, 0);
        QCOMPARE(r.lost, 0);
    }

    // Live progress from one thread of the replay's own; a cancel ends a paced replay at once.
    void progressAndCancel()
    {
        const auto log = makeLog(400); // 4 s as logged
        idem::ReplayOptions o;
        o.speed = 1;
        o.duplicates = 2;
        o.keyNamespace = idemtest::uniqueNamespace("pc");
        std::atomic<bool> cancel{false};
        std::mutex m;
        std::vector<idem::ReplayProgress> seen;
        o.cancel = &cancel;
        o.progress = [&](const idem::ReplayProgress& p) {
            std::lock_guard lock(m);
            seen.push_back(p);
            if (p.seconds > 0.6)
                cancel = true;
        };
        QElapsedTimer t;
        t.start();
        const auto r = idem::replay(idemtest::sharedRedis(), log, o);
        QVERIFY(r.cancelled);
        QVERIFY(!r.timedOut);
        QVERIFY2(t.elapsed() < 2500, qPrintable(QString::number(t.elapsed())));
        QCOMPARE(r.doubleExecutions, 0);
        {
            std::lock_guard lock(m);
            QVERIFY(seen.size() >= 4);
            QCOMPARE(seen.back().planned, 800);
            QVERIFY(seen.back().produced > 0 && seen.back().produced < 800);
            QVERIFY(seen.back().executions > 0);
            QCOMPARE(seen.back().twice, 0);
            for (std::size_t i = 1; i < seen.size(); ++i)
                QVERIFY(seen[i].deliveries >= seen[i - 1].deliveries);
            seen.clear();
        }

        // and through a stream: the producer stops too
        o.viaStream = true;
        cancel = false;
        t.restart();
        const auto s = idem::replay(idemtest::sharedRedis(), log, o);
        QVERIFY(s.cancelled);
        QVERIFY2(t.elapsed() < 2500, qPrintable(QString::number(t.elapsed())));
    }

    // A gate paused from another thread: nothing is delivered but what each step lets through,
    // the timeout does not run meanwhile, and the marks name each consumer's moves. Direct and
    // through a stream (there the gate holds the producer).
    void pauseAndStep_data()
    {
        QTest::addColumn<bool>("viaStream");
        QTest::newRow("direct") << false;
        QTest::newRow("stream") << true;
    }
    void pauseAndStep()
    {
        QFETCH(bool, viaStream);
        const auto log = makeLog(10);
        idem::ReplayOptions o;
        o.speed = 0;
        o.viaStream = viaStream;
        o.consumers = 2;
        o.trace = true;
        o.timeout = idem::Millis(1500); // shorter than the pause: a paused clock does not time out
        o.keyNamespace = idemtest::uniqueNamespace("ps");
        idem::ReplayGate gate;
        gate.pause();
        o.gate = &gate;
        std::mutex m;
        idem::ReplayProgress last;
        std::vector<idem::TraceEvent> marks;
        o.progress = [&](const idem::ReplayProgress& p) {
            std::lock_guard lock(m);
            last = p;
            marks.insert(marks.end(), p.trace.begin(), p.trace.end());
        };
        auto executed = [&] {
            std::lock_guard lock(m);
            return last.executions;
        };
        std::thread stepper([&] {
            std::this_thread::sleep_for(std::chrono::milliseconds(300));
            gate.step();
            std::this_thread::sleep_for(std::chrono::milliseconds(700));
            gate.step();
            std::this_thread::sleep_for(std::chrono::milliseconds(700));
            gate.resume();
        });
        std::atomic<int> afterOne{-1}, afterTwo{-1};
        std::thread watcher([&] {
            std::this_thread::sleep_for(std::chrono::milliseconds(900));
            afterOne = executed();
            std::this_thread::sleep_for(std::chrono::milliseconds(700));
            afterTwo = executed();
        });
        const auto r = idem::replay(idemtest::sharedRedis(), log, o);
        stepper.join();
        watcher.join();
        QCOMPARE(afterOne.load(), 1);
        QCOMPARE(afterTwo.load(), 2);
        QVERIFY(!r.timedOut);
        QCOMPARE(r.executions, 10);
        QCOMPARE(r.lost, 0);
        std::lock_guard lock(m);
        int ran = 0;
        for (const auto& t : marks) {
            QVERIFY(t.worker >= 0 && t.worker < 2);
            ran += t.kind == idem::TraceKind::Executed;
        }
        QCOMPARE(ran, 10);
    }

    void idemctlReplay()
    {
        QTemporaryDir tmp;
        const QString path = tmp.filePath(QStringLiteral("events.jsonl"));
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        for (int i = 0; i < 20; ++i)
            f.write(QStringLiteral("{\"id\":\"e%1\",\"payload\":{\"n\":%1},\"at_ms\":%2}\n").arg(i).arg(i * 5).toUtf8());
        f.close();
        const QString url = QString::fromStdString(idemtest::sharedRedisUrl());
        auto r = idemtest::runIdemctl({QStringLiteral("--url"), url, QStringLiteral("replay"), path,
                                       QStringLiteral("--speed"), QStringLiteral("0"), QStringLiteral("--duplicates"),
                                       QStringLiteral("3"), QStringLiteral("--via-stream"), QStringLiteral("--json")},
                                      60000);
        QCOMPARE(r.exitCode, 0);
        const auto o = QJsonDocument::fromJson(r.out).object();
        QCOMPARE(o.value(QStringLiteral("executions")).toInt(), 20);
        QCOMPARE(o.value(QStringLiteral("double_executions")).toInt(), 0);
        QCOMPARE(o.value(QStringLiteral("lost")).toInt(), 0);
        QCOMPARE(o.value(QStringLiteral("deliveries")).toInt() >= 60, true);

        QFile bad(tmp.filePath(QStringLiteral("bad.jsonl")));
        QVERIFY(bad.open(QIODevice::WriteOnly));
        bad.write("{\"id\":\"a\"}\nnot json\n");
        bad.close();
        auto e = idemtest::runIdemctl({QStringLiteral("--url"), url, QStringLiteral("replay"), bad.fileName()});
        QCOMPARE(e.exitCode, 64);
        QVERIFY(e.err.contains("line 2"));
    }
};

QTEST_GUILESS_MAIN(TestReplay)
#include "tst_replay.moc"
