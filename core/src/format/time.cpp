#include "format/time.h"

#include <cctype>
#include <charconv>
#include <ctime>

namespace idem::timefield {

namespace {

std::optional<std::int64_t> refuse(std::string* why, std::string text)
{
    if (why)
        *why = std::move(text);
    return std::nullopt;
}

std::string shown(std::string_view s)
{
    std::string out(s.substr(0, 32));
    for (char& c : out)
        if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f)
            c = '?';
    return "'" + out + (s.size() > 32 ? "…'" : "'");
}

std::optional<std::int64_t> iso8601(std::string_view s)
{
    // YYYY-MM-DD[T ]HH:MM[:SS[.fff]][Z|+HH:MM|-HH:MM]
    auto num = [&](std::size_t pos, std::size_t len) -> std::optional<int> {
        if (pos + len > s.size())
            return std::nullopt;
        int v = 0;
        auto [p, ec] = std::from_chars(s.data() + pos, s.data() + pos + len, v);
        if (ec != std::errc() || p != s.data() + pos + len)
            return std::nullopt;
        return v;
    };
    if (s.size() < 16)
        return std::nullopt;
    auto Y = num(0, 4), M = num(5, 2), D = num(8, 2), h = num(11, 2), m = num(14, 2);
    if (!Y || !M || !D || !h || !m || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != ' ') ||
        s[13] != ':' || *Y < 1970 || *M < 1 || *M > 12 || *D < 1 || *D > 31 || *h > 23 || *m > 59)
        return std::nullopt;
    std::size_t pos = 16;
    int sec = 0;
    std::int64_t fracMs = 0;
    if (pos < s.size() && s[pos] == ':') {
        auto sv = num(pos + 1, 2);
        if (!sv || *sv > 60)
            return std::nullopt;
        sec = *sv;
        pos += 3;
        if (pos < s.size() && (s[pos] == '.' || s[pos] == ',')) {
            std::size_t end = pos + 1;
            while (end < s.size() && std::isdigit(static_cast<unsigned char>(s[end])))
                ++end;
            if (end == pos + 1)
                return std::nullopt;
            for (std::size_t k = pos + 1, scale = 100; k < end && scale > 0; ++k, scale /= 10)
                fracMs += (s[k] - '0') * static_cast<std::int64_t>(scale);
            pos = end;
        }
    }
    // No zone: the writer's local time, in a zone idem cannot know (UTC-12:00 to UTC+14:00). Read
    // as the latest instant it can be, as if written at UTC-12: a lease deadline is never read as
    // earlier than it is, nor a start as older, so a live lock never looks expired or stale.
    std::int64_t offsetMin = -12 * 60;
    if (pos < s.size()) {
        if (s[pos] == 'Z' || s[pos] == 'z') {
            offsetMin = 0;
            ++pos;
        } else if (s[pos] == '+' || s[pos] == '-') {
            auto oh = num(pos + 1, 2);
            std::size_t mpos = pos + 3;
            if (mpos < s.size() && s[mpos] == ':')
                ++mpos;
            auto om = num(mpos, 2);
            if (!oh || !om || *oh > 23 || *om > 59)
                return std::nullopt;
            offsetMin = (*oh * 60 + *om) * (s[pos] == '-' ? -1 : 1);
            pos = mpos + 2;
        }
        if (pos != s.size())
            return std::nullopt;
    }
    std::tm tm{};
    tm.tm_year = *Y - 1900;
    tm.tm_mon = *M - 1;
    tm.tm_mday = *D;
    tm.tm_hour = *h;
    tm.tm_min = *m;
    tm.tm_sec = sec;
    const std::time_t t = timegm(&tm);
    const std::int64_t ms = static_cast<std::int64_t>(t) * 1000 + fracMs - offsetMin * 60'000;
    if (ms < kMinMs || ms > kMaxMs)
        return std::nullopt;
    return ms;
}

} // namespace

std::optional<std::int64_t> fromNumber(std::string_view s, Unit unit, std::string* why)
{
    // digits[.digits]: whole part at most 19 digits before the range check (no overflow)
    std::size_t dot = s.find('.');
    const std::string_view whole = s.substr(0, dot);
    const std::string_view frac = dot == std::string_view::npos ? std::string_view() : s.substr(dot + 1);
    auto allDigits = [](std::string_view d) {
        for (char c : d)
            if (c < '0' || c > '9')
                return false;
        return true;
    };
    if (whole.empty() || !allDigits(whole) || (dot != std::string_view::npos && (frac.empty() || !allDigits(frac)))) {
        if (!s.empty() && s.front() == '-' && s.size() > 1 && allDigits(s.substr(1, s.find('.') - 1)))
            return refuse(why, "a negative time " + shown(s));
        // 1.7e12, 17E+11: a number, in a notation no writer of times uses
        const std::size_t e = s.find_first_of("eE");
        std::string_view mantissa = e == std::string_view::npos ? s : s.substr(0, e);
        std::string_view exponent = e == std::string_view::npos ? std::string_view() : s.substr(e + 1);
        if (!exponent.empty() && (exponent.front() == '+' || exponent.front() == '-'))
            exponent.remove_prefix(1);
        const std::size_t mdot = mantissa.find('.');
        if (e != std::string_view::npos && !mantissa.empty() && mantissa != "." && !exponent.empty() &&
            allDigits(exponent) && allDigits(mantissa.substr(0, mdot)) &&
            (mdot == std::string_view::npos || allDigits(mantissa.substr(mdot + 1))))
            return refuse(why, "a time in exponent notation " + shown(s));
        return refuse(why, "not a time: " + shown(s));
    }
    std::string_view w = whole;
    while (w.size() > 1 && w.front() == '0')
        w.remove_prefix(1);
    if (w.size() > 18) // beyond any time before year 9999, even in µs (253402300799999999)
        return refuse(why, "a time past year 9999: " + shown(s));
    std::int64_t v = 0;
    std::from_chars(w.data(), w.data() + w.size(), v);
    if (unit == Unit::Guess)
        unit = v < 100'000'000'000 ? Unit::Seconds : Unit::Millis;
    // the fraction's first three digits in the unit below
    std::int64_t sub = 0;
    for (std::size_t k = 0, scale = 100; k < frac.size() && scale > 0; ++k, scale /= 10)
        sub += (frac[k] - '0') * static_cast<std::int64_t>(scale);
    std::int64_t ms = 0;
    switch (unit) {
    case Unit::Seconds:
        if (v > kMaxMs / 1000)
            return refuse(why, "a time past year 9999: " + shown(s));
        ms = v * 1000 + sub;
        break;
    case Unit::Millis: ms = v; break;
    case Unit::Micros: ms = v / 1000; break;
    case Unit::Guess: break;
    }
    if (ms > kMaxMs)
        return refuse(why, "a time past year 9999: " + shown(s));
    if (ms < kMinMs)
        return refuse(why, "a time before 2000: " + shown(s) + " (what a field never set holds)");
    return ms;
}

bool zoneless(std::string_view s)
{
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
        s.remove_suffix(1);
    return s.size() >= 16 && s[4] == '-' && s.find_first_of("Zz+", 10) == std::string_view::npos &&
           s.find('-', 10) == std::string_view::npos;
}

std::optional<std::int64_t> fromText(std::string_view s, Unit unit, std::string* why)
{
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())))
        s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
        s.remove_suffix(1);
    if (s.empty())
        return refuse(why, "an empty time");
    if (unit == Unit::Guess && s.size() >= 16 && s[4] == '-') {
        if (auto ms = iso8601(s))
            return ms;
        return refuse(why, "not a time: " + shown(s));
    }
    return fromNumber(s, unit, why);
}

} // namespace idem::timefield
