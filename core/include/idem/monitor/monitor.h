#pragma once

#include "idem/redis/connection.h"
#include "idem/format/record.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace idem {

struct MonitorOptions {
    std::string keyNamespace = "idempotency";
    std::string pattern;                     // SCAN MATCH; empty = "<namespace>:*"
    std::size_t scanCount = 500;             // SCAN COUNT: bounded, never KEYS
    std::int64_t staleAfterMs = 15 * 60'000; // foreign records with only started_at
    std::size_t maxValueBytes = 64 * 1024;   // larger strings are not fetched: malformed
};

// One SCAN step: the keys it returned, classified. Meta keys are skipped; keys that expired or
// were deleted between SCAN and the reads are dropped (they are gone, not malformed).
struct ScanPage {
    std::string cursor; // "0" when the scan is complete
    std::vector<Record> records;
    std::size_t keysSeen = 0;
    std::int64_t serverNowMs = 0;
};

// Which part of the keyspace a SCAN on one connection sees. SCAN walks one server: on a Redis
// Cluster with more than one primary, the keys the other primaries hold never show up.
struct ScanCoverage {
    static constexpr int kSlots = 16384;
    bool cluster = false;  // the server runs in cluster mode
    int slotsHere = kSlots; // hash slots whose keys this node holds (a replica: its primary's)
    int primaries = 1;     // primaries serving slots
    std::string unknown;   // why the share is unknown (CLUSTER NODES refused); empty if known
    bool complete() const { return !cluster || (unknown.empty() && slotsHere == kSlots); }
    std::string warning() const; // one line when not complete, else empty
};
// Asks INFO cluster and, on a cluster, CLUSTER NODES (both O(nodes), never a key scan).
ScanCoverage scanCoverage(Connection& c);

enum class StateFilter { Any, Started, Stale, Completed, Failed, Malformed, NoTtl };
std::optional<StateFilter> stateFilterFromString(std::string_view s); // "started", "stale", ..., "no-ttl"
bool matches(const Record& r, StateFilter f);

struct Stats {
    std::size_t total = 0, started = 0, stale = 0, completed = 0, failed = 0, malformed = 0, noTtl = 0;
    void add(const Record& r);
};

// Reads an idempotency store without harming it: SCAN with a bounded COUNT, and per page one
// pipelined round trip of PTTL + HMGET of the small fields (never the stored response) + STRLEN;
// a second one only for strings (GET, when small) and for other types (TYPE). Not thread-safe:
// one Monitor per connection.
class Monitor {
public:
    Monitor(Connection& connection, MonitorOptions options);
    ScanPage scanPage(const std::string& cursor);
    // Classifies these keys now (keyspace notifications, refresh of visible rows).
    std::vector<Record> classify(const std::vector<std::string>& keys, std::int64_t* serverNowMs = nullptr);
    // Unlinks the record if it still is what `seen` describes (state, owner, lease; or the
    // SHA1 of a string value). Returns false if it changed or is gone.
    bool unlinkIfUnchanged(const Record& seen);
    // Many unlinkIfUnchanged in one pipelined round trip; returns how many were unlinked.
    std::size_t unlinkIfUnchanged(const std::vector<Record>& seen);

    const MonitorOptions& options() const { return m_options; }
    std::string pattern() const;
    bool isMetaKey(std::string_view key) const;

private:
    Connection& m_connection;
    MonitorOptions m_options;
};

} // namespace idem
