#include "idem/engine/executor.h"

#include "idem/engine/asyncstore.h"

#include "idem/errors.h"
#include "idem/engine/fingerprint.h"
#include "idem/engine/watchdog.h"
#include "engine/outcomes.h"

#include <thread>

namespace idem {

std::string_view nameOf(OutcomeKind k)
{
    switch (k) {
    case OutcomeKind::Executed: return "executed";
    case OutcomeKind::Replayed: return "replayed";
    case OutcomeKind::InProgress: return "in_progress";
    case OutcomeKind::PayloadMismatch: return "payload_mismatch";
    case OutcomeKind::Failed: return "failed";
    case OutcomeKind::LeaseLost: return "lease_lost";
    case OutcomeKind::NotReplicated: return "not_replicated";
    case OutcomeKind::KeyUnusable: return "key_unusable";
    case OutcomeKind::StoreUnavailable: break;
    }
    return "store_unavailable";
}

bool WorkContext::checkpoint(std::string_view phaseName, std::string_view data) const
{
    if (!store)
        throw UsageError("checkpoint: this WorkContext belongs to no execution");
    return store->checkpoint(ticket, phaseName, data).status == OwnerStatus::Ok;
}

Executor::Executor(Store& store) : m_store(store), m_redis(&store) {}

Executor::Executor(Store& store, AsyncStore& async) : m_store(store), m_redis(&store), m_async(&async) {}

Executor::Executor(LeaseStore& store) : m_store(store), m_asyncLease(dynamic_cast<AsyncLeaseStore*>(&store)) {}

Executor::~Executor()
{
    std::unique_lock lock(m_doneMutex);
    m_allDone.wait(lock, [this] { return m_inFlight == 0; });
}

Watchdog& Executor::watchdog()
{
    std::call_once(m_watchdogOnce, [this] { m_watchdog = std::make_unique<Watchdog>(m_store); });
    return *m_watchdog;
}

AsyncStore& Executor::asyncStore()
{
    if (!m_redis)
        throw UsageError("an AsyncStore needs the Redis store");
    std::call_once(m_asyncOnce, [this] {
        if (!m_async) {
            m_ownPool = std::make_unique<AsyncPool>(m_redis->pool().options());
            m_ownAsync = std::make_unique<AsyncStore>(*m_ownPool, m_redis->options());
            m_async = m_ownAsync.get();
        }
        watchdog().useAsync(m_async);
    });
    return *m_async;
}

void Executor::finished()
{
    std::lock_guard lock(m_doneMutex);
    if (--m_inFlight == 0)
        m_allDone.notify_all();
}

Outcome Executor::execute(std::string_view id, std::string_view payload, const Work& work,
                          const ExecuteOptions& options)
{
    return executeWithFingerprint(id, fingerprint(payload), work, options);
}

Outcome Executor::executeWithFingerprint(std::string_view id, std::string_view fp, const Work& work,
                                         const ExecuteOptions& options)
{
    Outcome out;
    const LeaseSettings settings = m_store.leaseSettings();
    const auto lease = options.lease.value_or(settings.lease);
    const auto sentAt = std::chrono::steady_clock::now();
    AcquireResult a;
    try {
        a = m_store.acquire(id, fp, lease);
    } catch (const UsageError&) {
        throw;
    } catch (const Error& e) {
        out.kind = OutcomeKind::StoreUnavailable;
        out.error = e.what();
        return out;
    }
    if (outcomes::settledByAcquire(a, id, m_store.recordKey(id), out))
        return out;

    const Ticket ticket = a.ticket;
    // The lease is measured from before the request went out: the local deadline is never later
    // than the server's.
    std::shared_ptr<WatchEntry> watch;
    if (options.renew)
        watch = watchdog().add(ticket, lease, sentAt + lease);

    WorkContext ctx;
    ctx.id = std::string(id);
    ctx.fence = ticket.fence;
    ctx.attempt = ticket.attempt;
    ctx.takeover = a.takeover;
    ctx.phase = std::move(a.phase);
    ctx.phaseData = std::move(a.phaseData);
    ctx.store = &m_store;
    ctx.ticket = ticket;
    if (watch)
        ctx.leaseLost = watch->lost.get_token();

    WorkResult result = outcomes::runWork(work, ctx, options.onException, settings.maxResponseBytes);
    out.workRan = true;
    if (watch)
        watchdog().remove(watch);

    std::string lastError;
    // The work's result is good while its lease lasts. Where a failover is expected (through
    // Sentinel, or with minReplicas), a completion that could not be stored, or that fewer replicas
    // than asked acknowledged, is tried again until then (the same token: a repeat is a no-op on
    // the record): the next try reaches the new primary, which a replicated acquire made this
    // ticket's owner. Elsewhere, completeAttempts tries.
    const auto leaseEnds = sentAt + lease;
    const bool untilLeaseEnds = settings.retryUntilLeaseEnds;
    bool notReplicated = false;
    for (int attempt = 0; attempt < std::max(1, options.completeAttempts) ||
                          (untilLeaseEnds && std::chrono::steady_clock::now() < leaseEnds);
         ++attempt) {
        if (attempt > 0)
            std::this_thread::sleep_for(outcomes::storeRetryDelay(attempt));
        try {
            const OwnerResult r = result.ok ? m_store.complete(ticket, result.response, options.retention)
                                            : m_store.fail(ticket, result.policy, result.error);
            if (outcomes::settledByStoring(r, result, settings.minReplicas, out, notReplicated, lastError))
                return out;
        } catch (const UsageError& e) {
            lastError = e.what();
            break;
        } catch (const Error& e) {
            lastError = e.what();
        }
    }
    outcomes::storingGaveUp(result, notReplicated, lastError, out);
    return out;
}

} // namespace idem
