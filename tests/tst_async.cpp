// The asynchronous core: AsyncConnection's pipelining, timeouts and fail-closed guarantees, and
// AsyncStore's batching of ids into scripts. Real redis-servers only; what counts server commands
// or stops a server uses a private one. tst_asyncexec.cpp has Executor::submit() and idem_qt.
#include "asynctestsupport.h"

#include <QtTest>

#include <atomic>
#include <thread>

using namespace asynctest;

class TestAsync : public QObject {
    Q_OBJECT
private slots:
    // 10 000 requests from 16 threads interleaved over 2 connections: every reply is its own
    void interleavedRepliesMatchTheirRequests()
    {
        idem::AsyncPool pool(idemtest::sharedRedis(), 2);
        constexpr int kThreads = 16, kEach = 625;
        std::atomic<int> answered{0}, wrong{0};
        std::vector<std::thread> threads;
        for (int t = 0; t < kThreads; ++t)
            threads.emplace_back([&, t] {
                for (int i = 0; i < kEach; ++i) {
                    const std::string id = "t" + std::to_string(t) + "-" + std::to_string(i);
                    pool.next().command({"ECHO", id}, [&, id](idem::ReplyPtr r, std::exception_ptr e) {
                        if (e || text(r) != id)
                            ++wrong;
                        ++answered;
                    });
                }
            });
        for (auto& t : threads)
            t.join();
        QTRY_COMPARE_WITH_TIMEOUT(answered.load(), kThreads * kEach, 30000);
        QCOMPARE(wrong.load(), 0);
    }

    // acquires from 16 threads: each answer names its own id and token; a second acquire of an
    // id is InProgress
    void storeAnswersEachIdItsOwn()
    {
        idem::AsyncPool pool(idemtest::sharedRedis(), 2);
        idem::AsyncStore store(pool, ns(idemtest::uniqueNamespace("async")));
        std::vector<std::thread> threads;
        std::atomic<int> wrong{0};
        for (int t = 0; t < 16; ++t)
            threads.emplace_back([&, t] {
                std::vector<std::pair<std::string, std::future<idem::AcquireResult>>> calls;
                for (int i = 0; i < 50; ++i) {
                    std::string id = "id-" + std::to_string(t) + "-" + std::to_string(i);
                    calls.emplace_back(id, store.acquire(id, "fp-" + id));
                }
                for (auto& [id, f] : calls) {
                    const auto a = f.get();
                    if (a.status != idem::AcquireStatus::Acquired || a.ticket.id != id || a.ticket.token.size() != 32)
                        ++wrong;
                }
                if (store.acquire(calls.front().first, "fp-" + calls.front().first).get().status !=
                    idem::AcquireStatus::InProgress)
                    ++wrong;
            });
        for (auto& t : threads)
            t.join();
        QCOMPARE(wrong.load(), 0);
    }

    // Acquires and completions issued while others are on their way go out together, as one
    // script call of many ids, and each still gets its own answer: the second acquire of an id in
    // the same call is in progress, a completion with another's token is refused alone.
    void callsCoalescedIntoScriptsOfManyIds()
    {
        idem::LocalServer server;
        idem::Connection admin(server.connectionOptions());
        idem::AsyncPool pool(quick(server.connectionOptions()), 1);
        idem::AsyncStore store(pool, ns("coalesce"));
        QCOMPARE(store.acquire("warm").get().status, idem::AcquireStatus::Acquired);
        admin.checked({"CONFIG", "RESETSTAT"});

        server.pause(); // everything below waits behind the first units
        constexpr int kIds = 150;
        std::vector<std::future<idem::AcquireResult>> first, second;
        for (int i = 0; i < kIds; ++i) {
            first.push_back(store.acquire("c-" + std::to_string(i), "fp"));
            second.push_back(store.acquire("c-" + std::to_string(i), "fp"));
        }
        server.resume();
        std::vector<idem::Ticket> tickets;
        for (int i = 0; i < kIds; ++i) {
            const auto a = first[static_cast<std::size_t>(i)].get();
            QCOMPARE(a.status, idem::AcquireStatus::Acquired);
            QCOMPARE(a.ticket.id, "c-" + std::to_string(i));
            QCOMPARE(second[static_cast<std::size_t>(i)].get().status, idem::AcquireStatus::InProgress);
            tickets.push_back(a.ticket);
        }
        tickets[7].token = tickets[8].token; // not its own: refused, alone

        server.pause();
        std::vector<std::future<idem::OwnerResult>> completed;
        for (int i = 0; i < kIds; ++i)
            completed.push_back(store.complete(tickets[static_cast<std::size_t>(i)], "r-" + std::to_string(i)));
        server.resume();
        for (int i = 0; i < kIds; ++i)
            QCOMPARE(completed[static_cast<std::size_t>(i)].get().status,
                     i == 7 ? idem::OwnerStatus::LeaseLost : idem::OwnerStatus::Ok);
        for (int i : {0, 8, 149}) {
            const auto d = store.acquire("c-" + std::to_string(i), "fp").get();
            QCOMPARE(d.status, idem::AcquireStatus::Duplicate);
            QCOMPARE(d.response, "r-" + std::to_string(i));
        }
        // 2 * 150 acquires and 150 completions: a few calls of many ids, not 450 calls
        const std::string stats = text(admin.checked({"INFO", "commandstats"}));
        const auto at = stats.find("cmdstat_evalsha:calls=");
        QVERIFY(at != std::string::npos);
        const long long calls = std::atoll(stats.c_str() + at + 22);
        QVERIFY2(calls <= 40, ("EVALSHA calls: " + std::to_string(calls)).c_str());
    }

    // Calls made while the store is held wait for release(), and go out then as one script call of
    // many ids (what idem-gateway does for the calls of one turn of its event loop); holds nest.
    void heldCallsGoOutTogetherAtRelease()
    {
        idem::LocalServer server;
        idem::Connection admin(server.connectionOptions());
        idem::AsyncPool pool(quick(server.connectionOptions()), 1);
        idem::AsyncStore store(pool, ns("held"));
        const auto warm = store.acquire("warm").get(); // both scripts loaded: no NOSCRIPT retry below
        QCOMPARE(store.complete(warm.ticket, "w").get().status, idem::OwnerStatus::Ok);
        admin.checked({"CONFIG", "RESETSTAT"});

        constexpr int kIds = 20;
        store.hold();
        std::vector<std::future<idem::AcquireResult>> acquired;
        for (int i = 0; i < kIds; ++i)
            acquired.push_back(store.acquire("h-" + std::to_string(i), "fp"));
        QTest::qWait(200);
        QVERIFY(!ready(acquired.front(), 0) && !ready(acquired.back(), 0));
        QCOMPARE(evalshaCalls(admin), 0);
        store.release();
        std::vector<idem::Ticket> tickets;
        for (auto& f : acquired) {
            QVERIFY(ready(f, 5000));
            const auto a = f.get();
            QCOMPARE(a.status, idem::AcquireStatus::Acquired);
            tickets.push_back(a.ticket);
        }
        QCOMPARE(evalshaCalls(admin), 1);

        store.hold();
        store.hold();
        std::vector<std::future<idem::OwnerResult>> completed;
        for (const auto& t : tickets)
            completed.push_back(store.complete(t, "r-" + t.id));
        store.release(); // the outer hold still holds
        QTest::qWait(200);
        QVERIFY(!ready(completed.front(), 0));
        QCOMPARE(evalshaCalls(admin), 1);
        store.release();
        for (auto& f : completed) {
            QVERIFY(ready(f, 5000));
            QCOMPARE(f.get().status, idem::OwnerStatus::Ok);
        }
        QCOMPARE(evalshaCalls(admin), 2);
        store.release(); // one too many: nothing held, nothing happens
        const auto d = store.acquire("h-3", "fp").get();
        QCOMPARE(d.status, idem::AcquireStatus::Duplicate);
        QCOMPARE(d.response, "r-h-3");
    }

    // Units that come back while the store is held send nothing; release() sends as many units as
    // may be on their way (connections + 1) and the rest follow as those come back; a store
    // destroyed while held sends what it held.
    void heldCallsWithUnitsOnTheirWay()
    {
        idem::LocalServer server;
        idem::Connection admin(server.connectionOptions());
        idem::AsyncPool pool(quick(server.connectionOptions(), 5000), 1);
        idem::AsyncStore store(pool, ns("held-busy"));
        QCOMPARE(store.acquire("warm").get().status, idem::AcquireStatus::Acquired);
        admin.checked({"CONFIG", "RESETSTAT"});

        server.pause();
        auto first = store.acquire("b-first"), second = store.acquire("b-second"); // the two units allowed
        store.hold();
        constexpr int kIds = 200; // four units of up to 64 ids
        std::vector<std::future<idem::AcquireResult>> held;
        for (int i = 0; i < kIds; ++i)
            held.push_back(store.acquire("b-" + std::to_string(i), "fp"));
        server.resume();
        QVERIFY(ready(first, 5000) && ready(second, 5000));
        QTest::qWait(200);
        QVERIFY(!ready(held.front(), 0) && !ready(held.back(), 0));
        QCOMPARE(evalshaCalls(admin), 2);
        store.release();
        for (auto& f : held) {
            QVERIFY(ready(f, 5000));
            QCOMPARE(f.get().status, idem::AcquireStatus::Acquired);
        }
        QCOMPARE(evalshaCalls(admin), 2 + 4);

        std::future<idem::AcquireResult> orphan;
        {
            idem::AsyncStore going(pool, ns("held-busy"));
            going.hold();
            orphan = going.acquire("b-orphan");
        }
        QVERIFY(ready(orphan, 5000));
        QCOMPARE(orphan.get().status, idem::AcquireStatus::Acquired);
    }

    // One request timing out (behind DEBUG SLEEP) fails alone; its late reply is dropped and the
    // requests behind it get their own, on the same connection.
    void oneTimeoutDoesNotPoisonTheOthers()
    {
        idem::LocalServerOptions so;
        so.extraArgs = {"--enable-debug-command", "yes"};
        idem::LocalServer server(so);
        idem::AsyncConnection c(quick(server.connectionOptions(), 2000));
        const auto id = idem::reply::integer(c.command({"CLIENT", "ID"}).get().get());
        auto sleeping = c.command({"DEBUG", "SLEEP", "0.5"});
        auto hurried = c.command({"ECHO", "hurried"}, idem::Millis(100));
        auto patient = c.command({"ECHO", "patient"});
        bool timedOut = false;
        const std::string error = errorOf(hurried, &timedOut);
        QVERIFY2(timedOut, error.c_str());
        QVERIFY(error.find("100 ms") != std::string::npos);
        QCOMPARE(text(sleeping.get()), std::string("OK"));
        QCOMPARE(text(patient.get()), std::string("patient"));
        QCOMPARE(text(c.command({"ECHO", "after"}).get()), std::string("after"));
        QCOMPARE(idem::reply::integer(c.command({"CLIENT", "ID"}).get().get()), id); // not reconnected
    }

    // A server frozen briefly (SIGSTOP): requests with a short timeout fail, the connection stays,
    // and requests after it thaws are answered.
    void briefFreezeFailsOnlyWhatTimedOut()
    {
        idem::LocalServer server;
        idem::AsyncConnection c(quick(server.connectionOptions(), 2000));
        const auto id = idem::reply::integer(c.command({"CLIENT", "ID"}).get().get());
        server.pause();
        std::vector<std::future<idem::ReplyPtr>> shortOnes;
        for (int i = 0; i < 20; ++i)
            shortOnes.push_back(c.command({"ECHO", "short"}, idem::Millis(100)));
        auto longOne = c.command({"ECHO", "long"});
        QTest::qWait(300);
        server.resume();
        for (auto& f : shortOnes) {
            bool timedOut = false;
            errorOf(f, &timedOut);
            QVERIFY(timedOut);
        }
        QCOMPARE(text(longOne.get()), std::string("long"));
        QCOMPARE(idem::reply::integer(c.command({"CLIENT", "ID"}).get().get()), id);
    }

    // A server hung for longer than a request's timeout plus the command timeout: the connection
    // is dropped, every pending request fails; after it thaws, the next request reconnects.
    void hungServerDropsTheConnection()
    {
        idem::LocalServer server;
        idem::AsyncConnection c(quick(server.connectionOptions(), 300));
        QCOMPARE(text(c.command({"ECHO", "up"}).get()), std::string("up"));
        server.pause();
        auto first = c.command({"ECHO", "a"});
        auto patient = c.command({"ECHO", "b"}, idem::Millis(0)); // no timeout of its own
        bool timedOut = false, closed = false;
        errorOf(first, &timedOut);
        QVERIFY(timedOut);
        const std::string error = errorOf(patient, &timedOut, &closed); // dropped with the connection
        QVERIFY2(error.find("dropped") != std::string::npos, error.c_str());
        QVERIFY(!c.isConnected());
        server.resume();
        QCOMPARE(text(c.command({"ECHO", "again"}).get()), std::string("again"));
    }

    // An acquire whose answer does not come (a frozen server) fails; when the server thaws, the
    // key is not left under a lease nobody uses (every retry would be refused as in progress until
    // it ran out): whether the server thaws while the connection waits or after it was dropped.
    void acquireWithoutAnswerLeavesNoLease_data()
    {
        QTest::addColumn<int>("frozenMs");
        QTest::newRow("thaws on the same connection") << 350;
        QTest::newRow("thaws after the connection was dropped") << 1200;
    }
    void acquireWithoutAnswerLeavesNoLease()
    {
        QFETCH(int, frozenMs);
        idem::LocalServer server;
        idem::AsyncPool pool(quick(server.connectionOptions(), 300), 1); // one connection, as idem-gateway's
        idem::AsyncStore store(pool, ns("frozen"));
        QCOMPARE(store.acquire("warm-up").get().status, idem::AcquireStatus::Acquired); // scripts loaded
        idem::Connection admin(server.connectionOptions());
        const std::string key = store.recordKey("order-1");
        server.pause();
        auto frozen = store.acquire("order-1");
        bool timedOut = false;
        const std::string error = errorOf(frozen, &timedOut);
        QVERIFY2(timedOut, error.c_str());
        QTest::qWait(frozenMs - 300);
        server.resume();
        QTRY_COMPARE_WITH_TIMEOUT(idem::reply::integer(admin.checked({"EXISTS", key}).get()), 0LL, 3000);
        QCOMPARE(store.acquire("order-1").get().status, idem::AcquireStatus::Acquired); // a retry runs
    }

    // A 16 MB value both ways (request and reply larger than the socket buffers), with small
    // requests pipelined behind it.
    void replyLargerThanSocketBuffers()
    {
        idem::AsyncConnection c(quick(idemtest::sharedRedis(), 10000));
        const std::string key = idemtest::uniqueNamespace("big");
        std::string big(16 * 1024 * 1024, 'x');
        for (std::size_t i = 0; i < big.size(); i += 4096)
            big[i] = static_cast<char>('a' + (i / 4096) % 26);
        auto set = c.command({"SET", key, big});
        auto get = c.command({"GET", key});
        auto behind = c.command({"ECHO", "behind"});
        QCOMPARE(text(set.get()), std::string("OK"));
        QVERIFY(text(get.get()) == big);
        QCOMPARE(text(behind.get()), std::string("behind"));
        c.command({"DEL", key}).get();
    }

    void tlsLargeValueAndPipelining()
    {
        const idemtest::TestCerts& certs = idemtest::TestCerts::get();
        idem::LocalServer server(certs.serverOptions());
        idem::AsyncConnection c(quick(server.connectionOptions(), 10000));
        const std::string big(4 * 1024 * 1024, 'q');
        auto set = c.command({"SET", "k", big});
        std::vector<std::future<idem::ReplyPtr>> echoes;
        for (int i = 0; i < 500; ++i)
            echoes.push_back(c.command({"ECHO", std::to_string(i)}));
        auto get = c.command({"GET", "k"});
        QCOMPARE(text(set.get()), std::string("OK"));
        for (int i = 0; i < 500; ++i)
            QCOMPARE(text(echoes[static_cast<std::size_t>(i)].get()), std::to_string(i));
        QVERIFY(text(get.get()) == big);
    }

    // Connection's errors: a wrong password is a ConfigError naming the setting, also while the
    // backoff lasts
    void wrongPasswordIsConfigError()
    {
        idem::LocalServerOptions so;
        so.extraArgs = {"--requirepass", "right"};
        idem::LocalServer server(so);
        idem::ConnectionOptions o = quick(server.connectionOptions());
        o.password = "wrong";
        idem::AsyncConnection c(o);
        for (int i = 0; i < 2; ++i) {
            try {
                c.command({"PING"}).get();
                QFAIL("a wrong password was accepted");
            } catch (const idem::ConfigError& e) {
                QCOMPARE(e.field(), std::string("password"));
            }
        }
    }

    void interruptAndCloseFailPendingRequests()
    {
        idem::LocalServer server;
        idem::AsyncConnection c(quick(server.connectionOptions(), 5000));
        QCOMPARE(text(c.command({"ECHO", "up"}).get()), std::string("up"));
        server.pause();
        std::vector<std::future<idem::ReplyPtr>> pending;
        for (int i = 0; i < 10; ++i)
            pending.push_back(c.command({"ECHO", "p"}));
        c.interrupt();
        for (auto& f : pending) {
            bool closed = false;
            errorOf(f, nullptr, &closed);
            QVERIFY(closed);
        }
        server.resume();
        QCOMPARE(text(c.command({"ECHO", "again"}).get()), std::string("again"));
        server.pause();
        auto last = c.command({"ECHO", "last"});
        c.close();
        bool closed = false;
        errorOf(last, nullptr, &closed);
        QVERIFY(closed);
        auto afterClose = c.command({"ECHO", "x"});
        closed = false;
        errorOf(afterClose, nullptr, &closed);
        QVERIFY(closed);
        server.resume();
    }
};

QTEST_GUILESS_MAIN(TestAsync)
#include "tst_async.moc"
