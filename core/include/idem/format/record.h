#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace idem {

// Who wrote a record: one profile per library, each a small decoder that knows its library's key
// shape, state words, lease and expiry fields and where the stored response is
// (docs/formats.md). Unknown: no profile recognises the key.
enum class RecordFormat : std::uint8_t {
    Native,             // idem's own hash (lua/*.lua)
    Powertools,         // AWS Powertools for Lambda, TypeScript (CachePersistenceLayer)
    PowertoolsPython,   // AWS Powertools for Lambda, Python (RedisCachePersistenceLayer)
    NodeIdempotency,    // @node-idempotency/core with its Redis storage adapter
    ExpressIdempotency, // express-idempotency with express-idempotency-redis-adapter
    IdempotentRequest,  // idempotent-request (Ruby, Qonto): a record and a lock key
    Camel,              // Apache Camel's Redis idempotent repositories (message ids)
    StatusJson,         // hand-written records: JSON (or a hash) with a "status" field
    Plain,              // a plain status word ("PROCESSING", "COMPLETED")
    SqlTable,           // a row of a PostgreSQL table another program writes (idem/pg/pgtable.h)
    Unknown,
    // (appended: history files keep a format as its number)
    PowertoolsJava, // AWS Powertools for Lambda, Java (RedisPersistenceStore)
};
inline constexpr int kRecordFormats = static_cast<int>(RecordFormat::PowertoolsJava) + 1;

// STARTED / COMPLETED / FAILED as the writing library means them; EXPIRED: the library treats the
// record as absent although the key still lives (the next call runs). The three kinds of "not a
// record" are never confused: MALFORMED is a known format, broken (bad JSON, a status word the
// format does not have, a time that cannot be one); FOREIGN is a valid key of something else (a
// library's own mutex, a list, a message-id set); UNKNOWN is what no profile recognises.
enum class RecordState : std::uint8_t { Started, Completed, Failed, Expired, Malformed, Foreign, Unknown };
inline constexpr int kRecordStates = static_cast<int>(RecordState::Unknown) + 1;

std::string_view nameOf(RecordFormat f);  // "idem", "powertools", ...
std::string_view libraryOf(RecordFormat f); // "AWS Powertools for Lambda (TypeScript)", ...
std::optional<RecordFormat> formatFromString(std::string_view name);
// A profile of Redis records (what --format may name): not SqlTable, not Unknown.
bool isRedisFormat(RecordFormat f);
std::string_view nameOf(RecordState s);   // "STARTED", ...
// Not a record: malformed, foreign or unknown. Bulk actions never take these by state alone.
bool notARecord(RecordState s);
// A word a library writes for work running now (STARTED, INPROGRESS, PROCESSING, RUNNING, ...).
bool inProgressWord(std::string_view word);

// One idempotency record as a monitor or `idemctl inspect` sees it, whoever wrote it.
struct Record {
    std::string key;
    std::string id;
    std::string keyType; // Redis type of the key: "hash", "string", "list", ... (when read)
    RecordFormat format = RecordFormat::Unknown;
    RecordState state = RecordState::Unknown;
    std::string rawStatus; // the status as written ("INPROGRESS", "COMPLETE", ...; empty if none)
    std::string reason;    // malformed / foreign / unknown: why; otherwise what to know (one line)
    // FOREIGN data of a well-known program that is no idempotency layer ("BullMQ", "RQ", "Sidekiq",
    // "Celery"): its job queues, workers and task results. Empty for anything else. No bulk action
    // takes such a key by any state or pattern; only `purge --key` (after inspect) deletes one.
    std::string program;
    bool stale = false;    // STARTED, and its lease (or the in-progress window) has passed
    std::string staleWhy;
    bool blocked = false;  // STARTED with no lease: the library blocks the key until its TTL ends
    bool terminal = false; // FAILED and terminal (duplicates get the failure back)
    bool partial = false;  // classified from a prefix of a larger value (the rest was not read)
    std::int64_t ttlMs = -2; // PTTL: -1 = no TTL (flag it), -2 = unknown / not read
    std::optional<std::int64_t> createdMs, startedMs, leaseUntilMs, finishedMs;
    std::optional<std::int64_t> expiresMs; // the library's own expiry (Powertools' expiration)
    // When the record turns stale (STARTED: its lease, or start + the in-progress window) or
    // expired (COMPLETED past the library's expiry), on the server's clock; what a view counts down
    std::optional<std::int64_t> changesAtMs;
    std::string owner; // token
    std::string fingerprint;
    std::int64_t fence = 0;
    std::int64_t attempt = 0;
    std::optional<std::string> response;
    std::string error;
    std::string opBy, opReason, op;
    std::optional<std::int64_t> opAtMs;
    // What a guarded purge (lua/purge.lua) compares, without reading a large value again. Strings:
    // the value's length and the SHA1 (hex) of its first `guardBytes` bytes and, when it was read
    // in part, of its last `guardTailBytes` too (where a verdict may come from). Hashes: the SHA1
    // of every field guardFieldNames() names, as read (hashGuardSha1): a renewed lease under any
    // name a profile reads (lock_expiry, expiration, ...) makes the key "changed".
    std::int64_t valueBytes = -1;
    std::size_t guardBytes = 0;
    std::size_t guardTailBytes = 0;
    std::string guardSha1;
    std::vector<std::pair<std::string, std::string>> fields; // everything read, in order
    std::string node; // the server it was read from, "host:port" (set by the Scanner)
};

// A lock whose owner may still be running: STARTED and not stale, or a record idem cannot read
// whole (malformed, unknown, foreign) whose status word says in progress (a lease that is no time,
// a state with no deadline) or whose name says lock while a TTL bounds it (lockName): deleting it
// lets a duplicate run beside the first. Operator actions
// take it only when told (--live).
bool mayBeLiveLock(const Record& r);
// Another program's data (Record::program set): never taken by a bulk purge, whatever it names.
bool anotherProgramsData(const Record& r);
// The key's name has a segment that says lock ("lock", "mutex", "lease", "redlock", ...): with a
// TTL, what idem cannot read there may be someone's lock (mayBeLiveLock).
bool lockName(std::string_view key);

// What a reader fetched for one key; decode() turns it into a Record.
struct KeyRead {
    std::string key;
    std::string type;   // "hash", "string", "list", ...
    std::int64_t ttlMs = -2;
    std::vector<std::pair<std::string, std::string>> fields; // hash: the fields read
    std::string value;  // string: the whole value, or its first bytes
    std::string tail;   // string: its last bytes, when `value` is only the first ones
    std::int64_t valueBytes = -1; // string: its length (STRLEN)
    bool companionExists = false; // the key's companion (companionKey()) exists
};

struct DecodeOptions {
    std::int64_t nowMs = 0;                  // server clock
    std::string keyNamespace = "idempotency"; // idem's records live at <namespace>:{<id>}
    // How long a record with no lease may be in progress before it counts as stale: records of
    // libraries that write no deadline (only a start time, or a start derived from the TTL). 0:
    // never — those libraries keep such a lock until its TTL ends, and a handler may run long; an
    // operator who knows none of theirs runs longer says so (idemctl --stale-after).
    std::int64_t staleAfterMs = 0;
    // The TTL node-idempotency and express-idempotency are configured to give their records (both
    // 24 h by default): an in-progress record's age is that minus the key's TTL. 0: not known, so
    // their in-progress records have no known start and never turn stale (a guess too long would
    // make live locks look stale).
    std::int64_t writerTtlMs = 0;
    std::optional<RecordFormat> format; // every key read as this profile (a namespace known to hold one library's records)
    std::int64_t ttlMs = -2;            // the key's PTTL when decodeHash/decodeString are called directly
};

// The profile that claims the key and its decoding: what every reader (list, stats, inspect, the
// console's rows and inspector) uses. Never throws on what the key holds.
Record decode(const KeyRead& in, const DecodeOptions& o);

// The hash fields a monitor reads with HMGET to classify a hash (never a stored response).
const std::vector<std::string_view>& hashFieldsToRead();
// The fields of this key a reader asks for too: a library whose field names carry the key
// (Powertools for Java: "<key>:status", ...), and those that tell another program's hash at its
// key shape (a BullMQ job's name, timestamp, processedOn, ...); none for other keys.
std::vector<std::string> extraHashFieldsToRead(std::string_view key);
// What a guarded purge compares of a hash: hashFieldsToRead(), the key's own fields
// (extraHashFieldsToRead), then every other field read. The names a monitor reads follow from the
// key alone, so a reader that keeps only the digest (the console's row) names the same ones.
std::vector<std::string> guardFieldNames(std::string_view key,
                                         const std::vector<std::pair<std::string, std::string>>& fields);
// The SHA1 (hex) of those fields as `fields` holds them (absent when not there), as lua/purge.lua
// computes it from the hash: for each name in order, "+<length>:<value>" or "-".
std::string hashGuardSha1(std::string_view key, const std::vector<std::pair<std::string, std::string>>& fields);
// A key whose existence changes what `key` means (idempotent-request's lock beside its record),
// or empty. Readers fetch EXISTS of it and pass KeyRead::companionExists.
std::string companionKey(std::string_view key);

// What a field of a format means, for the inspector.
enum class FieldTime : std::uint8_t { None, Seconds, Millis, Micros, Any }; // Any: seconds, ms or ISO 8601
struct FieldDoc {
    std::string_view name;
    std::string_view meaning;
    FieldTime time = FieldTime::None;
};
const std::vector<FieldDoc>& fieldDocs(RecordFormat f);
const FieldDoc* fieldDoc(RecordFormat f, std::string_view name);

// Shorthands over decode() for idem's hash and for a whole string value.
Record decodeHash(std::vector<std::pair<std::string, std::string>> fields, const DecodeOptions& o);
Record decodeString(std::string_view value, const DecodeOptions& o);

// A timestamp as foreign formats write it: epoch seconds or milliseconds (number or numeric
// string, fractions allowed) or ISO 8601 ("2024-05-01T12:00:00.5Z", "+02:00" offsets); nullopt
// for anything that cannot be a time between 1970 and 9999.
std::optional<std::int64_t> parseTimestampMs(std::string_view s);

// The id inside <namespace>:{<id>}; empty when the key does not have that shape.
std::string idFromKey(std::string_view key, std::string_view keyNamespace);

} // namespace idem
