#pragma once

#include "engine/unitqueue.h"
#include "idem/engine/asyncstore.h"
#include "idem/engine/scripts.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

// What AsyncStore's calls under way share (internal to the engine).
namespace idem {

// An acquire on its way to its unit: what its answer is read with and handed to.
struct PendingAcquire {
    std::string id, fingerprint, token;
    std::int64_t leaseMs;
    StoreCallback<AcquireResult> done;
};

// A completion on its way to its unit.
struct PendingCompletion {
    std::string id, token, response, retentionMs;
    StoreCallback<OwnerResult> done;
};

struct AsyncStore::Shared : std::enable_shared_from_this<AsyncStore::Shared> {
    StoreOptions options;
    std::string waitTrailer; // WAIT, with minReplicas
    AsyncPool* pool = nullptr;

    // Acquires and completions coalesced (UnitQueue): one acquire.lua or complete.lua call of up
    // to kIdsPerUnit ids while unitsLimit() of its kind are on their way. Not on a Redis Cluster
    // known to be one; a unit sent before the pool knew (CROSSSLOT) goes again id by id.
    static constexpr std::size_t kIdsPerUnit = 64;
    int unitsLimit() const { return static_cast<int>(pool->size()) + 1; }
    std::size_t idsPerUnit() const { return pool->isCluster() ? 1 : kIdsPerUnit; }
    mutable UnitQueue<PendingAcquire> acquires;
    mutable UnitQueue<PendingCompletion> completions;

    std::string recordKey(std::string_view id) const;
    void acquire(PendingAcquire p) const;
    void complete(PendingCompletion p) const;
    void hold() const;
    void release(bool all = false) const; // all: every hold ends (~AsyncStore: nothing stays behind)

    void ownerCall(const Script& s, const Ticket& t, std::initializer_list<std::string_view> args,
                   bool waitForReplicas, StoreCallback<OwnerResult> done) const;
    // waitForReplicas: with minReplicas, WAIT follows (a refusal from a node no replica follows is
    // not believed); not for the release of an acquire whose replicas were just waited for
    void fail(const Ticket& t, FailPolicy policy, std::string_view error, StoreCallback<OwnerResult> done,
              bool waitForReplicas = true) const;

private:
    // The replicas the WAIT trailer (the last reply) counts, or -1 when none was sent; a count short
    // of minReplicas asks the pool to check with the sentinels (a replaced primary without its replicas?)
    std::int64_t replicasAcked(const std::vector<ReplyPtr>& replies, bool waited) const;
    void sendAcquires(std::vector<PendingAcquire> unit) const;
    void readAcquires(std::vector<PendingAcquire>& unit, std::vector<ReplyPtr>& replies, std::exception_ptr error) const;
    // After a unit's error: a release of each id, if the server may still run the unit (no answer came)
    void releaseUnanswered(const std::vector<PendingAcquire>& unit, const std::exception_ptr& error) const;
    void sendCompletions(std::vector<PendingCompletion> unit) const;
    void readCompletions(std::vector<PendingCompletion>& unit, std::vector<ReplyPtr>& replies,
                         std::exception_ptr error) const;
};

} // namespace idem
