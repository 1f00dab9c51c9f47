// What capture reads from other programs (idem::eventFromEntry, idem::captureJsonl): stream
// entries' fields and JSON lines of any shape, turned into an event log for replay.
//
// Input: a mode byte (bit 0: JSON lines), then sections separated by 0x1f. A stream entry: its id,
// the id field's name, the payload field's name, then field names and values in turn. JSON lines:
// the id, payload and time paths, then the text.
#include "fuzzcheck.h"

#include "format/time.h"
#include "idem/errors.h"
#include "idem/lab/capture.h"
#include "common/canonicaljson.h"

#include <nlohmann/json.hpp>

#include <sstream>

using namespace idem;

namespace {
// What capture writes, replay reads back as the same event.
void roundTrips(const ReplayEvent& ev)
{
    FUZZ_CHECK(!ev.id.empty() && ev.id.size() <= 1024);
    // nlohmann's own check: idem's json::valid stops at 128 levels, replay takes 256
    FUZZ_CHECK(nlohmann::json::accept(ev.payload), ev.payload.substr(0, 200));
    FUZZ_CHECK(ev.atMs >= 0 && ev.atMs <= timefield::kMaxMs, std::to_string(ev.atMs));
    std::stringstream log;
    writeEventLog(log, {ev});
    std::vector<ReplayEvent> back;
    try {
        back = parseEventLog(log);
    } catch (const UsageError& e) {
        FUZZ_CHECK(false, std::string("replay refuses what capture wrote: ") + e.what());
    }
    FUZZ_CHECK(back.size() == 1);
    FUZZ_CHECK(back[0].id == ev.id, back[0].id);
    FUZZ_CHECK(back[0].payload == ev.payload, back[0].payload.substr(0, 200));
    FUZZ_CHECK(back[0].atMs == ev.atMs);
}
// capture's fast path writes exactly the library's text, or leaves the value to the library
void sameAsLibrary(std::string_view text)
{
    std::string fast = "x";
    if (!appendCanonicalJson(text, fast)) {
        FUZZ_CHECK(fast == "x");
        return;
    }
    nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    FUZZ_CHECK(!j.is_discarded(), std::string(text.substr(0, 200)));
    FUZZ_CHECK(fast.substr(1) == j.dump(), fast.substr(0, 200));
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    fuzzsupport::Input in(data, size);
    const bool jsonl = in.byte() & 1;
    if (!jsonl) {
        const std::string entryId(in.section());
        CaptureOptions o;
        o.idField = std::string(in.section());
        o.payloadField = std::string(in.section());
        std::vector<std::pair<std::string, std::string>> fields;
        while (!in.empty()) {
            std::string name(in.section());
            fields.emplace_back(std::move(name), std::string(in.section()));
            sameAsLibrary(fields.back().second);
        }
        ReplayEvent ev;
        std::string why;
        if (eventFromEntry(entryId, fields, o, ev, why))
            roundTrips(ev);
        else
            FUZZ_CHECK(!why.empty());
        return 0;
    }
    JsonlMapping m;
    m.idField = std::string(in.section());
    m.payloadField = std::string(in.section());
    m.timeField = std::string(in.section());
    std::istringstream text{std::string(in.rest())};
    std::size_t problems = 0;
    CaptureCallbacks cb;
    cb.problem = [&](const CaptureProblem& p) {
        ++problems;
        FUZZ_CHECK(p.where.starts_with("line ") && !p.why.empty(), p.where);
    };
    CaptureResult r;
    try {
        r = captureJsonl(text, m, cb);
    } catch (const UsageError&) {
        FUZZ_CHECK(m.idField.empty() || m.idField == ".");
        return 0;
    }
    FUZZ_CHECK(r.events.size() + r.skipped == r.read);
    FUZZ_CHECK(problems == r.skipped);
    for (const ReplayEvent& ev : r.events)
        roundTrips(ev);
    return 0;
}
