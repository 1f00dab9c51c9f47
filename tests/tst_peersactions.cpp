// An operator's actions on the records other libraries wrote (the corpus of tests/data/peers and
// hand-written ones): bulk purges by state never take what idem does not understand nor a lock
// whose owner may still run, and another library's record is released as that library does.
// tst_peers.cpp reads the corpus.
#include "idem/monitor/monitor.h"
#include "peerstestsupport.h"

#include <QDateTime>

#include <algorithm>
#include <map>

using namespace peerstest;

class TestPeersActions : public PeersTest {
    Q_OBJECT

private slots:
    void initTestCase() { setUp(); requireCorpus(); }

    // A Powertools lock written without a Lambda context (no in_progress_expiration) that has run
    // for an hour: versions since their fix keep it locked until its expiration, and its bytes
    // are those an older version writes. A bulk purge of stale locks leaves it; only --live takes it.
    void contextlessPowertoolsLockIsNeverPurgedAsStale()
    {
        conn->checked({"FLUSHALL"});
        const std::string key = "orders#HXoPuS989n9jdP6e7H2ySg==";
        const std::int64_t expiration = QDateTime::currentSecsSinceEpoch() + 3600;
        conn->checked({"SET", key, "{\"status\":\"INPROGRESS\",\"expiration\":" + std::to_string(expiration) + "}",
                       "EX", "3600"});
        const QStringList url = {QStringLiteral("--url"), QString::fromStdString(server->url())};
        const auto listed = idemtest::runIdemctl(url + QStringList{QStringLiteral("list"), QStringLiteral("--pattern"),
                                                                   QStringLiteral("orders#*"), QStringLiteral("--json")});
        QCOMPARE(listed.exitCode, 0);
        const QJsonObject o = QJsonDocument::fromJson(listed.out.trimmed()).object();
        QCOMPARE(o.value(u"state"_qs).toString(), u"STARTED"_qs);
        QCOMPARE(o.value(u"stale"_qs).toBool(), false);
        QCOMPARE(o.value(u"blocked"_qs).toBool(), true);
        for (const char* state : {"stale", "started", "blocked"}) {
            const auto kept = idemtest::runIdemctl(url + QStringList{QStringLiteral("purge"), QStringLiteral("--pattern"),
                                                                     QStringLiteral("orders#*"), QStringLiteral("--state"),
                                                                     QString::fromLatin1(state), QStringLiteral("--yes")});
            QCOMPARE(kept.exitCode, 0);
            QVERIFY2(idem::reply::integer(conn->checked({"EXISTS", key}).get()) == 1, state);
        }
        const auto taken = idemtest::runIdemctl(url + QStringList{QStringLiteral("purge"), QStringLiteral("--pattern"),
                                                                  QStringLiteral("orders#*"), QStringLiteral("--state"),
                                                                  QStringLiteral("started"), QStringLiteral("--live"),
                                                                  QStringLiteral("--yes")});
        QCOMPARE(taken.exitCode, 0);
        QCOMPARE(idem::reply::integer(conn->checked({"EXISTS", key}).get()), std::int64_t(0));
    }

    // Bulk purges by state never take a key idem does not understand: malformed, foreign and
    // unknown keys need a pattern too, and a purge of every state a bulk action may take by itself
    // leaves them all where they were.
    void bulkPurgeByStateLeavesWhatIsNotARecord()
    {
        conn->checked({"FLUSHALL"});
        for (const Profile& p : corpus())
            for (const Capture& c : p.records)
                put(*conn, c);
        conn->checked({"SET", "cache:user:7", "{\"name\":\"ada\"}"});  // unknown: a cache entry
        conn->checked({"SET", "session:x", "opaque"});                 // unknown
        conn->checked({"SET", "idem-peers-capture#AAAAAAAAAAAAAAAAAAAAAA==", "{\"status\":"}); // Powertools', broken
        const QStringList url = {QStringLiteral("--url"), QString::fromStdString(server->url())};

        idem::MonitorOptions mo;
        mo.pattern = "*";
        const auto snapshot = [&] {
            idem::Monitor m(*conn, mo);
            std::map<std::string, idem::Record> all;
            std::string cursor = "0";
            do {
                auto page = m.scanPage(cursor);
                for (auto& r : page.records)
                    all.emplace(r.key, std::move(r));
                cursor = page.cursor;
            } while (cursor != "0");
            return all;
        };
        const auto before = snapshot();
        std::vector<std::string> notRecords;
        for (const auto& [key, r] : before)
            if (idem::notARecord(r.state))
                notRecords.push_back(key);
        QVERIFY(notRecords.size() >= 8); // mutexes, sets, a leftover lock, a broken record, unknown keys
        // (a captured mutex lives 10 s: long enough to be gone by itself on a slow run, which is
        // not what this test is about)
        for (const std::string& key : notRecords)
            conn->checked({"PEXPIRE", key, "600000", "GT"});

        for (const char* state : {"malformed", "foreign", "unknown", "no-ttl"}) {
            const auto refused = idemtest::runIdemctl(url + QStringList{QStringLiteral("purge"), QStringLiteral("--state"),
                                                                        QString::fromLatin1(state), QStringLiteral("--yes")});
            QCOMPARE(refused.exitCode, 64);
            QVERIFY2(refused.err.contains("--pattern"), refused.err.constData());
        }
        for (const char* state : {"started", "stale", "blocked", "completed", "failed", "expired"}) {
            const auto done = idemtest::runIdemctl(url + QStringList{QStringLiteral("purge"), QStringLiteral("--pattern"),
                                                                     QStringLiteral("*"), QStringLiteral("--state"),
                                                                     QString::fromLatin1(state), QStringLiteral("--yes")});
            QCOMPARE(done.exitCode, 0);
        }
        for (const std::string& key : notRecords)
            QVERIFY2(idem::reply::integer(conn->checked({"EXISTS", key}).get()) == 1, key.c_str());
        // nor by a pattern alone, which may cover another library's live lock that idem cannot
        // read: Powertools with its attributes renamed (statusAttr: 'state', ...), idempotent-request
        // under another namespace, a lock whose stored request nests deeper than idem reads
        const std::string renamed = "orders-fn#TziDXObz+FJudr9h8vQMYg==";
        conn->checked({"SET", renamed,
                       "{\"state\":\"INPROGRESS\",\"expires_at\":9999999999,\"lock_until\":" +
                           std::to_string(QDateTime::currentMSecsSinceEpoch() + 600'000) + "}",
                       "EX", "600"});
        conn->checked({"SET", "payments_idem:lock:k1", std::to_string(QDateTime::currentSecsSinceEpoch()) + ".123456",
                       "EX", "600"});
        notRecords.clear(); // (the purges above took records some of them stood beside: read again)
        for (const auto& [key, r] : snapshot())
            if (idem::notARecord(r.state))
                notRecords.push_back(key);
        QCOMPARE(snapshot().at(renamed).state, idem::RecordState::Started); // read as a lock (its deadline unknown)
        QVERIFY(std::find(notRecords.begin(), notRecords.end(), "payments_idem:lock:k1") != notRecords.end());
        const auto byPattern = idemtest::runIdemctl(url + QStringList{QStringLiteral("purge"), QStringLiteral("--pattern"),
                                                                      QStringLiteral("*"), QStringLiteral("--yes")});
        QCOMPARE(byPattern.exitCode, 0);
        QVERIFY2(byPattern.out.contains("not understood"), byPattern.out.constData());
        QVERIFY2(idem::reply::integer(conn->checked({"EXISTS", renamed}).get()) == 1, byPattern.out.constData());
        for (const std::string& key : notRecords)
            QVERIFY2(idem::reply::integer(conn->checked({"EXISTS", key}).get()) == 1, (key + ": " + byPattern.out.toStdString()).c_str());
        // named by a pattern, they go: the operator said which keys
        const auto named = idemtest::runIdemctl(url + QStringList{QStringLiteral("purge"), QStringLiteral("--state"),
                                                                  QStringLiteral("unknown"), QStringLiteral("--pattern"),
                                                                  QStringLiteral("session:*"), QStringLiteral("--yes")});
        QCOMPARE(named.exitCode, 0);
        QCOMPARE(idem::reply::integer(conn->checked({"EXISTS", "session:x"}).get()), std::int64_t(0));
        QCOMPARE(idem::reply::integer(conn->checked({"EXISTS", "cache:user:7"}).get()), std::int64_t(1));
    }

    // A bulk purge never deletes a lock whose owner may still run: not by state (kept, and said,
    // unless --live), not as "malformed" under another library's --format, not as "unknown" when
    // only the head and tail of a large value were read.
    void bulkPurgeKeepsLiveLocks()
    {
        conn->checked({"FLUSHALL"});
        const std::string pt = "orders-fn#HXoPuS989n9jdP6e7H2ySg==";
        conn->checked({"SET", pt,
                       "{\"status\":\"INPROGRESS\",\"expiration\":9999999999,\"in_progress_expiration\":" +
                           std::to_string(QDateTime::currentMSecsSinceEpoch() + 600'000) + "}",
                       "EX", "600"});
        const std::string node = "node-idempotency:POST:/orders:k1";
        conn->checked({"SET", node, "{\"status\":\"IN_PROGRESS\"}", "EX", "600"});
        const std::string big = "94f477df3a6ae6b1f4d0c1a61e6b7bb6"; // express-idempotency: a large request in flight
        conn->checked({"SET", big, "{\"request\":{\"body\":\"" + std::string(40'000, 'x') + "\"}}", "EX", "600"});
        conn->checked({"RPUSH", "queue:jobs", "a", "b"});
        const QStringList url = {QStringLiteral("--url"), QString::fromStdString(server->url())};
        const auto exists = [&](const std::string& k) { return idem::reply::integer(conn->checked({"EXISTS", k}).get()) == 1; };
        const auto purge = [&](QStringList args) {
            return idemtest::runIdemctl(url + args + QStringList{QStringLiteral("--pattern"), QStringLiteral("*"),
                                                                 QStringLiteral("--yes")});
        };

        auto forced = idemtest::runIdemctl(url + QStringList{QStringLiteral("--format"), QStringLiteral("node-idempotency"),
                                                             QStringLiteral("purge"), QStringLiteral("--state"),
                                                             QStringLiteral("malformed"), QStringLiteral("--pattern"),
                                                             QStringLiteral("*"), QStringLiteral("--yes")});
        QCOMPARE(forced.exitCode, 0);
        for (const std::string& k : {pt, node, big, std::string("queue:jobs")})
            QVERIFY2(exists(k), (k + ": " + forced.out.toStdString()).c_str());

        auto unknown = purge({QStringLiteral("purge"), QStringLiteral("--state"), QStringLiteral("unknown")});
        QCOMPARE(unknown.exitCode, 0);
        QVERIFY(exists(big));
        QVERIFY2(unknown.out.contains(QByteArray::fromStdString("keep " + big)) && unknown.out.contains("read in part") &&
                     unknown.out.contains("kept 1 read in part"),
                 unknown.out.constData());

        // --json: one object a key, what would happen to it and why
        const auto told = idemtest::runIdemctl(url + QStringList{QStringLiteral("purge"), QStringLiteral("--state"),
                                                                 QStringLiteral("started"), QStringLiteral("--pattern"),
                                                                 QStringLiteral("*"), QStringLiteral("--json")});
        QCOMPARE(told.exitCode, 0);
        int keeps = 0;
        for (const QByteArray& line : told.out.trimmed().split('\n')) {
            const QJsonObject o = QJsonDocument::fromJson(line).object();
            QVERIFY2(!o.isEmpty(), line.constData());
            if (o.value(u"action"_qs).toString() == u"keep"_qs) {
                ++keeps;
                QVERIFY(o.value(u"why"_qs).toString().contains(u"live"_qs));
                QCOMPARE(o.value(u"state"_qs).toString(), u"STARTED"_qs);
            }
        }
        QCOMPARE(keeps, 2);

        auto started = purge({QStringLiteral("purge"), QStringLiteral("--state"), QStringLiteral("started")});
        QCOMPARE(started.exitCode, 0);
        QVERIFY2(started.out.contains("kept 2 live lock(s)"), started.out.constData()); // pt and node
        QVERIFY2(started.out.contains(QByteArray::fromStdString("keep " + pt)), started.out.constData());
        QVERIFY(exists(pt) && exists(node));

        auto live = purge({QStringLiteral("purge"), QStringLiteral("--state"), QStringLiteral("started"),
                           QStringLiteral("--live")});
        QCOMPARE(live.exitCode, 0);
        QVERIFY2(!exists(pt) && !exists(node), live.out.constData());
        QVERIFY(exists("queue:jobs"));
        QVERIFY(exists(big)); // read in part as unknown: not a started record even with --live
    }

    // Another library's record is released the way that library does on failure (deleted if
    // unchanged) and never written into; a terminal failure, which it cannot keep, is refused.
    void forceFailAndPurgeOfAnotherLibrarysRecord()
    {
        conn->checked({"FLUSHALL"});
        const std::string key = "orders-fn#HXoPuS989n9jdP6e7H2ySg==";
        const std::string live = "{\"status\":\"INPROGRESS\",\"expiration\":9999999999,\"in_progress_expiration\":" +
                                 std::to_string(QDateTime::currentMSecsSinceEpoch() + 600'000) + "}";
        conn->checked({"SET", key, live, "EX", "600"});
        const QStringList url = {QStringLiteral("--url"), QString::fromStdString(server->url())};
        const QString k = QString::fromStdString(key);
        auto inspect = idemtest::runIdemctl(url + QStringList{QStringLiteral("inspect"), QStringLiteral("--key"), k,
                                                              QStringLiteral("--json")});
        QCOMPARE(inspect.exitCode, 0);
        const auto j = QJsonDocument::fromJson(inspect.out).object();
        QCOMPARE(j.value(u"format"_qs).toString(), u"powertools"_qs);
        QCOMPARE(j.value(u"state"_qs).toString(), u"STARTED"_qs);
        QCOMPARE(j.value(u"stale"_qs).toBool(), false);

        auto terminal = idemtest::runIdemctl(url + QStringList{QStringLiteral("force-fail"), QStringLiteral("--key"), k,
                                                               QStringLiteral("--terminal")});
        QCOMPARE(terminal.exitCode, 1);
        QVERIFY2(terminal.err.contains("keeps no failed state"), terminal.err.constData());
        QCOMPARE(idem::reply::str(conn->checked({"GET", key}).get()), live); // not written into

        // its owner cannot hear of a release: a live lock is released only when told
        auto kept = idemtest::runIdemctl(url + QStringList{QStringLiteral("force-fail"), QStringLiteral("--key"), k});
        QCOMPARE(kept.exitCode, 1);
        QVERIFY2(kept.err.contains("is a live lock") && kept.err.contains("--live"), kept.err.constData());
        QCOMPARE(idem::reply::str(conn->checked({"GET", key}).get()), live);
        auto released = idemtest::runIdemctl(
            url + QStringList{QStringLiteral("force-fail"), QStringLiteral("--key"), k, QStringLiteral("--live")});
        QCOMPARE(released.exitCode, 0);
        QVERIFY2(released.out.contains("released"), released.out.constData());
        QCOMPARE(idem::reply::integer(conn->checked({"EXISTS", key}).get()), std::int64_t(0));

        // purge by key: only if unchanged since read, and only what is there
        // a live lock: refused in one line unless --live
        conn->checked({"SET", key, live, "EX", "600"});
        const auto refused = idemtest::runIdemctl(url + QStringList{QStringLiteral("purge"), QStringLiteral("--key"), k});
        QCOMPARE(refused.exitCode, 1);
        QVERIFY2(refused.err.contains("is a live lock") && refused.err.contains("--live") &&
                     refused.err.count('\n') == 1,
                 refused.err.constData());
        QCOMPARE(idem::reply::str(conn->checked({"GET", key}).get()), live);
        const QStringList purgeLive = {QStringLiteral("purge"), QStringLiteral("--key"), k, QStringLiteral("--live")};
        QCOMPARE(idemtest::runIdemctl(url + purgeLive).exitCode, 0);
        QCOMPARE(idemtest::runIdemctl(url + purgeLive).exitCode, 66);
    }
};

QTEST_GUILESS_MAIN(TestPeersActions)
#include "tst_peersactions.moc"
