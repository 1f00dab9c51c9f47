#include "engine/outcomes.h"

#include <algorithm>

namespace idem::outcomes {

bool settledByAcquire(AcquireResult& a, std::string_view id, std::string_view recordKey, Outcome& out)
{
    out.fence = a.fence;
    out.attempt = a.attempt;
    switch (a.status) {
    case AcquireStatus::Duplicate:
        out.kind = OutcomeKind::Replayed;
        out.response = std::move(a.response);
        return true;
    case AcquireStatus::InProgress:
        out.kind = OutcomeKind::InProgress;
        out.remainingMs = a.remainingMs;
        return true;
    case AcquireStatus::Mismatch:
        out.kind = OutcomeKind::PayloadMismatch;
        out.error = "id '" + std::string(id) + "' was used with a different payload (stored " + a.storedFingerprint + ")";
        return true;
    case AcquireStatus::FailedTerminal:
        out.kind = OutcomeKind::Failed;
        out.error = std::move(a.error);
        return true;
    case AcquireStatus::Unusable:
        out.kind = OutcomeKind::KeyUnusable;
        out.error = "key " + std::string(recordKey) + " is unusable: " + a.error;
        return true;
    case AcquireStatus::Acquired:
        break;
    }
    out.takeover = a.takeover;
    return false;
}

WorkResult runWork(const Work& work, const WorkContext& ctx, FailPolicy onException, std::size_t maxResponseBytes)
{
    WorkResult result;
    try {
        result = work(ctx);
    } catch (const std::exception& e) {
        result = WorkResult::failure(e.what(), onException);
    } catch (...) {
        result = WorkResult::failure("unknown exception", onException);
    }
    if (result.ok && result.response.size() > maxResponseBytes)
        result = WorkResult::failure("response of " + std::to_string(result.response.size()) + " bytes is over the " +
                                         std::to_string(maxResponseBytes) + "-byte cap",
                                     FailPolicy::Release);
    return result;
}

bool settledByStoring(const OwnerResult& r, WorkResult& result, int minReplicas, Outcome& out, bool& notReplicated,
                      std::string& lastError)
{
    // a completion fewer replicas have is tried again (the same token: a repeat is a no-op); a
    // failure is not (a released record is gone, and a repeat would find it missing)
    if (r.status == OwnerStatus::NotReplicated && result.ok) {
        notReplicated = true;
        lastError = "acknowledged by " + std::to_string(std::max<std::int64_t>(0, r.replicas)) + " of " +
                    std::to_string(minReplicas) + " replica(s)";
        return false;
    }
    if (r.status == OwnerStatus::LeaseLost) {
        out.kind = OutcomeKind::LeaseLost;
        out.error = "lease lost: the record is now " + r.currentState +
                    " (taken over, force-failed or purged); result not stored";
        if (!result.ok)
            out.error += "; the work had failed: " + result.error;
        return true;
    }
    out.kind = result.ok ? OutcomeKind::Executed : OutcomeKind::Failed;
    out.response = std::move(result.response);
    out.error = std::move(result.error);
    return true;
}

void storingGaveUp(WorkResult& result, bool notReplicated, const std::string& lastError, Outcome& out)
{
    if (notReplicated) {
        out.kind = OutcomeKind::NotReplicated;
        out.response = std::move(result.response);
        out.error = "the result is stored on the primary but not replicated: " + lastError;
        return;
    }
    out.kind = OutcomeKind::StoreUnavailable;
    out.error = "the work ran but its outcome could not be stored: " + lastError;
}

} // namespace idem::outcomes
