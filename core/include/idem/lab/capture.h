#pragma once

#include "idem/lab/replay.h"
#include "idem/monitor/history.h"
#include "idem/redis/options.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <istream>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace idem {

// Capture: an event log (what replay() and `idemctl replay` read) from events another program
// wrote, a Redis Stream or JSON lines of another shape. Strictly read-only on the source: XRANGE
// in bounded pages, no consumer group, no acknowledgement, nothing written anywhere.

struct CaptureOptions {
    std::string stream;
    std::string from = "-"; // first entry id (inclusive), "-" the oldest
    std::string to = "+";   // last entry id (inclusive), "+" the newest
    std::size_t count = 0;  // at most this many entries read (0: all in the range)
    std::string idField = "id";
    std::string payloadField = "payload";
    std::size_t pageSize = 1000; // entries per XRANGE
};

// An entry or line that was not taken: where (a stream entry's id, "line N") and why.
struct CaptureProblem {
    std::string where;
    std::string why;
};

struct CaptureResult {
    std::vector<ReplayEvent> events;
    std::size_t read = 0;    // entries or lines read
    std::size_t skipped = 0; // of them refused (each one reported)
};

// Called for each refused entry, as it is found (never silently skipped); and, for a stream,
// after every page with what was read so far (return false to stop early).
struct CaptureCallbacks {
    std::function<void(const CaptureProblem&)> problem;
    std::function<bool(const CaptureResult&)> page;
};

// The event a stream entry holds. Its id is the value of options.idField (1 to 1024 bytes of
// UTF-8); its payload the value of options.payloadField: JSON as written when it parses as JSON
// (nested up to 255 levels: the log's line holds it), else a JSON string, else - bytes that are
// not UTF-8 - an object {"base64": "..."}; at_ms is the time of the entry's id. Returns false with
// `why` for an entry that is none.
bool eventFromEntry(const std::string& entryId, const std::vector<std::pair<std::string, std::string>>& fields,
                    const CaptureOptions& options, ReplayEvent& out, std::string& why);
bool eventFromEntry(std::string_view entryId, std::span<const std::pair<std::string_view, std::string_view>> fields,
                    const CaptureOptions& options, ReplayEvent& out, std::string& why);

// Reads the stream (on a Redis Cluster, from the node that serves its key). Throws UsageError when
// the key is missing or not a stream, or an option is wrong; idem::Error when Redis fails.
CaptureResult captureStream(const ConnectionOptions& connection, const CaptureOptions& options,
                            const CaptureCallbacks& callbacks = {});

struct JsonlMapping {
    std::string idField = "id";           // a dotted path: "meta.event_id"
    std::string payloadField = "payload"; // "" or ".": the whole line
    std::string timeField;                // ms since the epoch (a number, or digits in a string); "": 0
};

// Reads JSON lines of another shape through the mapping. Lines that are not JSON objects or lack
// the id are reported as "line N" and skipped; blank lines are ignored.
CaptureResult captureJsonl(std::istream& in, const JsonlMapping& mapping, const CaptureCallbacks& callbacks = {});

// The console's history as an event log: each STARTED it saw by a new owner (a first start, a
// retry, a takeover) is an event with the record's id (the key without "<namespace>:{" and "}")
// at the time it was seen, so duplicates seen become duplicates replayed. The payload names the
// key, the owner and the attempt.
std::vector<ReplayEvent> eventsFromHistory(const std::vector<Transition>& transitions, const std::string& keyNamespace);

// Writes events as an event log, one {"id", "payload", "at_ms"} per line: what parseEventLog reads.
void writeEventLog(std::ostream& out, const std::vector<ReplayEvent>& events);

// The streams of a server (SCAN ... TYPE stream, every primary of a cluster; never KEYS), each with
// its length, at most `limit` of them, sorted by name.
struct StreamInfo {
    std::string key;
    std::int64_t length = 0;
};
std::vector<StreamInfo> listStreams(const ConnectionOptions& connection, std::size_t limit = 1000);

} // namespace idem
