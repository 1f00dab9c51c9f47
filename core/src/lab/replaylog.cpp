// The replay lab's input and its pace: the event log a replay reads (one JSON object a line) and
// the gate an operator pauses, resumes and steps it with.
#include "idem/lab/replay.h"

#include "idem/errors.h"

#include <istream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

namespace idem {

std::vector<ReplayEvent> parseEventLog(std::istream& in)
{
    constexpr int kMaxDepth = 128; // as deep as idem's own JSON reader goes (json::valid, the console)
    constexpr double kMaxAtMs = 253'402'300'799'999; // 9999-12-31T23:59:59.999Z
    std::vector<ReplayEvent> out;
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
        if (line.find_first_not_of(" \t\r") == std::string::npos)
            continue;
        const auto where = "event log line " + std::to_string(n) + ": ";
        nlohmann::json j;
        try {
            // nesting bounded: the parser is iterative, but dump() (the payload's text) recurses
            j = nlohmann::json::parse(line, [&](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
                if (depth > kMaxDepth)
                    throw UsageError(where + "JSON nested deeper than " + std::to_string(kMaxDepth) + " levels");
                return true;
            });
        } catch (const nlohmann::json::exception& e) {
            throw UsageError(where + "not JSON (" + std::string(e.what()).substr(0, 120) + ")");
        }
        if (!j.is_object() || !j.contains("id"))
            throw UsageError(where + "needs an object with \"id\"");
        ReplayEvent ev;
        const auto& id = j["id"];
        ev.id = id.is_string() ? id.get<std::string>() : id.dump();
        if (ev.id.empty() || ev.id.size() > 1024)
            throw UsageError(where + "\"id\" must be 1 to 1024 bytes");
        ev.payload = j.contains("payload") ? j["payload"].dump() : "null";
        if (j.contains("at_ms")) {
            if (!j["at_ms"].is_number())
                throw UsageError(where + "\"at_ms\" must be a number");
            // a time in ms (0 to year 9999): beyond, the conversion is undefined and the
            // schedule's differences overflow
            const double at = j["at_ms"].get<double>();
            if (!(at >= 0 && at <= kMaxAtMs))
                throw UsageError(where + "\"at_ms\" must be a time in ms, 0 to 253402300799999 (year 9999)");
            ev.atMs = static_cast<std::int64_t>(at);
        }
        out.push_back(std::move(ev));
    }
    return out;
}

void ReplayGate::pause()
{
    std::lock_guard lock(m_mutex);
    if (!m_paused) {
        m_paused = true;
        m_since = Clock::now();
    }
}

void ReplayGate::resume()
{
    std::lock_guard lock(m_mutex);
    if (m_paused) {
        m_total += Clock::now() - m_since;
        m_paused = false;
        m_steps = 0;
    }
}

void ReplayGate::step()
{
    std::lock_guard lock(m_mutex);
    if (m_paused)
        ++m_steps;
}

bool ReplayGate::paused() const
{
    std::lock_guard lock(m_mutex);
    return m_paused;
}

bool ReplayGate::pass(bool due)
{
    std::lock_guard lock(m_mutex);
    if (!m_paused)
        return due;
    if (m_steps == 0)
        return false;
    --m_steps;
    return true;
}

ReplayGate::Clock::duration ReplayGate::pausedFor() const
{
    std::lock_guard lock(m_mutex);
    return m_total + (m_paused ? Clock::now() - m_since : Clock::duration{});
}

} // namespace idem
