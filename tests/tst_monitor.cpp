// The monitor engine (SCAN + classify) and idemctl list / stats / bulk purge, on a real Redis.
#include "idem/engine/executor.h"
#include "idem/monitor/keyspacelistener.h"
#include "idem/redis/localserver.h"
#include "idem/monitor/monitor.h"
#include "idem/engine/store.h"
#include "testsupport.h"

#include <QElapsedTimer>
#include <QJsonDocument>
#include <QJsonObject>
#include <QScopeGuard>
#include <QtTest>
#include <atomic>
#include <map>
#include <mutex>
#include <thread>

using idem::RecordState;

class TestMonitor : public QObject {
    Q_OBJECT

    std::unique_ptr<idem::ConnectionPool> pool;
    std::unique_ptr<idem::Connection> raw;

    std::map<std::string, idem::Record> snapshot(idem::Monitor& m, std::size_t* pages = nullptr)
    {
        std::map<std::string, idem::Record> all;
        std::string cursor = "0";
        std::size_t n = 0;
        do {
            auto page = m.scanPage(cursor);
            for (auto& r : page.records)
                all[r.id] = r;
            cursor = page.cursor;
            ++n;
        } while (cursor != "0");
        if (pages)
            *pages = n;
        return all;
    }

    // A store with one record in every state and format idem knows, and the malformed ones.
    void seed(const std::string& ns)
    {
        idem::StoreOptions so;
        so.keyNamespace = ns;
        idem::Store store(*pool, so);
        idem::Executor ex(store);
        ex.execute("completed", "", [](auto&) { return idem::WorkResult::success("r"); });
        store.acquire("live", "", idem::Millis(60000));
        store.acquire("stale", "", idem::Millis(1));
        auto f = store.acquire("failed-retry", "");
        store.fail(f.ticket, idem::FailPolicy::Retryable, "x");
        auto t = store.acquire("failed-term", "");
        store.fail(t.ticket, idem::FailPolicy::Terminal, "x");
        store.purge("completed-then-purged", "t"); // leaves nothing (no record); meta only if it existed
        auto k = [&](const char* id) { return ns + ":{" + id + "}"; };
        raw->checked({"SET", k("json-started"), R"({"status":"PENDING","lock_expiry":9999999999})", "EX", "600"});
        raw->checked({"SET", k("json-stale"), R"({"status":"PROCESSING","lock_expiry":1600000000})", "EX", "600"});
        raw->checked({"SET", k("json-done"), R"({"status":"COMPLETED","response_body":"ok"})", "EX", "600"});
        raw->checked({"SET", k("json-failed"), R"({"status":"FAILED"})", "EX", "600"});
        raw->checked({"SET", k("plain"), "IN_PROGRESS", "EX", "600"});
        raw->checked({"SET", k("bad-json"), R"({"status":)", "EX", "600"});
        raw->checked({"SET", k("binary"), std::string("\x00\x01\xfe\xff", 4), "EX", "600"});
        raw->checked({"RPUSH", k("list"), "a"});
        raw->checked({"XADD", k("stream"), "*", "f", "v"});
        raw->checked({"SET", k("huge"), std::string(10 * 1024 * 1024, 'h')});
        raw->checked({"HSET", k("foreign-hash"), "owner", "someone"});
        // a meta key, which is not a record
        store.acquire("purged", "");
        store.purge("purged", "t");
    }

private slots:
    void initTestCase()
    {
        pool = std::make_unique<idem::ConnectionPool>(idemtest::sharedRedis(), 4);
        raw = std::make_unique<idem::Connection>(idemtest::sharedRedis());
    }

    void classifiesEveryStateAndFormat()
    {
        const std::string ns = idemtest::uniqueNamespace("mon");
        seed(ns);
        QThread::msleep(5); // "stale" had a 1 ms lease
        idem::Connection c(idemtest::sharedRedis());
        idem::MonitorOptions mo;
        mo.keyNamespace = ns;
        mo.scanCount = 5; // many small pages
        idem::Monitor m(c, mo);
        std::size_t pages = 0;
        auto all = snapshot(m, &pages);
        QVERIFY(pages > 1);
        QCOMPARE(all.size(), std::size_t(16));
        QVERIFY(!all.count("purged")); // its meta key is not listed
        auto expect = [&](const char* id, RecordState s, idem::RecordFormat f, bool stale) {
            QVERIFY2(all.count(id), id);
            const auto& r = all.at(id);
            QVERIFY2(r.state == s, id);
            QVERIFY2(r.format == f, id);
            QVERIFY2(r.stale == stale, id);
        };
        using F = idem::RecordFormat;
        expect("completed", RecordState::Completed, F::Native, false);
        expect("live", RecordState::Started, F::Native, false);
        expect("stale", RecordState::Started, F::Native, true);
        expect("failed-retry", RecordState::Failed, F::Native, false);
        expect("failed-term", RecordState::Failed, F::Native, false);
        QVERIFY(all.at("failed-term").terminal);
        expect("json-started", RecordState::Started, F::StatusJson, false);
        expect("json-stale", RecordState::Started, F::StatusJson, true);
        expect("json-done", RecordState::Completed, F::StatusJson, false);
        expect("json-failed", RecordState::Failed, F::StatusJson, false);
        expect("plain", RecordState::Started, F::Plain, false);
        // in idem's namespace, what should be a record and cannot be read is malformed; other
        // types are foreign (valid keys of something else), never malformed
        for (const char* id : {"bad-json", "binary", "huge", "foreign-hash"}) {
            QVERIFY2(all.at(id).state == RecordState::Malformed, id);
            QVERIFY2(!all.at(id).reason.empty(), id);
        }
        for (const char* id : {"list", "stream"}) {
            QVERIFY2(all.at(id).state == RecordState::Foreign, id);
            QVERIFY2(all.at(id).reason.find(id) != std::string::npos, all.at(id).reason.c_str());
        }
        // a 10 MB value is classified from its first and last bytes, never read whole
        QVERIFY(all.at("huge").partial);
        QCOMPARE(all.at("huge").valueBytes, std::int64_t(10 * 1024 * 1024));
        // the stored response is never read by the monitor
        QVERIFY(!all.at("completed").response);
        // the times it shows: a first attempt started at its fence (µs), a completed record finished
        // its retention (retention_ms) before its TTL runs out, a failed one when finished_ms says
        const auto& done = all.at("completed");
        QCOMPARE(done.startedMs, std::optional<std::int64_t>(done.fence / 1000));
        QVERIFY(done.finishedMs && *done.startedMs <= *done.finishedMs && *done.finishedMs < *done.startedMs + 5000);
        const auto& failed = all.at("failed-retry");
        QVERIFY(failed.finishedMs && failed.startedMs && *failed.finishedMs >= *failed.startedMs);
        // keys without TTL are flagged
        QCOMPARE(all.at("list").ttlMs, std::int64_t(-1));
        QCOMPARE(all.at("huge").ttlMs, std::int64_t(-1));
        QVERIFY(all.at("completed").ttlMs > 0);

        idem::Stats s;
        for (const auto& [id, r] : all)
            s.add(r);
        QCOMPARE(s.total, std::size_t(16));
        QCOMPARE(s.started, std::size_t(5));
        QCOMPARE(s.stale, std::size_t(2));
        QCOMPARE(s.completed, std::size_t(2));
        QCOMPARE(s.failed, std::size_t(3));
        QCOMPARE(s.malformed, std::size_t(4));
        QCOMPARE(s.foreign, std::size_t(2));
        QCOMPARE(s.noTtl, std::size_t(4)); // list, stream, huge, foreign-hash
        QVERIFY(idem::matches(all.at("stale"), idem::StateFilter::Stale));
        QVERIFY(idem::matches(all.at("stale"), idem::StateFilter::Started));
        QVERIFY(!idem::matches(all.at("live"), idem::StateFilter::Stale));
    }

    void keysExpiringMidScan()
    {
        const std::string ns = idemtest::uniqueNamespace("exp");
        std::vector<std::vector<std::string>> cmds;
        for (int i = 0; i < 3000; ++i)
            cmds.push_back({"SET", ns + ":{k" + std::to_string(i) + "}", "COMPLETED", "PX",
                            std::to_string(1 + (i % 60))});
        std::vector<std::vector<std::string_view>> views;
        for (const auto& c : cmds)
            views.emplace_back(c.begin(), c.end());
        raw->pipeline(views);
        idem::Connection c(idemtest::sharedRedis());
        idem::MonitorOptions mo;
        mo.keyNamespace = ns;
        mo.scanCount = 50;
        idem::Monitor m(c, mo);
        std::size_t seen = 0;
        std::string cursor = "0";
        do {
            auto page = m.scanPage(cursor);
            for (const auto& r : page.records) {
                QVERIFY2(r.state == RecordState::Completed, r.reason.c_str()); // never "malformed"
                QVERIFY(r.ttlMs >= 0); // 0: expires within the millisecond
                ++seen;
            }
            cursor = page.cursor;
            QThread::msleep(1);
        } while (cursor != "0");
        QVERIFY(seen < 3000); // some expired while we scanned, and were dropped, not misread
    }

    // TYPE refused for one key alone (an ACL selector lets this user run TYPE on one list and not
    // the other): that key is left out and the rest of the page stands. It used to throw the
    // ReplyError and lose the page.
    void typeRefusedForOneKey()
    {
        const std::string ns = idemtest::uniqueNamespace("ty"), user = ns + "-reader";
        raw->checked({"RPUSH", ns + ":{readable}", "a"});
        raw->checked({"RPUSH", ns + ":{refused}", "a"});
        raw->checked({"SET", ns + ":{json}", R"({"status":"COMPLETED"})"});
        raw->checked({"ACL", "SETUSER", user, "on", ">pw", "~*", "&*", "+@all", "-type",
                      "(+type ~" + ns + ":{readable})"});
        const auto dropUser = qScopeGuard([&] { raw->command({"ACL", "DELUSER", user}); });
        idem::ConnectionOptions o = idemtest::sharedRedis();
        o.user = user;
        o.password = "pw";
        idem::Connection c(o);
        QVERIFY(idem::reply::isError(c.command({"TYPE", ns + ":{refused}"}).get())); // what the test needs
        QCOMPARE(idem::reply::str(c.command({"TYPE", ns + ":{readable}"}).get()), std::string("list"));
        idem::MonitorOptions mo;
        mo.keyNamespace = ns;
        idem::Monitor m(c, mo);
        const auto all = snapshot(m);
        QCOMPARE(all.size(), std::size_t(2));
        QCOMPARE(all.at("readable").state, RecordState::Foreign);
        QCOMPARE(all.at("json").state, RecordState::Completed);
    }

    // Keys outside the user's key patterns (a role scoped to part of the namespace): SCAN lists
    // them, PTTL refuses them; they are left out and the rest of the page stands. It used to throw
    // and lose the page.
    void keysOutsideTheUsersPatterns()
    {
        const std::string ns = idemtest::uniqueNamespace("pat"), user = ns + "-reader";
        raw->checked({"SET", ns + ":{mine-1}", R"({"status":"COMPLETED"})"});
        raw->checked({"SET", ns + ":{theirs}", R"({"status":"COMPLETED"})"});
        raw->checked({"SET", ns + ":{mine-2}", R"({"status":"IN_PROGRESS"})"});
        raw->checked({"ACL", "SETUSER", user, "on", ">pw", "~" + ns + ":{mine*", "&*", "+@all"});
        const auto dropUser = qScopeGuard([&] { raw->command({"ACL", "DELUSER", user}); });
        idem::ConnectionOptions o = idemtest::sharedRedis();
        o.user = user;
        o.password = "pw";
        idem::Connection c(o);
        QVERIFY(idem::reply::isError(c.command({"PTTL", ns + ":{theirs}"}).get())); // what the test needs
        idem::MonitorOptions mo;
        mo.keyNamespace = ns;
        idem::Monitor m(c, mo);
        const auto all = snapshot(m);
        QCOMPARE(all.size(), std::size_t(2));
        QCOMPARE(all.at("mine-1").state, RecordState::Completed);
        QVERIFY(all.count("mine-2") == 1);
    }

    void guardedUnlink()
    {
        const std::string ns = idemtest::uniqueNamespace("ul");
        idem::StoreOptions so;
        so.keyNamespace = ns;
        so.lease = idem::Millis(1);
        idem::Store store(*pool, so);
        auto a = store.acquire("renewed", "");
        store.acquire("left-alone", "");
        raw->checked({"SET", ns + ":{json}", R"({"status":"PROCESSING","lock_expiry":1600000000})"});
        QThread::msleep(5);
        idem::Connection c(idemtest::sharedRedis());
        idem::MonitorOptions mo;
        mo.keyNamespace = ns;
        idem::Monitor m(c, mo);
        auto all = snapshot(m);
        QCOMPARE(all.size(), std::size_t(3));
        // between reading and purging, one lock is renewed and the JSON record completes
        QCOMPARE(store.renew(a.ticket, idem::Millis(60000)).status, idem::OwnerStatus::Ok);
        raw->checked({"SET", ns + ":{json}", R"({"status":"COMPLETED"})"});
        std::vector<idem::Record> stale;
        for (const auto& [id, r] : all)
            if (r.stale)
                stale.push_back(r);
        QCOMPARE(stale.size(), std::size_t(3));
        QCOMPARE(m.unlinkIfUnchanged(stale, idem::Actor{"test", "stale"}), std::size_t(1)); // only the untouched one
        QVERIFY(!store.inspect("left-alone"));
        QCOMPARE(store.inspect("renewed")->state, RecordState::Started);
        QCOMPARE(store.inspect("json")->state, RecordState::Completed);
        // after SCRIPT FLUSH too
        raw->checked({"SCRIPT", "FLUSH"});
        auto again = snapshot(m);
        std::vector<idem::Record> both;
        for (const auto& [id, r] : again)
            both.push_back(r);
        QCOMPARE(m.unlinkIfUnchanged(both, idem::Actor{"test", "both"}), std::size_t(2));
    }

    // keyspace notifications: followed when the server sends them, refused (with a reason, and
    // without touching the server's configuration) when it does not
    void keyspaceNotifications()
    {
        const std::string ns = idemtest::uniqueNamespace("ks");
        std::mutex m;
        std::vector<std::string> seen;
        idem::KeyspaceListener listener(idemtest::sharedRedis(), ns + ":*",
                                        [&](const std::string& key, const std::string& event) {
                                            std::lock_guard lock(m);
                                            seen.push_back(key + " " + event);
                                        });
        std::string why;
        QVERIFY2(listener.start(&why), why.c_str());
        raw->checked({"SET", ns + ":{a}", "COMPLETED", "PX", "50"});
        raw->checked({"HSET", ns + ":{b}", "state", "STARTED"});
        raw->checked({"DEL", ns + ":{b}"});
        raw->checked({"SET", "elsewhere:{c}", "x", "PX", "1000"}); // not ours
        auto has = [&](const std::string& what) {
            std::lock_guard lock(m);
            return std::find(seen.begin(), seen.end(), what) != seen.end();
        };
        QTRY_VERIFY_WITH_TIMEOUT(has(ns + ":{a} set"), 3000);
        QTRY_VERIFY_WITH_TIMEOUT(has(ns + ":{b} hset"), 3000);
        QTRY_VERIFY_WITH_TIMEOUT(has(ns + ":{b} del"), 3000);
        QThread::msleep(60);
        raw->checked({"EXISTS", ns + ":{a}"}); // touching an expired key expires it now (and notifies)
        QTRY_VERIFY_WITH_TIMEOUT(has(ns + ":{a} expired"), 5000);
        {
            std::lock_guard lock(m);
            for (const auto& e : seen)
                QVERIFY2(e.starts_with(ns), e.c_str());
        }
        listener.stop();
        QVERIFY(!listener.running());

        idem::LocalServer quiet; // notify-keyspace-events is off by default
        idem::KeyspaceListener off(quiet.connectionOptions(), "x:*", [](const std::string&, const std::string&) {});
        QVERIFY(!off.start(&why));
        QVERIFY2(why.find("off") != std::string::npos, why.c_str());
        idem::Connection q(quiet.connectionOptions());
        auto cfg = q.checked({"CONFIG", "GET", "notify-keyspace-events"});
        QCOMPARE(idem::reply::str(idem::reply::element(cfg.get(), 1)), std::string()); // untouched
    }

    // A server that stops answering without closing the connection (SIGSTOP, a network cut): the
    // listener's PING goes unanswered, and it ends as if the connection had dropped, saying so. A
    // server that answers keeps it running however quiet it is.
    void keyspaceListenerNoticesAHang()
    {
        idem::LocalServer server;
        idem::Connection(server.connectionOptions()).checked({"CONFIG", "SET", "notify-keyspace-events", "KA"});
        idem::ConnectionOptions o = server.connectionOptions();
        o.commandTimeout = idem::Millis(500); // the PING's deadline
        std::atomic<int> ended{0};
        idem::KeyspaceListener listener(o, "x:*", [](const std::string&, const std::string&) {}, [&] { ++ended; });
        std::string why;
        QVERIFY2(listener.start(&why), why.c_str());
        QThread::msleep(3 * idem::KeyspaceListener::kQuietBeforePing.count()); // quiet: PINGed, answered
        QVERIFY(listener.running());
        QCOMPARE(ended.load(), 0);

        server.pause();
        const auto resume = qScopeGuard([&] { server.resume(); });
        QElapsedTimer since;
        since.start();
        QTRY_VERIFY_WITH_TIMEOUT(!listener.running(), 5000);
        QVERIFY2(since.elapsed() <= idem::KeyspaceListener::kQuietBeforePing.count() + 500 + 2000,
                 qPrintable(QString::number(since.elapsed())));
        QVERIFY2(listener.endedWhy().find("PING") != std::string::npos, listener.endedWhy().c_str());
        QTRY_COMPARE_WITH_TIMEOUT(ended.load(), 1, 1000);

        // a server that hangs while subscribing: start() gives up within the command timeout
        idem::KeyspaceListener late(o, "x:*", [](const std::string&, const std::string&) {});
        since.restart();
        QVERIFY(!late.start(&why));
        QVERIFY(late.unreachable());
        QVERIFY2(since.elapsed() < 5000, qPrintable(QString::number(since.elapsed())));
    }

    // SCAN lists one server's keys: on a cluster of three primaries (and a replica), the monitor
    // tells which share of the hash slots it sees, and idemctl says so before its output
    void clusterCoverage()
    {
        const idem::ScanCoverage standalone = idem::scanCoverage(*raw);
        QVERIFY(!standalone.cluster);
        QVERIFY(standalone.complete());
        QVERIFY(standalone.warning().empty());

        {
            // one node: with every slot it sees every key; with some, it says the rest has no home
            idem::LocalServerOptions opts;
            opts.extraArgs = {"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"};
            idem::LocalServer one(opts);
            idem::Connection c(one.connectionOptions());
            c.checked({"CLUSTER", "ADDSLOTSRANGE", "0", "999"});
            const idem::ScanCoverage part = idem::scanCoverage(c);
            QVERIFY(part.cluster && !part.complete());
            QCOMPARE(part.slotsHere, 1000);
            QVERIFY2(part.warning().find("holds 1000 of 16384 hash slots, and no other primary serves the rest") !=
                         std::string::npos,
                     part.warning().c_str());
            c.checked({"CLUSTER", "ADDSLOTSRANGE", "1000", "16383"});
            const idem::ScanCoverage whole = idem::scanCoverage(c);
            QVERIFY(whole.cluster && whole.complete());
            QCOMPARE(whole.slotsHere, 16384);
            QVERIFY(whole.warning().empty());
        }

        idemtest::LocalCluster cluster(3, 1);
        const int expected[] = {5461, 5461, 5462, 5461}; // 0-5460, 5461-10921, 10922-16383; node 3 replicates node 0
        for (int i = 0; i < cluster.size(); ++i) {
            idem::Connection c(cluster.node(i));
            const idem::ScanCoverage cov = idem::scanCoverage(c);
            QVERIFY(cov.cluster);
            QCOMPARE(cov.primaries, 3);
            QCOMPARE(cov.slotsHere, expected[i]);
            QVERIFY(!cov.complete());
            QVERIFY2(cov.warning().find(std::to_string(expected[i]) + " of 16384 hash slots (3 primaries)") !=
                         std::string::npos,
                     cov.warning().c_str());
        }

        // why it matters: records on every primary, and node 0's SCAN lists its own only; idemctl
        // (the Scanner) reads every primary
        const std::string ns = "cov";
        std::vector<std::unique_ptr<idem::ConnectionPool>> pools;
        std::vector<std::unique_ptr<idem::Store>> stores;
        for (int i = 0; i < 3; ++i) {
            pools.push_back(std::make_unique<idem::ConnectionPool>(cluster.node(i), 1));
            stores.push_back(std::make_unique<idem::Store>(*pools.back(), idem::StoreOptions{.keyNamespace = ns}));
        }
        int onNode0 = 0;
        for (int k = 0; k < 60; ++k) {
            const std::string id = "id-" + std::to_string(k);
            const int slot = idem::hashSlot(stores[0]->recordKey(id));
            const int owner = slot <= 5460 ? 0 : slot <= 10921 ? 1 : 2;
            onNode0 += owner == 0 ? 1 : 0;
            QCOMPARE(stores[static_cast<std::size_t>(owner)]->acquire(id, "").status, idem::AcquireStatus::Acquired);
        }
        QVERIFY(onNode0 > 0 && onNode0 < 60);
        idem::Connection c0(cluster.node(0));
        idem::MonitorOptions mo;
        mo.keyNamespace = ns;
        idem::Monitor m(c0, mo);
        QCOMPARE(static_cast<int>(snapshot(m).size()), onNode0);

        const QStringList common = {QStringLiteral("--url"), QString::fromStdString(cluster.url(0)),
                                    QStringLiteral("--namespace"), QString::fromStdString(ns)};
        auto stats = idemtest::runIdemctl(common + QStringList{QStringLiteral("stats"), QStringLiteral("--json")});
        QCOMPARE(stats.exitCode, 0);
        QCOMPARE(QJsonDocument::fromJson(stats.out).object().value(QStringLiteral("total")).toInt(), 60);
        QVERIFY2(!stats.err.contains("warning"), stats.err.constData());
        // the standalone fixture: no warning
        auto plain = idemtest::runIdemctl({QStringLiteral("--url"), QString::fromStdString(idemtest::sharedRedisUrl()),
                                           QStringLiteral("stats")});
        QCOMPARE(plain.exitCode, 0);
        QVERIFY2(!plain.err.contains("warning"), plain.err.constData());

        // a user not allowed CLUSTER: the share is unknown, and said to be
        c0.checked({"ACL", "SETUSER", "nocluster", "on", ">pw", "~*", "+@all", "-cluster"});
        idem::ConnectionOptions limited = cluster.node(0);
        limited.user = "nocluster";
        limited.password = "pw";
        idem::Connection cl(limited);
        const idem::ScanCoverage unknown = idem::scanCoverage(cl);
        QVERIFY(unknown.cluster);
        QVERIFY(!unknown.complete());
        QVERIFY2(unknown.warning().find("unknown (CLUSTER NODES: NOPERM") != std::string::npos, unknown.warning().c_str());
    }

    void idemctlListStatsPurge()
    {
        const std::string ns = idemtest::uniqueNamespace("cli");
        seed(ns);
        QThread::msleep(5);
        const QStringList common = {QStringLiteral("--url"), QString::fromStdString(idemtest::sharedRedisUrl()),
                                    QStringLiteral("--namespace"), QString::fromStdString(ns)};
        auto stats = idemtest::runIdemctl(common + QStringList{QStringLiteral("stats"), QStringLiteral("--json")});
        QCOMPARE(stats.exitCode, 0);
        const auto s = QJsonDocument::fromJson(stats.out).object();
        QCOMPARE(s.value(QStringLiteral("total")).toInt(), 16);
        QCOMPARE(s.value(QStringLiteral("started")).toInt(), 5);
        QCOMPARE(s.value(QStringLiteral("stale")).toInt(), 2);
        QCOMPARE(s.value(QStringLiteral("completed")).toInt(), 2);
        QCOMPARE(s.value(QStringLiteral("failed")).toInt(), 3);
        QCOMPARE(s.value(QStringLiteral("malformed")).toInt(), 4);
        QCOMPARE(s.value(QStringLiteral("foreign")).toInt(), 2);
        QCOMPARE(s.value(QStringLiteral("no_ttl")).toInt(), 4);

        auto list = idemtest::runIdemctl(common + QStringList{QStringLiteral("list"), QStringLiteral("--json"),
                                                              QStringLiteral("--state"), QStringLiteral("malformed")});
        QCOMPARE(list.exitCode, 0);
        const auto lines = list.out.trimmed().split('\n');
        QCOMPARE(lines.size(), 4);
        for (const auto& line : lines) {
            const auto o = QJsonDocument::fromJson(line).object();
            for (const char* field : {"key", "id", "state", "format", "ttl_ms", "stale", "reason"})
                QVERIFY2(o.contains(QLatin1String(field)), field);
            QCOMPARE(o.value(QStringLiteral("state")).toString(), QStringLiteral("MALFORMED"));
        }
        auto noTtl = idemtest::runIdemctl(common + QStringList{QStringLiteral("list"), QStringLiteral("--json"),
                                                               QStringLiteral("--state"), QStringLiteral("no-ttl")});
        QCOMPARE(noTtl.out.trimmed().split('\n').size(), 4);
        for (const auto& line : noTtl.out.trimmed().split('\n'))
            QCOMPARE(QJsonDocument::fromJson(line).object().value(QStringLiteral("ttl_ms")).toInt(), -1);

        // purge without --yes only tells; --dry-run too; --yes removes
        auto tell = idemtest::runIdemctl(common + QStringList{QStringLiteral("purge"), QStringLiteral("--stale")});
        QCOMPARE(tell.exitCode, 0);
        QVERIFY(tell.err.contains("add --yes"));
        auto dry = idemtest::runIdemctl(common + QStringList{QStringLiteral("purge"), QStringLiteral("--stale"),
                                                             QStringLiteral("--dry-run"), QStringLiteral("--yes")});
        QVERIFY(dry.err.contains("dry run"));
        auto still = QJsonDocument::fromJson(
            idemtest::runIdemctl(common + QStringList{QStringLiteral("stats"), QStringLiteral("--json")}).out).object();
        QCOMPARE(still.value(QStringLiteral("stale")).toInt(), 2);
        auto real = idemtest::runIdemctl(common + QStringList{QStringLiteral("purge"), QStringLiteral("--stale"),
                                                              QStringLiteral("--yes")});
        QCOMPARE(real.exitCode, 0);
        QVERIFY2(real.out.contains("purged 2 key"), real.out.constData());
        auto byPattern = idemtest::runIdemctl(common + QStringList{QStringLiteral("purge"), QStringLiteral("--pattern"),
                                                                   QString::fromStdString(ns + ":{json-*"),
                                                                   QStringLiteral("--yes")});
        // json-done and -failed; json-started is a live lock: kept, and said, unless --live
        QVERIFY2(byPattern.out.contains("purged 2 key") && byPattern.out.contains("kept 1 live lock"),
                 byPattern.out.constData());
        auto live = idemtest::runIdemctl(common + QStringList{QStringLiteral("purge"), QStringLiteral("--pattern"),
                                                              QString::fromStdString(ns + ":{json-*"),
                                                              QStringLiteral("--live"), QStringLiteral("--yes")});
        QVERIFY2(live.out.contains("purged 1 key"), live.out.constData());
        auto after = QJsonDocument::fromJson(
            idemtest::runIdemctl(common + QStringList{QStringLiteral("stats"), QStringLiteral("--json")}).out).object();
        QCOMPARE(after.value(QStringLiteral("total")).toInt(), 11);
        QCOMPARE(after.value(QStringLiteral("stale")).toInt(), 0);

        auto bad = idemtest::runIdemctl(common + QStringList{QStringLiteral("list"), QStringLiteral("--state"),
                                                             QStringLiteral("sleepy")});
        QCOMPARE(bad.exitCode, 64);
        auto nothing = idemtest::runIdemctl(common + QStringList{QStringLiteral("purge")});
        QCOMPARE(nothing.exitCode, 64);
    }
};

QTEST_GUILESS_MAIN(TestMonitor)
#include "tst_monitor.moc"
