// The race lab on a real Redis: what each strategy does to duplicate deliveries, counted by the
// ledger, over seeded random schedules with crashes and pauses, and in the forced interleaving.
#include "idem/engine/scripts.h"
#include "idem/errors.h"
#include "idem/lab/racelab.h"
#include "idem/redis/reply.h"
#include "testsupport.h"

#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>
#include <mutex>
#include <thread>

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

// Every command the server runs, in the order it runs them, as MONITOR reports them:
// 1700000000.123456 [0 127.0.0.1:54321] "GET" "key"
class ServerLog {
public:
    explicit ServerLog(idem::ConnectionOptions o)
    {
        o.commandTimeout = idem::Millis(0); // reads until interrupted
        m_conn = std::make_unique<idem::Connection>(o);
        m_conn->checked({"MONITOR"});
        m_thread = std::thread([this] {
            try {
                for (;;) {
                    const auto r = m_conn->readReply();
                    std::lock_guard lock(m_mutex);
                    m_lines << QString::fromStdString(idem::reply::str(r.get()));
                }
            } catch (const idem::Error&) { // interrupted
            }
        });
    }
    ~ServerLog()
    {
        m_conn->interrupt();
        m_thread.join();
    }
    QStringList lines()
    {
        std::lock_guard lock(m_mutex);
        return m_lines;
    }

private:
    std::unique_ptr<idem::Connection> m_conn;
    std::thread m_thread;
    std::mutex m_mutex;
    QStringList m_lines;
};

// What the server ran on an event's record, in order: "GET", "SET", or for a script "acquire",
// "complete" or "sink" (the lab's effect, the only other script that names the record).
QStringList commandsOnRecord(const QStringList& log, const QRegularExpression& recordKey)
{
    static const QRegularExpression quoted(QStringLiteral("\"((?:[^\"\\\\]|\\\\.)*)\""));
    QStringList out;
    for (const QString& line : log) {
        QStringList args;
        for (auto it = quoted.globalMatch(line); it.hasNext();)
            args << it.next().captured(1);
        if (args.isEmpty() || !std::any_of(args.begin(), args.end(),
                                           [&](const QString& a) { return recordKey.match(a).hasMatch(); }))
            continue;
        const QString cmd = args.first().toUpper();
        if (cmd == QLatin1String("EVALSHA")) {
            const std::string sha = args.value(1).toStdString();
            out << (sha == idem::scripts::acquire().sha1    ? QStringLiteral("acquire")
                    : sha == idem::scripts::complete().sha1 ? QStringLiteral("complete")
                                                            : QStringLiteral("sink"));
        } else if (cmd == QLatin1String("GET") || cmd == QLatin1String("SET")) {
            out << cmd;
        }
    }
    return out;
}

// The command each trace event stands for (none for an aborted EXEC: its SET never ran).
QString commandOf(idem::Strategy s, idem::TraceKind k)
{
    using K = idem::TraceKind;
    switch (k) {
    case K::Executed:
    case K::Fenced: return QStringLiteral("sink");
    case K::Aborted:
    case K::Crashed:
    case K::Paused: return {};
    case K::Completed:
    case K::LeaseLost:
        return s == idem::Strategy::Lua ? QStringLiteral("complete") : s == idem::Strategy::SetNx ? QString() : QStringLiteral("SET");
    case K::Acquired:
    case K::TakenOver:
        return s == idem::Strategy::Lua ? QStringLiteral("acquire") : QStringLiteral("SET");
    case K::Read:
    case K::InProgress:
    case K::Replayed:
        return s == idem::Strategy::Lua ? QStringLiteral("acquire") : s == idem::Strategy::SetNx ? QStringLiteral("SET") : QStringLiteral("GET");
    }
    return {};
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
            // A lease guarantees nothing to a worker the machine stalls past it between its effect
            // and its complete (the next owner runs again: fencing cannot help there). Here only the
            // planned pauses outlast the lease, not a loaded CI machine's scheduling (ASan: 80 ms did).
            w.lease = idem::Millis(300);
            w.pause = idem::Millis(650);
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

    // The forced interleaving is what it says, on the server: A reads, B reads, A writes, B writes.
    // The server's own log (MONITOR) of the commands on the event's record is the trace's story,
    // command for command, in the same order.
    void forcedInterleavingTraceIsInServerOrder_data()
    {
        QTest::addColumn<int>("strategy");
        QTest::addColumn<QStringList>("story"); // worker:kind, as the trace must tell it
        const auto story = [](const char* s) { return QString::fromLatin1(s).split(u' '); };
        QTest::newRow("naive") << int(idem::Strategy::Naive)
                               << story("0:read 1:read 0:executed 0:completed 1:executed 1:completed");
        QTest::newRow("setnx") << int(idem::Strategy::SetNx) << story("0:acquired 1:replayed 0:executed 0:completed");
        QTest::newRow("watch") << int(idem::Strategy::Watch)
                               << story("0:read 1:read 0:acquired 0:executed 0:completed 1:aborted 1:replayed");
        // B's delivery is given back while A holds the event; its redelivery replays A's result
        // (whichever worker takes it)
        QTest::newRow("lua") << int(idem::Strategy::Lua)
                             << story("0:acquired 1:in_progress 0:executed 0:completed *:replayed");
    }
    void forcedInterleavingTraceIsInServerOrder()
    {
        QFETCH(int, strategy);
        QFETCH(QStringList, story);
        const auto s = static_cast<idem::Strategy>(strategy);
        idem::LocalServer server;
        auto w = small(7);
        w.forcedInterleaving = true;
        idem::runRace(server.connectionOptions(), s, w); // the scripts are loaded: no NOSCRIPT retries below
        for (int run = 0; run < 3; ++run) {
            w.keyNamespace = idemtest::uniqueNamespace("order");
            idem::RaceResult r;
            QStringList log;
            {
                ServerLog monitor(server.connectionOptions());
                r = idem::runRace(server.connectionOptions(), s, w);
                QTest::qWait(100); // the last lines reach the monitor
                log = monitor.lines();
            }
            QStringList told, expected;
            for (const auto& e : r.trace) {
                told << QStringLiteral("%1:%2").arg(e.worker).arg(QString::fromUtf8(idem::nameOf(e.kind).data()));
                if (const QString c = commandOf(s, e.kind); !c.isEmpty())
                    expected << c;
                QCOMPARE(e.seq, static_cast<int>(&e - r.trace.data()));
            }
            QCOMPARE(told.size(), story.size());
            for (int i = 0; i < story.size(); ++i)
                if (!story[i].startsWith(u'*'))
                    QCOMPARE(told[i], story[i]);
                else
                    QVERIFY(told[i].endsWith(story[i].mid(1)));
            const QRegularExpression recordKey(
                QStringLiteral("^%1:%2-[0-9a-f]{8}:\\{ev-0\\}$")
                    .arg(QRegularExpression::escape(QString::fromStdString(w.keyNamespace)),
                         QString::fromUtf8(idem::nameOf(s).data())));
            QCOMPARE(commandsOnRecord(log, recordKey), expected);
        }
    }

    // what the console tells before a race on a watched server is what the race writes
    void keysWrittenAreAsTold()
    {
        idem::LocalServer server;
        idem::Connection c(server.connectionOptions());
        for (const idem::Strategy s : {idem::Strategy::Naive, idem::Strategy::SetNx, idem::Strategy::Watch,
                                       idem::Strategy::Lua}) {
            c.checked({"FLUSHALL"});
            auto w = small(7);
            w.crashRate = 0.2;
            w.pauseRate = 0.2;
            idem::runRace(server.connectionOptions(), s, w);
            const long long keys = idem::reply::integer(c.checked({"DBSIZE"}).get());
            QVERIFY2(keys <= w.events * idem::labKeysPerEvent(s) && keys > w.events * (idem::labKeysPerEvent(s) - 1),
                     qPrintable(QStringLiteral("%1: %2 keys for %3 events").arg(QString::fromUtf8(idem::nameOf(s).data())).arg(keys).arg(w.events)));
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
        // on a server named by --url or IDEM_URL it says where it writes, before it does
        QVERIFY2(r.err.startsWith("idemctl race: writing to ") && r.err.contains("under racelab:"), r.err.constData());
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

    // IDEM_URL names the operator's server: demo, race and replay write to a private one instead
    void labsNeverWriteToIdemUrl()
    {
        idem::LocalServer watched;
        QTemporaryDir dir;
        const QString events = dir.filePath(QStringLiteral("events.jsonl"));
        QFile f(events);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("{\"id\":\"e1\",\"payload\":\"a\",\"at_ms\":0}\n{\"id\":\"e2\",\"payload\":\"b\",\"at_ms\":1}\n");
        f.close();
        const QList<QStringList> commands = {
            {QStringLiteral("race"), QStringLiteral("--events"), QStringLiteral("5"), QStringLiteral("--workers"),
             QStringLiteral("2"), QStringLiteral("--strategy"), QStringLiteral("lua")},
            {QStringLiteral("demo"), QStringLiteral("--ids"), QStringLiteral("2"), QStringLiteral("--duplicates"),
             QStringLiteral("2")},
            {QStringLiteral("replay"), events, QStringLiteral("--speed"), QStringLiteral("0")}};
        for (const QStringList& args : commands) {
            QProcess p;
            auto env = QProcessEnvironment::systemEnvironment();
            env.insert(QStringLiteral("IDEM_URL"), QString::fromStdString(watched.url()));
            p.setProcessEnvironment(env);
            p.start(idemtest::idemctlPath(), args);
            QVERIFY(p.waitForFinished(60000));
            const QByteArray err = p.readAllStandardError();
            QVERIFY2(p.exitCode() == 0, err.constData());
            QVERIFY2(err.contains("IDEM_URL is not written to"), err.constData());
            idem::Connection c(watched.connectionOptions());
            QCOMPARE(idem::reply::integer(c.checked({"DBSIZE"}).get()), std::int64_t(0));
        }
    }
};

QTEST_GUILESS_MAIN(TestRaceLab)
#include "tst_racelab.moc"
