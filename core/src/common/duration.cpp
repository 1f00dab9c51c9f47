#include "idem/duration.h"

#include "idem/errors.h"

#include <charconv>
#include <cmath>

namespace idem {

namespace {
struct Unit {
    std::string_view suffix;
    double factor;
};

double parseNumber(std::string_view text, std::string_view num, const char* what)
{
    double v = 0;
    auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), v);
    if (num.empty() || ec != std::errc() || p != num.data() + num.size() || !std::isfinite(v) || v < 0)
        throw UsageError("bad " + std::string(what) + " '" + std::string(text) + "'");
    return v;
}

template <std::size_t N>
double parseWithUnits(std::string_view text, const Unit (&units)[N], double plainFactor, const char* what)
{
    for (const auto& u : units)
        if (text.size() > u.suffix.size() && text.ends_with(u.suffix))
            return parseNumber(text, text.substr(0, text.size() - u.suffix.size()), what) * u.factor;
    return parseNumber(text, text, what) * plainFactor;
}
} // namespace

Millis parseDuration(std::string_view text)
{
    static constexpr Unit units[] = {{"ms", 1}, {"s", 1000}, {"m", 60'000}, {"h", 3'600'000},
                                     {"d", 86'400'000}};
    const double ms = parseWithUnits(text, units, 1000, "duration (use e.g. 500ms, 30s, 5m, 2h, 1d)");
    if (ms > 1e15)
        throw UsageError("duration '" + std::string(text) + "' is too long");
    return Millis(static_cast<Millis::rep>(std::llround(ms)));
}

std::string formatDuration(Millis d)
{
    auto ms = d.count();
    if (ms < 0)
        return "-" + formatDuration(Millis(-ms));
    if (ms < 1000)
        return std::to_string(ms) + "ms";
    std::string out;
    const long long parts[] = {86'400'000, 3'600'000, 60'000, 1000};
    const char* names[] = {"d", "h", "m", "s"};
    for (int i = 0; i < 4; ++i) {
        if (ms >= parts[i]) {
            out += std::to_string(ms / parts[i]) + names[i];
            ms %= parts[i];
        }
    }
    return out;
}

std::size_t parseSize(std::string_view text)
{
    static constexpr Unit units[] = {{"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0},
                                     {"k", 1000.0},   {"K", 1024.0},      {"M", 1048576.0},
                                     {"B", 1.0}};
    const double v = parseWithUnits(text, units, 1, "size (use e.g. 4096, 512KiB, 1MiB)");
    if (v > 1e15)
        throw UsageError("size '" + std::string(text) + "' is too large");
    return static_cast<std::size_t>(v);
}

} // namespace idem
