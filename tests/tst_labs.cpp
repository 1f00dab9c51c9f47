// The race lab and replay on the Redis that operators run: a three-primary Cluster (each event's
// keys on the node serving its slot), TLS with a CA the test makes, and a Sentinel-managed primary;
// through the library and through idemctl, with the ledger telling what really ran.
#include "idem/lab/racelab.h"
#include "idem/lab/replay.h"
#include "idem/redis/cluster.h"
#include "idem/redis/localcluster.h"
#include "idem/redis/localserver.h"
#include "testsupport.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include <set>

namespace {

std::vector<idem::ReplayEvent> events(int n)
{
    std::vector<idem::ReplayEvent> out;
    for (int i = 0; i < n; ++i)
        out.push_back({"order-" + std::to_string(i), "{\"n\":" + std::to_string(i) + "}", i});
    return out;
}

// Every strategy through the library, then the replay directly and through a Stream: the state
// machine never runs an event twice nor loses one; the naive strategy's forced interleaving does
// run it twice (the lab teaches what it shows on this server too).
void labsWorkOn(const idem::ConnectionOptions& o)
{
    idem::Workload w;
    w.events = 30;
    w.crashRate = 0.1;
    const auto lua = idem::runRace(o, idem::Strategy::Lua, w);
    QCOMPARE(lua.executions, w.events);
    QCOMPARE(lua.doubleExecutions, 0);
    QCOMPARE(lua.lost, 0);
    idem::Workload forced;
    forced.forcedInterleaving = true;
    const auto naive = idem::runRace(o, idem::Strategy::Naive, forced);
    QCOMPARE(naive.executions, 2);
    QCOMPARE(naive.doubleExecutions, 1);

    idem::ReplayOptions ro;
    ro.speed = 0;
    ro.duplicates = 2;
    ro.crashRate = 0.1;
    const auto log = events(40);
    for (const bool stream : {false, true}) {
        ro.viaStream = stream;
        const auto r = idem::replay(o, log, ro);
        QVERIFY(!r.timedOut);
        QCOMPARE(r.executions, 40);
        QCOMPARE(r.doubleExecutions, 0);
        QCOMPARE(r.lost, 0);
    }
}

// idemctl race and replay with these connection flags: JSON that says the same
void idemctlLabsWorkWith(const QStringList& connection)
{
    QTemporaryDir dir;
    QFile file(dir.filePath(QStringLiteral("log.jsonl")));
    QVERIFY(file.open(QIODevice::WriteOnly));
    for (int i = 0; i < 25; ++i)
        file.write(QStringLiteral("{\"id\":\"e%1\",\"payload\":%1,\"at_ms\":%1}\n").arg(i).toUtf8());
    file.close();
    auto race = idemtest::runIdemctl(connection + QStringList{QStringLiteral("race"), QStringLiteral("--strategy"),
                                                              QStringLiteral("lua"), QStringLiteral("--events"),
                                                              QStringLiteral("20"), QStringLiteral("--json")},
                                     60000);
    QVERIFY2(race.exitCode == 0, race.err.constData());
    const QJsonObject r = QJsonDocument::fromJson(race.out.trimmed()).object();
    QCOMPARE(r.value(QStringLiteral("executions")).toInt(), 20);
    QCOMPARE(r.value(QStringLiteral("double_executions")).toInt(), 0);
    QCOMPARE(r.value(QStringLiteral("lost")).toInt(), 0);
    auto replay = idemtest::runIdemctl(connection + QStringList{QStringLiteral("replay"), file.fileName(),
                                                                QStringLiteral("--speed"), QStringLiteral("0"),
                                                                QStringLiteral("--duplicates"), QStringLiteral("2"),
                                                                QStringLiteral("--via-stream"), QStringLiteral("--json")},
                                       60000);
    QVERIFY2(replay.exitCode == 0, replay.err.constData());
    const QJsonObject p = QJsonDocument::fromJson(replay.out.trimmed()).object();
    QCOMPARE(p.value(QStringLiteral("executions")).toInt(), 25);
    QCOMPARE(p.value(QStringLiteral("lost")).toInt(), 0);
}

} // namespace

class TestLabs : public QObject {
    Q_OBJECT

private slots:
    void onACluster()
    {
        idem::LocalCluster cluster(3);
        const idem::ConnectionOptions o = idemtest::quick(cluster.node(1));
        labsWorkOn(o);
        // the events' keys really are spread over the primaries (not all on the node given)
        int nodesWithKeys = 0;
        for (int i = 0; i < cluster.size(); ++i) {
            idem::Connection c(cluster.node(i));
            nodesWithKeys += idem::reply::integer(c.checked({"DBSIZE"}).get()) > 0;
        }
        QCOMPARE(nodesWithKeys, 3);
        idemctlLabsWorkWith({QStringLiteral("--url"), QString::fromStdString(cluster.url(2))});
    }

    void overTls()
    {
        const idemtest::TestCerts& certs = idemtest::TestCerts::get();
        idem::LocalServer server(certs.serverOptions());
        idem::ConnectionOptions o = idemtest::quick(server.connectionOptions());
        o.tls.caFile = certs.path("ca.pem");
        labsWorkOn(o);
        idemctlLabsWorkWith({QStringLiteral("--url"), QString::fromStdString(server.url()), QStringLiteral("--tls-ca"),
                             QString::fromStdString(certs.path("ca.pem"))});
    }

    void throughSentinel()
    {
        idemtest::LocalSentinelSet set(1);
        labsWorkOn(idemtest::quick(set.options()));
        idemctlLabsWorkWith({QStringLiteral("--url"), QString::fromStdString(set.url())});
    }
};

QTEST_GUILESS_MAIN(TestLabs)
#include "tst_labs.moc"
