#pragma once

#include "idem/engine/store.h"

#include <atomic>
#include <condition_variable>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>

namespace idem {

class AsyncPool;
class AsyncStore;
class Watchdog;

// What the work sees while it runs.
struct WorkContext {
    std::string id;
    std::int64_t fence = 0;   // pass it to the side effect, which refuses lower numbers
    std::int64_t attempt = 0;
    bool takeover = false;    // this attempt took over an expired lease
    std::stop_token leaseLost; // requested when the watchdog learns the lease is gone
    // attempt > 1 on a store with recovery points (PostgreSQL): the last phase an earlier attempt
    // recorded, and its data ("" when none). Resume from there.
    std::string phase;
    std::string phaseData;
    // Records a recovery point for the attempt that may take over if this one dies. False when the
    // lease is lost (stop: the result would not be stored). Throws UsageError on the Redis store,
    // IoError when the store cannot be reached.
    bool checkpoint(std::string_view phase, std::string_view data = {}) const;

    LeaseStore* store = nullptr; // the execution's store and ticket, for checkpoint()
    Ticket ticket;
};

// What the work reports. Return success(response) or failure(error, policy); an exception thrown
// by the work counts as failure(what(), ExecuteOptions::onException).
struct WorkResult {
    bool ok = true;
    std::string response;
    std::string error;
    FailPolicy policy = FailPolicy::Release;

    static WorkResult success(std::string response) { return {true, std::move(response), {}, {}}; }
    static WorkResult failure(std::string error, FailPolicy p = FailPolicy::Release)
    {
        return {false, {}, std::move(error), p};
    }
};

using Work = std::function<WorkResult(const WorkContext&)>;

enum class OutcomeKind {
    Executed,         // the work ran now and its result is stored
    Replayed,         // a duplicate: the stored result came back, the work did not run
    InProgress,       // someone else holds a live lease; the work did not run
    PayloadMismatch,  // the id was used with a different payload; nothing changed
    Failed,           // the work failed now (its policy was applied), or a terminal failure is stored
    LeaseLost,        // the work ran, but its lease was taken over (or force-failed): result not stored
    StoreUnavailable, // Redis unreachable or timed out: the work did not run (a retry may do)
    NotReplicated,    // the work ran and its result is stored on the primary, but fewer replicas than
                      // StoreOptions::minReplicas acknowledged it before the lease ran out: a
                      // failover now could lose it (and a redelivery run the work again)
    KeyUnusable,      // the key holds what is not an idem record (another program's, a newer
                      // schema's): the work did not run, and retrying will not change that
};
std::string_view nameOf(OutcomeKind k);

struct Outcome {
    OutcomeKind kind = OutcomeKind::StoreUnavailable;
    std::string response;  // Executed, Replayed
    std::string error;     // Failed, LeaseLost, StoreUnavailable
    std::int64_t remainingMs = 0; // InProgress
    std::int64_t fence = 0;
    std::int64_t attempt = 0;
    bool takeover = false;
    bool workRan = false;
};

struct ExecuteOptions {
    std::optional<Millis> lease;     // default: the store's
    std::optional<Millis> retention; // default: the store's
    bool renew = true;               // watchdog renews the lease every lease/3 while work runs
    FailPolicy onException = FailPolicy::Release;
    int completeAttempts = 3;        // storing the result is retried on I/O errors (it is idempotent)
    // submit(): where the work runs. Given the work as a task, run it (now or later, on any thread:
    // a thread pool's post, a QThreadPool, an event loop's queue). Empty: inline, on the connection's
    // I/O thread that got the acquire's answer - only for work that is short and never waits.
    std::function<void(std::function<void()>)> runOn;
};

using Completion = std::function<void(Outcome)>;

// The high-level API: execute(id, payload, work). Expected outcomes are values, not exceptions;
// only bad arguments throw (UsageError). Fail closed: when Redis cannot be asked, work never runs.
// One watchdog thread per Executor renews every running lease (like Redisson's lock watchdog).
// Thread-safe: many threads may call execute() on one Executor.
//
// submit() is execute() without waiting: the same steps and outcomes, the acquire and the storing
// of the result pipelined over an AsyncStore's few connections, so thousands of executions can be
// in flight from a few threads. The work runs where ExecuteOptions::runOn says; the completion runs
// on a connection's I/O thread (or where the work ran). Leases of submitted work are renewed by the
// same watchdog thread, pipelined. Without an AsyncStore given, the first submit() makes one on the
// Store's connection options (an AsyncPool of one connection per hardware thread).
//
// Any LeaseStore works for execute(). submit() on one that is also an AsyncLeaseStore (the
// PostgreSQL PgStore: pipelined connections) goes through its asynchronous calls as on Redis;
// on any other it runs each execution's blocking steps as one task where runOn says, or on a
// thread of its own.
class Executor {
public:
    explicit Executor(Store& store);
    Executor(Store& store, AsyncStore& async);
    explicit Executor(LeaseStore& store);
    ~Executor(); // waits for submitted executions to complete
    Executor(const Executor&) = delete;
    Executor& operator=(const Executor&) = delete;
    Outcome execute(std::string_view id, std::string_view payload, const Work& work,
                    const ExecuteOptions& options = {});
    // Like execute, with a fingerprint computed by the caller ("" = no payload check).
    Outcome executeWithFingerprint(std::string_view id, std::string_view fingerprint, const Work& work,
                                   const ExecuteOptions& options = {});
    void submit(std::string_view id, std::string_view payload, Work work, Completion done,
                const ExecuteOptions& options = {});
    std::future<Outcome> submit(std::string_view id, std::string_view payload, Work work,
                                const ExecuteOptions& options = {});
    void submitWithFingerprint(std::string_view id, std::string_view fingerprint, Work work, Completion done,
                               const ExecuteOptions& options = {});
    LeaseStore& store() { return m_store; }
    AsyncStore& asyncStore();
    std::size_t inFlight() const { return m_inFlight; } // submitted, not completed yet

private:
    template <class Calls> struct Submission;
    Watchdog& watchdog();
    void finished();
    void submitBlocking(std::string id, std::string fingerprint, Work work, Completion done,
                        const ExecuteOptions& options);

    LeaseStore& m_store;
    Store* m_redis = nullptr; // the Redis store: submit() pipelines over an AsyncStore
    AsyncLeaseStore* m_asyncLease = nullptr; // another store's own asynchronous calls (PgStore)
    std::once_flag m_watchdogOnce;
    std::once_flag m_asyncOnce;
    std::unique_ptr<AsyncPool> m_ownPool;
    std::unique_ptr<AsyncStore> m_ownAsync;
    AsyncStore* m_async = nullptr;
    std::atomic<std::size_t> m_inFlight{0};
    std::mutex m_doneMutex;
    std::condition_variable m_allDone;
    std::unique_ptr<Watchdog> m_watchdog; // last: its timers and renewals use the members above
};

} // namespace idem
