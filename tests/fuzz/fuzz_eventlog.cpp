// Event logs operators hand to `idemctl replay` (idem::parseEventLog): JSON lines of
// {"id": ..., "payload": ..., "at_ms": ...}.
//
// Input: the log's bytes.
#include "fuzzcheck.h"

#include "format/time.h"
#include "idem/errors.h"
#include "idem/format/jsonscan.h"
#include "idem/lab/replay.h"

#include <sstream>

using namespace idem;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string text(reinterpret_cast<const char*>(data), size);
    std::istringstream in(text);
    std::vector<ReplayEvent> events;
    try {
        events = parseEventLog(in);
    } catch (const UsageError& e) {
        // a refused log names the line
        FUZZ_CHECK(std::string_view(e.what()).starts_with("event log line "), e.what());
        return 0;
    }
    std::size_t lines = 0;
    for (const char c : text)
        lines += c == '\n';
    FUZZ_CHECK(events.size() <= lines + 1);
    for (const ReplayEvent& ev : events) {
        FUZZ_CHECK(!ev.id.empty() && ev.id.size() <= 1024);
        // the payload goes to the store as JSON text: it is JSON
        std::string why;
        FUZZ_CHECK(json::valid(ev.payload, &why), ev.payload.substr(0, 200) + ": " + why);
        // a time on the log's clock, never one that overflows when the replay subtracts two
        FUZZ_CHECK(ev.atMs >= 0 && ev.atMs <= timefield::kMaxMs, std::to_string(ev.atMs));
    }
    return 0;
}
