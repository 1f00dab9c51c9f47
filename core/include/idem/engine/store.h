#pragma once

#include "idem/redis/cluster.h"
#include "idem/redis/options.h"
#include "idem/redis/pool.h"
#include "idem/format/record.h"
#include "idem/engine/scripts.h"

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace idem {

class ClusterRouter;

enum class FailPolicy {
    Release,   // delete the record: the next delivery retries (default)
    Retryable, // keep FAILED; the next acquire starts a new attempt
    Terminal,  // keep FAILED; duplicates get the stored failure back
};
std::string_view nameOf(FailPolicy p);
std::optional<FailPolicy> failPolicyFromString(std::string_view s);

struct StoreOptions {
    std::string keyNamespace = "idempotency";
    Millis lease{30'000};                  // how long an owner holds STARTED without renewing
    Millis staleKeep{3'600'000};           // how long a STARTED record outlives its lease (stale locks stay visible)
    Millis retention{24LL * 3'600'000};    // how long COMPLETED results are kept
    Millis failureRetention{24LL * 3'600'000}; // how long FAILED records are kept
    std::size_t maxResponseBytes = 512 * 1024;
    std::size_t maxIdBytes = 1024;
    // Writes that survive a failover: acquire and complete wait (WAIT, in the same round trip) for
    // this many replicas to have them. An acquire fewer acknowledge is released and throws
    // NotReplicatedError (the work must not run); a completion fewer acknowledge answers
    // OwnerStatus::NotReplicated (stored on the primary, not yet on enough replicas). fail and
    // renew wait too; a refusal from a node fewer replicas follow throws NotReplicatedError.
    int minReplicas = 0;
    Millis replicaTimeout{1000};
};

// Ownership of one id, handed out by acquire.
struct Ticket {
    std::string id;
    std::string token;
    std::int64_t fence = 0;
    std::int64_t attempt = 0;
    std::int64_t leaseUntilMs = 0; // server clock
};

enum class AcquireStatus {
    Acquired,       // you own it now (first attempt, retry after FAILED, or stale-lease takeover)
    Duplicate,      // COMPLETED before: `response` is the stored result
    InProgress,     // someone holds a live lease: `remainingMs` left
    FailedTerminal, // a terminal failure is stored: `error`
    Mismatch,       // same id, different payload fingerprint: nothing changed
    Unusable,       // the key holds something that is not an idem record: `error` says what
};
std::string_view nameOf(AcquireStatus s);

struct AcquireResult {
    AcquireStatus status = AcquireStatus::Unusable;
    Ticket ticket;            // when Acquired
    bool takeover = false;    // Acquired by taking over an expired lease
    std::string response;     // Duplicate
    std::string error;        // FailedTerminal, Unusable
    std::string storedFingerprint; // Mismatch
    std::int64_t remainingMs = 0;  // InProgress
    std::int64_t attempt = 0;
    std::int64_t fence = 0;
    // The server's clock (ms) when the script read it; one per script call (up to 64 ids). 0 when
    // no answer of the call needed the clock: duplicates, mismatches and unusable keys are answered
    // without reading it.
    std::int64_t serverNowMs = 0;
    // Acquired with attempt > 1 (a takeover or a retry) from a store with recovery points
    // (PostgreSQL): the last phase an earlier attempt recorded with checkpoint, and its data
    std::string phase;
    std::string phaseData;
};

enum class OwnerStatus {
    Ok,
    LeaseLost,
    NotReplicated, // complete: stored on the primary, acknowledged by fewer than minReplicas replicas
};
struct OwnerResult {
    OwnerStatus status = OwnerStatus::LeaseLost;
    std::string currentState; // when LeaseLost: the record's state now, or "missing"
    std::int64_t leaseUntilMs = 0; // renew: the new lease deadline (server clock)
    std::int64_t replicas = -1;    // complete with minReplicas: how many replicas acknowledged it
    // The server's clock (ms) when the script read it; 0 from complete, which reads none (the
    // record's TTL, counted from then, tells when it completed)
    std::int64_t serverNowMs = 0;
};

// Busy (PostgreSQL): a running transaction holds the row and did not let go within the store's
// operator lock timeout; nothing was done (try again once that work ends).
enum class AdminStatus { Ok, NotFound, Refused, Busy };
struct AdminResult {
    AdminStatus status = AdminStatus::NotFound;
    std::string previousState; // Ok
    std::string reason;        // Refused, Busy
};

// One operator action, as the audit stream keeps it.
struct AuditEntry {
    std::string id;       // the stream entry's id ("<ms>-<n>")
    std::int64_t atMs = 0; // server time of the action
    std::string action;   // "purge", "force-fail terminal", "force-fail retryable"
    std::string key, by, why, via, was;
};

struct AcquireRequest {
    std::string id;
    std::string fingerprint;
};

// The idempotency state machine. Every transition is one Lua script (lua/*.lua) run with EVALSHA
// on the key <namespace>:{<id>} (a Redis Cluster hash tag) and its meta key <namespace>:{<id>}:meta.
// Thread-safe: connections come from the pool.
// What Executor needs of a store: the owner's calls and a few settings. The Redis Store and the
// PostgreSQL PgStore implement it; Executor::execute takes either. Store is final, so calls made
// on a Store itself (the pipelined and asynchronous paths) stay direct.
struct LeaseSettings {
    Millis lease{30'000};
    std::size_t maxResponseBytes = 512 * 1024;
    int minReplicas = 0;
    bool retryUntilLeaseEnds = false; // a failover is expected: storing a result is retried while the lease lasts
};

class LeaseStore {
public:
    virtual AcquireResult acquire(std::string_view id, std::string_view fingerprint = {},
                                  std::optional<Millis> lease = {}) = 0;
    virtual OwnerResult complete(const Ticket& t, std::string_view response,
                                 std::optional<Millis> retention = {}) = 0;
    virtual OwnerResult fail(const Ticket& t, FailPolicy policy, std::string_view error = {}) = 0;
    virtual OwnerResult renew(const Ticket& t, std::optional<Millis> lease = {}) = 0;
    // A recovery point: the attempt that takes over (or retries) is told the last one. Stores
    // without them throw UsageError.
    virtual OwnerResult checkpoint(const Ticket& t, std::string_view phase, std::string_view data);
    virtual LeaseSettings leaseSettings() const = 0;
    // How errors name the id's record ("<namespace>:{<id>}" in Redis)
    virtual std::string recordKey(std::string_view id) const = 0;

protected:
    ~LeaseStore() = default;
};

// What an asynchronous store call gets: its value, or (value default-made) the error that ended it,
// of the kinds Store throws (IoError and its kinds, ConfigError, ReplyError, ProtoError).
template <typename T>
using StoreCallback = std::function<void(T value, std::exception_ptr error)>;

// A LeaseStore with an asynchronous client of its own (PgStore's pipelined connections). An
// Executor made on such a store submit()s through these calls instead of a thread per execution.
// Callbacks run on the store's I/O thread; bad arguments throw UsageError at once.
class AsyncLeaseStore {
public:
    virtual void acquireAsync(std::string_view id, std::string_view fingerprint, Millis lease,
                              StoreCallback<AcquireResult> done) = 0;
    virtual void completeAsync(const Ticket& t, std::string_view response, std::optional<Millis> retention,
                               StoreCallback<OwnerResult> done) = 0;
    virtual void failAsync(const Ticket& t, FailPolicy policy, std::string_view error,
                           StoreCallback<OwnerResult> done) = 0;

protected:
    ~AsyncLeaseStore() = default;
};

// Names the tool in operator actions' audit entries ("idemctl", "idem-console"; default "idem").
void setToolName(std::string_view tool);

// idem's own keys beside a namespace's records, which no operator action deletes: the audit stream
// <namespace>:audit (the trail of every operator action) and a record's meta key
// <namespace>:{<id>}:meta (its last fence, which keeps fencing numbers rising across purges).
struct OwnKey {
    enum class Kind { None, AuditTrail, Meta };
    Kind kind = Kind::None;
    std::string id; // Meta: the id of the record whose key it is
    explicit operator bool() const { return kind != Kind::None; }
};
OwnKey ownKey(std::string_view key, std::string_view keyNamespace);

class Store final : public LeaseStore {
public:
    Store(ConnectionPool& pool, StoreOptions options = {});
    ~Store();

    AcquireResult acquire(std::string_view id, std::string_view fingerprint = {},
                          std::optional<Millis> lease = {}) override;
    // Many acquires in one round trip (pipelined EVALSHA).
    std::vector<AcquireResult> acquireBatch(const std::vector<AcquireRequest>& requests,
                                            std::optional<Millis> lease = {});
    OwnerResult complete(const Ticket& t, std::string_view response,
                         std::optional<Millis> retention = {}) override;
    OwnerResult fail(const Ticket& t, FailPolicy policy, std::string_view error = {}) override;
    OwnerResult renew(const Ticket& t, std::optional<Millis> lease = {}) override;
    LeaseSettings leaseSettings() const override;

    // Operator actions: no token needed. Who, when (the server's clock), why and from where (the
    // tool and host) are recorded atomically with the change, in the record or its meta key and as
    // an entry of the namespace's audit stream <namespace>:audit (capped; on a Redis Cluster, where
    // the stream lives on its own node, added right after). A purge keeps the record's fence in
    // the meta key, so fences keep rising after it.
    AdminResult forceFail(std::string_view id, std::string_view reason, bool terminal,
                          std::string_view who);
    // `seen`: only if the record is still what that read found (inspectKey); else Refused with
    // what it is now. nullptr: whatever it is.
    AdminResult purge(std::string_view id, std::string_view who, std::string_view reason = {},
                      const Record* seen = nullptr);

    // The record as it is now, decoded (native or foreign formats); nullopt when absent.
    std::optional<Record> inspect(std::string_view id);
    // The same for any key (a monitor's pattern may match keys of other shapes).
    std::optional<Record> inspectKey(std::string_view key);
    // The same, decoded with these options (nowMs 0: the server's clock, read with the key).
    std::optional<Record> inspectKey(std::string_view key, const DecodeOptions& options);
    // The meta key's fields (fence counter, last operator action).
    std::vector<std::pair<std::string, std::string>> meta(std::string_view id);
    std::vector<std::pair<std::string, std::string>> hashFields(std::string_view key);
    // The latest entries of the namespace's audit stream, newest first (at most `count`).
    std::vector<AuditEntry> audit(std::size_t count = 100);

    std::string recordKey(std::string_view id) const override;
    std::string metaKey(std::string_view id) const;
    const StoreOptions& options() const { return m_options; }
    ConnectionPool& pool() { return m_pool; }

private:
    bool auditInScript();
    void appendAudit(std::string_view action, std::string_view key, std::string_view who, std::string_view why,
                     std::string_view was);
    void checkId(std::string_view id) const;
    OwnerResult ownerCall(const Script& s, const Ticket& t, const std::vector<std::string_view>& args,
                          bool waitForReplicas = false);
    std::optional<KeyRead> readKey(Connection& c, const std::string& key, std::int64_t& nowMs, ReplyPtr& redirect);

    // One script on the id's keys, routed (to the node serving its slot on a Redis Cluster); an
    // error reply is thrown. The owner scripts touch the record alone (Keys::Record), the
    // operators' scripts its meta key too.
    enum class Keys { Record, RecordAndMeta };
    ReplyPtr routedScript(const Script& s, std::string_view id, const std::vector<std::string_view>& args,
                          Keys keys = Keys::RecordAndMeta);

    ConnectionPool& m_pool;
    StoreOptions m_options;
    std::unique_ptr<ClusterRouter> m_router;
};

// A fresh random owner token (128 bits, hex).
std::string newToken();

} // namespace idem
