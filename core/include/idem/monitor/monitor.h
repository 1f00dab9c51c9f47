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
    std::string pattern;                     // SCAN MATCH; empty = "<namespace>:*", the namespace taken literally
    std::size_t scanCount = 500;             // SCAN COUNT: bounded, never KEYS
    // Records with no lease (a start time only, or one derived from the TTL) count as stale once
    // in progress this long; 0: never (see DecodeOptions::staleAfterMs).
    std::int64_t staleAfterMs = 0;
    std::int64_t purgeKeepMetaMs = 24 * 3'600'000; // a purged idem record's meta key (its fence) kept at least
    std::int64_t writerTtlMs = 0; // see DecodeOptions::writerTtlMs
    // Classify as of this server time instead of now (a captured store replayed; tests); 0: now.
    std::int64_t asOfMs = 0;
    // Strings are classified from their first (and, when longer, last) prefixBytes: a large value
    // is never read whole.
    std::size_t prefixBytes = 8 * 1024;
    std::optional<RecordFormat> format; // every key read as this profile (--format)
};

// One SCAN step: the keys it returned, classified. Meta keys are skipped; keys that expired or
// were deleted between SCAN and the reads are dropped (they are gone, not malformed).
struct ScanPage {
    std::string cursor; // "0" when the scan is complete
    std::vector<Record> records;
    std::size_t keysSeen = 0;
    // keys SCAN listed that this user may not read (NOPERM: its ACL key patterns leave them out):
    // not in `records`, and what is said of the keys read is not all there is
    std::size_t refused = 0;
    std::int64_t serverNowMs = 0;
};

// A key a Redis Cluster node redirected (MOVED: its slot is served elsewhere now; ASK: it is
// being migrated and already on the other node): where to read it instead.
struct Redirected {
    std::string key;
    std::string address; // "host:port"
    bool ask = false;
};

// What one pipelined unlink of many records did.
struct UnlinkResult {
    std::size_t unlinked = 0;
    std::vector<std::size_t> redirected; // indexes of the records whose node no longer serves them
    std::vector<std::pair<std::size_t, std::string>> purged; // index and what it was, of each removed
};

// Who removes keys, and why: kept with the change (lua/purge.lua) in the meta key of an idem
// record and in the namespace's audit stream.
struct Actor {
    std::string who;
    std::string why;
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

enum class StateFilter { Any, Started, Stale, Blocked, Completed, Failed, Expired, Malformed, Foreign, Unknown, NoTtl };
// "started", "stale", "blocked", "completed", "failed", "expired", "malformed", "foreign",
// "unknown", "no-ttl" (and "any")
std::optional<StateFilter> stateFilterFromString(std::string_view s);
// A string taken literally in a Redis glob (SCAN MATCH, PSUBSCRIBE, ACL key patterns): the glob
// characters (star, question mark, brackets, backslash) escaped: namespace "p[a]y" must not
// match the keys of "pay".
std::string globEscape(std::string_view s);

std::string_view nameOf(StateFilter f);
bool matches(const Record& r, StateFilter f);
// Whether a bulk action may take keys of this filter by state alone: never the keys that are not
// records (malformed, foreign, unknown) nor everything (any, no-ttl); those need a pattern too.
bool bulkByStateAlone(StateFilter f);

struct Stats {
    std::size_t total = 0, started = 0, stale = 0, blocked = 0, completed = 0, failed = 0, expired = 0,
                malformed = 0, foreign = 0, unknown = 0, noTtl = 0;
    std::size_t otherPrograms = 0; // of foreign: job queues' and task backends' data (Record::program)
    void add(const Record& r);
    void merge(const Stats& other);
    // "started 3 (stale 1), completed 2, foreign 1": the non-zero counts
    std::string summary() const;
};

// Reads an idempotency store without harming it: SCAN with a bounded COUNT, and per page one
// pipelined round trip of PTTL + HMGET of the small fields (never a stored response) + GETRANGE of
// a string's first bytes; a second one only for other types (TYPE), the length and last bytes of
// large strings and companion keys (EXISTS). Not thread-safe: one Monitor per connection.
class Monitor {
public:
    Monitor(Connection& connection, MonitorOptions options);
    // (On a cluster node, keys it redirects are left out of the page and listed in `redirected`
    // when given.)
    ScanPage scanPage(const std::string& cursor, std::vector<Redirected>* redirected = nullptr);
    // Classifies these keys now (keyspace notifications, refresh of visible rows). Keys the node
    // redirects are left out, and listed in `redirected` when given. `asking`: every command goes
    // after ASKING (keys an ASK redirect sent here). Keys this user may not read are left out and
    // counted in refusedLastTime().
    std::vector<Record> classify(const std::vector<std::string>& keys, std::int64_t* serverNowMs = nullptr,
                                 std::vector<Redirected>* redirected = nullptr, bool asking = false);
    std::size_t refusedLastTime() const { return m_refused; }
    // Purges the record if it still is what `seen` describes (state, owner, lease; or a string's
    // length and the SHA1 of its first bytes), through lua/purge.lua: an idem record's fence kept
    // in its meta key, who and why kept there and in the audit stream. Returns false if it
    // changed or is gone.
    bool unlinkIfUnchanged(const Record& seen, const Actor& by);
    // Many unlinkIfUnchanged in one pipelined round trip; returns how many were unlinked.
    std::size_t unlinkIfUnchanged(const std::vector<Record>& seen, const Actor& by);
    // The same, telling which records the node redirected instead of throwing for them, and which
    // it removed. `auditHere`: the audit stream is on this node (not on a Redis Cluster, where
    // the caller adds the entries).
    UnlinkResult unlinkEach(const std::vector<Record>& seen, const Actor& by, bool auditHere);

    const MonitorOptions& options() const { return m_options; }
    DecodeOptions decodeOptions(std::int64_t nowMs) const;
    std::string pattern() const;
    // idem's own keys beside the records (meta keys, the audit stream): never listed
    bool isMetaKey(std::string_view key) const;

private:
    Connection& m_connection;
    MonitorOptions m_options;
    std::size_t m_refused = 0; // of the last classify()
};

} // namespace idem
