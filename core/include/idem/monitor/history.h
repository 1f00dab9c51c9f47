#pragma once

#include "idem/format/record.h"

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace idem {

// What a watcher saw happen to one key: a state it moved to (or its disappearance), on the
// server's clock. The console records one each time a key it watches reads differently from the
// last time (state, owner, attempt, fence, lease, TTL), whether a keyspace notification or a
// rescan told it.
struct Transition {
    enum Source : std::uint8_t { Scan = 1, Notification = 2 };
    enum Flag : std::uint8_t { Gone = 1, Terminal = 2 };
    std::int64_t atMs = 0;         // the server's clock when read
    std::string key;
    RecordState state = RecordState::Unknown;
    RecordFormat format = RecordFormat::Unknown;
    std::uint8_t flags = 0;
    std::uint8_t source = Scan;
    std::uint8_t keyType = 0;      // as the reader names it (the console's KeyRow::Type)
    std::int32_t attempt = 0;
    std::int64_t createdMs = 0;    // server clock; 0: unknown
    std::int64_t fence = 0;
    std::int64_t leaseUntilMs = 0; // 0: none
    std::int64_t expiresAtMs = -1; // server clock; -1: no TTL
    std::string owner;             // the owner token (hashes)
    std::string actor;             // who acted, when the record or its meta key says (op_by, last_op_by)
    std::string op;                // what they did ("force-fail", "purge")

    bool gone() const { return flags & Gone; }
};

// The same, compact (64 bytes each): strings interned by HistoryIndex.
struct HistoryEntry {
    std::int64_t atMs = 0;
    std::int64_t fence = 0;
    std::int64_t leaseUntilMs = 0;
    std::int64_t expiresAtMs = -1;
    std::int64_t createdMs = 0;
    std::int32_t attempt = 0;
    std::uint32_t key = 0;
    std::uint32_t owner = 0; // 0: none
    std::uint32_t actor = 0; // 0: none (actor and op as one string: "purge by alice")
    RecordState state = RecordState::Unknown;
    RecordFormat format = RecordFormat::Unknown;
    std::uint8_t flags = 0;
    std::uint8_t source = 0;
    std::uint8_t keyType = 0;
};

// Whether `b` reads differently from `a` (what makes a new transition): state, owner, attempt,
// fence, lease, TTL deadline (beyond `ttlSlackMs`, as a TTL read twice differs by the time between),
// or appearing/going.
bool differs(const Transition& a, const Transition& b, std::int64_t ttlSlackMs = 1000);

struct HistoryLimits {
    std::size_t maxTransitions = 1'000'000;
    std::int64_t maxAgeMs = 24LL * 3600 * 1000;
    std::size_t segmentTransitions = 65'536; // a segment file is deleted whole once out of bounds
};

// The history on disk: a directory of append-only segment files (seg-<first sequence>.idh), each a
// magic line and then records [u32 length][u32 CRC-32 of the payload][payload]. A record is written
// with one write() when appended, so a killed process keeps every record appended before it died;
// a record cut short by a crash (or a power loss before sync()) fails its CRC and ends the segment
// when read. Segments wholly older than the bounds are deleted; HistoryIndex trims exactly.
// Not thread-safe: one owner.
class HistoryLog {
public:
    HistoryLog(std::string directory, HistoryLimits limits);
    ~HistoryLog();
    HistoryLog(const HistoryLog&) = delete;
    HistoryLog& operator=(const HistoryLog&) = delete;

    // Reads every segment in order (creating the directory if needed); the next append goes into a
    // new segment. Throws idem::Error when the directory cannot be made or read.
    std::vector<Transition> open();
    void append(const std::vector<Transition>& batch);
    void sync(); // fdatasync of the open segment: the batch survives a power loss too
    // Deletes segments whose every record is beyond the bounds (older than newestMs - maxAgeMs,
    // or before the last maxTransitions).
    void trim(std::int64_t newestMs);
    std::size_t segments() const { return m_segments.size(); }
    const std::string& directory() const { return m_dir; }

    static std::vector<Transition> readSegment(const std::string& path);
    // Every segment of a history directory in order, read only (idemctl capture --from-history);
    // `segments`: how many there were. Throws idem::Error when the directory cannot be read.
    static std::vector<Transition> readDirectory(const std::string& directory, std::size_t* segments = nullptr);

private:
    struct Segment {
        std::string path;
        std::uint64_t first = 0; // sequence number of its first record
        std::size_t count = 0;
        std::int64_t lastMs = 0;
    };
    void roll();
    void closeFd();

    std::string m_dir;
    HistoryLimits m_limits;
    std::vector<Segment> m_segments;
    std::uint64_t m_next = 0; // sequence number of the next record
    int m_fd = -1;
};

// How many keys stood in each of the console chart's series at one moment, counted as the rewound
// key table counts them (KeyTableModel::stats() over HistoryRecorder's rows): `started` leaves out
// the stale ones, which `stale` counts (STARTED whose lease had run out by atMs); the other states
// (expired, foreign, unknown) and keys gone by then are in none.
struct StateCounts {
    std::int64_t atMs = 0;
    std::size_t started = 0, stale = 0, completed = 0, failed = 0, malformed = 0;
    bool operator==(const StateCounts&) const = default;
};

// Every transition in memory, in time order, for the timeline of a key and the state of every key
// at a past moment. Bounded like the log (trim()).
class HistoryIndex {
public:
    explicit HistoryIndex(HistoryLimits limits = {}) : m_limits(limits) {}

    // Times go forward: one earlier than the last is taken as at the last (a clock read from
    // another node of a cluster may be a few ms behind).
    void add(const Transition& t);
    void trim(); // to the limits, counting back from the newest
    std::size_t size() const { return m_entries.size() - m_start; }
    std::int64_t firstMs() const { return size() ? m_entries[m_start].atMs : 0; }
    std::int64_t lastMs() const { return size() ? m_entries.back().atMs : 0; }
    const HistoryEntry& entry(std::size_t i) const { return m_entries[m_start + i]; }
    Transition expand(const HistoryEntry& e) const;

    // The key's transitions, oldest first.
    std::vector<Transition> timeline(const std::string& key) const;
    // The last transition of each key at or before `atMs` (keys gone by then left out), by key id.
    std::vector<const HistoryEntry*> stateAt(std::int64_t atMs) const;
    // A position in the history and the state of every key there, moved by seek(): forward it
    // applies only the transitions in between (playing forward costs what happened meanwhile);
    // backward, or after a trim, it starts over.
    struct Cursor {
        std::int64_t atMs = 0;
        std::uint64_t end = 0;           // sequence number of the first transition after atMs
        std::uint64_t trims = 0;         // the index's trim count it was made at
        std::vector<std::int64_t> last;  // by key id: sequence number of its last transition, -1 none
        bool valid = false;
    };
    // Moves the cursor to atMs; returns the ids of the keys whose state there differs from before.
    std::vector<std::uint32_t> seek(Cursor& cursor, std::int64_t atMs) const;
    // The transition of a sequence number a cursor holds (null once trimmed away)
    const HistoryEntry* bySequence(std::int64_t sequence) const;
    // The counts at fromMs, fromMs + stepMs, ... up to toMs (the chart of a rewound moment): the
    // state at fromMs, then only the transitions and lease deadlines in between, so a window costs
    // what happened before and in it, not a pass over every key at every step. Empty when
    // stepMs <= 0 or toMs < fromMs.
    std::vector<StateCounts> countsOver(std::int64_t fromMs, std::int64_t toMs, std::int64_t stepMs) const;
    // Transitions in [fromMs, toMs], oldest first (the event log export)
    std::vector<Transition> between(std::int64_t fromMs, std::int64_t toMs) const;
    const std::string& keyName(std::uint32_t id) const { return m_keys[id]; }
    const std::string& text(std::uint32_t id) const { return m_strings[id]; } // HistoryEntry::owner, actor
    std::size_t keyCount() const { return m_keys.size(); }
    // the latest transition of this key, if any is kept
    const Transition* latest(const std::string& key) const;
    // keys whose latest transition is not their going
    std::vector<std::string> presentKeys() const;
    std::size_t memoryBytes() const;

private:
    std::uint32_t intern(std::vector<std::string>& names, std::unordered_map<std::string, std::uint32_t>& ids,
                         const std::string& s, bool zeroIsEmpty);

    HistoryLimits m_limits;
    std::vector<HistoryEntry> m_entries; // [m_start, end) are kept
    std::size_t m_start = 0;
    std::uint64_t m_erased = 0; // transitions dropped from the front of m_entries (sequence = m_erased + index)
    std::uint64_t m_trims = 0;  // trims that dropped something
    std::vector<std::string> m_keys;
    std::unordered_map<std::string, std::uint32_t> m_keyIds;
    std::vector<std::string> m_strings{std::string()}; // owners and actors; 0 is ""
    std::unordered_map<std::string, std::uint32_t> m_stringIds;
    std::unordered_map<std::uint32_t, Transition> m_latest; // by key id: its last transition, whole
};

// A key's transitions in words, one line each: "STARTED by 5f0e… (attempt 1)", "lease expired",
// "taken over by 9a1c…, attempt 2", "COMPLETED", "purged by alice", "gone (expired or deleted)".
// A lease that ended before the next transition shows as its own line at the lease's deadline.
struct TimelineLine {
    std::int64_t atMs = 0;
    std::string text;
    bool derived = false; // not read: worked out (a lease that ran out)
};
std::vector<TimelineLine> describeTimeline(const std::vector<Transition>& transitions, std::int64_t nowMs);

} // namespace idem
