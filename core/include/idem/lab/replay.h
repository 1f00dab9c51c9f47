#pragma once

#include "idem/lab/racelab.h"
#include "idem/redis/options.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <istream>
#include <mutex>
#include <string>
#include <vector>

namespace idem {

struct ReplayEvent {
    std::string id;
    std::string payload; // JSON text
    std::int64_t atMs = 0;
};

// An event log as JSON lines: {"id": "...", "payload": <any JSON>, "at_ms": <number>}, at_ms a time
// in ms (0 to year 9999), nesting up to 256 levels. Blank lines are skipped; anything else throws
// UsageError naming the line.
std::vector<ReplayEvent> parseEventLog(std::istream& in);

// What a replay has done so far (ReplayOptions::progress).
struct ReplayProgress {
    int planned = 0;     // deliveries scheduled (events x duplicates)
    int produced = 0;    // of them handed to a consumer (directly) or to the stream
    int deliveries = 0;  // taken by a consumer, redeliveries included
    int executions = 0;  // side effects that ran
    int twice = 0;       // events whose side effect ran more than once
    int crashes = 0;
    int claimed = 0;
    double seconds = 0;
    bool paused = false;
    // What each consumer did since the previous report (worker = the consumer, serverMs = ms since
    // the replay started): the swimlanes' marks.
    std::vector<TraceEvent> trace;
};

// Pause and step, from any thread. While paused no delivery starts (through a stream: nothing is
// produced; what is already in the stream is still read and claimed), except one per step(); the
// replay's clock stands still meanwhile, so its pace and its timeout resume where they were.
class ReplayGate {
public:
    using Clock = std::chrono::steady_clock;
    void pause();
    void resume();
    void step(); // while paused: let the next delivery start now, whenever it was due
    bool paused() const;
    // Replay-side: may a delivery start now? A step is used up by the delivery it lets through.
    // `due`: whether the next delivery's time has come; a step lets it start anyway.
    bool pass(bool due);
    // How long the gate has been paused in total (the replay's clock subtracts it).
    Clock::duration pausedFor() const;

private:
    mutable std::mutex m_mutex;
    bool m_paused = false;
    int m_steps = 0;
    Clock::time_point m_since;
    Clock::duration m_total{};
};

struct ReplayOptions {
    double speed = 1.0;    // 2 = twice as fast as logged; 0 = as fast as possible
    int duplicates = 1;    // deliveries per event
    Millis reorder{0};     // each delivery is shifted by a random 0..reorder
    double crashRate = 0;  // a consumer dies after acquiring, before acknowledging
    int killConsumerAfter = -1; // stream: the first consumer to take this many messages dies holding its next
    int consumers = 3;
    bool viaStream = false; // through a Redis Stream and a consumer group (XREADGROUP, XAUTOCLAIM)
    std::uint64_t seed = 1;
    Millis lease{300};
    Millis timeout{60'000};
    std::string keyNamespace = "replay";
    // Called on a thread of the replay's own about every 100 ms while it runs, and once at the end
    // (it must not throw and must not block for long).
    std::function<void(const ReplayProgress&)> progress;
    // When it turns true, no further delivery starts and replay() returns with `cancelled` set.
    const std::atomic<bool>* cancel = nullptr;
    ReplayGate* gate = nullptr; // pause and step (none: never paused)
    bool trace = false;         // report each consumer's marks in ReplayProgress::trace
};

struct ReplayResult {
    int events = 0;
    int deliveries = 0;  // including redeliveries
    int executions = 0;  // from the ledger
    int doubleExecutions = 0;
    int lost = 0;
    int crashes = 0;
    int claimed = 0;     // stream: messages taken over from a dead consumer with XAUTOCLAIM
    bool timedOut = false;
    bool cancelled = false;
    double seconds = 0;
    std::string keyNamespace; // where its keys are: keyNamespace + ":" + a fresh suffix
};

// Replays the log through idem's state machine (Executor with the race lab's fenced side effect)
// at the chosen speed, with duplication, reordering and crash injection; directly, or at least
// once through a Redis Stream whose consumer group redelivers what a dead consumer left pending.
ReplayResult replay(const ConnectionOptions& connection, const std::vector<ReplayEvent>& events,
                    const ReplayOptions& options);

} // namespace idem
