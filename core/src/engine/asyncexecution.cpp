// Executor::submit(): execute()'s steps as callbacks. Acquire and storing the result go through the
// AsyncStore (Redis) or the store's own asynchronous calls (AsyncLeaseStore: PostgreSQL's pipelined
// connections); the work runs where ExecuteOptions::runOn says; retries of storing wait on the
// watchdog's thread, never on an I/O thread.
#include "idem/engine/executor.h"

#include "engine/outcomes.h"
#include "engine/storecalls.h"
#include "idem/engine/asyncstore.h"
#include "idem/engine/fingerprint.h"
#include "idem/engine/watchdog.h"
#include "idem/errors.h"

#include <thread>

namespace idem {

using Clock = std::chrono::steady_clock;

namespace {

// The Redis AsyncStore as Submission calls it: direct calls, no virtual ones.
struct RedisCalls {
    AsyncStore& store;
    LeaseSettings settings() const { return storecalls::leaseSettings(store.options(), store.pool().options()); }
    std::string recordKey(std::string_view id) const { return store.recordKey(id); }
    void acquire(std::string_view id, std::string_view fp, Millis lease, StoreCallback<AcquireResult> done)
    {
        store.acquire(id, fp, lease, std::move(done));
    }
    void complete(const Ticket& t, std::string_view response, std::optional<Millis> retention,
                  StoreCallback<OwnerResult> done)
    {
        store.complete(t, response, retention, std::move(done));
    }
    void fail(const Ticket& t, FailPolicy policy, std::string_view error, StoreCallback<OwnerResult> done)
    {
        store.fail(t, policy, error, std::move(done));
    }
};

// Any other store with asynchronous calls of its own (PgStore)
struct LeaseCalls {
    LeaseStore& sync;
    AsyncLeaseStore& store;
    LeaseSettings settings() const { return sync.leaseSettings(); }
    std::string recordKey(std::string_view id) const { return sync.recordKey(id); }
    void acquire(std::string_view id, std::string_view fp, Millis lease, StoreCallback<AcquireResult> done)
    {
        store.acquireAsync(id, fp, lease, std::move(done));
    }
    void complete(const Ticket& t, std::string_view response, std::optional<Millis> retention,
                  StoreCallback<OwnerResult> done)
    {
        store.completeAsync(t, response, retention, std::move(done));
    }
    void fail(const Ticket& t, FailPolicy policy, std::string_view error, StoreCallback<OwnerResult> done)
    {
        store.failAsync(t, policy, error, std::move(done));
    }
};

} // namespace

template <class Calls>
struct Executor::Submission : std::enable_shared_from_this<Submission<Calls>> {
    Submission(Executor& e, Calls c, std::string_view i, std::string_view f, Work w, Completion d,
               const ExecuteOptions& o)
        : ex(e), store(c), settings(c.settings()), id(i), fp(f), work(std::move(w)), done(std::move(d)), options(o),
          lease(o.lease.value_or(settings.lease))
    {
    }
    using std::enable_shared_from_this<Submission<Calls>>::shared_from_this;

    void start()
    {
        sentAt = Clock::now(); // the local deadline is never later than the server's
        store.acquire(id, fp, lease, [self = shared_from_this()](AcquireResult a, std::exception_ptr error) {
            self->acquired(std::move(a), std::move(error));
        });
    }

    void acquired(AcquireResult a, std::exception_ptr error)
    {
        if (error) {
            out.kind = OutcomeKind::StoreUnavailable;
            out.error = whatOf(error);
            return finish();
        }
        if (outcomes::settledByAcquire(a, id, store.recordKey(id), out))
            return finish();
        ticket = std::move(a.ticket);
        if (options.renew)
            watch = ex.watchdog().add(ticket, lease, sentAt + lease);
        ctx.id = id;
        ctx.fence = ticket.fence;
        ctx.attempt = ticket.attempt;
        ctx.takeover = a.takeover;
        ctx.store = &ex.m_store;
        ctx.ticket = ticket;
        if (watch)
            ctx.leaseLost = watch->lost.get_token();
        if (!options.runOn)
            return runWork();
        try {
            options.runOn([self = shared_from_this()] { self->runWork(); });
        } catch (const std::exception& e) { // not scheduled: the work did not run, the lock goes
            if (watch)
                ex.watchdog().remove(watch);
            result = WorkResult::failure(std::string("the work could not be scheduled: ") + e.what());
            storeResult();
        }
    }

    void runWork()
    {
        result = outcomes::runWork(work, ctx, options.onException, settings.maxResponseBytes);
        out.workRan = true;
        if (watch)
            ex.watchdog().remove(watch);
        storeResult();
    }

    void storeResult()
    {
        auto then = [self = shared_from_this()](OwnerResult r, std::exception_ptr error) {
            self->stored(std::move(r), std::move(error));
        };
        try {
            if (result.ok)
                store.complete(ticket, result.response, options.retention, std::move(then));
            else
                store.fail(ticket, result.policy, result.error, std::move(then));
        } catch (const UsageError& e) {
            lastError = e.what();
            outcomes::storingGaveUp(result, notReplicated, lastError, out);
            finish();
        }
    }

    void stored(OwnerResult r, std::exception_ptr error)
    {
        if (!error && outcomes::settledByStoring(r, result, settings.minReplicas, out, notReplicated, lastError))
            return finish();
        if (error)
            lastError = whatOf(error);
        // as execute(): completeAttempts tries, or until the lease ends where a failover is expected
        ++attempt;
        const bool untilLeaseEnds = settings.retryUntilLeaseEnds;
        const auto at = Clock::now() + outcomes::storeRetryDelay(attempt);
        if (attempt < std::max(1, options.completeAttempts) || (untilLeaseEnds && at < sentAt + lease)) {
            ex.watchdog().after(at, [self = shared_from_this()] { self->storeResult(); });
            return;
        }
        outcomes::storingGaveUp(result, notReplicated, lastError, out);
        finish();
    }

    void finish()
    {
        Executor& executor = ex;
        try {
            done(std::move(out));
        } catch (...) {
            // a completion's exception has nowhere to go
        }
        done = nullptr; // what it captured goes now, before the executor may
        executor.finished();
    }

    static std::string whatOf(const std::exception_ptr& e)
    {
        try {
            std::rethrow_exception(e);
        } catch (const std::exception& ex) {
            return ex.what();
        } catch (...) {
            return "unknown error";
        }
    }

    Executor& ex;
    Calls store;
    const LeaseSettings settings;
    const std::string id, fp;
    const Work work;
    Completion done;
    const ExecuteOptions options;
    const Millis lease;
    Clock::time_point sentAt;
    Ticket ticket;
    WorkContext ctx;
    std::shared_ptr<WatchEntry> watch;
    WorkResult result;
    Outcome out;
    int attempt = 0;
    bool notReplicated = false;
    std::string lastError;
};

// A store without an asynchronous client (PostgreSQL): execute() as one task, where runOn says or
// on a thread of its own. Errors, bad arguments included, come back as StoreUnavailable.
void Executor::submitBlocking(std::string id, std::string fp, Work work, Completion done,
                              const ExecuteOptions& options)
{
    ExecuteOptions inlineOptions = options;
    inlineOptions.runOn = nullptr;
    auto task = [this, id = std::move(id), fp = std::move(fp), work = std::move(work), done = std::move(done),
                 o = std::move(inlineOptions)] {
        Outcome out;
        try {
            out = executeWithFingerprint(id, fp, work, o);
        } catch (const std::exception& e) {
            out.kind = OutcomeKind::StoreUnavailable;
            out.error = e.what();
        }
        done(std::move(out));
        finished(); // last: the Executor may be gone after it
    };
    ++m_inFlight;
    try {
        if (options.runOn)
            options.runOn(std::move(task));
        else
            std::thread(std::move(task)).detach();
    } catch (...) {
        finished();
        throw;
    }
}

void Executor::submitWithFingerprint(std::string_view id, std::string_view fp, Work work, Completion done,
                                     const ExecuteOptions& options)
{
    if (!m_redis && !m_asyncLease)
        return submitBlocking(std::string(id), std::string(fp), std::move(work), std::move(done), options);
    ++m_inFlight;
    try {
        if (m_redis)
            std::make_shared<Submission<RedisCalls>>(*this, RedisCalls{asyncStore()}, id, fp, std::move(work),
                                                     std::move(done), options)
                ->start();
        else
            std::make_shared<Submission<LeaseCalls>>(*this, LeaseCalls{m_store, *m_asyncLease}, id, fp,
                                                     std::move(work), std::move(done), options)
                ->start();
    } catch (...) { // bad arguments (UsageError), thrown before anything was sent
        finished();
        throw;
    }
}

void Executor::submit(std::string_view id, std::string_view payload, Work work, Completion done,
                      const ExecuteOptions& options)
{
    submitWithFingerprint(id, fingerprint(payload), std::move(work), std::move(done), options);
}

std::future<Outcome> Executor::submit(std::string_view id, std::string_view payload, Work work,
                                      const ExecuteOptions& options)
{
    auto promise = std::make_shared<std::promise<Outcome>>();
    auto future = promise->get_future();
    submit(id, payload, std::move(work), [promise](Outcome o) { promise->set_value(std::move(o)); }, options);
    return future;
}

} // namespace idem
