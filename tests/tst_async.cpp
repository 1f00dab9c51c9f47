// The asynchronous core: AsyncConnection's pipelining, timeouts and fail-closed guarantees,
// AsyncStore and Executor::submit(), and idem_qt's delivery on a QObject's thread. Real
// redis-servers only; what counts server commands or stops a server uses a private one.
#include "idem/engine/asyncstore.h"
#include "idem/engine/executor.h"
#include "idem/errors.h"
#include "idem/qt/submit.h"
#include "idem/redis/asyncconnection.h"
#include "idem/redis/localserver.h"
#include "testsupport.h"

#include <QElapsedTimer>
#include <QPointer>
#include <QThread>
#include <QThreadPool>
#include <QtTest>

#include <atomic>
#include <csignal>
#include <thread>

using idem::OutcomeKind;

namespace {
idem::ConnectionOptions quick(idem::ConnectionOptions o, int commandMs = 1000)
{
    o.connectTimeout = idem::Millis(300);
    o.commandTimeout = idem::Millis(commandMs);
    o.reconnectMin = idem::Millis(20);
    o.reconnectMax = idem::Millis(200);
    return o;
}

idem::StoreOptions ns(std::string name, idem::Millis lease = idem::Millis(30000))
{
    idem::StoreOptions o;
    o.keyNamespace = std::move(name);
    o.lease = lease;
    return o;
}

std::string text(const idem::ReplyPtr& r) { return idem::reply::str(r.get()); }

// the error a future holds, as its message; "" when it holds a value
template <typename T>
std::string errorOf(std::future<T>& f, bool* timeout = nullptr, bool* closed = nullptr)
{
    try {
        f.get();
        return {};
    } catch (const idem::TimeoutError& e) {
        if (timeout)
            *timeout = true;
        return e.what();
    } catch (const idem::ClosedError& e) {
        if (closed)
            *closed = true;
        return e.what();
    } catch (const idem::Error& e) {
        return e.what();
    }
}

// runs tasks on Qt's global pool: work that sleeps must not hold an I/O thread
void onPool(std::function<void()> task) { QThreadPool::globalInstance()->start(std::move(task)); }

long long infoField(idem::Connection& c, const char* section, const std::string& field)
{
    const std::string info = text(c.checked({"INFO", section}));
    const auto at = info.find(field + ":");
    if (at == std::string::npos)
        return 0;
    const auto count = info.find("count=", at);
    return count == std::string::npos ? 0 : std::atoll(info.c_str() + count + 6);
}
template <typename T>
bool ready(std::future<T>& f, int ms)
{
    return f.wait_for(std::chrono::milliseconds(ms)) == std::future_status::ready;
}

long long evalshaCalls(idem::Connection& admin)
{
    const std::string stats = text(admin.checked({"INFO", "commandstats"}));
    const auto at = stats.find("cmdstat_evalsha:calls=");
    return at == std::string::npos ? 0LL : std::atoll(stats.c_str() + at + 22);
}
} // namespace

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

    // A batch cut by a killed server: every pending request fails closed and no work runs.
    void killedServerFailsEveryPendingExecutionClosed()
    {
        idem::LocalServer server;
        idem::ConnectionPool blocking(quick(server.connectionOptions()), 1);
        idem::Store store(blocking, ns("killed"));
        idem::AsyncPool pool(quick(server.connectionOptions()), 2);
        idem::AsyncStore async(pool, store.options());
        idem::Executor ex(store, async);
        std::atomic<int> runs{0};
        auto work = [&](const idem::WorkContext&) {
            ++runs;
            return idem::WorkResult::success("done");
        };
        QCOMPARE(ex.submit("warm-0", "", work).get().kind, OutcomeKind::Executed);
        QCOMPARE(ex.submit("warm-1", "", work).get().kind, OutcomeKind::Executed); // both connections up
        runs = 0;

        server.pause(); // the requests pile up, written and unanswered
        constexpr int kCount = 2000;
        std::atomic<int> completed{0}, failedClosed{0};
        for (int i = 0; i < kCount; ++i)
            ex.submit("cut-" + std::to_string(i), "", work, [&](idem::Outcome o) {
                if (o.kind == OutcomeKind::StoreUnavailable && !o.workRan && !o.error.empty())
                    ++failedClosed;
                ++completed;
            });
        // written and unanswered: the first units; the others wait for them in the AsyncStore
        QTRY_VERIFY(pool.at(0).pending() + pool.at(1).pending() >= 1);
        ::kill(server.pid(), SIGKILL); // while stopped: it runs nothing more
        QElapsedTimer timer;
        timer.start();
        QTRY_COMPARE_WITH_TIMEOUT(completed.load(), kCount, 5000);
        QVERIFY2(timer.elapsed() < 2000, "failing closed must not wait for timeouts");
        QCOMPARE(failedClosed.load(), kCount);
        QCOMPARE(runs.load(), 0);
        server.kill(); // reaps it

        // down: fail closed, fast
        for (int i = 0; i < 5; ++i) {
            const auto o = ex.submit("down-" + std::to_string(i), "", work).get();
            QCOMPARE(o.kind, OutcomeKind::StoreUnavailable);
            QVERIFY(!o.workRan);
        }
        QCOMPARE(runs.load(), 0);

        server.start(); // a new, empty server on the same port: NOSCRIPT, then recovered
        idem::Outcome o;
        QElapsedTimer restart;
        restart.start();
        while ((o = ex.submit("after", "", work).get()).kind == OutcomeKind::StoreUnavailable && restart.elapsed() < 5000)
            QTest::qWait(20);
        QCOMPARE(o.kind, OutcomeKind::Executed);
        QCOMPARE(runs.load(), 1);
    }

    // SCRIPT FLUSH between pipelined calls: the ones behind it come back NOSCRIPT, are sent again
    // after SCRIPT LOAD, and each still answers for its own id.
    void scriptFlushMidBatchIsRecovered()
    {
        idem::LocalServer server;
        idem::AsyncPool pool(quick(server.connectionOptions()), 1);
        idem::AsyncStore store(pool, ns("flush"));
        idem::Connection admin(server.connectionOptions());
        QCOMPARE(store.acquire("first").get().status, idem::AcquireStatus::Acquired); // loaded

        server.pause(); // everything below reaches the server as one stream
        std::vector<std::pair<std::string, std::future<idem::AcquireResult>>> calls;
        for (int i = 0; i < 100; ++i)
            calls.emplace_back("a-" + std::to_string(i), store.acquire("a-" + std::to_string(i)));
        auto flushed = pool.at(0).command({"SCRIPT", "FLUSH"});
        for (int i = 0; i < 100; ++i)
            calls.emplace_back("b-" + std::to_string(i), store.acquire("b-" + std::to_string(i)));
        server.resume();
        QCOMPARE(text(flushed.get()), std::string("OK"));
        for (auto& [id, f] : calls) {
            const auto a = f.get();
            QCOMPARE(a.status, idem::AcquireStatus::Acquired);
            QCOMPARE(a.ticket.id, id);
        }
        QVERIFY2(infoField(admin, "errorstats", "errorstat_NOSCRIPT") >= 1, "no call met NOSCRIPT");
        // and again with executions
        idem::ConnectionPool blocking(server.connectionOptions(), 1);
        idem::Store bstore(blocking, ns("flush"));
        idem::Executor ex(bstore, store);
        admin.checked({"SCRIPT", "FLUSH"});
        std::vector<std::future<idem::Outcome>> outs;
        for (int i = 0; i < 50; ++i)
            outs.push_back(ex.submit("x-" + std::to_string(i), "", [i](const idem::WorkContext& ctx) {
                return idem::WorkResult::success(ctx.id + "=" + std::to_string(i));
            }));
        for (int i = 0; i < 50; ++i) {
            const auto o = outs[static_cast<std::size_t>(i)].get();
            QCOMPARE(o.kind, OutcomeKind::Executed);
            QCOMPARE(o.response, "x-" + std::to_string(i) + "=" + std::to_string(i));
        }
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

    // submit(): one id submitted 50 times at once runs once; the others are InProgress, later
    // ones replay
    void duplicatesAndConcurrentInProgress()
    {
        idem::ConnectionPool blocking(idemtest::sharedRedis(), 1);
        idem::Store store(blocking, ns(idemtest::uniqueNamespace("dup")));
        idem::AsyncPool pool(idemtest::sharedRedis(), 2);
        idem::AsyncStore async(pool, store.options());
        idem::Executor ex(store, async);
        std::atomic<int> runs{0};
        idem::ExecuteOptions eo;
        eo.runOn = onPool;
        auto work = [&](const idem::WorkContext&) {
            ++runs;
            QThread::msleep(300);
            return idem::WorkResult::success("the one");
        };
        std::vector<std::future<idem::Outcome>> first;
        for (int i = 0; i < 50; ++i)
            first.push_back(ex.submit("order-1", "{\"a\":1}", work, eo));
        int executed = 0, inProgress = 0;
        for (auto& f : first) {
            const auto o = f.get();
            executed += o.kind == OutcomeKind::Executed;
            inProgress += o.kind == OutcomeKind::InProgress;
        }
        QCOMPARE(executed, 1);
        QCOMPARE(inProgress, 49);
        for (int i = 0; i < 20; ++i) {
            const auto o = ex.submit("order-1", "{\"a\":1}", work, eo).get();
            QCOMPARE(o.kind, OutcomeKind::Replayed);
            QCOMPARE(o.response, std::string("the one"));
        }
        QCOMPARE(ex.submit("order-1", "{\"a\":2}", work, eo).get().kind, OutcomeKind::PayloadMismatch);
        QCOMPARE(runs.load(), 1);
    }

    // Work running four leases long keeps its lease (the watchdog renews it, pipelined): a
    // duplicate in the meantime is InProgress, not a takeover.
    void longWorkIsRenewed()
    {
        idem::ConnectionPool blocking(idemtest::sharedRedis(), 1);
        idem::Store store(blocking, ns(idemtest::uniqueNamespace("renew"), idem::Millis(300)));
        idem::AsyncPool pool(idemtest::sharedRedis(), 2);
        idem::AsyncStore async(pool, store.options());
        idem::Executor ex(store, async);
        idem::ExecuteOptions eo;
        eo.runOn = onPool;
        std::atomic<bool> lost{false};
        std::vector<std::future<idem::Outcome>> longOnes;
        for (int i = 0; i < 20; ++i)
            longOnes.push_back(ex.submit("long-" + std::to_string(i), "", [&](const idem::WorkContext& ctx) {
                for (int t = 0; t < 24; ++t) {
                    QThread::msleep(50);
                    if (ctx.leaseLost.stop_requested())
                        lost = true;
                }
                return idem::WorkResult::success("finished");
            }, eo));
        QTest::qWait(700);
        for (int i = 0; i < 20; ++i)
            QCOMPARE(ex.submit("long-" + std::to_string(i), "", [](auto&) { return idem::WorkResult::success("2nd"); })
                         .get()
                         .kind,
                     OutcomeKind::InProgress);
        for (auto& f : longOnes) {
            const auto o = f.get();
            QCOMPARE(o.kind, OutcomeKind::Executed);
            QCOMPARE(o.response, std::string("finished"));
        }
        QVERIFY(!lost);
    }

    // Submitted work whose renewals keep failing (the server hangs): the watchdog's pipelined
    // renewals time out, and the work is told once its lease has certainly run out - not before
    // (a failed renewal alone is not a lost lease), not long after
    void asyncRenewalsFailingUntilTheLeaseEnds()
    {
        idem::LocalServer server;
        auto opts = quick(server.connectionOptions());
        opts.commandTimeout = idem::Millis(150);
        idem::ConnectionPool blocking(opts, 1);
        idem::Store store(blocking, ns("rf", idem::Millis(600)));
        idem::AsyncPool pool(opts, 1);
        idem::AsyncStore async(pool, store.options());
        idem::Executor ex(store, async);
        idem::ExecuteOptions eo;
        eo.runOn = onPool;
        std::atomic<bool> told{false};
        std::atomic<qint64> toldAfter{-1};
        const auto o = ex.submit("job", "", [&](const idem::WorkContext& ctx) {
            QElapsedTimer since;
            server.pause(); // the lease was taken just now: it ends about 600 ms from here
            since.start();
            for (int i = 0; i < 400 && !ctx.leaseLost.stop_requested(); ++i)
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
            told = ctx.leaseLost.stop_requested();
            toldAfter = since.elapsed();
            server.resume();
            return idem::WorkResult::success("done");
        }, eo).get();
        QVERIFY(told.load());
        QVERIFY2(toldAfter >= 550, qPrintable(QString::number(toldAfter))); // not before the lease ran out
        QVERIFY2(toldAfter < 2000, qPrintable(QString::number(toldAfter)));  // and soon after it
        QVERIFY(o.workRan);
        // nobody took the lock over meanwhile: the owner's result is still stored once it can be
        QCOMPARE(o.kind, OutcomeKind::Executed);
        QCOMPARE(store.inspect("job")->state, idem::RecordState::Completed);
    }

    // minReplicas through submit(): WAIT rides in the acquire's unit; a frozen replica leaves the
    // lock unacknowledged, so it is given back and the work does not run; thawed, it runs once
    void minReplicasThroughSubmit()
    {
        idem::LocalServer primary;
        idem::LocalServerOptions ro;
        ro.extraArgs = {"--replicaof", "127.0.0.1", std::to_string(primary.port())};
        idem::LocalServer replica(ro);
        idem::Connection admin(primary.connectionOptions());
        QTRY_VERIFY_WITH_TIMEOUT(text(admin.checked({"INFO", "replication"})).find("state=online") != std::string::npos,
                                 10000);
        idem::StoreOptions so = ns("replicated", idem::Millis(3000));
        so.minReplicas = 1;
        so.replicaTimeout = idem::Millis(300);
        idem::ConnectionPool blocking(quick(primary.connectionOptions()), 1);
        idem::Store store(blocking, so);
        idem::AsyncPool pool(quick(primary.connectionOptions()), 1);
        idem::AsyncStore async(pool, so);
        idem::Executor ex(store, async);
        std::atomic<int> runs{0};
        const auto work = [&](const idem::WorkContext&) {
            ++runs;
            return idem::WorkResult::success("ok");
        };
        replica.pause();
        const auto refused = ex.submit("z", "", work).get();
        QCOMPARE(refused.kind, OutcomeKind::StoreUnavailable);
        QVERIFY2(refused.error.find("acknowledged by 0 of the 1 replica") != std::string::npos, refused.error.c_str());
        QCOMPARE(runs.load(), 0);
        QTRY_VERIFY(!store.inspect("z")); // the lock was given back
        replica.resume();
        idem::Outcome ran;
        QElapsedTimer thawed;
        thawed.start();
        while ((ran = ex.submit("z", "", work).get()).kind == OutcomeKind::StoreUnavailable && thawed.elapsed() < 10000) {
            QVERIFY(!ran.workRan); // the replica catches up: still refused, still not run
            QThread::msleep(50);
        }
        QCOMPARE(ran.kind, OutcomeKind::Executed);
        QCOMPARE(runs.load(), 1);
        QCOMPARE(ex.submit("z", "", work).get().kind, OutcomeKind::Replayed);
    }

    // Executor without an AsyncStore of its own makes one; completions arrive on the context's
    // thread through idem_qt
    void qtCompletionOnTheContextThread()
    {
        idem::ConnectionPool blocking(idemtest::sharedRedis(), 1);
        idem::Store store(blocking, ns(idemtest::uniqueNamespace("qt")));
        idem::Executor ex(store);
        QObject context;
        QThread* where = nullptr;
        idem::Outcome got;
        idem::qt::submit(ex, "q-1", "", [](auto&) { return idem::WorkResult::success("qt"); }, &context,
                         [&](const idem::Outcome& o) {
                             where = QThread::currentThread();
                             got = o;
                         });
        QTRY_VERIFY(where != nullptr);
        QCOMPARE(where, QThread::currentThread());
        QCOMPARE(got.kind, OutcomeKind::Executed);
        QCOMPARE(got.response, std::string("qt"));
    }

    void qtCompletionDroppedWhenTheContextDied()
    {
        idem::ConnectionPool blocking(idemtest::sharedRedis(), 1);
        idem::Store store(blocking, ns(idemtest::uniqueNamespace("qt")));
        idem::Executor ex(store);
        auto* context = new QObject;
        std::atomic<int> called{0};
        idem::ExecuteOptions eo;
        eo.runOn = onPool;
        for (int i = 0; i < 20; ++i)
            idem::qt::submit(ex, "gone-" + std::to_string(i), "", [](auto&) {
                QThread::msleep(100);
                return idem::WorkResult::success("late");
            }, context, [&](const idem::Outcome&) { ++called; }, eo);
        delete context;
        QTRY_COMPARE(ex.inFlight(), std::size_t(0));
        QTest::qWait(50); // anything posted would run now
        QCOMPARE(called.load(), 0);
    }
};

QTEST_GUILESS_MAIN(TestAsync)
#include "tst_async.moc"
