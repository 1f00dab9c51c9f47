#pragma once

#include "idem/engine/executor.h"
#include "idem/engine/store.h"
#include "idem/format/record.h"

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

typedef struct pg_conn PGconn; // libpq's; services that use the transactional mode include libpq-fe.h

namespace idem {

class PgConnection;
class PgPipeline;

// What PostgreSQL refused when a connection failed, which retrying cannot fix: the login (a wrong
// password, none given, a role that does not exist or may not log in or connect), a connection
// no pg_hba.conf line admits, or a database that does not exist. PgStore (and every connection of
// idem's) throws ConfigError for these, IoError ("unavailable") for anything else.
enum class PgRefusal { None, Login, HostRule, Database };
// Read from libpq's message (an error's text that holds it will do: an Outcome keeps only that).
// libpq gives no SQLSTATE for a connection that failed, so the server's own words are matched,
// where the server put them (after "FATAL:  "); a server whose lc_messages is not English words
// them otherwise: None, and the connection counts as unavailable, as any other failure does.
PgRefusal pgRefusalOf(std::string_view message);

struct PgStoreOptions {
    Millis lease{30'000};
    Millis staleKeep{3'600'000};            // how long a STARTED row outlives its lease
    Millis retention{24LL * 3'600'000};     // COMPLETED rows
    Millis failureRetention{24LL * 3'600'000};
    std::size_t maxResponseBytes = 512 * 1024;
    std::size_t maxIdBytes = 1024;
    int connectTimeoutSeconds = 5;          // unless the conninfo names its own connect_timeout
    std::size_t maxIdleConnections = 8;     // kept open for the next call
    // submit() through Executor: connections in libpq's pipeline mode, each with an I/O thread,
    // opened when a call first needs it (the second when the first has 8 calls pending)
    std::size_t pipelineConnections = 2;
    // A pipelined call waits at most this long for a row another transaction holds (an execute()
    // of the transactional mode): then an acquire answers InProgress, and the calls behind it on
    // that connection are not held up any longer.
    Millis pipelineLockTimeout{1'000};
    // No answer to a pipelined call for this long: the connection is taken for hung and closed,
    // and its calls under way fail with TimeoutError (the next call connects again).
    Millis pipelineCallTimeout{30'000};
    // forceFail() and purge() wait at most this long for a row another transaction holds (the
    // transactional mode's work under way): then they answer AdminStatus::Busy, nothing done.
    // 0: no bound (the session's lock_timeout).
    Millis operatorLockTimeout{5'000};
};

// What the pipelined calls (submit()) sent so far: statements, batches among them (acquires or
// completes queued together, sent as one statement), the calls those carried, and the batches the
// server refused (a row lock not granted in time, a bad argument), whose calls went again alone.
struct PgPipelineCounts {
    std::uint64_t statements = 0;
    std::uint64_t batches = 0;
    std::uint64_t batchedCalls = 0;
    std::uint64_t batchesResent = 0;
};

// What the transactional mode's work sees: the connection, inside the transaction that acquired
// the id and will complete it. Its writes commit with the record or not at all. It must not
// COMMIT, ROLLBACK or leave the transaction in another way.
struct PgWorkContext {
    std::string id;
    std::int64_t fence = 0;
    std::int64_t attempt = 0;
    PGconn* connection = nullptr;
};
using PgWork = std::function<WorkResult(const PgWorkContext&)>;

struct PgExecuteOptions {
    std::optional<Millis> retention;        // default: the store's
    // How long a duplicate waits for the transaction that holds the id before it answers
    // InProgress; nullopt: until that transaction ends (the server's lock_timeout, if set).
    std::optional<Millis> lockTimeout;
    FailPolicy onException = FailPolicy::Release;
};

// The idempotency state machine in PostgreSQL: the functions of schema idem (sql/v1.sql, installed
// by installPgSchema / `idemctl pg init`), called through prepared statements with binary bytea.
// Every method is one statement in its own transaction, except execute(), which runs acquire, the
// work's own writes and complete in one transaction. Expected outcomes are values; PostgreSQL
// unreachable or the connection lost throws IoError (fail closed), a missing schema ConfigError.
// Thread-safe: each call takes an idle connection or opens one.
//
// The asynchronous calls (AsyncLeaseStore, what Executor::submit() uses) are pipelined over
// PgStoreOptions::pipelineConnections connections of their own, sent without waiting for the
// answers before them. Acquires (and completes) that queue up while two of their kind are under
// way go out together as one statement, one transaction for all of them: each call gets the answer
// it would have had alone, and a batch the server refuses is sent again call by call. Calls fill
// the first connection up to 8 pending before the next takes any, then go to the least loaded.
// Their callbacks run on a pipeline's I/O thread; a connection lost fails its calls under way with
// ClosedError.
class PgStore final : public LeaseStore, public AsyncLeaseStore {
public:
    // conninfo: a postgresql:// URI or key=value pairs, as libpq takes them
    explicit PgStore(std::string conninfo, PgStoreOptions options = {});
    ~PgStore();
    PgStore(const PgStore&) = delete;
    PgStore& operator=(const PgStore&) = delete;

    // The leased mode (each call commits on its own; Executor runs them, and the watchdog renews).
    // An acquire with attempt > 1 tells the last recovery point (AcquireResult::phase, phaseData).
    AcquireResult acquire(std::string_view id, std::string_view fingerprint = {},
                          std::optional<Millis> lease = {}) override;
    OwnerResult complete(const Ticket& t, std::string_view response,
                         std::optional<Millis> retention = {}) override;
    OwnerResult fail(const Ticket& t, FailPolicy policy, std::string_view error = {}) override;
    OwnerResult renew(const Ticket& t, std::optional<Millis> lease = {}) override;
    OwnerResult checkpoint(const Ticket& t, std::string_view phase, std::string_view data) override;
    LeaseSettings leaseSettings() const override;
    std::string recordKey(std::string_view id) const override { return std::string(id); }

    // The same calls, pipelined (see above)
    void acquireAsync(std::string_view id, std::string_view fingerprint, Millis lease,
                      StoreCallback<AcquireResult> done) override;
    void completeAsync(const Ticket& t, std::string_view response, std::optional<Millis> retention,
                       StoreCallback<OwnerResult> done) override;
    void failAsync(const Ticket& t, FailPolicy policy, std::string_view error,
                   StoreCallback<OwnerResult> done) override;

    // Deletes expired rows, up to `batch` per transaction along the expires_at index, until a batch
    // comes back short or `maxBatches` ran (0: no limit). Answers how many rows went, in how many batches.
    struct Swept {
        std::int64_t rows = 0;
        std::int64_t batches = 0;
        bool more = false; // stopped at maxBatches with a full last batch
    };
    Swept sweep(std::int64_t batch = 1000, std::int64_t maxBatches = 0);
    AdminResult forceFail(std::string_view id, std::string_view reason, bool terminal, std::string_view who);
    // Deletes the row (idem.purge: the operation logged in idem.operations). With `seen`, only if
    // the row is still what was read (state, owner, fence, attempt and lease; compared under the
    // row's lock by idem.purge_seen, schema v5): otherwise Refused, "it changed since it was read".
    // A `seen` with an empty rawStatus was read as absent: a row there now is "changed".
    // forceFail and purge answer Busy when another transaction holds the row for longer than
    // PgStoreOptions::operatorLockTimeout; from schema v6 also when it holds an id it inserted
    // (a first acquire not yet committed, which no other transaction sees): NotFound only when
    // the id has no row, committed or not.
    AdminResult purge(std::string_view id, std::string_view who, std::string_view reason = {},
                      const Record* seen = nullptr);
    // The row as it is now (state Expired when its expiry has passed); nullopt when absent. The
    // last recovery point is in Record::fields as "phase".
    std::optional<Record> inspect(std::string_view id, std::int64_t* serverNowMs = nullptr);
    // Up to `limit` rows in id order after `afterId` ("" from the start): keyset pagination, each
    // page one range of the primary key however deep into the table.
    struct Page {
        std::vector<Record> records;
        std::int64_t serverNowMs = 0;
        std::string lastId; // the next page's afterId
        bool done = false;  // fewer than `limit` came: nothing after them
    };
    Page page(std::string_view afterId, std::size_t limit = 1000);
    // The rows of these ids that exist (in no particular order), one statement: what a watcher
    // reads again when a notification names them. `serverNowMs` is set when any came back.
    std::vector<Record> read(const std::vector<std::string>& ids, std::int64_t* serverNowMs = nullptr);

    // The transactional mode: acquire, work and complete commit together. A duplicate waits for
    // the transaction that holds the id and then replays its result (or runs, if that one rolled
    // back). The work's failure with FailPolicy::Release rolls everything back; Retryable and
    // Terminal roll back the work's writes and commit the failure. A connection lost before the
    // commit answered gives StoreUnavailable with workRan set: the server rolled back both, or
    // committed both, and the next delivery finds out which.
    Outcome execute(std::string_view id, std::string_view payload, const PgWork& work,
                    const PgExecuteOptions& options = {});
    Outcome executeWithFingerprint(std::string_view id, std::string_view fingerprint, const PgWork& work,
                                   const PgExecuteOptions& options = {});

    const PgStoreOptions& options() const { return m_options; }
    const std::string& conninfo() const { return m_conninfo; }
    // Thread-safe: the calls waiting on PostgreSQL now end at once with ClosedError (their
    // connections are shut down), however hung the server is; later calls connect again.
    void interrupt();
    PgPipelineCounts pipelineCounts(); // summed over the pipelined connections

private:
    class Borrowed; // a connection taken from the idle list, given back unless it broke
    Borrowed connection(bool* reused = nullptr);
    void giveBack(std::unique_ptr<PgConnection> c);
    void dropIdle();
    // f(PgConnection&) on an idle connection; if that one turns out closed (the server restarted
    // since it was last used), the idle ones are dropped and f runs once more on a new connection
    template <typename F> auto call(F&& f);
    // execute()'s BEGIN and idem.acquire on `held`: a serialization failure or deadlock of the
    // acquire (repeatable read, serializable) is retried in a new transaction, a few times
    AcquireResult beginAndAcquire(std::optional<Borrowed>& held, std::string_view id, std::string_view fp,
                                  const PgExecuteOptions& options);
    void checkId(std::string_view id) const;
    void checkResponse(std::string_view response) const;
    PgPipeline& pipeline(); // the first one with room, else the least loaded; made on the first call

    std::string m_conninfo;
    PgStoreOptions m_options;
    std::mutex m_mutex;
    std::vector<std::unique_ptr<PgConnection>> m_idle;
    std::vector<PgConnection*> m_busy; // borrowed right now: what interrupt() reaches
    std::once_flag m_pipelinesOnce;
    std::vector<std::unique_ptr<PgPipeline>> m_pipelines;
};

} // namespace idem
