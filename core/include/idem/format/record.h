#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace idem {

enum class RecordFormat { Native, Json, Plain, Unknown };
enum class RecordState { Started, Completed, Failed, Malformed };
std::string_view nameOf(RecordFormat f);
std::string_view nameOf(RecordState s);

// One idempotency record as a monitor or `idemctl inspect` sees it, whoever wrote it.
struct Record {
    std::string key;
    std::string id;
    std::string keyType; // Redis type of the key: "hash", "string", "list", ... (when read)
    RecordFormat format = RecordFormat::Unknown;
    RecordState state = RecordState::Malformed;
    std::string rawStatus; // the status as written ("PROCESSING", "STARTED", ...)
    std::string reason;    // why it is Malformed
    bool stale = false;    // STARTED and its lease (or lock_expiry, or age threshold) has passed
    std::string staleWhy;
    bool terminal = false; // FAILED and terminal
    std::int64_t ttlMs = -2; // PTTL: -1 = no TTL (flag it), -2 = unknown / not read
    std::optional<std::int64_t> createdMs, startedMs, leaseUntilMs, finishedMs;
    std::string owner; // token
    std::string fingerprint;
    std::int64_t fence = 0;
    std::int64_t attempt = 0;
    std::optional<std::string> response;
    std::string error;
    std::string opBy, opReason, op;
    std::optional<std::int64_t> opAtMs;
    std::vector<std::pair<std::string, std::string>> fields; // everything read, in order
};

struct DecodeOptions {
    std::int64_t nowMs = 0;                  // server clock
    std::int64_t staleAfterMs = 15 * 60'000; // foreign records with only started_at
    std::size_t maxValueBytes = 4 * 1024 * 1024; // larger string values are not parsed
    // The key's PTTL, read with the record (-2: not read). idem's COMPLETED records keep their
    // retention instead of a finishing time: they finished at nowMs + ttlMs - retention_ms.
    std::int64_t ttlMs = -2;
};

// The native hash written by lua/*.lua.
Record decodeHash(std::vector<std::pair<std::string, std::string>> fields, const DecodeOptions& o);
// A string value: JSON records of other implementations ({"status":"STARTED",...}) or a plain
// status word ("PROCESSING", "COMPLETED"). Anything else comes back Malformed with a reason.
Record decodeString(std::string_view value, const DecodeOptions& o);
// A string value too large to fetch or parse: Malformed, with its size in the reason.
Record decodeOversized(std::size_t bytes);
// A key of another type (list, set, zset, stream, ...): Malformed.
Record decodeOtherType(std::string_view type);

// Parses a timestamp as foreign formats write it: epoch seconds or milliseconds (number or
// numeric string, fractions allowed) or ISO 8601 ("2024-05-01T12:00:00.5Z", "+02:00" offsets).
std::optional<std::int64_t> parseTimestampMs(std::string_view s);

// The id inside <namespace>:{<id>}; empty when the key does not have that shape.
std::string idFromKey(std::string_view key, std::string_view keyNamespace);

} // namespace idem
