// Sentinel on real servers: a primary, a replica and three sentinels (redis-server --sentinel).
// The primary is found through the sentinels; across SENTINEL FAILOVER and across the primary
// being killed, execute() and idemctl run go on on the new primary without a restart, no id runs
// twice and none is lost, with writes that reach a replica before they count (minReplicas), and a
// lost lease is believed only from a node a replica follows.
#include "idem/engine/asyncstore.h"
#include "idem/engine/executor.h"
#include "idem/errors.h"
#include "testsupport.h"

#include <QtTest>

#include <atomic>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <thread>

using idem::OutcomeKind;

using idemtest::quick;

class TestSentinel : public QObject {
    Q_OBJECT

private slots:
    void discoversThePrimary()
    {
        idemtest::LocalSentinelSet set(1);
        const auto o = quick(set.options());
        idem::Connection c(o);
        c.connect();
        QCOMPARE(c.endpoint(), "127.0.0.1:" + std::to_string(set.node(0).port()));
        idem::ConnectionPool pool(o, 2);
        idem::Store store(pool, idem::StoreOptions{.keyNamespace = "sen"});
        idem::Executor ex(store);
        QCOMPARE(ex.execute("a", "", [](auto&) { return idem::WorkResult::success("x"); }).kind, OutcomeKind::Executed);
        // a "sentinel" that is none (the data node refuses SENTINEL), listed first: the next one
        // names the primary
        idem::ConnectionOptions mixed = o;
        mixed.sentinel.nodes.insert(mixed.sentinel.nodes.begin(), {"127.0.0.1", set.node(0).port()});
        idem::Connection viaSecond(mixed);
        viaSecond.connect();
        QCOMPARE(viaSecond.endpoint(), "127.0.0.1:" + std::to_string(set.node(0).port()));
        // a master name no sentinel knows, and sentinels that are all down, said in words
        idem::ConnectionOptions unknown = o;
        unknown.sentinel.master = "nobody";
        idem::Connection u(unknown);
        try {
            u.connect();
            QFAIL("connected to a master nobody knows");
        } catch (const idem::ConfigError& e) {
            QCOMPARE(e.field(), std::string("sentinel"));
        }
        idem::ConnectionOptions down = o;
        const idemtest::ClosedPort closed;
        down.sentinel.nodes = {{"127.0.0.1", closed.port()}};
        QVERIFY_THROWS_EXCEPTION(idem::IoError, idem::Connection(down).connect());
    }

    void executeAcrossSentinelFailover()
    {
        idemtest::LocalSentinelSet set(1);
        idem::ConnectionPool pool(quick(set.options()), 4);
        idem::StoreOptions so{.keyNamespace = "sfo", .lease = idem::Millis(8000)};
        so.minReplicas = 1;
        so.replicaTimeout = idem::Millis(500);
        idem::Store store(pool, so);
        idem::Executor ex(store);
        idemtest::DeliveryLoad load;
        int idsBefore = 0, idsAfterFailover = 0;
        load.go(ex, "f-", 4, [&] {
            QThread::msleep(300);
            idsBefore = load.ids;
            idem::Connection s(set.sentinel(0).connectionOptions());
            QCOMPARE(idem::reply::str(s.checked({"SENTINEL", "FAILOVER", "mymaster"}).get()), std::string("OK"));
            QCOMPARE(set.waitForNewPrimary(0), 1);
            // and new ids go on on the new primary (once a replica acknowledges again)
            idsAfterFailover = load.ids;
            QTRY_VERIFY_WITH_TIMEOUT(load.ids > idsAfterFailover + 4, 30000);
        });
        const QString problems = load.check("f-");
        QVERIFY2(problems.isEmpty(), qPrintable(problems));
        // the calls went on, on the new primary, without a new pool or store
        idem::Connection c(quick(set.options()));
        c.connect();
        QCOMPARE(c.endpoint(), "127.0.0.1:" + std::to_string(set.node(1).port()));
        QCOMPARE(ex.execute("f-0", "", [](auto&) { return idem::WorkResult::success("again"); }).kind,
                 OutcomeKind::Replayed);
        qInfo("failover: %d ids, %d store-unavailable answers redelivered, %d not replicated", load.ids.load(),
              load.unavailable.load(), load.notReplicated.load());
        // the load did span the failover: ids began before it, and after it (waited for above);
        // whether a call saw the store away depends on where each worker was at that moment
        QVERIFY(idsBefore > 0);
    }

    void executeAndIdemctlAcrossAKilledPrimary()
    {
        idemtest::LocalSentinelSet set(1);
        idem::ConnectionPool pool(quick(set.options()), 4);
        idem::StoreOptions so{.keyNamespace = "kill", .lease = idem::Millis(15000)};
        so.minReplicas = 1;
        so.replicaTimeout = idem::Millis(500);
        idem::Store store(pool, so);
        idem::Executor ex(store);
        QTemporaryDir dir;
        const QString ledger = dir.filePath(u"ledger"_qs);
        std::atomic<bool> cliDone{false};
        QStringList cliProblems;
        idemtest::DeliveryLoad load;
        int idsBefore = 0, idsAfterFailover = 0;
        load.go(ex, "k-", 4, [&] {
            // idemctl run deliveries beside the library's, each its own process
            std::thread cli([&] {
                for (int i = 0; i < 15; ++i) {
                    const QString id = u"cli-"_qs + QString::number(i);
                    QElapsedTimer t;
                    t.start();
                    int rc = -1;
                    while (t.elapsed() < 60000) {
                        rc = idemtest::runIdemctl({u"--url"_qs, QString::fromStdString(set.url()), u"--namespace"_qs,
                                                   u"kill"_qs, u"run"_qs, u"--key"_qs, id, u"--min-replicas"_qs, u"1"_qs,
                                                   u"--replica-timeout"_qs, u"500ms"_qs, u"--lease"_qs, u"15s"_qs,
                                                   u"--"_qs, u"sh"_qs, u"-c"_qs, u"echo $0 >> \"$1\""_qs, id, ledger},
                                                  60000)
                                 .exitCode;
                        if (rc == 0)
                            break;
                        if (rc != 69 && rc != 75 && rc != 70)
                            cliProblems << id + u": exit "_qs + QString::number(rc);
                        QThread::msleep(100);
                    }
                    if (rc != 0)
                        cliProblems << id + u" never ran";
                }
                cliDone = true;
            });
            QThread::msleep(400);
            idsBefore = load.ids;
            set.node(0).kill(); // the primary dies; the sentinels promote the replica
            QCOMPARE(set.waitForNewPrimary(0), 1);
            idsAfterFailover = load.ids;
            // the old primary comes back, once every sentinel has switched, and is made a replica
            // of the new one: WAIT 1 is met again
            set.waitForFailoverDone(1);
            set.node(0).start();
            set.waitForReplicas(1);
            cli.join();
            QTRY_VERIFY_WITH_TIMEOUT(load.ids > idsAfterFailover + 4, 30000);
        });
        const QString problems = load.check("k-");
        QVERIFY2(problems.isEmpty(), qPrintable(problems));
        QVERIFY2(cliProblems.isEmpty(), qPrintable(cliProblems.join(u"; "_qs)));
        QFile f(ledger);
        QVERIFY(f.open(QIODevice::ReadOnly));
        QMap<QString, int> ran;
        for (const QByteArray& line : f.readAll().split('\n'))
            if (!line.isEmpty())
                ++ran[QString::fromUtf8(line)];
        QCOMPARE(ran.size(), 15);
        for (auto it = ran.begin(); it != ran.end(); ++it)
            QVERIFY2(it.value() == 1, qPrintable(it.key() + u" ran "_qs + QString::number(it.value())));
        qInfo("killed primary: %d ids, %d store-unavailable answers redelivered, %d not replicated",
              load.ids.load(), load.unavailable.load(), load.notReplicated.load());
        // the load did span the outage: ids began before the kill, and after the promotion (waited
        // for above). Whether a call saw the store away is timing: a worker completing when the
        // primary died retries its completion until the new primary answers, uncounted.
        QVERIFY(idsBefore > 0);
    }

    // A primary that comes back empty after a failover, before the sentinels make it a replica,
    // answers "missing" for every lease. With minReplicas, a refusal from a node no replica
    // follows is not believed: complete throws NotReplicatedError (the executor retries, and the
    // retry reaches the true primary) instead of reporting a lost lease whose work would then run
    // again once the true record's lease runs out. From a node its replica follows, it is.
    void aRefusalFromANodeNoReplicaFollowsIsNotBelieved()
    {
        idem::LocalServer primary;
        idem::LocalServerOptions ro;
        ro.extraArgs = {"--replicaof", "127.0.0.1", std::to_string(primary.port())};
        idem::LocalServer replica(ro);
        idem::LocalServer emptyPrimary; // no replicas, no records: the old primary, restarted
        idem::StoreOptions so{.keyNamespace = "stale", .lease = idem::Millis(10000)};
        so.minReplicas = 1;
        so.replicaTimeout = idem::Millis(300); // what the empty node makes each call wait
        idem::StoreOptions trueOptions = so;
        trueOptions.replicaTimeout = idem::Millis(5000); // a replica slow under a sanitizer still counts
        idem::ConnectionPool truePool(quick(primary.connectionOptions()), 1);
        idem::ConnectionPool stalePool(quick(emptyPrimary.connectionOptions()), 1);
        idem::Store trueStore(truePool, trueOptions), staleStore(stalePool, so);
        {
            idem::Connection c(primary.connectionOptions());
            QTRY_VERIFY_WITH_TIMEOUT(idem::reply::str(c.checked({"INFO", "replication"}).get()).find("state=online") !=
                                         std::string::npos,
                                     10000);
        }
        const idem::AcquireResult a = trueStore.acquire("order-1", "");
        QCOMPARE(a.status, idem::AcquireStatus::Acquired);

        // complete, fail and renew alike, blocking and asynchronous
        const std::function<idem::OwnerResult()> ownerCalls[] = {
            [&] { return staleStore.complete(a.ticket, "r"); },
            [&] { return staleStore.fail(a.ticket, idem::FailPolicy::Terminal, "declined"); },
            [&] { return staleStore.renew(a.ticket); },
        };
        for (const auto& call : ownerCalls) {
            try {
                call();
                QFAIL("a lost lease answered by a node no replica follows was believed");
            } catch (const idem::NotReplicatedError& e) {
                QVERIFY2(std::string(e.what()).find("not believed") != std::string::npos, e.what());
            }
        }
        idem::AsyncPool staleAsyncPool(quick(emptyPrimary.connectionOptions()), 1);
        idem::AsyncStore staleAsync(staleAsyncPool, so);
        QVERIFY_THROWS_EXCEPTION(idem::NotReplicatedError, staleAsync.complete(a.ticket, "r").get());
        std::promise<std::exception_ptr> renewed;
        staleAsync.renew(a.ticket, {}, [&](idem::OwnerResult, std::exception_ptr e) { renewed.set_value(e); });
        QVERIFY_THROWS_EXCEPTION(idem::NotReplicatedError, std::rethrow_exception(renewed.get_future().get()));
        // without minReplicas nothing can tell the nodes apart: the refusal is all there is
        idem::StoreOptions unguarded = so;
        unguarded.minReplicas = 0;
        idem::Store staleUnguarded(stalePool, unguarded);
        QCOMPARE(staleUnguarded.complete(a.ticket, "r").status, idem::OwnerStatus::LeaseLost);

        // the true primary, its replica following: a wrong token is refused and believed, and
        // the owner's completion is stored
        idem::Ticket wrong = a.ticket;
        wrong.token = "not-the-owner";
        const idem::OwnerResult refused = trueStore.complete(wrong, "r");
        QCOMPARE(refused.status, idem::OwnerStatus::LeaseLost);
        QCOMPARE(refused.currentState, std::string("STARTED"));
        QCOMPARE(trueStore.renew(wrong).status, idem::OwnerStatus::LeaseLost);
        QCOMPARE(trueStore.renew(a.ticket).status, idem::OwnerStatus::Ok);
        QCOMPARE(trueStore.complete(a.ticket, "r").status, idem::OwnerStatus::Ok);
    }

    // The asynchronous path: a call fewer replicas acknowledge than asked makes each connection ask
    // the sentinels whether its node is still the primary, and a node they no longer name is left
    // (a primary that came back empty answers writes without READONLY until it is demoted).
    void asyncConnectionsLeaveANodeTheSentinelsNoLongerName()
    {
        idemtest::LocalSentinelSet set(0); // node 0 alone: every WAIT 1 falls short
        idem::LocalServer other;            // what the sentinels will name instead
        idem::AsyncPool pool(quick(set.options()), 1);
        idem::StoreOptions so{.keyNamespace = "named"};
        so.minReplicas = 1;
        so.replicaTimeout = idem::Millis(100);
        idem::AsyncStore store(pool, so);
        // on node 0, which the sentinels name: asked, and kept
        QVERIFY_THROWS_EXCEPTION(idem::NotReplicatedError, store.acquire("a").get());
        idem::Connection onOther(other.connectionOptions());
        const auto scriptCalls = [&] {
            return idemtest::commandCalls(onOther, "evalsha") + idemtest::commandCalls(onOther, "eval");
        };
        QCOMPARE(scriptCalls(), 0LL);
        for (int i = 0; i < 3; ++i) { // now every sentinel names the other server
            idem::Connection s(set.sentinel(i).connectionOptions());
            s.checked({"SENTINEL", "REMOVE", "mymaster"});
            s.checked({"SENTINEL", "MONITOR", "mymaster", "127.0.0.1", std::to_string(other.port()), "2"});
        }
        QThread::msleep(1100); // the connection asks at most once a second
        // the next short call makes it ask; a call after that goes to the other server
        QElapsedTimer t;
        t.start();
        int calls = 0;
        while (scriptCalls() == 0 && t.elapsed() < 10000) {
            try {
                store.acquire("b-" + std::to_string(calls++)).get();
            } catch (const idem::Error&) {
                // not replicated (on either node), or closed while the connection moved
            }
        }
        QVERIFY2(scriptCalls() > 0, "the connection stayed on a node the sentinels no longer name");
        QVERIFY(calls <= 3);
    }

    // Without minReplicas too: a primary a planned failover replaced keeps taking writes until the
    // sentinels demote it (seconds later, and every write in between is lost). Blocking and
    // asynchronous connections ask the sentinels at most once a second before a call, and leave a
    // node they no longer name: here it is never demoted, and the calls go to the one named.
    void connectionsLeaveANodeTheSentinelsReplaced()
    {
        idemtest::LocalSentinelSet set(0);
        idem::LocalServer other;
        idem::ConnectionPool blockingPool(quick(set.options()), 1);
        idem::AsyncPool asyncPool(quick(set.options()), 1);
        const idem::StoreOptions so{.keyNamespace = "replaced"};
        idem::Store store(blockingPool, so);
        idem::AsyncStore async(asyncPool, so);
        QCOMPARE(store.acquire("before-1").status, idem::AcquireStatus::Acquired);
        QCOMPARE(async.acquire("before-2").get().status, idem::AcquireStatus::Acquired);
        for (int i = 0; i < 3; ++i) {
            idem::Connection s(set.sentinel(i).connectionOptions());
            s.checked({"SENTINEL", "REMOVE", "mymaster"});
            s.checked({"SENTINEL", "MONITOR", "mymaster", "127.0.0.1", std::to_string(other.port()), "2"});
        }
        QThread::msleep(1100);
        const auto onOther = [&](const std::string& id) {
            idem::Connection c(other.connectionOptions());
            return idem::reply::isString(c.checked({"HGET", "replaced:{" + id + "}", "state"}).get());
        };
        // at most one call fails closed while a connection moves; the next is on the named node
        const auto lands = [&](const std::function<void(const std::string&)>& call, const std::string& prefix) {
            for (int i = 0; i < 3; ++i) {
                const std::string id = prefix + std::to_string(i);
                try {
                    call(id);
                } catch (const idem::Error&) {
                    continue;
                }
                return onOther(id);
            }
            return false;
        };
        QVERIFY2(lands([&](const std::string& id) { store.acquire(id); }, "blocking-"),
                 "the blocking connection stayed on a node the sentinels no longer name");
        QVERIFY2(lands([&](const std::string& id) { async.acquire(id).get(); }, "async-"),
                 "the asynchronous connection stayed on a node the sentinels no longer name");
    }

    // minReplicas with the replica frozen: the lock is not acknowledged, so it is released and the
    // work does not run; thawed, it runs once
    void minReplicasWithAFrozenReplica()
    {
        idem::LocalServer primary;
        idem::LocalServerOptions ro;
        ro.extraArgs = {"--replicaof", "127.0.0.1", std::to_string(primary.port())};
        idem::LocalServer replica(ro);
        {
            idem::Connection c(primary.connectionOptions());
            QTRY_VERIFY_WITH_TIMEOUT(idem::reply::str(c.checked({"INFO", "replication"}).get()).find("state=online") !=
                                         std::string::npos,
                                     10000);
        }
        idem::ConnectionPool pool(quick(primary.connectionOptions()), 2);
        idem::StoreOptions so{.keyNamespace = "frozen", .lease = idem::Millis(3000)};
        so.minReplicas = 1;
        so.replicaTimeout = idem::Millis(300);
        idem::Store store(pool, so);
        idem::Executor ex(store);
        int runs = 0;
        const auto work = [&](const idem::WorkContext&) {
            ++runs;
            return idem::WorkResult::success("ok");
        };
        replica.pause();
        const auto refused = ex.execute("z", "", work);
        QCOMPARE(refused.kind, OutcomeKind::StoreUnavailable);
        QVERIFY2(refused.error.find("acknowledged by 0 of the 1 replica") != std::string::npos, refused.error.c_str());
        QCOMPARE(runs, 0);
        QVERIFY(!store.inspect("z")); // the lock was given back
        QVERIFY_THROWS_EXCEPTION(idem::NotReplicatedError, store.acquire("z2", ""));
        replica.resume();
        QElapsedTimer thawed;
        thawed.start();
        bool acked = false;
        while (!acked && thawed.elapsed() < 10000) {
            try {
                acked = store.acquire("probe", "").status == idem::AcquireStatus::Acquired;
            } catch (const idem::NotReplicatedError&) {
                QThread::msleep(50); // the replica catches up
            }
        }
        QVERIFY(acked);
        QCOMPARE(ex.execute("z", "", work).kind, OutcomeKind::Executed);
        QCOMPARE(ex.execute("z", "", work).kind, OutcomeKind::Replayed);
        QCOMPARE(runs, 1);
        // idemctl: refused with 69 (CMD not run) while frozen
        replica.pause();
        const auto cli = idemtest::runIdemctl({u"--url"_qs, QString::fromStdString(primary.url()), u"run"_qs,
                                               u"--key"_qs, u"frozen-cli"_qs, u"--min-replicas"_qs, u"1"_qs,
                                               u"--replica-timeout"_qs, u"200ms"_qs, u"--"_qs, u"echo"_qs, u"ran"_qs});
        replica.resume();
        QCOMPARE(cli.exitCode, 69);
        QVERIFY(cli.out.isEmpty());
    }
};

QTEST_GUILESS_MAIN(TestSentinel)
#include "tst_sentinel.moc"
