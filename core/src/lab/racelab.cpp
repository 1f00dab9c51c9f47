#include "idem/lab/racelab.h"

#include "idem/redis/connection.h"
#include "idem/errors.h"
#include "idem/engine/scripts.h"
#include "lab/labredis.h"
#include "idem/engine/store.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <random>
#include <thread>

namespace idem {

std::string_view nameOf(Strategy s)
{
    switch (s) {
    case Strategy::Naive: return "naive";
    case Strategy::SetNx: return "setnx";
    case Strategy::Watch: return "watch";
    case Strategy::Lua: break;
    }
    return "lua";
}

std::optional<Strategy> strategyFromString(std::string_view s)
{
    for (Strategy st : {Strategy::Naive, Strategy::SetNx, Strategy::Watch, Strategy::Lua})
        if (nameOf(st) == s)
            return st;
    return std::nullopt;
}

std::string_view nameOf(TraceKind k)
{
    switch (k) {
    case TraceKind::Acquired: return "acquired";
    case TraceKind::InProgress: return "in_progress";
    case TraceKind::Replayed: return "replayed";
    case TraceKind::TakenOver: return "taken_over";
    case TraceKind::LeaseLost: return "lease_lost";
    case TraceKind::Crashed: return "crashed";
    case TraceKind::Paused: return "paused";
    case TraceKind::Executed: return "executed";
    case TraceKind::Fenced: return "fenced";
    case TraceKind::Read: return "read";
    case TraceKind::Aborted: return "aborted";
    case TraceKind::Completed: break;
    }
    return "completed";
}

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::int64_t kTtlMs = kLabTtlMs; // everything the lab writes expires

struct Delivery {
    std::string id;
    Clock::time_point at;
    bool redelivery = false;
    // decided from the seed when the schedule is made, so a seed repeats a run's schedule
    bool crash = false;
    bool pause = false;
    Millis jitter{0};
    Millis work{0};
};

class Race {
public:
    Race(const ConnectionOptions& c, Strategy s, Workload w, const std::atomic<bool>* cancel)
        : m_conn(c), m_strategy(s), m_w(std::move(w)), m_cancel(cancel)
    {
        if (m_w.forcedInterleaving) {
            m_w.events = 1;
            m_w.duplicates = 2;
            m_w.workers = 2;
            m_w.shuffle = false;
            m_w.crashRate = m_w.pauseRate = 0;
        }
        if (m_w.events < 1 || m_w.duplicates < 1 || m_w.workers < 1 || m_w.events > 1'000'000 ||
            m_w.duplicates > 1000 || m_w.workers > 256)
            throw UsageError("race: events, duplicates and workers must be positive (at most 1000000, 1000, 256)");
        if (m_w.crashRate < 0 || m_w.crashRate > 1 || m_w.pauseRate < 0 || m_w.pauseRate > 1)
            throw UsageError("race: crash and pause rates are fractions from 0 to 1");
        if (m_w.workMax < m_w.workMin || m_w.lease.count() <= 0)
            throw UsageError("race: work duration and lease must make sense");
        m_ns = m_w.keyNamespace + ":" + std::string(nameOf(s)) + "-" + newToken().substr(0, 8);
    }

    RaceResult run()
    {
        m_topology = LabTopology::read(m_conn); // on a cluster: each event's keys on their node
        Connection admin(m_conn);
        auto t = admin.checked({"TIME"});
        m_serverStartMs = reply::timeMs(t.get());
        m_start = Clock::now();
        schedule();
        const int workers = m_w.workers;
        std::vector<std::thread> threads;
        std::vector<std::exception_ptr> errors(static_cast<std::size_t>(workers));
        for (int i = 0; i < workers; ++i)
            threads.emplace_back([this, i, &errors] {
                try {
                    work(i);
                } catch (...) {
                    errors[static_cast<std::size_t>(i)] = std::current_exception();
                    abort();
                }
            });
        for (auto& th : threads)
            th.join();
        for (auto& e : errors)
            if (e)
                std::rethrow_exception(e);
        const double seconds = std::chrono::duration<double>(Clock::now() - m_start).count();

        RaceResult r;
        r.strategy = m_strategy;
        r.events = m_w.events;
        r.deliveries = m_deliveries;
        r.fenced = m_fenced;
        r.seconds = seconds;
        r.throughputPerS = seconds > 0 ? m_deliveries / seconds : 0;
        std::sort(m_latencies.begin(), m_latencies.end());
        auto pct = [&](double p) {
            if (m_latencies.empty())
                return 0.0;
            const auto i = static_cast<std::size_t>(p * static_cast<double>(m_latencies.size() - 1));
            return m_latencies[i];
        };
        r.p50Ms = pct(0.50);
        r.p99Ms = pct(0.99);
        // the ledger, independent of the strategy's own bookkeeping
        std::vector<std::string> ids;
        for (int e = 0; e < m_w.events; ++e)
            ids.push_back(eventId(e));
        LabRedis lab(m_conn, m_topology);
        const auto perEvent = labLedger(lab, m_ns, ids);
        for (const auto& [id, n] : perEvent) {
            r.executions += n;
            r.doubleExecutions += n - 1;
        }
        r.lost = m_w.events - static_cast<int>(perEvent.size());
        r.trace = std::move(m_trace); // in the order the answers came back (never re-sorted)
        return r;
    }

private:
    void schedule()
    {
        std::mt19937_64 rng(m_w.seed);
        std::uniform_real_distribution<double> u(0, 1);
        auto ms = [&](Millis lo, Millis hi) {
            return Millis(std::uniform_int_distribution<Millis::rep>(lo.count(), hi.count())(rng));
        };
        for (int e = 0; e < m_w.events; ++e)
            for (int d = 0; d < m_w.duplicates; ++d) {
                Delivery dl;
                dl.id = eventId(e);
                dl.at = m_start;
                dl.crash = u(rng) < m_w.crashRate;
                dl.pause = !dl.crash && u(rng) < m_w.pauseRate;
                dl.jitter = ms(Millis(0), m_w.jitterMax);
                dl.work = ms(m_w.workMin, m_w.workMax);
                m_queue.push_back(std::move(dl));
            }
        if (m_w.shuffle)
            std::shuffle(m_queue.begin(), m_queue.end(), rng);
    }

    static std::string eventId(int e) { return "ev-" + std::to_string(e); }

    std::int64_t serverNow() const
    {
        return m_serverStartMs +
               std::chrono::duration_cast<Millis>(Clock::now() - m_start).count();
    }

    void trace(int worker, const std::string& id, TraceKind k, std::int64_t fence = 0)
    {
        std::lock_guard lock(m_mutex);
        m_trace.push_back(TraceEvent{worker, id, k, serverNow(), fence, static_cast<int>(m_trace.size())});
    }

    void abort()
    {
        std::lock_guard lock(m_mutex);
        m_aborted = true;
        m_cv.notify_all();
    }

    // A broker's redelivery of an unacknowledged message, later; never crashes or stalls again.
    void redeliver(const Delivery& d)
    {
        Delivery again = d;
        again.at = Clock::now() + m_w.redeliverAfter;
        again.redelivery = true;
        again.crash = again.pause = false;
        std::lock_guard lock(m_mutex);
        m_queue.push_back(std::move(again));
        m_cv.notify_all();
    }

    std::optional<Delivery> next()
    {
        std::unique_lock lock(m_mutex);
        for (;;) {
            if (m_aborted || (m_cancel && m_cancel->load()))
                return std::nullopt;
            if (m_queue.empty()) {
                if (m_outstanding == 0)
                    return std::nullopt;
                m_cv.wait(lock);
                continue;
            }
            // the first ready delivery in schedule order; if none is ready, wait for the earliest
            const auto now = Clock::now();
            auto it = std::find_if(m_queue.begin(), m_queue.end(), [&](const Delivery& d) { return d.at <= now; });
            if (it == m_queue.end()) {
                // a copy: wait_until holds a reference, and the queue changes while we wait
                const Clock::time_point until =
                    std::min_element(m_queue.begin(), m_queue.end(),
                                     [](const Delivery& a, const Delivery& b) { return a.at < b.at; })->at;
                m_cv.wait_until(lock, until);
                continue;
            }
            Delivery d = std::move(*it);
            m_queue.erase(it);
            ++m_outstanding;
            ++m_deliveries;
            return d;
        }
    }

    void done(double ms)
    {
        std::lock_guard lock(m_mutex);
        --m_outstanding;
        m_latencies.push_back(ms);
        m_cv.notify_all();
    }

    bool effect(LabRedis& lab, int worker, const std::string& id, std::int64_t fence)
    {
        const bool executed = labEffect(lab, m_ns, id, fence, std::to_string(worker));
        trace(worker, id, executed ? TraceKind::Executed : TraceKind::Fenced, fence);
        if (!executed) {
            std::lock_guard lock(m_mutex);
            ++m_fenced;
        }
        return executed;
    }

    // Forced interleaving: four turns, one after the other - A reads (turn 0), B reads (1), A
    // writes (2), B writes (3); worker 0 is A, worker 1 is B. A turn begins when the one before it
    // has its answers and has traced them, so the trace is the order the server ran them in. Only
    // the two first deliveries take part; redeliveries run freely afterwards.
    bool inTurns(const Delivery& d) const { return m_w.forcedInterleaving && !d.redelivery; }
    void waitTurn(int turn)
    {
        std::unique_lock lock(m_mutex);
        m_cv.wait(lock, [&] { return m_turn == turn || m_aborted; });
    }
    void endTurn(int turn)
    {
        std::lock_guard lock(m_mutex);
        if (m_turn == turn) {
            ++m_turn;
            m_cv.notify_all();
        }
    }
    void beforeRead(int worker, const Delivery& d)
    {
        if (inTurns(d))
            waitTurn(worker);
    }
    void afterRead(int worker, const Delivery& d)
    {
        if (!inTurns(d))
            return;
        endTurn(worker);
        waitTurn(2 + worker);
    }
    void finished(int worker, const Delivery& d)
    {
        if (inTurns(d))
            endTurn(2 + worker);
    }

    std::string key(const std::string& id) const { return m_ns + ":{" + id + "}"; }

    void work(int worker)
    {
        LabRedis lab(m_conn, m_topology);
        ConnectionPool pool(m_conn, 1);
        StoreOptions so;
        so.keyNamespace = m_ns;
        so.lease = m_w.lease;
        so.staleKeep = Millis(kTtlMs);
        so.retention = so.failureRetention = Millis(kTtlMs);
        Store store(pool, so);
        const std::string lease = std::to_string(m_w.lease.count()), ttl = std::to_string(kTtlMs);
        while (auto d = next()) {
            const auto began = Clock::now();
            std::this_thread::sleep_for(d->jitter);
            switch (m_strategy) {
            case Strategy::Naive: naive(lab, worker, *d, ttl); break;
            case Strategy::SetNx: setnx(lab, worker, *d, ttl); break;
            case Strategy::Watch: watch(lab, worker, *d, lease, ttl); break;
            case Strategy::Lua: lua(lab, store, worker, *d); break;
            }
            finished(worker, *d);
            done(std::chrono::duration<double, std::milli>(Clock::now() - began).count());
        }
    }

    // true when the delivery crashed here (and was handed back for redelivery)
    bool crashOrPause(int worker, const Delivery& d)
    {
        if (d.crash) {
            trace(worker, d.id, TraceKind::Crashed);
            redeliver(d);
            return true;
        }
        if (d.pause) {
            trace(worker, d.id, TraceKind::Paused);
            std::this_thread::sleep_for(m_w.pause);
        }
        std::this_thread::sleep_for(d.work);
        return false;
    }

    // naive and watch, once they believe they own the event: work, effect, then mark it "done"
    void workAndMarkDone(LabRedis& lab, int worker, const Delivery& d, const std::string& ttl)
    {
        if (crashOrPause(worker, d))
            return;
        effect(lab, worker, d.id, 0);
        lab.at(key(d.id)).checked({"SET", key(d.id), "done", "PX", ttl});
        trace(worker, d.id, TraceKind::Completed);
    }

    void naive(LabRedis& lab, int worker, const Delivery& d, const std::string& ttl)
    {
        Connection& c = lab.at(key(d.id));
        beforeRead(worker, d);
        const ReplyPtr seen = c.checked({"GET", key(d.id)});
        const bool absent = reply::isNil(seen.get());
        trace(worker, d.id, absent ? TraceKind::Read : TraceKind::Replayed);
        afterRead(worker, d);
        if (absent)
            workAndMarkDone(lab, worker, d, ttl);
    }

    void setnx(LabRedis& lab, int worker, const Delivery& d, const std::string& ttl)
    {
        Connection& c = lab.at(key(d.id));
        // no states: the key says "someone took it", for as long as results are kept
        beforeRead(worker, d);
        const ReplyPtr ok = c.checked({"SET", key(d.id), "1", "NX", "PX", ttl});
        const bool taken = reply::isNil(ok.get());
        // taken: "already processed" - or lost, if its owner died
        trace(worker, d.id, taken ? TraceKind::Replayed : TraceKind::Acquired);
        afterRead(worker, d);
        if (taken)
            return;
        if (crashOrPause(worker, d))
            return;
        effect(lab, worker, d.id, 0);
        trace(worker, d.id, TraceKind::Completed);
    }

    void watch(LabRedis& lab, int worker, const Delivery& d, const std::string& lease, const std::string& ttl)
    {
        Connection& c = lab.at(key(d.id));
        bool first = true;
        for (int attempt = 0;; ++attempt) {
            if (first)
                beforeRead(worker, d);
            c.checked({"WATCH", key(d.id)});
            const ReplyPtr v = c.checked({"GET", key(d.id)});
            const std::string value = reply::isNil(v.get()) ? std::string() : reply::str(v.get());
            if (value == "done" || value == "processing") {
                c.checked({"UNWATCH"});
                trace(worker, d.id, value == "done" ? TraceKind::Replayed : TraceKind::InProgress);
                if (first)
                    afterRead(worker, d);
                if (value == "processing")
                    redeliver(d); // nack: the broker brings it back later
                return;
            }
            trace(worker, d.id, TraceKind::Read);
            if (first) {
                afterRead(worker, d);
                first = false;
            }
            c.checked({"MULTI"});
            c.checked({"SET", key(d.id), "processing", "PX", lease});
            const ReplyPtr exec = c.command({"EXEC"});
            if (!reply::isNil(exec.get()) && !reply::isError(exec.get()))
                break;
            trace(worker, d.id, TraceKind::Aborted); // the key changed since WATCH: read it again
            if (attempt >= 20) {
                trace(worker, d.id, TraceKind::InProgress);
                redeliver(d);
                return;
            }
        }
        trace(worker, d.id, TraceKind::Acquired);
        workAndMarkDone(lab, worker, d, ttl);
    }

    void lua(LabRedis& lab, Store& store, int worker, const Delivery& d)
    {
        beforeRead(worker, d);
        const AcquireResult a = store.acquire(d.id);
        switch (a.status) {
        case AcquireStatus::Duplicate:
            trace(worker, d.id, TraceKind::Replayed, a.fence);
            afterRead(worker, d);
            return;
        case AcquireStatus::InProgress:
            trace(worker, d.id, TraceKind::InProgress, a.fence);
            afterRead(worker, d);
            redeliver(d); // nack: the broker brings it back later
            return;
        case AcquireStatus::Acquired: break;
        default: throw Error("race: unexpected acquire answer " + std::string(nameOf(a.status)));
        }
        trace(worker, d.id, a.takeover ? TraceKind::TakenOver : TraceKind::Acquired, a.ticket.fence);
        afterRead(worker, d);
        if (crashOrPause(worker, d))
            return;
        effect(lab, worker, d.id, a.ticket.fence); // refused if a later owner has been at the sink
        if (store.complete(a.ticket, "ok").status == OwnerStatus::Ok)
            trace(worker, d.id, TraceKind::Completed, a.ticket.fence);
        else
            trace(worker, d.id, TraceKind::LeaseLost, a.ticket.fence);
    }

    ConnectionOptions m_conn;
    std::shared_ptr<const LabTopology> m_topology;
    Strategy m_strategy;
    Workload m_w;
    const std::atomic<bool>* m_cancel;
    std::string m_ns;
    std::int64_t m_serverStartMs = 0;
    Clock::time_point m_start;
    std::mutex m_mutex;
    std::condition_variable m_cv;
    std::deque<Delivery> m_queue;
    int m_outstanding = 0;
    int m_deliveries = 0;
    int m_fenced = 0;
    bool m_aborted = false;
    int m_turn = 0; // forced interleaving: whose turn it is (see waitTurn)
    std::vector<double> m_latencies;
    std::vector<TraceEvent> m_trace;
};

} // namespace

RaceResult runRace(const ConnectionOptions& connection, Strategy strategy, const Workload& workload,
                   const std::atomic<bool>* cancel)
{
    Race race(connection, strategy, workload, cancel);
    return race.run();
}

} // namespace idem
