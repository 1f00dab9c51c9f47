// Executor::submit() on PostgreSQL through PgStore's pipelined connections (libpq's pipeline
// mode), on a private PostgreSQL server this test starts: thousands of executions over two
// connections, exactly once; calls batched into one statement each keep their own values and
// answers; one statement's error leaves the others in the same pipeline alone;
// the connections killed under load (pg_terminate_backend) and the server stopped: nothing runs
// twice, nothing is lost, the work does not run while the store is away, and it works again after.
#include "idem/engine/executor.h"
#include "idem/errors.h"
#include "idem/pg/localpostgres.h"
#include "idem/pg/pgstore.h"
#include "pgfixture.h"
#include "testsupport.h"

#include <libpq-fe.h>

#include <QtTest>

#include <atomic>
#include <condition_variable>
#include <csignal>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

using idem::AcquireStatus;
using idem::OutcomeKind;
using idemtest::pgSql;

namespace {

// Submits ids[i] for every i with at most `inFlight` under way (each completion submits the next),
// the work inline; waits for all. Answers each id's outcome; `runs` counts the work's runs.
struct Chains {
    std::mutex mutex;
    std::condition_variable cv;
    std::map<std::string, int> runs;
    std::map<std::string, idem::Outcome> outcomes;
    std::size_t next = 0, done = 0;

    void go(idem::Executor& ex, const std::vector<std::string>& ids, std::size_t inFlight,
            const idem::ExecuteOptions& options = {})
    {
        const std::size_t start = std::min(inFlight, ids.size());
        {
            std::lock_guard lock(mutex); // a watching thread may read `done` meanwhile
            done = 0;
            outcomes.clear();
            next = start;
        }
        for (std::size_t i = 0; i < start; ++i)
            submit(ex, ids, i, options);
        std::unique_lock lock(mutex);
        QVERIFY(cv.wait_for(lock, std::chrono::seconds(60), [&] { return done == ids.size(); }));
    }

    void submit(idem::Executor& ex, const std::vector<std::string>& ids, std::size_t i,
                const idem::ExecuteOptions& options)
    {
        const std::string id = ids[i];
        ex.submit(
            id, "",
            [this, id](const idem::WorkContext&) {
                std::lock_guard lock(mutex);
                ++runs[id];
                return idem::WorkResult::success("done " + id);
            },
            [this, &ex, &ids, id, options](idem::Outcome o) {
                std::size_t mine = ids.size();
                {
                    std::lock_guard lock(mutex);
                    outcomes[id] = std::move(o);
                    if (next < ids.size())
                        mine = next++;
                }
                if (mine < ids.size())
                    submit(ex, ids, mine, options);
                std::lock_guard lock(mutex);
                ++done;
                cv.notify_all();
            },
            options);
    }
};

std::vector<std::string> idsOf(const std::string& prefix, int n)
{
    std::vector<std::string> ids;
    for (int i = 0; i < n; ++i)
        ids.push_back(prefix + std::to_string(i));
    return ids;
}

} // namespace

class TestPgPipeline : public QObject {
    Q_OBJECT

    std::unique_ptr<idem::LocalPostgres> pg;
    std::string url;

    // the backends of this test's pipelined connections (application_name set in the URL)
    int backends(const std::string& app)
    {
        return std::stoi(pgSql(url, "SELECT count(*) FROM pg_stat_activity WHERE application_name = '" + app + "'"));
    }
    std::string urlFor(const std::string& app) { return url + "?application_name=" + app; }

private slots:
    void initTestCase()
    {
        pg = idemtest::startPostgres();
        url = pg->url();
    }
    void cleanupTestCase() { pg.reset(); }

    // 3,000 ids: 200 with 4 in flight go over one connection (calls fill the first up to 8 pending
    // before the second takes any), the rest with 64 in flight over both; each ran once; then
    // every one again, 600 in flight, is a replay of its own result; no other connection was
    // opened for them, and batches made fewer statements than calls
    void thousandsInFlightOverTwoConnections()
    {
        idem::PgStoreOptions o;
        o.pipelineConnections = 2;
        idem::PgStore store(urlFor("idem_pipe_many"), o);
        idem::Executor ex(store);
        const auto ids = idsOf(idemtest::uniqueNamespace("many") + "-", 3000);
        const std::vector<std::string> few(ids.begin(), ids.begin() + 200), rest(ids.begin() + 200, ids.end());
        Chains chains;
        std::atomic<int> most{0};
        std::atomic<bool> stop{false};
        chains.go(ex, few, 4);
        for (const auto& id : few)
            QCOMPARE(chains.outcomes[id].kind, OutcomeKind::Executed);
        QCOMPARE(backends("idem_pipe_many"), 1);
        std::thread watcher([&] { // the connections the store has open while the load runs
            while (!stop) {
                most = std::max(most.load(), backends("idem_pipe_many"));
                std::this_thread::sleep_for(std::chrono::milliseconds(20));
            }
        });
        chains.go(ex, rest, 64);
        for (const auto& id : rest) {
            QCOMPARE(chains.outcomes[id].kind, OutcomeKind::Executed);
            QCOMPARE(chains.runs[id], 1);
        }
        QCOMPARE(backends("idem_pipe_many"), 2);
        chains.go(ex, ids, 600);
        stop = true;
        watcher.join();
        for (const auto& id : ids) {
            QCOMPARE(chains.outcomes[id].kind, OutcomeKind::Replayed);
            QCOMPARE(chains.outcomes[id].response, "done " + id);
            QCOMPARE(chains.runs[id], 1);
        }
        QCOMPARE(backends("idem_pipe_many"), 2);
        QVERIFY2(most <= 2, qPrintable(QString::number(most.load()) + u" connections"_qs));
        const idem::PgPipelineCounts counts = store.pipelineCounts();
        QVERIFY2(counts.statements < 3000 * 3, qPrintable(QString::number(counts.statements) + u" statements"_qs));
        QCOMPARE(pgSql(url, "SELECT count(*) FROM idem.records WHERE id LIKE '" + ids[0].substr(0, ids[0].size() - 1) +
                                "%' AND state = 'COMPLETED'"),
                 std::string("3000"));
        // bad arguments throw at once, as on Redis
        QVERIFY_THROWS_EXCEPTION(idem::UsageError, ex.submit("", "", [](const idem::WorkContext&) {
            return idem::WorkResult::success("");
        }));
    }

    // 32 submits of one id at once, the work on threads of its own: it runs once; the others are
    // told it is in progress, or get its result
    void thirtyTwoSubmitsOfOneIdRunOnce()
    {
        idem::PgStore store(url);
        idem::Executor ex(store);
        const std::string id = idemtest::uniqueNamespace("one");
        std::atomic<int> runs{0};
        std::vector<std::thread> workers;
        std::mutex workersMutex;
        idem::ExecuteOptions onThreads;
        onThreads.runOn = [&](std::function<void()> task) {
            std::lock_guard lock(workersMutex);
            workers.emplace_back(std::move(task));
        };
        std::vector<std::future<idem::Outcome>> answers;
        for (int i = 0; i < 32; ++i)
            answers.push_back(ex.submit(id, "", [&](const idem::WorkContext&) {
                ++runs;
                std::this_thread::sleep_for(std::chrono::milliseconds(200));
                return idem::WorkResult::success("once");
            }, onThreads));
        int executed = 0;
        for (auto& f : answers) {
            const auto o = f.get();
            QVERIFY2(o.kind == OutcomeKind::Executed || o.kind == OutcomeKind::InProgress ||
                         o.kind == OutcomeKind::Replayed,
                     idem::nameOf(o.kind).data());
            executed += o.kind == OutcomeKind::Executed ? 1 : 0;
        }
        for (auto& t : workers)
            t.join();
        QCOMPARE(executed, 1);
        QCOMPARE(runs.load(), 1);
        QCOMPARE(ex.submit(id, "", [](const idem::WorkContext&) { return idem::WorkResult::success("no"); })
                     .get()
                     .response,
                 std::string("once"));
    }

    // Calls queued together go out as one batch statement: each call still gets its own answer and
    // its own values (lease, fingerprint or none, binary response, retention), and two acquires of
    // one new id in the same batch are one acquired and one in progress
    void batchesKeepEachCallsOwnValues()
    {
        idem::PgStoreOptions o;
        o.pipelineConnections = 1;
        idem::PgStore store(url, o);
        const std::string prefix = idemtest::uniqueNamespace("batch") + "-";
        const int n = 300;
        auto fingerprintOf = [](int i) { return i % 3 == 0 ? std::string() : std::string("fp\0\xff", 4) + std::to_string(i); };
        auto responseOf = [](int i) {
            std::string r(i == 7 ? 200'000 : static_cast<std::size_t>(i * 37 % 5000), '\0');
            for (std::size_t k = 0; k < r.size(); ++k)
                r[k] = static_cast<char>((k * 131 + static_cast<std::size_t>(i)) & 0xff);
            return r;
        };
        auto leaseOf = [](int i) { return idem::Millis(60'000 + i * 10); };
        auto retentionOf = [](int i) { return idem::Millis(3'600'000LL * (1 + i % 5)); };

        std::mutex mutex;
        std::condition_variable cv;
        int answered = 0, completed = 0;
        std::map<int, AcquireStatus> twice; // the same new id acquired twice in one burst
        std::string problem;
        for (int i = 0; i < n; ++i)
            store.acquireAsync(prefix + std::to_string(i), fingerprintOf(i), leaseOf(i),
                               [&, i](idem::AcquireResult a, std::exception_ptr e) {
                                   if (e || a.status != AcquireStatus::Acquired) {
                                       std::lock_guard lock(mutex);
                                       problem = "acquire " + std::to_string(i) + " not acquired";
                                       ++answered;
                                       cv.notify_all();
                                       return;
                                   }
                                   store.completeAsync(a.ticket, responseOf(i), retentionOf(i),
                                                       [&](idem::OwnerResult r, std::exception_ptr e2) {
                                                           std::lock_guard lock(mutex);
                                                           ++answered;
                                                           if (!e2 && r.status == idem::OwnerStatus::Ok)
                                                               ++completed;
                                                           cv.notify_all();
                                                       });
                               });
        for (int k = 0; k < 2; ++k)
            store.acquireAsync(prefix + "twice", "", idem::Millis(60'000),
                               [&, k](idem::AcquireResult a, std::exception_ptr e) {
                                   std::lock_guard lock(mutex);
                                   twice[k] = e ? AcquireStatus::Mismatch : a.status;
                                   ++answered;
                                   cv.notify_all();
                               });
        {
            std::unique_lock lock(mutex);
            QVERIFY(cv.wait_for(lock, std::chrono::seconds(60), [&] { return answered == n + 2; }));
        }
        QVERIFY2(problem.empty(), problem.c_str());
        QCOMPARE(completed, n);
        QCOMPARE(std::min(twice[0], twice[1]), AcquireStatus::Acquired);
        QCOMPARE(std::max(twice[0], twice[1]), AcquireStatus::InProgress);
        const idem::PgPipelineCounts counts = store.pipelineCounts();
        QVERIFY2(counts.batches > 0 && counts.batchedCalls >= 2 * counts.batches,
                 qPrintable(QString::number(counts.batches) + u" batches"_qs));
        QCOMPARE(counts.batchesResent, std::uint64_t(0));
        // on the server: each row's retention is its own
        QCOMPARE(pgSql(url, "SELECT count(*) FROM idem.records WHERE id LIKE '" + prefix + "%' AND id <> '" + prefix +
                                "twice' AND expires_at - finished_at = (1 + (split_part(id, '-', -1)::int % 5)) * "
                                "interval '1 hour'"),
                 std::to_string(n));

        // again, batched too: each a duplicate with its own response, or a mismatch with its own
        // stored fingerprint; and each lease its own
        answered = 0;
        std::map<int, idem::AcquireResult> again;
        for (int i = 0; i < n; ++i) {
            const bool mismatch = i % 3 == 1;
            store.acquireAsync(prefix + std::to_string(i), mismatch ? std::string("other") : fingerprintOf(i),
                               leaseOf(i), [&, i](idem::AcquireResult a, std::exception_ptr e) {
                                   std::lock_guard lock(mutex);
                                   if (!e)
                                       again[i] = std::move(a);
                                   ++answered;
                                   cv.notify_all();
                               });
        }
        for (int i = 0; i < 20; ++i)
            store.acquireAsync(prefix + "lease-" + std::to_string(i), "", leaseOf(i),
                               [&](idem::AcquireResult, std::exception_ptr) {
                                   std::lock_guard lock(mutex);
                                   ++answered;
                                   cv.notify_all();
                               });
        {
            std::unique_lock lock(mutex);
            QVERIFY(cv.wait_for(lock, std::chrono::seconds(60), [&] { return answered == n + 20; }));
        }
        QCOMPARE(int(again.size()), n);
        for (int i = 0; i < n; ++i) {
            const idem::AcquireResult& a = again[i];
            if (i % 3 == 1) {
                QCOMPARE(a.status, AcquireStatus::Mismatch);
                QCOMPARE(a.storedFingerprint, fingerprintOf(i));
            } else {
                QCOMPARE(a.status, AcquireStatus::Duplicate);
                QVERIFY2(a.response == responseOf(i), qPrintable(u"response of "_qs + QString::number(i)));
            }
        }
        QCOMPARE(pgSql(url, "SELECT count(*) FROM idem.records WHERE id LIKE '" + prefix + "lease-%' AND "
                                "lease_until - started_at = (60000 + split_part(id, '-', -1)::int * 10) * "
                                "interval '1 millisecond'"),
                 std::string("20"));
        QVERIFY(store.pipelineCounts().batches > counts.batches);
    }

    // In one pipeline, statements that fail on the server (a lease of zero) between ones that do
    // not: each failure is its own, the others are answered as usual
    void aFailingStatementLeavesTheOthersAlone()
    {
        idem::PgStoreOptions o;
        o.pipelineConnections = 1;
        idem::PgStore store(url, o);
        const std::string prefix = idemtest::uniqueNamespace("mixed") + "-";
        std::mutex mutex;
        std::condition_variable cv;
        int answered = 0, acquired = 0, refused = 0;
        std::string refusal;
        for (int i = 0; i < 200; ++i) {
            const bool bad = i % 2 == 1;
            store.acquireAsync(prefix + std::to_string(i), "", idem::Millis(bad ? 0 : 5000),
                               [&, bad](idem::AcquireResult a, std::exception_ptr e) {
                                   std::lock_guard lock(mutex);
                                   ++answered;
                                   if (!bad && !e && a.status == AcquireStatus::Acquired)
                                       ++acquired;
                                   if (bad && e) {
                                       try {
                                           std::rethrow_exception(e);
                                       } catch (const idem::ReplyError& x) {
                                           ++refused;
                                           refusal = x.what();
                                       } catch (...) {
                                       }
                                   }
                                   cv.notify_all();
                               });
        }
        std::unique_lock lock(mutex);
        QVERIFY(cv.wait_for(lock, std::chrono::seconds(30), [&] { return answered == 200; }));
        QCOMPARE(acquired, 100);
        QCOMPARE(refused, 100);
        QVERIFY2(refusal.find("lease must be positive") != std::string::npos, refusal.c_str());
        QCOMPARE(pgSql(url, "SELECT count(*) FROM idem.records WHERE id LIKE '" + prefix + "%'"), std::string("100"));
        // the calls queued behind the first went out batched; a batch with a bad call in it is
        // refused as a whole, and its calls went again one by one (the answers above)
        QVERIFY(store.pipelineCounts().batchesResent > 0);
    }

    // The pipelined connections killed while executions are under way: an acquire under way
    // answers StoreUnavailable with the work not run, a result being stored is stored again on a
    // new connection; redelivered until they run, every id ran exactly once, and the store
    // connected again by itself
    void connectionsKilledUnderLoad()
    {
        idem::PgStoreOptions o;
        o.pipelineConnections = 2;
        o.lease = idem::Millis(1000);
        idem::PgStore store(urlFor("idem_pipe_kill"), o);
        idem::Executor ex(store);
        const auto ids = idsOf(idemtest::uniqueNamespace("kill") + "-", 4000);
        Chains chains;
        int killed = 0;
        std::thread killer([&] { // once the load is well under way (a second kill could also hit
                                 // the one retry of storing a result, which then would be lost)
            for (;;) {
                {
                    std::lock_guard lock(chains.mutex);
                    if (chains.done >= 500)
                        break;
                }
                std::this_thread::sleep_for(std::chrono::milliseconds(2));
            }
            killed = std::stoi(pgSql(url, "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM "
                                          "pg_stat_activity WHERE application_name = 'idem_pipe_kill') AS k"));
        });
        chains.go(ex, ids, 64);
        killer.join();
        QVERIFY(killed > 0);
        std::vector<std::string> again;
        for (const auto& id : ids) {
            const auto& out = chains.outcomes[id];
            QVERIFY2(out.kind == OutcomeKind::Executed || (out.kind == OutcomeKind::StoreUnavailable && !out.workRan),
                     (id + ": " + std::string(idem::nameOf(out.kind)) + " " + out.error).c_str());
            if (out.kind != OutcomeKind::Executed)
                again.push_back(id);
        }
        qInfo("%d backends killed, %zu of %zu executions answered StoreUnavailable", killed, again.size(), ids.size());
        // redelivered (an acquire that committed before its answer was lost holds a lease of 1 s)
        QElapsedTimer t;
        t.start();
        while (!again.empty() && t.elapsed() < 30000) {
            chains.go(ex, again, 64);
            std::vector<std::string> left;
            for (const auto& id : again)
                if (chains.outcomes[id].kind != OutcomeKind::Executed && chains.outcomes[id].kind != OutcomeKind::Replayed)
                    left.push_back(id);
            again.swap(left);
            if (!again.empty())
                std::this_thread::sleep_for(std::chrono::milliseconds(200));
        }
        QVERIFY2(again.empty(), qPrintable(QString::number(again.size()) + u" never ran"_qs));
        for (const auto& id : ids)
            QVERIFY2(chains.runs[id] == 1, (id + " ran " + std::to_string(chains.runs[id])).c_str());
    }

    // A row another connection's transaction holds (execute()'s transactional mode, here a bare
    // BEGIN; acquire): the pipelined acquire of that id waits at most the lock timeout and answers
    // InProgress; the calls sent after it on the same connection are answered, not held up for good
    void aHeldRowDoesNotStallThePipeline()
    {
        idem::PgStoreOptions o;
        o.pipelineConnections = 1;
        o.pipelineLockTimeout = idem::Millis(300);
        idem::PgStore store(url, o);
        const std::string held = idemtest::uniqueNamespace("held");
        PGconn* tx = PQconnectdb(url.c_str());
        QCOMPARE(PQstatus(tx), CONNECTION_OK);
        PQclear(PQexec(tx, "BEGIN"));
        const std::string q = "SELECT outcome FROM idem.acquire('" + held + "')";
        PGresult* r = PQexec(tx, q.c_str());
        QCOMPARE(PQresultStatus(r), PGRES_TUPLES_OK);
        QCOMPARE(std::string(PQgetvalue(r, 0, 0)), std::string("acquired"));
        PQclear(r);
        std::mutex mutex;
        std::condition_variable cv;
        int answered = 0, acquired = 0;
        std::optional<idem::AcquireStatus> heldStatus;
        QElapsedTimer t;
        t.start();
        store.acquireAsync(held, "", idem::Millis(5000), [&](idem::AcquireResult a, std::exception_ptr e) {
            std::lock_guard lock(mutex);
            if (!e)
                heldStatus = a.status;
            ++answered;
            cv.notify_all();
        });
        for (int i = 0; i < 20; ++i)
            store.acquireAsync(held + "-next-" + std::to_string(i), "", idem::Millis(5000),
                               [&](idem::AcquireResult a, std::exception_ptr e) {
                                   std::lock_guard lock(mutex);
                                   acquired += !e && a.status == AcquireStatus::Acquired ? 1 : 0;
                                   ++answered;
                                   cv.notify_all();
                               });
        {
            std::unique_lock lock(mutex);
            QVERIFY(cv.wait_for(lock, std::chrono::seconds(20), [&] { return answered == 21; }));
        }
        const qint64 ms = t.elapsed();
        PQclear(PQexec(tx, "ROLLBACK"));
        PQfinish(tx);
        QVERIFY(heldStatus);
        QCOMPARE(*heldStatus, AcquireStatus::InProgress);
        QCOMPARE(acquired, 20);
        QVERIFY2(ms >= 250 && ms < 5000, qPrintable(QString::number(ms) + u" ms"_qs));
        // the transaction gone, the id is free
        std::promise<idem::AcquireResult> again;
        store.acquireAsync(held, "", idem::Millis(5000), [&](idem::AcquireResult a, std::exception_ptr) {
            again.set_value(std::move(a));
        });
        QCOMPARE(again.get_future().get().status, AcquireStatus::Acquired);
    }

    // A backend that stops answering (SIGSTOP): the calls under way on its connection fail after
    // the call timeout (the work does not run), and the next call gets a new connection
    void aHungBackendFailsItsCallsInTime()
    {
        idem::PgStoreOptions o;
        o.pipelineConnections = 1;
        o.pipelineCallTimeout = idem::Millis(500);
        idem::PgStore store(urlFor("idem_pipe_hung"), o);
        idem::Executor ex(store);
        QCOMPARE(ex.submit(idemtest::uniqueNamespace("before"), "", [](const idem::WorkContext&) {
            return idem::WorkResult::success("");
        }).get().kind, OutcomeKind::Executed);
        const pid_t backend = static_cast<pid_t>(std::stoi(
            pgSql(url, "SELECT pid FROM pg_stat_activity WHERE application_name = 'idem_pipe_hung'")));
        QCOMPARE(::kill(backend, SIGSTOP), 0);
        std::atomic<int> ran{0};
        QElapsedTimer t;
        t.start();
        const auto o1 = ex.submit(idemtest::uniqueNamespace("hung"), "", [&](const idem::WorkContext&) {
            ++ran;
            return idem::WorkResult::success("must not run");
        }).get();
        const qint64 ms = t.elapsed();
        ::kill(backend, SIGCONT);
        QCOMPARE(o1.kind, OutcomeKind::StoreUnavailable);
        QVERIFY2(o1.error.find("no answer within 500 ms") != std::string::npos, o1.error.c_str());
        QCOMPARE(ran.load(), 0);
        QVERIFY2(ms >= 450 && ms < 5000, qPrintable(QString::number(ms) + u" ms"_qs));
        QCOMPARE(ex.submit(idemtest::uniqueNamespace("after"), "", [](const idem::WorkContext&) {
            return idem::WorkResult::success("");
        }).get().kind, OutcomeKind::Executed);
    }

    // PostgreSQL away: submit() fails closed (the work does not run); back, the pipelines connect
    // again without a new store
    void failsClosedWithTheServerStopped()
    {
        idem::PgStore store(url);
        idem::Executor ex(store);
        QCOMPARE(ex.submit(idemtest::uniqueNamespace("warm"), "", [](const idem::WorkContext&) {
            return idem::WorkResult::success("");
        }).get().kind, OutcomeKind::Executed);
        pg->stop();
        std::atomic<int> ran{0};
        for (int i = 0; i < 4; ++i) {
            const auto o = ex.submit(idemtest::uniqueNamespace("down"), "", [&](const idem::WorkContext&) {
                ++ran;
                return idem::WorkResult::success("must not run");
            }).get();
            QCOMPARE(o.kind, OutcomeKind::StoreUnavailable);
            QVERIFY(!o.workRan);
        }
        QCOMPARE(ran.load(), 0);
        pg->start();
        QCOMPARE(ex.submit(idemtest::uniqueNamespace("up"), "", [](const idem::WorkContext&) {
            return idem::WorkResult::success("");
        }).get().kind, OutcomeKind::Executed);
    }
};

QTEST_GUILESS_MAIN(TestPgPipeline)
#include "tst_pgpipeline.moc"
