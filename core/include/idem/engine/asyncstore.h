#pragma once

#include "idem/engine/store.h"
#include "idem/redis/asyncconnection.h"

#include <exception>
#include <functional>
#include <future>
#include <optional>
#include <string>
#include <string_view>

namespace idem {

// Store's state machine over an AsyncPool: the same scripts, keys and answers (the code that
// writes the calls and reads the replies is Store's), issued without waiting, so that thousands of
// calls can be in flight from a few threads, pipelined over a few connections. NOSCRIPT recovery
// works for a whole pipelined unit; with StoreOptions::minReplicas, WAIT goes in the same unit.
// Callbacks run on a connection's I/O thread (see AsyncConnection). Bad arguments throw
// UsageError at once, as Store's do. Thread-safe.
//
// Calls under way keep what they need: the AsyncStore may go before them (its pool may not).
//
// Standalone servers, Sentinel (a demoted primary's -READONLY drops the connection; the next
// call asks the sentinels) and Redis Cluster (each id's calls on the node serving its slot, as
// AsyncPool::routed says).
class AsyncStore {
public:
    explicit AsyncStore(AsyncPool& pool, StoreOptions options = {});
    ~AsyncStore(); // sends what a hold still keeps
    AsyncStore(const AsyncStore&) = delete;
    AsyncStore& operator=(const AsyncStore&) = delete;

    void acquire(std::string_view id, std::string_view fingerprint, std::optional<Millis> lease,
                 StoreCallback<AcquireResult> done);
    void complete(const Ticket& t, std::string_view response, std::optional<Millis> retention,
                  StoreCallback<OwnerResult> done);
    void fail(const Ticket& t, FailPolicy policy, std::string_view error, StoreCallback<OwnerResult> done);
    void renew(const Ticket& t, std::optional<Millis> lease, StoreCallback<OwnerResult> done);

    std::future<AcquireResult> acquire(std::string_view id, std::string_view fingerprint = {},
                                       std::optional<Millis> lease = {});
    std::future<OwnerResult> complete(const Ticket& t, std::string_view response,
                                      std::optional<Millis> retention = {});

    // Acquires and completions asked for between hold() and release() (from any thread) wait, and
    // release() sends them as a few script calls of many ids (up to 64 each, as many at once as
    // units may be on their way; the rest as those come back): a caller that makes many calls in
    // one turn of its event loop (idem-gateway holds from its first call of a turn until the turn
    // ends) pays a call, a write and a wake-up of an I/O thread for many of them.
    // Holds nest; the last release() sends; the destructor sends what a hold keeps. No effect on a
    // pool known to be a Redis Cluster's (each call goes at once there).
    void hold();
    void release();

    std::string recordKey(std::string_view id) const;
    const StoreOptions& options() const { return m_options; }
    AsyncPool& pool() { return m_pool; }

    struct Shared; // what calls under way need: options, WAIT, the pool

private:
    AsyncPool& m_pool;
    StoreOptions m_options;
    std::shared_ptr<const Shared> m_shared;
};

} // namespace idem
