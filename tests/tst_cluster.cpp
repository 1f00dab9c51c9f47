// A Store on a Redis Cluster: a one-node cluster (batches grouped by slot, the slot function checked
// against the server's) and three primaries served from one node (routing, MOVED, ASK, TRYAGAIN).
#include "idem/engine/asyncstore.h"
#include "idem/engine/executor.h"
#include "idem/engine/store.h"
#include "idem/errors.h"
#include "idem/redis/localserver.h"
#include "testsupport.h"

#include <QtTest>

#include <thread>

using idem::AcquireStatus;
using idem::OutcomeKind;

namespace {

// whether a cluster node holds any key in this hash slot
bool perNodeSlotUsed(idem::Connection& c, int slot)
{
    return idem::reply::integer(c.checked({"CLUSTER", "COUNTKEYSINSLOT", std::to_string(slot)}).get()) > 0;
}

// After `dead` was killed: the first shard's primary once it is another node, as `c` sees it (""
// after 30 s). A call that fails meanwhile (a node slow to answer during the failover, on a
// loaded machine) is asked again, not thrown out of the test.
std::string newFirstPrimary(idem::Connection& c, const std::string& dead)
{
    QElapsedTimer t;
    t.start();
    while (t.elapsed() < 30000) {
        try {
            const std::string p = idem::clusterShards(c).front().primary;
            if (p != dead)
                return p;
        } catch (const idem::Error&) {
        }
        QThread::msleep(100);
    }
    return {};
}

} // namespace

class TestCluster : public QObject {
    Q_OBJECT

private slots:
    // A Redis Cluster (one node holding every slot): a script's keys must share a hash slot, so a
    // batch goes out as one call per slot; single-id scripts already keep record and meta key together
    void singleNodeCluster()
    {
        idem::LocalServerOptions opts;
        opts.extraArgs = {"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"};
        idem::LocalServer server(opts);
        idem::Connection admin(server.connectionOptions());
        admin.checked({"CLUSTER", "ADDSLOTSRANGE", "0", "16383"});
        QTRY_VERIFY_WITH_TIMEOUT(idem::reply::str(admin.checked({"CLUSTER", "INFO"}).get()).find("cluster_state:ok") !=
                                     std::string::npos,
                                 10000);
        // the client-side slot function is the server's
        for (const std::string& key : std::vector<std::string>{"idempotency:{pay-1}", "idempotency:{pay-1}:meta", "plain", "a{}b", "{}",
                                      "x{y", "x{y}z{w}", std::string("bin{\x00\xff}", 7)})
            QCOMPARE(idem::hashSlot(key),
                     std::uint16_t(idem::reply::integer(admin.checked({"CLUSTER", "KEYSLOT", key}).get())));

        // before: the batch script refused keys of several slots (CROSSSLOT); now grouped
        idem::ConnectionPool cpool(server.connectionOptions(), 2);
        idem::Store cstore(cpool, idem::StoreOptions{.keyNamespace = "cl"});
        std::vector<idem::AcquireRequest> rq;
        for (int i = 0; i < 300; ++i)
            rq.push_back({"c-" + std::to_string(i), ""});
        rq.push_back({"with}brace", ""});
        auto got = cstore.acquireBatch(rq);
        QCOMPARE(got.size(), rq.size());
        for (std::size_t i = 0; i < got.size(); ++i) {
            QCOMPARE(got[i].status, AcquireStatus::Acquired);
            QCOMPARE(got[i].ticket.id, rq[i].id); // answers in the order asked, whatever the grouping
            QCOMPARE(cstore.inspect(rq[i].id)->owner, got[i].ticket.token);
        }
        QCOMPARE(cstore.complete(got[7].ticket, "seven").status, idem::OwnerStatus::Ok);
        auto again = cstore.acquireBatch({{"c-7", ""}, {"c-8", ""}, {"new-one", ""}});
        QCOMPARE(again[0].status, AcquireStatus::Duplicate);
        QCOMPARE(again[0].response, std::string("seven"));
        QCOMPARE(again[1].status, AcquireStatus::InProgress);
        QCOMPARE(again[2].status, AcquireStatus::Acquired);
        // the whole engine on it
        idem::Executor ex(cstore);
        auto work = [](const idem::WorkContext&) { return idem::WorkResult::success("done"); };
        QCOMPARE(ex.execute("cl-exec", "{\"a\":1}", work).kind, OutcomeKind::Executed);
        QCOMPARE(ex.execute("cl-exec", "{\"a\":1}", work).kind, OutcomeKind::Replayed);
        QCOMPARE(cstore.purge("cl-exec", "test").status, idem::AdminStatus::Ok);
        QCOMPARE(ex.execute("cl-exec", "{\"a\":1}", work).kind, OutcomeKind::Executed);
        // an id whose keys would have no hash tag is refused with a reason, not a CROSSSLOT
        QVERIFY_THROWS_EXCEPTION(idem::UsageError, cstore.acquire("}x", ""));
    }

    // A Store given one node of a cluster of three primaries serves every id: each call goes to
    // the node that serves the id's slot (learned from CLUSTER SLOTS, or from a MOVED/ASK reply),
    // batches go to every node, and a slot moved or moving (resharding) is followed
    void clusterRouting()
    {
        idemtest::LocalCluster cluster(3);
        const auto nodeOf = [](int slot) { return slot <= 5460 ? 0 : slot <= 10921 ? 1 : 2; };
        std::vector<std::unique_ptr<idem::Connection>> node;
        for (int i = 0; i < 3; ++i)
            node.push_back(std::make_unique<idem::Connection>(cluster.node(i)));
        const auto existsOn = [&](int i, const std::string& key) {
            return idem::reply::integer(node[static_cast<std::size_t>(i)]->checked({"EXISTS", key}).get()) == 1;
        };
        idem::ConnectionPool cpool(cluster.node(0), 1); // one connection: routing must not wait on itself
        idem::Store cstore(cpool, idem::StoreOptions{.keyNamespace = "rt"});
        idem::Executor ex(cstore);
        int runs = 0;
        auto work = [&](const idem::WorkContext& ctx) {
            ++runs;
            return idem::WorkResult::success("done " + ctx.id);
        };

        // single ids, on every node: run once, replayed, each record on its own node
        int perNode[3] = {0, 0, 0};
        for (int k = 0; k < 60; ++k) {
            const std::string id = "one-" + std::to_string(k);
            QCOMPARE(ex.execute(id, "", work).kind, OutcomeKind::Executed);
            const int owner = nodeOf(idem::hashSlot(cstore.recordKey(id)));
            ++perNode[owner];
            QVERIFY(existsOn(owner, cstore.recordKey(id)));
        }
        QVERIFY(perNode[0] > 0 && perNode[1] > 0 && perNode[2] > 0);
        for (int k = 0; k < 60; ++k) {
            const auto out = ex.execute("one-" + std::to_string(k), "", work);
            QCOMPARE(out.kind, OutcomeKind::Replayed);
            QCOMPARE(out.response, "done one-" + std::to_string(k));
        }
        QCOMPARE(runs, 60);

        // a batch across the three nodes, answers in the order asked
        std::vector<idem::AcquireRequest> rq;
        for (int k = 0; k < 300; ++k)
            rq.push_back({"batch-" + std::to_string(k), ""});
        rq.push_back({"one-3", ""});
        const auto got = cstore.acquireBatch(rq);
        QCOMPARE(got.size(), rq.size());
        for (std::size_t i = 0; i + 1 < got.size(); ++i) {
            QCOMPARE(got[i].status, AcquireStatus::Acquired);
            QCOMPARE(got[i].ticket.id, rq[i].id);
            QVERIFY(existsOn(nodeOf(idem::hashSlot(cstore.recordKey(rq[i].id))), cstore.recordKey(rq[i].id)));
        }
        QCOMPARE(got.back().status, AcquireStatus::Duplicate);
        // owner calls, operator calls and reads go where the id lives
        for (int i : {0, 1, 2, 150, 299}) {
            const auto& t = got[static_cast<std::size_t>(i)].ticket;
            QCOMPARE(cstore.renew(t).status, idem::OwnerStatus::Ok);
            QCOMPARE(cstore.complete(t, "r").status, idem::OwnerStatus::Ok);
            QCOMPARE(cstore.inspect(t.id)->state, idem::RecordState::Completed);
            QCOMPARE(cstore.forceFail(t.id, "x", false, "op").status, idem::AdminStatus::Refused); // completed
            QCOMPARE(cstore.purge(t.id, "op").status, idem::AdminStatus::Ok);
            QVERIFY(!cstore.inspect(t.id));
            QVERIFY(!cstore.meta(t.id).empty());
        }

        // resharding: a slot moved from node 1 to node 2 after the Store learned the map (MOVED),
        // and a slot being moved from node 1 to node 2 with its keys not on node 1 yet (ASK)
        std::string movedId, askId;
        for (int k = 0; movedId.empty() || askId.empty(); ++k) {
            const std::string id = "move-" + std::to_string(k);
            const int slot = idem::hashSlot(cstore.recordKey(id));
            if (nodeOf(slot) != 1 || perNodeSlotUsed(*node[1], slot))
                continue;
            if (movedId.empty())
                movedId = id;
            else if (idem::hashSlot(cstore.recordKey(movedId)) != slot)
                askId = id;
        }
        const std::string id1 = idem::reply::str(node[1]->checked({"CLUSTER", "MYID"}).get());
        const std::string id2 = idem::reply::str(node[2]->checked({"CLUSTER", "MYID"}).get());
        const std::string movedSlot = std::to_string(idem::hashSlot(cstore.recordKey(movedId)));
        const std::string askSlot = std::to_string(idem::hashSlot(cstore.recordKey(askId)));
        node[2]->checked({"CLUSTER", "SETSLOT", movedSlot, "IMPORTING", id1});
        node[1]->checked({"CLUSTER", "SETSLOT", movedSlot, "MIGRATING", id2});
        for (auto& n : node)
            n->checked({"CLUSTER", "SETSLOT", movedSlot, "NODE", id2});
        QCOMPARE(ex.execute(movedId, "", work).kind, OutcomeKind::Executed);
        QVERIFY(existsOn(2, cstore.recordKey(movedId)));
        QVERIFY(!perNodeSlotUsed(*node[1], std::stoi(movedSlot))); // (node 1 would answer EXISTS with MOVED)

        // while the slot moves, node 1 answers ASK and node 2, asked, TRYAGAIN (a fresh id's two
        // keys are on neither side): the Store waits and starts over, and gets there once it moved
        node[2]->checked({"CLUSTER", "SETSLOT", askSlot, "IMPORTING", id1});
        node[1]->checked({"CLUSTER", "SETSLOT", askSlot, "MIGRATING", id2});
        idem::Outcome during;
        std::thread mover([&] { during = ex.execute(askId, "", work); });
        QThread::msleep(150);
        for (auto& n : node)
            n->checked({"CLUSTER", "SETSLOT", askSlot, "NODE", id2});
        mover.join();
        QCOMPARE(during.kind, OutcomeKind::Executed);
        QCOMPARE(ex.execute(askId, "", work).kind, OutcomeKind::Replayed);
        QVERIFY(existsOn(2, cstore.recordKey(askId)));

        // an ASK that is served: a record and its meta key both already moved to the importing
        // node (MIGRATE) while their slot still migrates; node 1 answers ASK, node 2 serves it
        std::string movingId;
        for (int k = 0; movingId.empty(); ++k) {
            const std::string id = "moving-" + std::to_string(k);
            const int slot = idem::hashSlot(cstore.recordKey(id));
            if (nodeOf(slot) == 1 && !perNodeSlotUsed(*node[1], slot) && slot != std::stoi(askSlot) &&
                slot != std::stoi(movedSlot))
                movingId = id;
        }
        auto before = ex.execute(movingId, "", work);
        QCOMPARE(before.kind, OutcomeKind::Executed);
        QCOMPARE(cstore.purge(movingId, "op").status, idem::AdminStatus::Ok);     // the meta key now exists
        QCOMPARE(ex.execute(movingId, "", work).kind, OutcomeKind::Executed);      // and the record again
        const std::string movingSlot = std::to_string(idem::hashSlot(cstore.recordKey(movingId)));
        node[2]->checked({"CLUSTER", "SETSLOT", movingSlot, "IMPORTING", id1});
        node[1]->checked({"CLUSTER", "SETSLOT", movingSlot, "MIGRATING", id2});
        node[1]->checked({"MIGRATE", "127.0.0.1", std::to_string(cluster.node(2).port), "", "0", "5000", "KEYS",
                          cstore.recordKey(movingId), cstore.metaKey(movingId)});
        const auto askings = [&] { return idemtest::commandCalls(*node[2], "asking"); };
        const long long askingBefore = askings();
        const auto served = cstore.acquire(movingId, "");
        QCOMPARE(askings(), askingBefore + 1); // asked once, and served
        QCOMPARE(served.status, AcquireStatus::Duplicate);
        QCOMPARE(served.response, "done " + movingId);
        for (auto& n : node)
            n->checked({"CLUSTER", "SETSLOT", movingSlot, "NODE", id2});
        QVERIFY(existsOn(2, cstore.recordKey(movingId)));

        // idemctl run, given node 0, runs an id another node serves, once
        std::string elsewhere;
        for (int k = 0; elsewhere.empty(); ++k)
            if (nodeOf(idem::hashSlot(cstore.recordKey("cli-" + std::to_string(k)))) != 0)
                elsewhere = "cli-" + std::to_string(k);
        const QStringList args = {QStringLiteral("--url"), QString::fromStdString(cluster.url(0)), QStringLiteral("--namespace"),
                                  QStringLiteral("rt"), QStringLiteral("run"), QStringLiteral("--key"),
                                  QString::fromStdString(elsewhere), QStringLiteral("--"), QStringLiteral("sh"),
                                  QStringLiteral("-c"), QStringLiteral("echo ran; exit 3")};
        auto first = idemtest::runIdemctl(args);
        QCOMPARE(first.exitCode, 3);
        QCOMPARE(first.out, QByteArray("ran\n"));
        auto second = idemtest::runIdemctl(args);
        QCOMPARE(second.exitCode, 3);
        QCOMPARE(second.out, QByteArray("ran\n"));
        QVERIFY(existsOn(nodeOf(idem::hashSlot(cstore.recordKey(elsewhere))), cstore.recordKey(elsewhere)));
    }

    // A primary killed while execute() loops run (minReplicas 1: a lock counts once a replica has
    // it): calls for its slots fail closed during the failover and go on on the promoted replica,
    // found through another node's CLUSTER SLOTS; no id runs twice, none is lost.
    // The asynchronous path on three primaries, given one node: every id's calls reach the node
    // serving its slot (the first MOVED makes the pool a cluster's), and each runs once
    void asyncStoreOnACluster()
    {
        idemtest::LocalCluster cluster(3);
        idem::AsyncPool apool(idemtest::quick(cluster.node(2)), 2);
        idem::StoreOptions so{.keyNamespace = "acl"};
        idem::AsyncStore async(apool, so);
        std::vector<std::future<idem::AcquireResult>> acquired;
        for (int i = 0; i < 300; ++i)
            acquired.push_back(async.acquire("a-" + std::to_string(i)));
        std::vector<std::future<idem::OwnerResult>> completed;
        for (auto& f : acquired) {
            const auto a = f.get();
            QCOMPARE(a.status, AcquireStatus::Acquired);
            completed.push_back(async.complete(a.ticket, "done"));
        }
        for (auto& f : completed)
            QCOMPARE(f.get().status, idem::OwnerStatus::Ok);
        int nodesWithRecords = 0;
        for (int i = 0; i < cluster.size(); ++i) {
            idem::Connection c(cluster.node(i));
            nodesWithRecords += idem::reply::integer(c.checked({"DBSIZE"}).get()) > 0;
        }
        QCOMPARE(nodesWithRecords, 3);
        idem::ConnectionPool pool(cluster.node(0), 1);
        idem::Store store(pool, so);
        QCOMPARE(store.inspect("a-17")->state, idem::RecordState::Completed);
        QCOMPARE(store.acquire("a-17").status, AcquireStatus::Duplicate);
        // submit(): duplicates replayed, fresh ids executed, through the same routing
        idem::Executor ex(store, async);
        QCOMPARE(ex.submit("a-5", "", [](auto&) { return idem::WorkResult::success("again"); }).get().kind,
                 OutcomeKind::Replayed);
        QCOMPARE(ex.submit("b-5", "", [](auto&) { return idem::WorkResult::success("x"); }).get().kind,
                 OutcomeKind::Executed);
    }

    // A cluster's pool destroyed with thousands of calls in flight on every node: each call ends
    // (answered or closed), and the answers that fail while the pool closes, which reach for the
    // other nodes' pools (the next queued unit, a release), find them still there (ASan says so).
    void aClusterPoolClosedWithCallsInFlight()
    {
        idemtest::LocalCluster cluster(3);
        for (int round = 0; round < 3; ++round) {
            auto apool = std::make_unique<idem::AsyncPool>(idemtest::quick(cluster.node(0)), 2);
            idem::StoreOptions so{.keyNamespace = "closing-" + std::to_string(round)};
            std::vector<std::future<idem::AcquireResult>> acquired;
            {
                idem::AsyncStore async(*apool, so);
                async.acquire("first").get(); // the pool learns it is a cluster's
                for (int i = 0; i < 4000; ++i)
                    acquired.push_back(async.acquire("c-" + std::to_string(i)));
            }
            apool.reset();
            int answered = 0, closed = 0;
            for (auto& f : acquired) {
                QCOMPARE(f.wait_for(std::chrono::seconds(0)), std::future_status::ready);
                try {
                    answered += f.get().status == AcquireStatus::Acquired ? 1 : 0;
                } catch (const idem::Error&) {
                    ++closed;
                }
            }
            QCOMPARE(answered + closed, 4000);
            qInfo("round %d: %d acquired, %d closed", round, answered, closed);
        }
    }

    // submit() across a primary killed: calls to it fail closed, the map is asked again, and they
    // resume on the promoted replica; no id runs twice, none is lost. minReplicas 1, as for
    // execute(): without WAIT a lock the killed primary had not yet passed on is lost with it
    // (Redis replicates asynchronously), and its id runs again on the promoted replica.
    void submitAcrossClusterFailover()
    {
        idemtest::LocalCluster cluster(3, 3);
        cluster.waitForReplication();
        idem::ConnectionPool pool(idemtest::quick(cluster.node(1)), 2);
        idem::AsyncPool apool(idemtest::quick(cluster.node(1)), 2);
        idem::StoreOptions so{.keyNamespace = "sfo", .lease = idem::Millis(15000)};
        so.minReplicas = 1;
        so.replicaTimeout = idem::Millis(500);
        idem::Store store(pool, so);
        idem::AsyncStore async(apool, so);
        idem::Executor ex(store, async);
        idemtest::DeliveryLoad load;
        load.viaSubmit = true;
        const std::string dead = "127.0.0.1:" + std::to_string(cluster.server(0).port());
        load.go(ex, "s-", 4, [&] {
            QThread::msleep(400);
            cluster.server(0).kill();
            idem::Connection c(cluster.node(1));
            QVERIFY(!newFirstPrimary(c, dead).empty());
            cluster.server(0).start(); // back as a replica of the new primary: WAIT 1 is met again
            QThread::msleep(1500);
        });
        const QString problems = load.check("s-");
        QVERIFY2(problems.isEmpty(), qPrintable(problems));
        qInfo("async cluster failover: %d ids, %d store-unavailable answers redelivered", load.ids.load(),
              load.unavailable.load());
        QVERIFY(load.unavailable > 0); // the load did span the failover
    }

    // The node the Store was given dies, and it served the id: its promoted replica takes the
    // calls. The Store learns the whole map on its first call (before, calls that all went to the
    // node given never learned it was a cluster, and went on asking the dead node for ever).
    void nodeGivenDiesItsReplicaTakesOver_data()
    {
        QTest::addColumn<bool>("async");
        QTest::newRow("Store") << false;
        QTest::newRow("AsyncStore") << true;
    }
    void nodeGivenDiesItsReplicaTakesOver()
    {
        QFETCH(bool, async);
        idemtest::LocalCluster cluster(3, 3);
        cluster.waitForReplication();
        idem::Connection probe(cluster.node(1));
        const idem::ClusterShard first = idem::clusterShards(probe).front(); // node 0's
        const std::string dead = "127.0.0.1:" + std::to_string(cluster.server(0).port());
        QCOMPARE(first.primary, dead);
        std::string id;
        for (int i = 0; id.empty(); ++i) // an id node 0 serves
            if (idem::hashSlot("{" + std::to_string(i) + "}") >= first.ranges.front().first &&
                idem::hashSlot("{" + std::to_string(i) + "}") <= first.ranges.front().second)
                id = std::to_string(i);
        idem::ConnectionPool pool(idemtest::quick(cluster.node(0)), 1);
        idem::AsyncPool apool(idemtest::quick(cluster.node(0)), 1);
        idem::StoreOptions so{.keyNamespace = "given", .lease = idem::Millis(60000)};
        so.minReplicas = 1; // the lock is on the replica before the primary dies
        so.replicaTimeout = idem::Millis(500); // (the promoted replica has none: NotReplicated then)
        idem::Store store(pool, so);
        idem::AsyncStore astore(apool, so);
        const auto a = async ? astore.acquire(id).get() : store.acquire(id);
        QCOMPARE(a.status, AcquireStatus::Acquired);
        cluster.server(0).kill();
        QElapsedTimer t;
        t.start();
        QVERIFY(!newFirstPrimary(probe, dead).empty());
        // the first call after the death may fail (closed) and asks the others for the map
        idem::OwnerResult done;
        while (t.elapsed() < 40000) {
            try {
                done = async ? astore.complete(a.ticket, "done").get() : store.complete(a.ticket, "done");
                if (done.status == idem::OwnerStatus::Ok || done.status == idem::OwnerStatus::NotReplicated)
                    break;
            } catch (const idem::IoError&) {
            }
            QThread::msleep(200);
        }
        QVERIFY2(done.status == idem::OwnerStatus::Ok || done.status == idem::OwnerStatus::NotReplicated,
                 "the Store never reached the promoted replica");
        idem::ConnectionPool alive(idemtest::quick(cluster.node(1)), 1);
        const auto rec = idem::Store(alive, so).inspect(id);
        QVERIFY(rec);
        QCOMPARE(rec->state, idem::RecordState::Completed);
    }

    void executeAcrossClusterFailover()
    {
        idemtest::LocalCluster cluster(3, 3);
        cluster.waitForReplication(); // a replica that never synced refuses to take over
        idem::ConnectionPool pool(idemtest::quick(cluster.node(1)), 4);
        idem::StoreOptions so{.keyNamespace = "cfo", .lease = idem::Millis(15000)};
        so.minReplicas = 1;
        so.replicaTimeout = idem::Millis(500);
        idem::Store store(pool, so);
        idem::Executor ex(store);
        idemtest::DeliveryLoad load;
        const std::string dead = "127.0.0.1:" + std::to_string(cluster.server(0).port());
        load.go(ex, "c-", 4, [&] {
            QThread::msleep(400);
            cluster.server(0).kill(); // its replica (node 3) is promoted after the node timeout
            idem::Connection c(cluster.node(1));
            QVERIFY2(!newFirstPrimary(c, dead).empty(), idem::reply::str(c.checked({"CLUSTER", "NODES"}).get()).c_str());
            cluster.server(0).start(); // back as a replica of the new primary: WAIT 1 is met again
            QThread::msleep(1500);
        });
        const QString problems = load.check("c-");
        QVERIFY2(problems.isEmpty(), qPrintable(problems));
        qInfo("cluster failover: %d ids, %d store-unavailable answers redelivered, %d not replicated", load.ids.load(),
              load.unavailable.load(), load.notReplicated.load());
        QVERIFY(load.unavailable + load.notReplicated > 0); // the load did span the failover
    }
};

QTEST_GUILESS_MAIN(TestCluster)
#include "tst_cluster.moc"
