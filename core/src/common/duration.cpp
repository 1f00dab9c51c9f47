#include "idem/duration.h"

#include "idem/errors.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>

namespace idem {

namespace {
struct Unit {
    std::string_view suffix;
    double factor;
};

double parseNumber(std::string_view text, std::string_view num, const char* what)
{
    // digits with at most one decimal point: no exponent ("1e3s"), sign, "inf" or "nan"
    const auto digits = num.find_first_not_of("0123456789.");
    const auto point = num.find('.');
    const bool plain = digits == std::string_view::npos && num.find_first_of("0123456789") != std::string_view::npos &&
                       (point == std::string_view::npos || num.find('.', point + 1) == std::string_view::npos);
    double v = 0;
    auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), v);
    if (!plain || ec != std::errc() || p != num.data() + num.size() || !std::isfinite(v) || v < 0)
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


// "1d2h3m4s", "1h30m", "2s500ms": whole numbers, each with its unit, largest first (what
// formatDuration prints); nullopt for anything else, a single number and unit included.
std::optional<double> compound(std::string_view text)
{
    static constexpr Unit units[] = {{"d", 86'400'000}, {"h", 3'600'000}, {"ms", 1}, {"m", 60'000}, {"s", 1000}};
    static constexpr int rank[] = {0, 1, 4, 2, 3}; // the order they may follow each other in
    double total = 0;
    int pieces = 0, next = 0;
    while (!text.empty()) {
        std::size_t digits = 0;
        while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9')
            ++digits;
        std::int64_t n = 0;
        if (digits == 0 || digits > 15 || std::from_chars(text.data(), text.data() + digits, n).ec != std::errc())
            return std::nullopt;
        text.remove_prefix(digits);
        int u = 0;
        while (u < 5 && !text.starts_with(units[u].suffix))
            ++u;
        if (u == 5 || rank[u] < next)
            return std::nullopt;
        next = rank[u] + 1;
        total += static_cast<double>(n) * units[u].factor;
        text.remove_prefix(units[u].suffix.size());
        ++pieces;
    }
    return pieces >= 2 ? std::optional(total) : std::nullopt;
}

std::string formatMagnitude(std::uint64_t ms)
{
    if (ms < 1000)
        return std::to_string(ms) + "ms";
    std::string out;
    const std::uint64_t parts[] = {86'400'000, 3'600'000, 60'000, 1000};
    const char* names[] = {"d", "h", "m", "s"};
    for (int i = 0; i < 4; ++i) {
        if (ms >= parts[i]) {
            out += std::to_string(ms / parts[i]) + names[i];
            ms %= parts[i];
        }
    }
    return out;
}
} // namespace

Millis parseDuration(std::string_view text)
{
    static constexpr Unit units[] = {{"ms", 1}, {"s", 1000}, {"m", 60'000}, {"h", 3'600'000},
                                     {"d", 86'400'000}};
    const auto parts = compound(text);
    const double ms = parts ? *parts : parseWithUnits(text, units, 1000, "duration (use e.g. 500ms, 30s, 5m, 2h, 1d, 1h30m)");
    if (ms > 1e15)
        throw UsageError("duration '" + std::string(text) + "' is too long");
    return Millis(static_cast<Millis::rep>(std::llround(ms)));
}

std::string formatDuration(Millis d)
{
    const auto ms = d.count();
    // the magnitude in unsigned arithmetic: -ms overflows for the most negative count
    if (ms < 0)
        return "-" + formatMagnitude(0 - static_cast<std::uint64_t>(ms));
    return formatMagnitude(static_cast<std::uint64_t>(ms));
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
