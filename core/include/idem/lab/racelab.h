#pragma once

#include "idem/redis/options.h"

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace idem {

// Where the lab writes unless told otherwise: never an operator's namespace. Every key it writes
// lives under "<kLabNamespace>:" (or the namespace given) and expires after kLabTtlMs.
inline constexpr std::string_view kLabNamespace = "racelab";
inline constexpr std::int64_t kLabTtlMs = 10 * 60'000;
// Whether a key was written by the race lab under its own namespace.
inline bool isLabKey(std::string_view key)
{
    return key.size() > kLabNamespace.size() && key.starts_with(kLabNamespace) && key[kLabNamespace.size()] == ':';
}

// The race lab: the same duplicate deliveries through four ways of "processing once", on a real
// Redis, with the executions counted by an independent ledger (a Redis list the side effect
// appends to), not inferred from the strategy's own bookkeeping.
enum class Strategy {
    Naive, // GET, then SET: two workers both read "absent" and both execute
    SetNx, // SET NX EX only: no states, so a worker that dies after SETNX loses the event
    Watch, // WATCH / GET / MULTI / SET / EXEC with retries: safe unless a worker pauses past its EX
    Lua,   // idem's state machine, with fencing numbers checked by the side effect
};
std::string_view nameOf(Strategy s);
std::optional<Strategy> strategyFromString(std::string_view s);
// The most keys a race writes per event: the strategy's record and the ledger of executions, and
// for Lua the side effect's fence (its sink). What the console tells before a race on a server.
constexpr int labKeysPerEvent(Strategy s) { return s == Strategy::Lua ? 3 : 2; }

struct Workload {
    int events = 20;
    int duplicates = 3;   // deliveries per event
    int workers = 8;
    bool shuffle = true;  // deliveries in random order (else event by event)
    Millis jitterMax{3};  // before each delivery
    Millis workMin{5}, workMax{15};
    Millis lease{150};    // lease (lua) or EX (setnx, watch)
    double crashRate = 0; // a worker dies after acquiring, before completing; redelivered later
    double pauseRate = 0; // a worker stalls past its lease after acquiring (a GC pause)
    Millis pause{400};
    Millis redeliverAfter{250}; // an unacknowledged delivery comes back this much later
    std::uint64_t seed = 1;
    // Two workers, one event, in four turns that never overlap: A reads, B reads, A writes (the rest
    // of its delivery), B writes. Each turn starts when the previous one has had its answer, so the
    // trace is in the order the server ran the commands.
    bool forcedInterleaving = false;
    std::string keyNamespace = std::string(kLabNamespace);
};

enum class TraceKind {
    Acquired,   // the strategy's claim went through (SET NX, EXEC, the acquire script)
    InProgress,
    Replayed,   // found it done (or, for setnx, taken) and did not run it
    TakenOver,
    LeaseLost,
    Crashed,
    Paused,
    Executed,
    Fenced,
    Completed,
    Read,    // read the event's key and found nothing there (naive's GET, watch's WATCH + GET)
    Aborted, // watch: EXEC refused because the key changed since WATCH
};
std::string_view nameOf(TraceKind k);

struct TraceEvent {
    int worker = 0;
    std::string eventId;
    TraceKind kind = TraceKind::Acquired;
    // Server clock (TIME at start + elapsed), taken when the answer came back. The trace is in the
    // order the answers came back (seq); in the forced interleaving that is the server's order.
    std::int64_t serverMs = 0;
    std::int64_t fence = 0;
    int seq = 0;
};

struct RaceResult {
    Strategy strategy = Strategy::Lua;
    int events = 0;
    int deliveries = 0;        // including redeliveries after crashes
    int executions = 0;        // side effects that happened (the ledger's length)
    int doubleExecutions = 0;  // executions beyond the first, summed over events
    int fenced = 0;            // side effects refused because a higher fence was seen
    int lost = 0;              // events that never executed
    double seconds = 0;
    double throughputPerS = 0; // deliveries per second
    double p50Ms = 0, p99Ms = 0;
    std::vector<TraceEvent> trace;
};

// Runs the workload through one strategy against the Redis at `connection`, under a fresh
// sub-namespace; every key it writes has a TTL. Throws idem::Error when Redis is away. When
// `cancel` becomes true, no further delivery starts and the run returns what it has.
RaceResult runRace(const ConnectionOptions& connection, Strategy strategy, const Workload& workload,
                   const std::atomic<bool>* cancel = nullptr);

} // namespace idem
