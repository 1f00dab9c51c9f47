#include "idem/lab/replay.h"

#include "idem/redis/connection.h"
#include "idem/errors.h"
#include "idem/engine/executor.h"
#include "idem/lab/racelab.h"
#include "lab/labredis.h"
#include "idem/engine/store.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <random>
#include <thread>
#include <unordered_map>

namespace idem {

namespace {

using Clock = std::chrono::steady_clock;

struct Delivery {
    std::size_t event = 0;
    Clock::time_point at;
    bool crash = false;
    bool redelivery = false;
};

// What every consumer holds: its connections and its own idem store and executor.
struct ConsumerKit {
    LabRedis redis; // the side effect's, on the event's node
    ConnectionPool pool;
    Store store;
    Executor executor;
    ConsumerKit(const ConnectionOptions& c, std::shared_ptr<const LabTopology> topology, const std::string& ns,
                Millis lease)
        : redis(c, std::move(topology)), pool(c, 2), store(pool, options(ns, lease)), executor(store)
    {
    }
    static StoreOptions options(const std::string& ns, Millis lease)
    {
        StoreOptions so;
        so.keyNamespace = ns;
        so.lease = lease;
        return so;
    }
};

class Replayer {
public:
    Replayer(const ConnectionOptions& c, const std::vector<ReplayEvent>& events, ReplayOptions o)
        : m_conn(c), m_events(events), m_o(std::move(o))
    {
        if (m_events.empty())
            throw UsageError("replay: the event log is empty");
        if (m_o.duplicates < 1 || m_o.consumers < 1 || m_o.speed < 0 || m_o.crashRate < 0 || m_o.crashRate > 1)
            throw UsageError("replay: duplicates and consumers must be positive, speed >= 0, crash rate 0..1");
        m_ns = m_o.keyNamespace + ":" + newToken().substr(0, 8);
    }

    ReplayResult run()
    {
        m_topology = LabTopology::read(m_conn); // on a cluster: each event's keys on their node
        m_start = Clock::now();
        if (m_o.gate)
            m_pausedBefore = m_o.gate->pausedFor();
        schedule();
        {
            Reporter reporter(*this);
            if (m_o.viaStream)
                viaStream();
            else
                direct();
        }
        ReplayResult r;
        r.cancelled = cancelled();
        r.keyNamespace = m_ns;
        r.events = static_cast<int>(m_events.size());
        r.deliveries = m_deliveries;
        r.crashes = m_crashes;
        r.claimed = m_claimed;
        r.timedOut = m_timedOut;
        r.seconds = std::chrono::duration<double>(Clock::now() - m_start).count();
        if (m_effectError) // a side effect Redis refused: not an event lost, an error to say
            std::rethrow_exception(m_effectError);
        std::vector<std::string> ids;
        for (const auto& e : m_events)
            ids.push_back(e.id);
        std::sort(ids.begin(), ids.end());
        ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
        LabRedis lab(m_conn, m_topology);
        const auto ledger = labLedger(lab, m_ns, ids);
        for (const auto& [id, n] : ledger) {
            r.executions += n;
            r.doubleExecutions += n - 1;
        }
        r.lost = static_cast<int>(ids.size() - ledger.size());
        return r;
    }

private:
    bool cancelled() const { return m_o.cancel && m_o.cancel->load(); }

    // The replay's clock: it stands still while the gate is paused.
    // (a gate can outlive many replays: only what was paused since this one started counts)
    Clock::duration pausedFor() const
    {
        return m_o.gate ? m_o.gate->pausedFor() - m_pausedBefore : Clock::duration{};
    }
    Clock::time_point now() const { return Clock::now() - pausedFor(); }

    // Sleeps until the replay's clock reaches `t` and the gate lets a delivery through, in short
    // slices while a cancel, a pause or a step can come. False when stopped first.
    bool waitTurn(Clock::time_point t, const std::atomic<bool>& stop) const
    {
        constexpr auto kSlice = std::chrono::milliseconds(20);
        while (!stop && !cancelled()) {
            const auto left = t - now();
            const bool due = left <= Clock::duration{};
            if (m_o.gate ? m_o.gate->pass(due) : due)
                return true;
            std::this_thread::sleep_for(due ? Clock::duration(kSlice) : std::min<Clock::duration>(left, kSlice));
        }
        return false;
    }

    // A swimlane mark (ReplayOptions::trace), on the replay's own time since it started.
    void mark(int worker, const std::string& id, TraceKind kind, std::int64_t fence = 0)
    {
        if (!m_o.trace)
            return;
        TraceEvent t;
        t.worker = worker;
        t.eventId = id;
        t.kind = kind;
        t.fence = fence;
        t.serverMs = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - m_start).count();
        std::lock_guard lock(m_traceMutex);
        t.seq = m_seq++;
        if (m_trace.size() < kMaxUnreportedMarks) // a listener that stopped listening costs no memory
            m_trace.push_back(std::move(t));
    }

    ReplayProgress progress()
    {
        ReplayProgress p;
        p.planned = static_cast<int>(m_schedule.size());
        p.produced = m_produced;
        p.deliveries = m_deliveries;
        p.crashes = m_crashes;
        p.claimed = m_claimed;
        {
            std::lock_guard lock(m_ranMutex);
            for (const auto& [id, n] : m_ran) {
                p.executions += n;
                p.twice += n > 1;
            }
        }
        p.seconds = std::chrono::duration<double>(Clock::now() - m_start).count();
        p.paused = m_o.gate && m_o.gate->paused();
        {
            std::lock_guard lock(m_traceMutex);
            p.trace.swap(m_trace);
        }
        return p;
    }

    // Calls options.progress on a thread of its own every 100 ms, and once more when it ends.
    class Reporter {
    public:
        explicit Reporter(Replayer& r) : m_r(r)
        {
            if (m_r.m_o.progress)
                m_thread = std::thread([this] {
                    std::unique_lock lock(m_mutex);
                    while (!m_done) {
                        m_cv.wait_for(lock, std::chrono::milliseconds(100));
                        report();
                    }
                });
        }
        ~Reporter()
        {
            if (!m_thread.joinable())
                return;
            {
                std::lock_guard lock(m_mutex);
                m_done = true;
            }
            m_cv.notify_all();
            m_thread.join();
        }
        Reporter(const Reporter&) = delete;
        Reporter& operator=(const Reporter&) = delete;

    private:
        void report()
        {
            try {
                m_r.m_o.progress(m_r.progress());
            } catch (...) { // a listener's problem is not the replay's
            }
        }
        Replayer& m_r;
        std::mutex m_mutex;
        std::condition_variable m_cv;
        bool m_done = false;
        std::thread m_thread;
    };

    void schedule()
    {
        std::mt19937_64 rng(m_o.seed);
        std::uniform_real_distribution<double> u(0, 1);
        const std::int64_t first = std::min_element(m_events.begin(), m_events.end(), [](const auto& a, const auto& b) {
                                       return a.atMs < b.atMs;
                                   })->atMs;
        for (std::size_t e = 0; e < m_events.size(); ++e)
            for (int d = 0; d < m_o.duplicates; ++d) {
                const double logged = static_cast<double>(m_events[e].atMs - first);
                const double at = (m_o.speed > 0 ? logged / m_o.speed : 0) +
                                  u(rng) * static_cast<double>(m_o.reorder.count());
                Delivery dl;
                dl.event = e;
                dl.at = m_start + std::chrono::microseconds(static_cast<std::int64_t>(at * 1000));
                dl.crash = u(rng) < m_o.crashRate;
                m_schedule.push_back(dl);
            }
        std::stable_sort(m_schedule.begin(), m_schedule.end(),
                         [](const Delivery& a, const Delivery& b) { return a.at < b.at; });
    }

    // What every consumer does with one delivery; false when it "died" holding the lease.
    enum class Handled { Done, Retry, Died };
    Handled handle(Store& store, Executor& ex, LabRedis& sink, const ReplayEvent& ev, bool crash,
                   int worker, const std::string& who)
    {
        if (crash) {
            const AcquireResult a = store.acquire(ev.id, "", m_o.lease);
            if (a.status == AcquireStatus::Acquired) {
                ++m_crashes;
                mark(worker, ev.id, TraceKind::Acquired);
                mark(worker, ev.id, TraceKind::Crashed);
                return Handled::Died; // never completes, never acknowledges
            }
        }
        ExecuteOptions eo;
        eo.lease = m_o.lease;
        const Outcome o = ex.execute(ev.id, ev.payload, [&](const WorkContext& ctx) {
            mark(worker, ev.id, ctx.takeover ? TraceKind::TakenOver : TraceKind::Acquired, ctx.fence);
            try {
                if (!labEffect(sink, m_ns, ev.id, ctx.fence, who)) {
                    mark(worker, ev.id, TraceKind::Fenced, ctx.fence);
                    return WorkResult::failure("fenced", FailPolicy::Release);
                }
                mark(worker, ev.id, TraceKind::Executed, ctx.fence);
                std::lock_guard lock(m_ranMutex);
                ++m_ran[ev.id];
            } catch (const Error&) {
                std::lock_guard lock(m_errorMutex);
                if (!m_effectError)
                    m_effectError = std::current_exception();
                throw;
            }
            return WorkResult::success("done");
        }, eo);
        switch (o.kind) {
        case OutcomeKind::Executed: mark(worker, ev.id, TraceKind::Completed); break;
        case OutcomeKind::Replayed: mark(worker, ev.id, TraceKind::Replayed); break;
        case OutcomeKind::InProgress: mark(worker, ev.id, TraceKind::InProgress); break;
        case OutcomeKind::LeaseLost: mark(worker, ev.id, TraceKind::LeaseLost); break;
        default: break; // fenced (marked above) or the store away: retried
        }
        if (o.kind == OutcomeKind::InProgress || o.kind == OutcomeKind::StoreUnavailable)
            return Handled::Retry;
        return Handled::Done;
    }

    void direct()
    {
        std::mutex m;
        std::condition_variable cv;
        std::deque<Delivery> queue(m_schedule.begin(), m_schedule.end());
        int outstanding = 0;
        const auto deadline = m_start + m_o.timeout;
        auto consumer = [&](int i) {
            ConsumerKit kit(m_conn, m_topology, m_ns, m_o.lease);
            for (;;) {
                Delivery d;
                {
                    std::unique_lock lock(m);
                    for (;;) {
                        if (now() > deadline) {
                            m_timedOut = true;
                            return;
                        }
                        if (cancelled())
                            return;
                        if (queue.empty() && outstanding == 0)
                            return;
                        const auto t = now();
                        auto ready = std::find_if(queue.begin(), queue.end(),
                                                  [t](const Delivery& x) { return x.at <= t; });
                        if (m_o.gate && !queue.empty()) { // paused: only a step lets one go, due or not
                            const bool due = ready != queue.end();
                            if (!m_o.gate->pass(due))
                                ready = queue.end();
                            else if (!due)
                                ready = std::min_element(queue.begin(), queue.end(), [](const auto& a, const auto& b) {
                                    return a.at < b.at;
                                });
                        }
                        if (ready != queue.end()) {
                            d = *ready;
                            queue.erase(ready);
                            ++outstanding;
                            ++m_deliveries;
                            if (!d.redelivery)
                                ++m_produced;
                            break;
                        }
                        Clock::time_point until = deadline;
                        for (const auto& x : queue)
                            until = std::min(until, x.at);
                        if (m_o.cancel || m_o.gate) // a cancel, a pause, a step are not notified: look again soon
                            until = std::min(until, t + std::chrono::milliseconds(50));
                        cv.wait_until(lock, until + pausedFor()); // the replay's time to the real one
                    }
                }
                const Handled h = handle(kit.store, kit.executor, kit.redis, m_events[d.event], d.crash, i,
                                         "c" + std::to_string(i));
                std::lock_guard lock(m);
                --outstanding;
                if (h != Handled::Done) { // the broker redelivers what was not acknowledged, later
                    d.crash = false;
                    d.redelivery = true;
                    d.at = now() + (h == Handled::Died ? m_o.lease + m_o.lease / 2 : m_o.lease / 3);
                    queue.push_back(d);
                }
                cv.notify_all();
            }
        };
        std::vector<std::thread> threads;
        for (int i = 0; i < m_o.consumers; ++i)
            threads.emplace_back(consumer, i);
        for (auto& t : threads)
            t.join();
    }

    void viaStream()
    {
        const std::string stream = m_ns + ":stream", group = "idem";
        LabRedis streamNode(m_conn, m_topology);
        Connection& admin = streamNode.at(stream);
        admin.checked({"XGROUP", "CREATE", stream, group, "$", "MKSTREAM"});
        admin.checked({"PEXPIRE", stream, std::to_string(10 * 60'000)});
        std::atomic<bool> produced{false}, stop{false};
        const auto deadline = m_start + m_o.timeout;

        std::thread producer([&] {
            LabRedis node(m_conn, m_topology);
            Connection& c = node.at(stream);
            for (std::size_t i = 0; i < m_schedule.size() && !stop && !cancelled(); ++i) {
                if (!waitTurn(m_schedule[i].at, stop))
                    break;
                const auto& ev = m_events[m_schedule[i].event];
                c.checked({"XADD", stream, "*", "id", ev.id, "payload", ev.payload, "crash",
                           m_schedule[i].crash ? "1" : "0"});
                ++m_produced;
            }
            produced = true;
        });

        const std::string minIdle = std::to_string((m_o.lease + m_o.lease / 2).count());
        auto consumer = [&](int i) {
            const std::string name = "consumer-" + std::to_string(i);
            LabRedis node(m_conn, m_topology);
            Connection& c = node.at(stream); // the stream's connection; the kit's does the side effect
            ConsumerKit kit(m_conn, m_topology, m_ns, m_o.lease);
            int acquired = 0;
            auto process = [&](const redisReply* msg, bool claimed) -> bool {
                const std::string msgId = reply::str(reply::element(msg, 0));
                const redisReply* f = reply::element(msg, 1);
                std::string id, payload = "null";
                bool crash = false;
                for (std::size_t k = 0; k + 1 < reply::arraySize(f); k += 2) {
                    const std::string name = reply::str(reply::element(f, k));
                    if (name == "id")
                        id = reply::str(reply::element(f, k + 1));
                    else if (name == "payload")
                        payload = reply::str(reply::element(f, k + 1));
                    else if (name == "crash")
                        crash = reply::str(reply::element(f, k + 1)) == "1";
                }
                ++m_deliveries;
                if (claimed)
                    ++m_claimed;
                // the first consumer to get this far dies (consumer 0 alone may get nothing on a
                // loaded machine: the others can read every message before its thread starts)
                const bool kill = m_o.killConsumerAfter >= 0 && acquired >= m_o.killConsumerAfter && m_killOwed.exchange(false);
                ++acquired;
                // the last consumer standing does not die: someone has to claim what the others left.
                // A consumer about to die takes its life first, atomically: consumers that decide at
                // once must not all go.
                bool dies = false;
                if (!claimed && (crash || kill)) {
                    int alive = m_alive.load();
                    while (alive > 1 && !m_alive.compare_exchange_weak(alive, alive - 1)) {
                    }
                    dies = alive > 1;
                }
                const Handled h = handle(kit.store, kit.executor, kit.redis, ReplayEvent{id, payload, 0}, dies, i, name);
                if (h == Handled::Died)
                    return false; // this consumer is gone; its pending message waits for XAUTOCLAIM
                if (dies)
                    ++m_alive; // someone else held the event: it did not die after all
                if (kill)
                    m_killOwed = true; // (nor did the kill happen: the next one to get this far)
                if (h == Handled::Done)
                    c.checked({"XACK", stream, group, msgId});
                return true;
            };
            while (!stop) {
                auto r = c.command({"XREADGROUP", "GROUP", group, name, "COUNT", "10", "BLOCK", "50", "STREAMS",
                                    stream, ">"});
                if (reply::isError(r.get()))
                    throw ReplyError("XREADGROUP: " + std::string(reply::errorText(r.get())));
                if (!reply::isNil(r.get())) {
                    const redisReply* msgs = reply::element(reply::element(r.get(), 0), 1);
                    for (std::size_t k = 0; k < reply::arraySize(msgs); ++k)
                        if (!process(reply::element(msgs, k), false))
                            return;
                }
                // take over what a dead (or slow) consumer left pending for longer than a lease
                auto claim = c.command({"XAUTOCLAIM", stream, group, name, minIdle, "0-0", "COUNT", "10"});
                if (!reply::isError(claim.get())) {
                    const redisReply* msgs = reply::element(claim.get(), 1);
                    for (std::size_t k = 0; k < reply::arraySize(msgs); ++k) {
                        const redisReply* msg = reply::element(msgs, k);
                        if (reply::isNil(msg) || reply::arraySize(msg) < 2 || reply::isNil(reply::element(msg, 1)))
                            continue; // deleted meanwhile
                        if (!process(msg, true))
                            return;
                    }
                }
            }
        };
        m_alive = m_o.consumers;
        m_killOwed = m_o.killConsumerAfter >= 0;
        std::vector<std::thread> threads;
        std::vector<std::exception_ptr> errors(static_cast<std::size_t>(m_o.consumers));
        for (int i = 0; i < m_o.consumers; ++i)
            threads.emplace_back([&, i] {
                try {
                    consumer(i);
                } catch (...) {
                    errors[static_cast<std::size_t>(i)] = std::current_exception();
                }
            });
        // done when everything was produced, read by the group, and acknowledged
        while (now() < deadline && !cancelled()) {
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
            if (!produced)
                continue;
            auto pending = admin.checked({"XPENDING", stream, group});
            auto groups = admin.checked({"XINFO", "GROUPS", stream});
            const redisReply* info = reply::element(groups.get(), 0);
            std::int64_t lag = -1;
            for (std::size_t k = 0; k + 1 < reply::arraySize(info); k += 2)
                if (reply::str(reply::element(info, k)) == "lag" && !reply::isNil(reply::element(info, k + 1)))
                    lag = reply::integer(reply::element(info, k + 1));
            if (reply::integer(reply::element(pending.get(), 0)) == 0 && lag == 0)
                break;
        }
        m_timedOut = !cancelled() && now() >= deadline;
        stop = true;
        producer.join();
        for (auto& t : threads)
            t.join();
        for (auto& e : errors)
            if (e)
                std::rethrow_exception(e);
    }

    ConnectionOptions m_conn;
    std::shared_ptr<const LabTopology> m_topology;
    std::mutex m_errorMutex;
    std::exception_ptr m_effectError;
    const std::vector<ReplayEvent>& m_events;
    ReplayOptions m_o;
    std::string m_ns;
    Clock::time_point m_start;
    Clock::duration m_pausedBefore{};
    std::vector<Delivery> m_schedule;
    std::atomic<int> m_deliveries{0}, m_crashes{0}, m_claimed{0}, m_alive{0}, m_produced{0};
    std::atomic<bool> m_killOwed{false}; // killConsumerAfter: no consumer has died of it yet
    std::mutex m_ranMutex;
    std::unordered_map<std::string, int> m_ran; // side effects that ran, per event id (live counts)
    std::atomic<bool> m_timedOut{false};
    static constexpr std::size_t kMaxUnreportedMarks = 100'000;
    std::mutex m_traceMutex;
    std::vector<TraceEvent> m_trace; // marks not reported yet
    int m_seq = 0;
};

} // namespace

ReplayResult replay(const ConnectionOptions& connection, const std::vector<ReplayEvent>& events,
                    const ReplayOptions& options)
{
    Replayer r(connection, events, options);
    return r.run();
}

} // namespace idem
