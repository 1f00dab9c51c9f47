// The race lab on a real Redis: what each strategy does to duplicate deliveries, counted by the
// ledger, over seeded random schedules with crashes and pauses, and in the forced interleaving.
#include "idem/lab/racelab.h"
#include "testsupport.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

namespace {
idem::Workload small(std::uint64_t seed)
{
    idem::Workload w;
    w.events = 12;
    w.duplicates = 3;
    w.workers = 6;
    w.seed = seed;
    w.lease = idem::Millis(80);
    w.pause = idem::Millis(240);
    w.redeliverAfter = idem::Millis(120);
    w.keyNamespace = idemtest::uniqueNamespace("lab");
    return w;
}

void consistent(const idem::RaceResult& r)
{
    // the ledger's arithmetic: every event executed once, plus the doubles, minus the lost
    QCOMPARE(r.executions, r.events - r.lost + r.doubleExecutions);
    QVERIFY(r.deliveries >= r.events * 1);
    QVERIFY(!r.trace.empty());
}
} // namespace

class TestRaceLab : public QObject {
    Q_OBJECT
private slots:
    void luaNeverDoublesNorLoses()
    {
        int fenced = 0, crashes = 0, takeovers = 0;
        for (std::uint64_t seed = 1; seed <= 20; ++seed) {
            auto w = small(seed);
            w.crashRate = 0.2;
            w.pauseRate = 0.15;
            const auto r = idem::runRace(idemtest::sharedRedis(), idem::Strategy::Lua, w);
            consistent(r);
            QVERIFY2(r.doubleExecutions == 0, qPrintable(QStringLiteral("seed %1").arg(seed)));
            QVERIFY2(r.lost == 0, qPrintable(QStringLiteral("seed %1").arg(seed)));
            fenced += r.fenced;
            for (const auto& e : r.trace) {
                crashes += e.kind == idem::TraceKind::Crashed;
                takeovers += e.kind == idem::TraceKind::TakenOver;
            }
        }
        QVERIFY(crashes > 0);
        QVERIFY(takeovers > 0);
        QVERIFY(fenced > 0); // paused owners came back and were refused by the sink
    }

    void naiveDoublesInTheForcedInterleavingEveryTime()
    {
        for (int i = 0; i < 5; ++i) {
            auto w = small(100 + static_cast<std::uint64_t>(i));
            w.forcedInterleaving = true;
            const auto r = idem::runRace(idemtest::sharedRedis(), idem::Strategy::Naive, w);
            consistent(r);
            QCOMPARE(r.events, 1);
            QCOMPARE(r.doubleExecutions, 1);
        }
        // the same interleaving does nothing to the others
        for (auto s : {idem::Strategy::SetNx, idem::Strategy::Watch, idem::Strategy::Lua}) {
            auto w = small(200);
            w.forcedInterleaving = true;
            const auto r = idem::runRace(idemtest::sharedRedis(), s, w);
            QVERIFY2(r.doubleExecutions == 0, std::string(idem::nameOf(s)).c_str());
            QCOMPARE(r.executions, 1);
        }
    }

    void watchIsSafeWithoutPauses()
    {
        for (std::uint64_t seed = 1; seed <= 5; ++seed) {
            auto w = small(seed);
            w.lease = idem::Millis(300); // longer than any work, even on a loaded machine
            w.redeliverAfter = idem::Millis(400);
            w.crashRate = 0.2;
            const auto r = idem::runRace(idemtest::sharedRedis(), idem::Strategy::Watch, w);
            consistent(r);
            QCOMPARE(r.doubleExecutions, 0);
            QCOMPARE(r.lost, 0);
        }
    }

    void setnxLosesEventsAfterCrashes()
    {
        int lost = 0;
        for (std::uint64_t seed = 1; seed <= 3; ++seed) {
            auto w = small(seed);
            w.crashRate = 0.3;
            const auto r = idem::runRace(idemtest::sharedRedis(), idem::Strategy::SetNx, w);
            consistent(r);
            QCOMPARE(r.doubleExecutions, 0);
            lost += r.lost;
        }
        QVERIFY2(lost > 0, "SETNX without states skips a crashed worker's event forever");
    }

    void idemctlRace()
    {
        auto r = idemtest::runIdemctl({QStringLiteral("--url"), QString::fromStdString(idemtest::sharedRedisUrl()),
                                       QStringLiteral("race"), QStringLiteral("--events"), QStringLiteral("10"),
                                       QStringLiteral("--workers"), QStringLiteral("4"), QStringLiteral("--json")},
                                      60000);
        QCOMPARE(r.exitCode, 0);
        const auto lines = r.out.trimmed().split('\n');
        QCOMPARE(lines.size(), 4);
        QStringList seen;
        for (const auto& line : lines) {
            const auto o = QJsonDocument::fromJson(line).object();
            for (const char* f : {"strategy", "events", "deliveries", "executions", "double_executions", "fenced",
                                  "lost", "throughput_per_s", "p99_ms"})
                QVERIFY2(o.contains(QLatin1String(f)), f);
            QCOMPARE(o.value(QStringLiteral("events")).toInt(), 10);
            seen << o.value(QStringLiteral("strategy")).toString();
        }
        QCOMPARE(seen, (QStringList{QStringLiteral("naive"), QStringLiteral("setnx"), QStringLiteral("watch"),
                                    QStringLiteral("lua")}));
        auto bad = idemtest::runIdemctl({QStringLiteral("race"), QStringLiteral("--strategy"), QStringLiteral("magic")});
        QCOMPARE(bad.exitCode, 64);
    }
};

QTEST_GUILESS_MAIN(TestRaceLab)
#include "tst_racelab.moc"
