#include "idem/engine/executor.h"

#include "idem/errors.h"
#include "idem/engine/fingerprint.h"
#include "idem/engine/watchdog.h"

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
    case OutcomeKind::StoreUnavailable: break;
    }
    return "store_unavailable";
}

Executor::Executor(Store& store) : m_store(store) {}
Executor::~Executor() = default;

Watchdog& Executor::watchdog()
{
    std::call_once(m_watchdogOnce, [this] { m_watchdog = std::make_unique<Watchdog>(m_store); });
    return *m_watchdog;
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
    const auto lease = options.lease.value_or(m_store.options().lease);
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
    out.fence = a.fence;
    out.attempt = a.attempt;
    switch (a.status) {
    case AcquireStatus::Duplicate:
        out.kind = OutcomeKind::Replayed;
        out.response = std::move(a.response);
        return out;
    case AcquireStatus::InProgress:
        out.kind = OutcomeKind::InProgress;
        out.remainingMs = a.remainingMs;
        return out;
    case AcquireStatus::Mismatch:
        out.kind = OutcomeKind::PayloadMismatch;
        out.error = "id '" + std::string(id) + "' was used with a different payload (stored " +
                    a.storedFingerprint + ")";
        return out;
    case AcquireStatus::FailedTerminal:
        out.kind = OutcomeKind::Failed;
        out.error = std::move(a.error);
        return out;
    case AcquireStatus::Unusable:
        out.kind = OutcomeKind::StoreUnavailable;
        out.error = "key " + m_store.recordKey(id) + " is unusable: " + a.error;
        return out;
    case AcquireStatus::Acquired:
        break;
    }

    const Ticket ticket = a.ticket;
    out.takeover = a.takeover;
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
    if (watch)
        ctx.leaseLost = watch->lost.get_token();

    WorkResult result;
    try {
        result = work(ctx);
    } catch (const std::exception& e) {
        result = WorkResult::failure(e.what(), options.onException);
    } catch (...) {
        result = WorkResult::failure("unknown exception", options.onException);
    }
    out.workRan = true;
    if (watch)
        watchdog().remove(watch);

    if (result.ok && result.response.size() > m_store.options().maxResponseBytes) {
        result = WorkResult::failure("response of " + std::to_string(result.response.size()) +
                                         " bytes is over the " +
                                         std::to_string(m_store.options().maxResponseBytes) +
                                         "-byte cap",
                                     FailPolicy::Release);
    }

    std::string lastError;
    // The work's result is good while its lease lasts. Where a failover is expected (through
    // Sentinel, or with minReplicas), a completion that could not be stored, or that fewer replicas
    // than asked acknowledged, is tried again until then (the same token: a repeat is a no-op on
    // the record): the next try reaches the new primary, which a replicated acquire made this
    // ticket's owner. Elsewhere, completeAttempts tries.
    const auto leaseEnds = sentAt + lease;
    const bool untilLeaseEnds = m_store.options().minReplicas > 0 || m_store.pool().options().viaSentinel();
    bool notReplicated = false;
    for (int attempt = 0; attempt < std::max(1, options.completeAttempts) ||
                          (untilLeaseEnds && std::chrono::steady_clock::now() < leaseEnds);
         ++attempt) {
        if (attempt > 0)
            std::this_thread::sleep_for(std::chrono::milliseconds(50 << std::min(attempt, 4)));
        try {
            const OwnerResult r = result.ok ? m_store.complete(ticket, result.response, options.retention)
                                            : m_store.fail(ticket, result.policy, result.error);
            if (r.status == OwnerStatus::NotReplicated) {
                notReplicated = true;
                lastError = "acknowledged by " + std::to_string(std::max<std::int64_t>(0, r.replicas)) + " of " +
                            std::to_string(m_store.options().minReplicas) + " replica(s)";
                continue;
            }
            if (r.status == OwnerStatus::LeaseLost) {
                out.kind = OutcomeKind::LeaseLost;
                out.error = "lease lost: the record is now " + r.currentState +
                            " (taken over, force-failed or purged); result not stored";
                if (!result.ok)
                    out.error += "; the work had failed: " + result.error;
                return out;
            }
            out.kind = result.ok ? OutcomeKind::Executed : OutcomeKind::Failed;
            out.response = std::move(result.response);
            out.error = std::move(result.error);
            return out;
        } catch (const UsageError& e) {
            lastError = e.what();
            break;
        } catch (const Error& e) {
            lastError = e.what();
        }
    }
    if (notReplicated) {
        out.kind = OutcomeKind::NotReplicated;
        out.response = std::move(result.response);
        out.error = "the result is stored on the primary but not replicated: " + lastError;
        return out;
    }
    out.kind = OutcomeKind::StoreUnavailable;
    out.error = "the work ran but its outcome could not be stored: " + lastError;
    return out;
}

} // namespace idem
