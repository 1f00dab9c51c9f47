#pragma once

#include "idem/engine/executor.h"

#include <string>
#include <string_view>

// How an execution's steps turn into its Outcome, shared by execute() and submit(). Internal.
namespace idem::outcomes {

// The outcome an acquire answer settles by itself: true for everything but Acquired.
bool settledByAcquire(AcquireResult& a, std::string_view id, std::string_view recordKey, Outcome& out);

// Runs the work; an exception counts as failure(what(), onException); a response over the cap
// is a failure (Release).
WorkResult runWork(const Work& work, const WorkContext& ctx, FailPolicy onException, std::size_t maxResponseBytes);

// What storing the result answered: true when `out` is final; false when it is to be tried again
// (not replicated yet: `notReplicated` and `lastError` say so).
bool settledByStoring(const OwnerResult& r, WorkResult& result, int minReplicas, Outcome& out, bool& notReplicated,
                      std::string& lastError);

// Storing gave up: NotReplicated, or StoreUnavailable with the last error.
void storingGaveUp(WorkResult& result, bool notReplicated, const std::string& lastError, Outcome& out);

// The pause before storing attempt `attempt` (> 0) again.
inline Millis storeRetryDelay(int attempt) { return Millis(50 << std::min(attempt, 4)); }

} // namespace idem::outcomes
