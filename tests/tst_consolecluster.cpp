// The console on a Redis Cluster (3 primaries, 3 replicas) whose nodes die: a primary that is not
// the URL's makes the data not live until the scan has followed the failover and notifications come
// from the promoted replica (its rows read again, never left to turn stale while their locks are
// renewed); the URL's own node dying is survived through another node the console knew, and the
// status bar never goes on saying "connected to" it once the console knows it is gone. A node that
// hangs (stopped, not dead) is noticed as a dead one is. FAILED rows show their error whichever
// node serves them.
#include "consoletest.h"

#include <QRegularExpression>
#include <QScopeGuard>

#include <atomic>
#include <thread>

namespace {

constexpr idem::Millis kLease{10'000};

QString address(idem::LocalServer& s) { return u"127.0.0.1:%1"_s.arg(s.port()); }

// The primary serving `slot` as node `via` sees it, "" when it cannot say
QString primaryOf(idemtest::LocalCluster& cluster, int via, int slot)
{
    try {
        idem::Connection c(cluster.node(via));
        for (const auto& shard : idem::clusterShards(c))
            for (const auto& [first, last] : shard.ranges)
                if (slot >= first && slot <= last)
                    return QString::fromStdString(shard.primary);
    } catch (const idem::Error&) {
    }
    return {};
}

// Whether `text` names the node at `address` (not one whose port merely starts the same)
bool names(const QString& text, const QString& address)
{
    return text.contains(QRegularExpression(QRegularExpression::escape(address) + u"(?!\\d)"_s));
}

// The shard of a 3-primary LocalCluster serving the record of `id` (node i has slots 16384*i/3 .. 16384*(i+1)/3 - 1)
int shardOf(const idem::Store& store, const std::string& id) { return (idem::hashSlot(store.recordKey(id)) * 3 + 2) / 16384; }

// Ids whose records are on every shard of a 3-primary cluster, `perShard` each, by shard
std::map<int, std::vector<std::string>> idsOnEveryShard(const idem::Store& store, int perShard)
{
    std::map<int, std::vector<std::string>> ids;
    for (int i = 0, found = 0; found < 3 * perShard; ++i) {
        const std::string id = "rec-" + std::to_string(i);
        auto& of = ids[shardOf(store, id)];
        if (static_cast<int>(of.size()) == perShard)
            continue;
        of.push_back(id);
        ++found;
    }
    return ids;
}

} // namespace

class TestConsoleCluster : public ConsoleTest {
    Q_OBJECT

    static QString liveTextOf(const MainWindow& w) { return w.findChild<ElidedLabel*>(u"liveUpdates"_s)->text(); }

    // A console shown on `cluster` (node 0's URL) once it is current, live with keyspace
    // notifications and showing `rows` rows; null, the test failed saying what was missing, when
    // not within seconds
    std::unique_ptr<MainWindow> openLive(idemtest::LocalCluster& cluster, int rows)
    {
        MainWindow::Options o = options();
        o.connection.url = QString::fromStdString(cluster.url(0));
        auto w = std::make_unique<MainWindow>(o);
        w->show();
        const auto missing = [&](const QString& what) {
            QTest::qFail(qPrintable(what + u": "_s + linkText(*w) + u" / "_s + liveTextOf(*w)), __FILE__, __LINE__);
            return nullptr;
        };
        if (!QTest::qWaitFor([&] { return w->freshness() == MainWindow::Freshness::Live; }, 15000))
            return missing(u"never current"_s);
        if (!QTest::qWaitFor([&] { return w->model()->rowCount() == rows; }, 5000))
            return missing(u"%1 rows, not %2"_s.arg(w->model()->rowCount()).arg(rows));
        if (!QTest::qWaitFor([&] { return liveTextOf(*w).startsWith(u"live: keyspace notifications"_s); }, 5000))
            return missing(u"not live"_s);
        return w;
    }

private slots:
    void initTestCase() { setUpCase(); }
    void init() { ns = idemtest::uniqueNamespace("ccl"); }

    void nodesDieUnderTheConsole()
    {
        idemtest::LocalCluster cluster(3, 3);
        for (int i = 0; i < cluster.size(); ++i) // (the console never turns them on: the operator does)
            idem::Connection(cluster.node(i)).checked({"CONFIG", "SET", "notify-keyspace-events", "KA"});

        // three locks on every shard (node i serves slots 16384*i/3 ..), held and renewed every second
        idem::ConnectionOptions storeNode = cluster.node(2); // a node that stays up
        storeNode.connectTimeout = idem::Millis(500);
        storeNode.commandTimeout = idem::Millis(1000);
        idem::ConnectionPool lockPool(storeNode, 1);
        idem::Store locks(lockPool, idem::StoreOptions{.keyNamespace = ns});
        std::vector<idem::Ticket> tickets;
        std::map<int, QStringList> keysOfShard;
        for (int i = 0, found = 0; found < 9; ++i) {
            const std::string id = "lock-" + std::to_string(i);
            const int shard = idem::hashSlot(locks.recordKey(id)) * 3 / 16384;
            if (keysOfShard[shard].size() == 3)
                continue;
            const auto a = locks.acquire(id, "", kLease);
            QCOMPARE(a.status, idem::AcquireStatus::Acquired);
            tickets.push_back(a.ticket);
            keysOfShard[shard] << QString::fromStdString(locks.recordKey(id));
            ++found;
        }
        cluster.waitForReplication(); // a replica that never synced takes no failover
        std::atomic<int> renewedShard1{0}; // renewals of shard 1's locks that succeeded
        std::atomic<bool> renewing{true};
        std::thread renewer([&] {
            idem::ConnectionPool pool(storeNode, 1);
            idem::Store store(pool, idem::StoreOptions{.keyNamespace = ns});
            while (renewing) {
                for (const auto& t : tickets) {
                    try {
                        if (store.renew(t, kLease).status == idem::OwnerStatus::Ok &&
                            idem::hashSlot(store.recordKey(t.id)) * 3 / 16384 == 1)
                            ++renewedShard1;
                    } catch (const idem::Error&) { // a shard failing over: the next round
                    }
                }
                for (int i = 0; i < 10 && renewing; ++i)
                    std::this_thread::sleep_for(std::chrono::milliseconds(100));
            }
        });
        const auto stopRenewing = qScopeGuard([&] {
            renewing = false;
            renewer.join();
        });

        const auto window = openLive(cluster, 9);
        if (!window)
            return;
        MainWindow& w = *window;
        const auto liveText = [&] { return liveTextOf(w); };

        // A primary that is not the URL's node dies: said within seconds, naming it
        const QString dead = address(cluster.server(1));
        cluster.server(1).kill();
        QElapsedTimer sinceKill;
        sinceKill.start();
        QTRY_VERIFY2_WITH_TIMEOUT(!liveText().startsWith(u"live:"_s) && liveText().contains(dead), qPrintable(liveText()),
                                  5000);
        QVERIFY2(w.bannerText().contains(dead), qPrintable(w.bannerText()));
        QCOMPARE(w.freshness(), MainWindow::Freshness::Live); // the other shards' data is current

        // The failover: its replica serves slots 5461.. now; the console says it read them there,
        // and is live again with notifications from it
        QTRY_VERIFY_WITH_TIMEOUT(!primaryOf(cluster, 2, 5461).isEmpty() && primaryOf(cluster, 2, 5461) != dead, 30000);
        QTRY_VERIFY2_WITH_TIMEOUT(w.bannerText().contains(u"slots from 5461"_s), qPrintable(w.bannerText()), 20000);
        QTRY_VERIFY2_WITH_TIMEOUT(liveText().startsWith(u"live: keyspace notifications"_s), qPrintable(liveText()),
                                  20000);
        QVERIFY2(!w.bannerText().contains(u"Not live"_s), qPrintable(w.bannerText()));

        // Past the lease the killed shard's locks had when it died: renewed on the promoted replica,
        // and shown so, never STALE
        const int renewedBefore = renewedShard1;
        QTRY_VERIFY_WITH_TIMEOUT(renewedShard1 > renewedBefore, 10000);
        while (sinceKill.elapsed() < kLease.count() + 3000)
            QTest::qWait(200);
        for (int i = 0; i < 6; ++i) {
            for (const QString& key : std::as_const(keysOfShard[1])) {
                const int r = w.model()->rowOfKey(key);
                QVERIFY2(r >= 0, qPrintable(key));
                const QModelIndex state = w.model()->index(r, KeyTableModel::State);
                QVERIFY2(!w.model()->data(state, KeyTableModel::StaleRole).toBool(),
                         qPrintable(key + u" is shown stale: "_s + w.model()->data(state).toString()));
                QCOMPARE(w.model()->row(r).state, idem::RecordState::Started);
            }
            QTest::qWait(500);
        }

        // The URL's own node dies: the console goes on through another node it knew, and says so.
        // Once it knows the node is gone (its notifications lost), the status bar no longer says
        // "connected to" it: what it shows is watched until the console is through another node.
        const QString seed = address(cluster.server(0));
        QStringList untrue;
        QTimer watch;
        connect(&watch, &QTimer::timeout, &watch, [&] {
            if (linkText(w).startsWith(u"● connected to "_s) && names(liveText(), seed))
                untrue << linkText(w) + u" / "_s + liveText();
        });
        watch.start(10);
        cluster.server(0).kill();
        QElapsedTimer sinceSeedKill;
        sinceSeedKill.start();
        QTRY_VERIFY2_WITH_TIMEOUT(w.freshness() == MainWindow::Freshness::Live && linkText(w).contains(u"through node"_s),
                                  qPrintable(linkText(w) + u" / "_s + w.bannerText()), 20000);
        watch.stop();
        QVERIFY2(untrue.isEmpty(), qPrintable(untrue.join(u"\n"_s)));
        QVERIFY2(!linkText(w).contains(u"through node "_s + seed), qPrintable(linkText(w)));
        QVERIFY2(sinceSeedKill.elapsed() < 20000, qPrintable(QString::number(sinceSeedKill.elapsed())));
        QTRY_VERIFY2_WITH_TIMEOUT(liveText().startsWith(u"live: keyspace notifications"_s), qPrintable(liveText()),
                                  20000);
        for (const auto& [shard, keys] : keysOfShard)
            for (const QString& key : keys)
                QVERIFY2(w.model()->rowOfKey(key) >= 0, qPrintable(key));
    }

    // A primary that stops answering without closing its connections (SIGSTOP: a hung process, or a
    // network cut) is noticed as a dead one is: not live, naming it, within seconds; live again once
    // its replica has taken over.
    void aHungNodeIsNoticed()
    {
        idemtest::LocalCluster cluster(3, 3);
        for (int i = 0; i < cluster.size(); ++i)
            idem::Connection(cluster.node(i)).checked({"CONFIG", "SET", "notify-keyspace-events", "KA"});
        idem::ConnectionOptions storeNode = cluster.node(2); // a node that stays up
        storeNode.commandTimeout = idem::Millis(1000);
        idem::ConnectionPool pool(storeNode, 1);
        idem::Store store(pool, idem::StoreOptions{.keyNamespace = ns});
        const auto ids = idsOnEveryShard(store, 2);
        for (const auto& [shard, of] : ids)
            for (const std::string& id : of)
                store.complete(store.acquire(id).ticket, "{}");
        cluster.waitForReplication();

        const auto window = openLive(cluster, 6);
        if (!window)
            return;
        MainWindow& w = *window;
        const auto liveText = [&] { return liveTextOf(w); };

        const QString hung = address(cluster.server(1));
        cluster.server(1).pause(); // SIGSTOP: its connections stay open, nothing answers
        const auto resume = qScopeGuard([&] { cluster.server(1).resume(); }); // also when a check fails
        QElapsedTimer sinceStop;
        sinceStop.start();
        // a PING unanswered within the command timeout (3 s), after a second of quiet
        QTRY_VERIFY2_WITH_TIMEOUT(!liveText().startsWith(u"live:"_s) && names(liveText(), hung), qPrintable(liveText()),
                                  10000);
        QVERIFY2(names(w.bannerText(), hung), qPrintable(w.bannerText()));
        QCOMPARE(w.freshness(), MainWindow::Freshness::Live); // the other shards' data is current
        qInfo("not live, naming %s, %lld ms after it stopped", qPrintable(hung), sinceStop.elapsed());

        // its replica takes over: notifications from it, live again; a change there shows at once
        QTRY_VERIFY_WITH_TIMEOUT(!primaryOf(cluster, 2, 5461).isEmpty() && primaryOf(cluster, 2, 5461) != hung, 30000);
        QTRY_VERIFY2_WITH_TIMEOUT(liveText().startsWith(u"live: keyspace notifications"_s), qPrintable(liveText()),
                                  30000);
        QVERIFY2(!w.bannerText().contains(u"Not live"_s), qPrintable(w.bannerText()));
        const std::string changed = "moved-on";
        std::string key;
        for (int i = 0; key.empty(); ++i) // an id whose record the promoted replica serves
            if (const std::string id = changed + std::to_string(i); shardOf(store, id) == 1)
                key = id;
        const auto acquired = [&] { // (the store's own connections may still try the stopped node)
            try {
                const auto status = store.acquire(key).status;
                return status == idem::AcquireStatus::Acquired || status == idem::AcquireStatus::InProgress;
            } catch (const idem::Error&) {
                return false;
            }
        };
        QTRY_VERIFY_WITH_TIMEOUT(acquired(), 10000);
        QTRY_VERIFY_WITH_TIMEOUT(w.model()->rowOfKey(QString::fromStdString(store.recordKey(key))) >= 0, 3000);

        // the stopped node comes back (a replica now): nothing changes for the console
        cluster.server(1).resume();
        QTest::qWait(3000);
        QVERIFY2(liveText().startsWith(u"live: keyspace notifications"_s), qPrintable(liveText()));
    }

    // The URL's node dies while the console still has notifications of its keys to read (locks on
    // every shard renewed many times a second): it reconnects through another node once; those
    // notifications, queued before the reconnect, are not read on the dead node afterwards, which
    // dropped the new connection a second time. Live again once the replica took over.
    void theURLsNodeDiesWithNotificationsQueued()
    {
        idemtest::LocalCluster cluster(3, 3);
        for (int i = 0; i < cluster.size(); ++i)
            idem::Connection(cluster.node(i)).checked({"CONFIG", "SET", "notify-keyspace-events", "KA"});
        idem::ConnectionOptions storeNode = cluster.node(2); // a node that stays up
        storeNode.connectTimeout = idem::Millis(500);
        storeNode.commandTimeout = idem::Millis(1000);
        idem::ConnectionPool pool(storeNode, 1);
        idem::Store store(pool, idem::StoreOptions{.keyNamespace = ns});
        std::vector<idem::Ticket> tickets;
        for (const auto& [shard, of] : idsOnEveryShard(store, 2))
            for (const std::string& id : of)
                tickets.push_back(store.acquire(id, "", kLease).ticket);
        cluster.waitForReplication();
        std::atomic<bool> renewing{true};
        std::thread renewer([&] {
            idem::ConnectionPool renewPool(storeNode, 1);
            idem::Store renewStore(renewPool, idem::StoreOptions{.keyNamespace = ns});
            while (renewing) {
                for (const auto& t : tickets) {
                    try {
                        renewStore.renew(t, kLease);
                    } catch (const idem::Error&) { // shard 0 failing over
                    }
                }
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
            }
        });
        const auto stopRenewing = qScopeGuard([&] {
            renewing = false;
            renewer.join();
        });

        const auto window = openLive(cluster, 6);
        if (!window)
            return;
        MainWindow& w = *window;
        QSignalSpy links(&w, &MainWindow::linkStateChanged);
        const auto reconnects = [&] {
            return std::count_if(links.begin(), links.end(), [](const QList<QVariant>& change) {
                return change.at(0).value<ConsoleWorker::Link>() == ConsoleWorker::Link::Retrying;
            });
        };
        const QString seed = address(cluster.server(0));
        cluster.server(0).kill();
        QTRY_VERIFY2_WITH_TIMEOUT(w.freshness() == MainWindow::Freshness::Live && linkText(w).contains(u"through node"_s),
                                  qPrintable(linkText(w) + u" / "_s + w.bannerText()), 20000);
        // until the replica serves shard 0 and its notifications come: the keys the dead node
        // served are asked for (notifications, scans) while the cluster still names it
        QTRY_VERIFY_WITH_TIMEOUT(!primaryOf(cluster, 2, 0).isEmpty() && primaryOf(cluster, 2, 0) != seed, 30000);
        QTRY_VERIFY2_WITH_TIMEOUT(liveTextOf(w).startsWith(u"live: keyspace notifications"_s), qPrintable(liveTextOf(w)),
                                  20000);
        QTest::qWait(1000);
        QVERIFY2(reconnects() == 1, qPrintable(u"%1 reconnects; now: %2"_s.arg(reconnects()).arg(linkText(w))));
        QCOMPARE(lastLink(links), ConsoleWorker::Link::Connected);
    }

    // Closing the console while it subscribes again to a node that hangs (SIGSTOP: the kernel accepts
    // the connection, nothing answers): the window goes at once, not after the subscription's
    // timeouts (connect, then each command: seconds).
    void closesAtOnceWhileSubscribingToAHungNode()
    {
        idemtest::LocalCluster cluster(3);
        for (int i = 0; i < cluster.size(); ++i)
            idem::Connection(cluster.node(i)).checked({"CONFIG", "SET", "notify-keyspace-events", "KA"});
        auto window = openLive(cluster, 0);
        if (!window)
            return;
        const QString hung = address(cluster.server(1));
        cluster.server(1).pause();
        const auto resume = qScopeGuard([&] { cluster.server(1).resume(); });
        // its listener's PING unanswered: said, and then the worker subscribes to it again (rescan)
        QTRY_VERIFY2_WITH_TIMEOUT(liveTextOf(*window).contains(u"lost"_s) && names(liveTextOf(*window), hung),
                                  qPrintable(liveTextOf(*window)), 10000);
        QTest::qWait(500);
        QElapsedTimer closing;
        closing.start();
        window.reset();
        const qint64 ms = closing.elapsed();
        QVERIFY2(ms < 1500, qPrintable(u"closing took %1 ms"_s.arg(ms)));
    }

    // A FAILED record's error is read where the record is: on the node serving its slot, whichever
    // node the URL names; read by the scan, and again when a notification says a key changed.
    void failedRowsShowTheirErrorOnEveryNode()
    {
        idemtest::LocalCluster cluster(3);
        for (int i = 0; i < cluster.size(); ++i)
            idem::Connection(cluster.node(i)).checked({"CONFIG", "SET", "notify-keyspace-events", "KA"});
        idem::ConnectionPool pool(cluster.node(0), 1);
        idem::Store store(pool, idem::StoreOptions{.keyNamespace = ns});
        const auto ids = idsOnEveryShard(store, 2);
        const auto errorOf = [](const std::string& id) { return "boom: " + id + " refused by the bank"; };
        const auto failAll = [&](std::size_t which) { // the first or the second id of each shard
            for (const auto& [shard, of] : ids) {
                const auto a = store.acquire(of[which]);
                QCOMPARE(a.status, idem::AcquireStatus::Acquired);
                QCOMPARE(store.fail(a.ticket, idem::FailPolicy::Terminal, errorOf(of[which])).status, idem::OwnerStatus::Ok);
            }
        };
        failAll(0); // before the console reads them: the scan's

        MainWindow::Options o = options();
        o.connection.url = QString::fromStdString(cluster.url(0));
        MainWindow w(o);
        w.show();
        const auto errorsShown = [&](std::size_t which, QString* missing) {
            for (const auto& [shard, of] : ids) {
                const QString key = QString::fromStdString(store.recordKey(of[which]));
                const int r = w.model()->rowOfKey(key);
                const QString note = r < 0 ? QString() : w.model()->index(r, KeyTableModel::Note).data().toString();
                if (note != QString::fromStdString(errorOf(of[which]))) {
                    *missing = u"shard %1: %2 shows “%3”"_s.arg(shard).arg(key, r < 0 ? u"(no row)"_s : note);
                    return false;
                }
            }
            return true;
        };
        QTRY_COMPARE_WITH_TIMEOUT(w.freshness(), MainWindow::Freshness::Live, 15000);
        QTRY_COMPARE_WITH_TIMEOUT(w.model()->rowCount(), 3, 5000);
        QString missing;
        QTRY_VERIFY2_WITH_TIMEOUT(errorsShown(0, &missing), qPrintable(missing), 5000);
        QTRY_VERIFY_WITH_TIMEOUT(w.findChild<ElidedLabel*>(u"liveUpdates"_s)->text().startsWith(u"live:"_s), 5000);

        failAll(1); // while it watches: read because notifications named them
        QTRY_COMPARE_WITH_TIMEOUT(w.model()->rowCount(), 6, 5000);
        QTRY_VERIFY2_WITH_TIMEOUT(errorsShown(1, &missing), qPrintable(missing), 5000);
    }

};

QTEST_MAIN(TestConsoleCluster)
#include "tst_consolecluster.moc"
