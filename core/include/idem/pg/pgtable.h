#pragma once

#include "idem/format/record.h"
#include "idem/pg/pgoperation.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace idem {

// A table of idempotency keys another program writes, read the way the format profiles read other
// libraries' Redis records: a hand-written `idempotency_keys (key, status, response, locked_at,
// created_at)`, or Brandur Leach's Stripe-style one (idempotency_key, recovery_point, locked_at,
// response_code, response_body, ...). Its columns are found by name (docs/postgres.md); nothing
// is written to it but what an operator asks for by name: purge(), guarded.
struct PgTableLayout {
    std::string table;        // as given: name or schema.name
    std::string rowKey;       // the single-column primary key the pages walk (else `key`)
    std::string key;          // key, idempotency_key or id: what an operator names a row by
    std::string scope;        // user_id, when keys are unique per user (Brandur's)
    std::string status;       // status or state (STARTED ... COMPLETED, FAILED), or
    std::string recoveryPoint; // recovery_point ('finished' when done)
    std::string response;     // response or response_body
    std::string responseCode; // response_code
    std::string lockedAt;     // locked_at: who holds it since when (NULL: nobody)
    bool lockedAtZoneless = false; // a timestamp without time zone: read as written at UTC-12:00
    std::string createdAt, finishedAt; // created_at; completed_at, finished_at, updated_at or last_run_at
    std::string error;        // error
    std::vector<std::string> columns; // every column, in table order
};

// What a row read as text holds: one cell per layout column name (NULL: nullopt), times as epoch
// milliseconds. decodeTableRow() is pure: what it makes of a row is tested without a server.
struct PgTableRow {
    std::vector<std::pair<std::string, std::optional<std::string>>> cells; // every column, as text
    std::optional<std::string> response;                                   // the bytes
    std::optional<std::int64_t> lockedAtMs, createdAtMs, finishedAtMs;
};
// STARTED while locked (stale once locked longer than `staleAfterMs`, or when nobody holds the
// lock: the next request takes it over); COMPLETED with its response; FAILED; MALFORMED when the
// status is a word this reader does not know, or a locked_at that is not a time it can read
// (never guessed: never taken for unlocked).
Record decodeTableRow(const PgTableLayout& layout, const PgTableRow& row, std::int64_t nowMs,
                      std::int64_t staleAfterMs);

// Reads such a table page by page along its key (keyset pagination, never OFFSET). Throws
// ConfigError when the table does not exist or has no key column, IoError when PostgreSQL is away.
// One connection, and nothing of schema idem touched but by purge() and operations(): a role with
// SELECT on the table reads it (purge() also needs UPDATE, for its row lock, and DELETE), and
// idem's triggers are not woken.
class PgTable {
public:
    PgTable(const std::string& conninfo, const std::string& table, std::int64_t staleAfterMs = 15 * 60'000,
            int connectTimeoutSeconds = 10);
    ~PgTable();
    PgTable(const PgTable&) = delete;
    PgTable& operator=(const PgTable&) = delete;

    const PgTableLayout& layout() const;

    struct Page {
        std::vector<Record> records;
        std::string lastRowKey; // where the next page starts
        bool done = false;
        std::int64_t serverNowMs = 0;
    };
    Page page(const std::string& afterRowKey, std::size_t limit, bool first);
    // The rows whose key column is `key` (more than one when keys are unique per user).
    std::vector<Record> inspect(const std::string& key, std::int64_t* serverNowMs = nullptr);
    // The row a Record::id names ("user_id=7 KEY" when keys are unique per user; UsageError when
    // `id` is not of that form); empty when there is none.
    std::vector<Record> read(const std::string& id, std::int64_t* serverNowMs = nullptr);

    // Deletes the row `id` names if its work is over: COMPLETED, FAILED, or STARTED with a lock
    // gone stale (its next request runs again). A live lock, a row some transaction holds right
    // now, and a status word this reader does not know are kept: deleting them would let a
    // duplicate run beside the work. When more than one row has the key and no known column tells
    // them apart (keys unique per tenant), none is deleted (Purged::sharing). The rows are locked (FOR UPDATE NOWAIT), judged as they are
    // then and deleted in one transaction, so a row that changed since an operator saw it is
    // judged as it is now. The one write idem makes to a table it did not create, and only when
    // asked by name. When the database has schema idem, each row deleted is written to
    // idem.operations in the same transaction (the purge is not done if that is refused).
    struct Purged {
        int deleted = 0;
        int kept = 0;
        std::string was; // the state of the first row deleted ("COMPLETED", "stale STARTED", ...)
        std::string why; // why the first row kept was kept
        bool audited = false; // written to idem.operations
        // more than one row has the key and no known column tells them apart: none deleted
        // (`why` says how many)
        int sharing = 0;
    };
    Purged purge(const std::string& id, const std::string& who, const std::string& reason);
    // The newest rows of idem.operations (where purge() keeps its own when the database has schema
    // idem), newest first; none when it has not. Read only when asked (the console's Store audit).
    std::vector<PgOperation> operations(int limit);

    std::int64_t serverNowMs();   // the server's clock, one round trip (the console's heartbeat)
    std::string describe() const; // "postgresql://host:port/db" of the connection, never the password

    // Thread-safe: a call waiting on the server ends at once with ClosedError (the connection is
    // done with: make a new PgTable)
    void interrupt();

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

} // namespace idem
