// The Scanner on a Redis Cluster: every shard read (primaries or replicas), keys routed to the
// node serving their slot, a slot migrating and a primary failing over while a scan runs.
#include "idem/engine/executor.h"
#include "idem/engine/store.h"
#include "idem/errors.h"
#include "idem/monitor/scanner.h"
#include "testsupport.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include <map>
#include <set>

namespace {

// which of a LocalCluster's primaries serves a key (node i: 16384*i/P .. 16384*(i+1)/P - 1)
int ownerOf(const std::string& key, int primaries)
{
    const int slot = idem::hashSlot(key);
    int owner = 0;
    while (slot > 16384 * (owner + 1) / primaries - 1)
        ++owner;
    return owner;
}

std::set<std::string> keysOf(idem::Scanner& s)
{
    std::set<std::string> keys;
    while (!s.done())
        for (const auto& p : s.next().pages)
            for (const auto& r : p.page.records)
                keys.insert(r.key);
    return keys;
}

// `n` records through a Store routed from node 0: a third completed, the rest in progress
std::vector<std::string> seedRecords(idemtest::LocalCluster& cluster, const std::string& ns, int n)
{
    idem::ConnectionPool pool(cluster.node(0), 2);
    idem::Store store(pool, idem::StoreOptions{.keyNamespace = ns});
    std::vector<idem::AcquireRequest> rq;
    for (int i = 0; i < n; ++i)
        rq.push_back({"id-" + std::to_string(i), ""});
    std::vector<std::string> keys;
    const auto got = store.acquireBatch(rq);
    for (std::size_t i = 0; i < got.size(); ++i) {
        if (got[i].status != idem::AcquireStatus::Acquired)
            qFatal("seedRecords: %s not acquired", rq[i].id.c_str());
        if (i % 3 == 0)
            store.complete(got[i].ticket, "done");
        keys.push_back(store.recordKey(rq[i].id));
    }
    return keys;
}

} // namespace

class TestClusterScan : public QObject {
    Q_OBJECT

private slots:
    // Given any node, every shard is read; each record names the node it came from; keys are
    // classified and unlinked on the node that serves them; replicas can be read instead.
    void wholeCluster()
    {
        idemtest::LocalCluster cluster(3, 3);
        const std::string ns = "whole";
        const auto keys = seedRecords(cluster, ns, 3000);
        cluster.waitForReplication();
        idem::MonitorOptions mo;
        mo.keyNamespace = ns;
        mo.scanCount = 200;

        idem::Scanner primaries(cluster.node(1), mo);
        primaries.open();
        QVERIFY(primaries.cluster());
        QCOMPARE(primaries.describe(), std::string("3 primaries"));
        std::map<std::string, std::string> nodeOf;
        std::size_t steps = 0, pagesInAStep = 0;
        while (!primaries.done()) {
            const auto step = primaries.next();
            ++steps;
            pagesInAStep = std::max(pagesInAStep, step.pages.size());
            for (const auto& p : step.pages)
                for (const auto& r : p.page.records)
                    QVERIFY(nodeOf.emplace(r.key, r.node).second || nodeOf[r.key] == r.node);
        }
        QCOMPARE(nodeOf.size(), keys.size());
        QCOMPARE(pagesInAStep, std::size_t(3)); // the shards are read side by side
        QVERIFY(steps < 3000 / 200 * 2);
        for (const auto& k : keys) // the node of each record is the primary serving its slot
            QCOMPARE(nodeOf[k], "127.0.0.1:" + std::to_string(cluster.server(ownerOf(k, 3)).port()));

        idem::Scanner replicas(cluster.node(2), mo, idem::ScannerOptions{.readFrom = idem::ReadFrom::Replicas});
        QCOMPARE(keysOf(replicas).size(), keys.size());
        QVERIFY2(replicas.describe() == "3 replicas (of 3 primaries)", replicas.describe().c_str());
        for (const auto& n : replicas.nodes()) {
            idem::Connection c(idem::ConnectionOptions::fromUrl("redis://" + n));
            QCOMPARE(idem::reply::str(idem::reply::element(c.checked({"ROLE"}).get(), 0)), std::string("slave"));
        }

        // classify: keys of every shard in one call
        std::vector<std::string> some(keys.begin(), keys.begin() + 90);
        std::int64_t now = 0;
        auto records = primaries.classify(some, &now);
        QCOMPARE(records.size(), some.size());
        QVERIFY(now > 0);
        // unlink: each on its primary; one that changed since it was read stays
        idem::ConnectionPool pool(cluster.node(0), 1);
        idem::Store store(pool, idem::StoreOptions{.keyNamespace = ns});
        const auto started = std::find_if(records.begin(), records.end(),
                                          [](const auto& r) { return r.state == idem::RecordState::Started; });
        QVERIFY(started != records.end());
        const std::string changedId = started->id;
        QCOMPARE(store.forceFail(changedId, "changed under the scan", false, "test").status, idem::AdminStatus::Ok);
        QCOMPARE(primaries.unlinkIfUnchanged(records, idem::Actor{"test", "cluster purge"}), some.size() - 1);
        QVERIFY(store.inspect(changedId).has_value());
        QVERIFY(!store.inspect(records[started == records.begin() ? 1 : 0].id).has_value());

        // idemctl: list, stats and purge over the whole cluster
        const QStringList common = {QStringLiteral("--url"), QString::fromStdString(cluster.url(2)),
                                    QStringLiteral("--namespace"), QString::fromStdString(ns)};
        auto stats = idemtest::runIdemctl(common + QStringList{QStringLiteral("stats"), QStringLiteral("--json")});
        QCOMPARE(stats.exitCode, 0);
        QCOMPARE(QJsonDocument::fromJson(stats.out).object().value(QStringLiteral("total")).toInt(), 3000 - 89);
        auto list = idemtest::runIdemctl(common + QStringList{QStringLiteral("list"), QStringLiteral("--json"),
                                                              QStringLiteral("--read-from"), QStringLiteral("replica")});
        QCOMPARE(list.exitCode, 0);
        const auto lines = list.out.trimmed().split('\n');
        QVERIFY(lines.size() >= 3000 - 89); // replicas may lag the unlinks by a moment
        QVERIFY(QJsonDocument::fromJson(lines.front()).object().contains(QStringLiteral("node")));
        auto purge = idemtest::runIdemctl(common + QStringList{QStringLiteral("purge"), QStringLiteral("--state"),
                                                               QStringLiteral("completed"), QStringLiteral("--yes")});
        QCOMPARE(purge.exitCode, 0);
        QVERIFY2(purge.out.contains("purged 970 key(s) of 970 matching"), purge.out.constData());
        auto bad = idemtest::runIdemctl(common + QStringList{QStringLiteral("stats"), QStringLiteral("--read-from"),
                                                             QStringLiteral("nearest")});
        QCOMPARE(bad.exitCode, 64); // EX_USAGE
        QVERIFY2(bad.err.contains("--read-from must be primary or replica"), bad.err.constData());
    }

    // A slot moving between shards: a key the map still places on the old node is read where the
    // ASK (while migrating) or MOVED (after) redirect says; a scan across the move finishes, and
    // the next pass reads the slot on its new node.
    void slotMigrates()
    {
        idemtest::LocalCluster cluster(2);
        const std::string ns = "mig";
        const auto keys = seedRecords(cluster, ns, 600);
        idem::MonitorOptions mo;
        mo.keyNamespace = ns;
        mo.scanCount = 20;
        idem::Scanner scanner(cluster.node(0), mo);
        scanner.open();
        scanner.next(); // mid-scan

        // the slot of the first key served by node 0, and its keys
        const int slot = idem::hashSlot(*std::find_if(keys.begin(), keys.end(), [](const auto& k) { return ownerOf(k, 2) == 0; }));
        std::vector<std::string> inSlot;
        for (const auto& k : keys)
            if (idem::hashSlot(k) == slot)
                inSlot.push_back(k);
        idem::Connection src(cluster.node(0)), dst(cluster.node(1));
        const std::string srcId = idem::reply::str(src.checked({"CLUSTER", "MYID"}).get());
        const std::string dstId = idem::reply::str(dst.checked({"CLUSTER", "MYID"}).get());
        const std::string s = std::to_string(slot), dstPort = std::to_string(cluster.server(1).port());
        dst.checked({"CLUSTER", "SETSLOT", s, "IMPORTING", srcId});
        src.checked({"CLUSTER", "SETSLOT", s, "MIGRATING", dstId});
        // half of the slot's keys moved: ASK for those
        std::vector<std::string> moved(inSlot.begin(), inSlot.begin() + static_cast<long>(inSlot.size() + 1) / 2);
        for (const auto& k : moved)
            src.checked({"MIGRATE", "127.0.0.1", dstPort, k, "0", "5000"});
        auto asked = scanner.classify(inSlot);
        QCOMPARE(asked.size(), inSlot.size());
        for (const auto& r : asked)
            QCOMPARE(r.node, std::find(moved.begin(), moved.end(), r.key) != moved.end()
                                 ? "127.0.0.1:" + dstPort
                                 : "127.0.0.1:" + std::to_string(cluster.server(0).port()));
        // the rest, and the slot given to node 1: MOVED
        for (auto k = inSlot.begin() + static_cast<long>(moved.size()); k != inSlot.end(); ++k)
            src.checked({"MIGRATE", "127.0.0.1", dstPort, *k, "0", "5000"});
        for (auto* c : {&dst, &src})
            c->checked({"CLUSTER", "SETSLOT", s, "NODE", dstId});
        // the scan goes on across the move and finishes, and says that keys moved while it read
        std::vector<std::string> notes;
        while (!scanner.done())
            for (auto& n : scanner.next().notes)
                notes.push_back(std::move(n));
        const auto movedNote = [](const std::vector<std::string>& ns) {
            return std::any_of(ns.begin(), ns.end(), [](const std::string& n) {
                return n.find("hash slots moved between nodes while the keys were read") != std::string::npos;
            });
        };
        QVERIFY(movedNote(notes));
        auto after = scanner.classify(inSlot);
        QCOMPARE(after.size(), inSlot.size());
        for (const auto& r : after)
            QCOMPARE(r.node, "127.0.0.1:" + dstPort);
        QCOMPARE(scanner.unlinkIfUnchanged({after.front()}, idem::Actor{"test", "migrated"}), std::size_t(1));
        // a new pass: every key, the slot's on node 1
        scanner.restart();
        std::map<std::string, std::string> nodeOf;
        notes.clear();
        while (!scanner.done()) {
            auto step = scanner.next();
            for (const auto& p : step.pages)
                for (const auto& r : p.page.records)
                    nodeOf[r.key] = r.node;
            notes.insert(notes.end(), step.notes.begin(), step.notes.end());
        }
        QVERIFY(!movedNote(notes)); // a pass the slots held still through
        QCOMPARE(nodeOf.size(), keys.size() - 1);
        for (const auto& k : inSlot)
            if (k != after.front().key)
                QCOMPARE(nodeOf[k], "127.0.0.1:" + dstPort);
    }

    // A primary killed while a scan runs: the scan waits out the failover, reads that shard again
    // on the promoted replica, and counts every record once; idemctl stats does the same.
    void primaryFailsOverDuringScan()
    {
        idemtest::LocalCluster cluster(3, 3);
        const std::string ns = "fo";
        const auto keys = seedRecords(cluster, ns, 1500);
        cluster.waitForReplication();
        idem::MonitorOptions mo;
        mo.keyNamespace = ns;
        mo.scanCount = 50;
        idem::ConnectionOptions seed = cluster.node(1);
        seed.commandTimeout = idem::Millis(1000);
        seed.connectTimeout = idem::Millis(500);
        idem::Scanner scanner(seed, mo);
        scanner.open();
        std::map<int, std::set<std::string>> byShard;
        for (const auto& p : scanner.next().pages)
            for (const auto& r : p.page.records)
                byShard[p.shard].insert(r.key);
        cluster.server(0).kill();
        QStringList notes;
        bool restarted = false;
        while (!scanner.done()) {
            const auto step = scanner.next();
            for (const auto& n : step.notes)
                notes << QString::fromStdString(n);
            for (const auto& p : step.pages) {
                if (p.restarted) {
                    byShard[p.shard].clear();
                    restarted = true;
                }
                for (const auto& r : p.page.records)
                    byShard[p.shard].insert(r.key);
            }
        }
        QVERIFY2(restarted, qPrintable(notes.join(u"; "_qs)));
        std::size_t total = 0;
        for (const auto& [shard, ks] : byShard)
            total += ks.size();
        QCOMPARE(total, keys.size());
        QVERIFY2(notes.join(u"; "_qs).contains(u"slots from 0 are read from"_qs), qPrintable(notes.join(u"; "_qs)));

        auto stats = idemtest::runIdemctl({QStringLiteral("--url"), QString::fromStdString(cluster.url(2)),
                                           QStringLiteral("--namespace"), QString::fromStdString(ns),
                                           QStringLiteral("stats"), QStringLiteral("--json")});
        QCOMPARE(stats.exitCode, 0);
        QCOMPARE(QJsonDocument::fromJson(stats.out).object().value(QStringLiteral("total")).toInt(), 1500);
    }
};

QTEST_GUILESS_MAIN(TestClusterScan)
#include "tst_clusterscan.moc"
