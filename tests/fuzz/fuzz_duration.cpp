// Durations and sizes as the command line takes them (--lease, --wait, --stale-after,
// --writer-ttl, --reorder, --max-response ...): idem::parseDuration, parseSize, formatDuration.
//
// Input: [8 bytes: a duration in ms, for formatDuration] the text to parse.
#include "fuzzcheck.h"

#include "idem/duration.h"
#include "idem/errors.h"

using namespace idem;
using fuzzsupport::Input;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    Input f(data, size);
    const std::int64_t raw = f.i64();
    const std::string_view text = f.rest();

    // any duration prints; a whole number of seconds (as far as parseDuration goes) parses back
    const std::string printed = formatDuration(Millis(raw));
    FUZZ_CHECK(!printed.empty());
    const std::int64_t seconds = (raw < 0 ? -(raw + 1) : raw) % 1'000'000'000'000 * 1000;
    const std::string whole = formatDuration(Millis(seconds));
    try {
        FUZZ_CHECK(parseDuration(whole).count() == seconds, whole);
    } catch (const UsageError& e) {
        FUZZ_CHECK(false, whole + ": " + e.what());
    }
    const std::int64_t ms = (raw < 0 ? -(raw + 1) : raw) % 1000;
    FUZZ_CHECK(parseDuration(formatDuration(Millis(ms))).count() == ms);

    // what parses is a duration the tools can use, and prints to what parses to it again
    try {
        const Millis d = parseDuration(text);
        FUZZ_CHECK(d.count() >= 0 && d.count() <= 1'000'000'000'000'000, std::string(text));
        if (d.count() % 1000 == 0 || d.count() < 1000)
            FUZZ_CHECK(parseDuration(formatDuration(d)) == d, std::string(text) + " -> " + formatDuration(d));
    } catch (const UsageError&) {
    }
    try {
        const std::size_t n = parseSize(text);
        FUZZ_CHECK(n <= 1'000'000'000'000'000, std::string(text));
    } catch (const UsageError&) {
    }
    return 0;
}
