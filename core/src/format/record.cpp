#include "idem/format/record.h"

#include "idem/duration.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <ctime>
#include <nlohmann/json.hpp>

namespace idem {

std::string_view nameOf(RecordFormat f)
{
    switch (f) {
    case RecordFormat::Native: return "native";
    case RecordFormat::Json: return "json";
    case RecordFormat::Plain: return "plain";
    case RecordFormat::Unknown: break;
    }
    return "unknown";
}

std::string_view nameOf(RecordState s)
{
    switch (s) {
    case RecordState::Started: return "STARTED";
    case RecordState::Completed: return "COMPLETED";
    case RecordState::Failed: return "FAILED";
    case RecordState::Malformed: break;
    }
    return "MALFORMED";
}

namespace {

std::string upper(std::string_view s)
{
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    return out;
}

std::optional<RecordState> stateFromStatus(std::string_view status)
{
    const std::string s = upper(status);
    if (s == "STARTED" || s == "PENDING" || s == "PROCESSING" || s == "IN_PROGRESS")
        return RecordState::Started;
    if (s == "COMPLETED")
        return RecordState::Completed;
    if (s == "FAILED")
        return RecordState::Failed;
    return std::nullopt;
}

std::optional<std::int64_t> toInt(std::string_view s)
{
    std::int64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || p != s.data() + s.size())
        return std::nullopt;
    return v;
}

// Epoch values below 1e11 are seconds (that is year 5138 in ms, 1973 in s).
std::int64_t epochToMs(double v)
{
    return std::fabs(v) < 1e11 ? static_cast<std::int64_t>(std::llround(v * 1000.0))
                               : static_cast<std::int64_t>(std::llround(v));
}

bool looksBinary(std::string_view s)
{
    // control bytes other than whitespace, or invalid UTF-8
    std::size_t i = 0;
    while (i < s.size()) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c < 0x80) {
            if (c < 0x20 && c != '\t' && c != '\n' && c != '\r')
                return true;
            ++i;
            continue;
        }
        int len = (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
        if (len == 0 || i + static_cast<std::size_t>(len) > s.size())
            return true;
        for (int k = 1; k < len; ++k)
            if ((static_cast<unsigned char>(s[i + k]) >> 6) != 0x2)
                return true;
        i += static_cast<std::size_t>(len);
    }
    return false;
}

Record malformed(std::string reason, RecordFormat f = RecordFormat::Unknown)
{
    Record r;
    r.format = f;
    r.state = RecordState::Malformed;
    r.reason = std::move(reason);
    return r;
}

void markStale(Record& r, const DecodeOptions& o)
{
    if (r.state != RecordState::Started || o.nowMs <= 0)
        return;
    if (r.leaseUntilMs) {
        if (*r.leaseUntilMs <= o.nowMs) {
            r.stale = true;
            r.staleWhy = "lease expired " + formatDuration(Millis(o.nowMs - *r.leaseUntilMs)) + " ago";
        }
    } else if (r.startedMs) {
        if (o.nowMs - *r.startedMs > o.staleAfterMs) {
            r.stale = true;
            r.staleWhy = "started " + formatDuration(Millis((o.nowMs - *r.startedMs) / 1000 * 1000)) +
                         " ago, over the " + formatDuration(Millis(o.staleAfterMs)) +
                         " threshold, with no lease deadline";
        }
    }
}

} // namespace

std::optional<std::int64_t> parseTimestampMs(std::string_view s)
{
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())))
        s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
        s.remove_suffix(1);
    if (s.empty())
        return std::nullopt;
    {
        double v = 0;
        auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (ec == std::errc() && p == s.data() + s.size() && std::isfinite(v))
            return epochToMs(v);
    }
    // ISO 8601: YYYY-MM-DD[T ]HH:MM[:SS[.fff]][Z|+HH:MM|-HH:MM]
    auto num = [&](std::size_t pos, std::size_t len) -> std::optional<int> {
        if (pos + len > s.size())
            return std::nullopt;
        int v = 0;
        auto [p, ec] = std::from_chars(s.data() + pos, s.data() + pos + len, v);
        if (ec != std::errc() || p != s.data() + pos + len)
            return std::nullopt;
        return v;
    };
    auto Y = num(0, 4), M = num(5, 2), D = num(8, 2), h = num(11, 2), m = num(14, 2);
    if (!Y || !M || !D || !h || !m || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != ' ') ||
        s[13] != ':' || *M < 1 || *M > 12 || *D < 1 || *D > 31 || *h > 23 || *m > 59)
        return std::nullopt;
    std::size_t pos = 16;
    int sec = 0;
    double frac = 0;
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
            double scale = 0.1;
            for (std::size_t k = pos + 1; k < end; ++k, scale /= 10)
                frac += (s[k] - '0') * scale;
            pos = end;
        }
    }
    std::int64_t offsetMin = 0;
    if (pos < s.size()) {
        if (s[pos] == 'Z' || s[pos] == 'z') {
            ++pos;
        } else if (s[pos] == '+' || s[pos] == '-') {
            auto oh = num(pos + 1, 2);
            std::size_t mpos = pos + 3;
            if (mpos < s.size() && s[mpos] == ':')
                ++mpos;
            auto om = num(mpos, 2);
            if (!oh || !om)
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
    return static_cast<std::int64_t>(t) * 1000 + static_cast<std::int64_t>(frac * 1000) -
           offsetMin * 60'000;
}

Record decodeHash(std::vector<std::pair<std::string, std::string>> fields, const DecodeOptions& o)
{
    Record r;
    r.format = RecordFormat::Native;
    auto get = [&](std::string_view name) -> const std::string* {
        for (const auto& [k, v] : fields)
            if (k == name)
                return &v;
        return nullptr;
    };
    auto getInt = [&](std::string_view name) -> std::optional<std::int64_t> {
        const std::string* v = get(name);
        return v ? toInt(*v) : std::nullopt;
    };
    const std::string* state = get("state");
    if (!state) {
        // a hash written by someone else: maybe it has a "status" field of a foreign format
        if (const std::string* status = get("status"); status && stateFromStatus(*status)) {
            r.format = RecordFormat::Unknown;
            r.rawStatus = *status;
            r.state = *stateFromStatus(*status);
            if (const std::string* v = get("lock_expiry"))
                r.leaseUntilMs = parseTimestampMs(*v);
            if (const std::string* v = get("started_at"))
                r.startedMs = parseTimestampMs(*v);
            markStale(r, o);
        } else {
            r.state = RecordState::Malformed;
            r.reason = "hash without a 'state' field";
        }
        r.fields = std::move(fields);
        return r;
    }
    r.rawStatus = *state;
    if (auto st = stateFromStatus(*state); st && upper(*state) == *state &&
                                           (*state == "STARTED" || *state == "COMPLETED" ||
                                            *state == "FAILED")) {
        r.state = *st;
    } else {
        r.state = RecordState::Malformed;
        r.reason = "unknown state '" + *state + "'";
    }
    r.fence = getInt("fence").value_or(0);
    r.startedMs = getInt("started_ms");
    if (!r.startedMs && r.fence > 0)
        r.startedMs = r.fence / 1000; // a first attempt whose fence is its clock (µs) writes no start
    r.createdMs = getInt("created_ms"); // written on the second attempt; the first one's start otherwise
    if (!r.createdMs)
        r.createdMs = r.startedMs;
    r.leaseUntilMs = getInt("lease_until_ms"); // renewals and later attempts write it
    if (const auto lease = getInt("lease_ms"); !r.leaseUntilMs && lease && r.fence > 0)
        r.leaseUntilMs = r.fence / 1000 + *lease; // a first attempt: from its fence (its clock, µs)
    r.finishedMs = getInt("finished_ms"); // FAILED records
    if (const auto retention = getInt("retention_ms"); !r.finishedMs && retention && o.ttlMs >= 0 && o.nowMs > 0)
        r.finishedMs = o.nowMs + o.ttlMs - *retention; // COMPLETED: its TTL is the retention since then
    r.attempt = getInt("attempt").value_or(1); // the first attempt does not write it
    if (const std::string* v = get("token"))
        r.owner = *v;
    if (const std::string* v = get("fp"))
        r.fingerprint = *v;
    if (const std::string* v = get("response"))
        r.response = *v;
    if (const std::string* v = get("error"))
        r.error = *v;
    if (const std::string* v = get("failure"))
        r.terminal = *v == "terminal";
    if (const std::string* v = get("op"))
        r.op = *v;
    if (const std::string* v = get("op_by"))
        r.opBy = *v;
    if (const std::string* v = get("op_reason"))
        r.opReason = *v;
    r.opAtMs = getInt("op_at_ms");
    if (r.state == RecordState::Started && !r.leaseUntilMs) {
        r.state = RecordState::Malformed;
        r.reason = "STARTED without a lease deadline";
    }
    markStale(r, o);
    r.fields = std::move(fields);
    return r;
}

Record decodeString(std::string_view value, const DecodeOptions& o)
{
    if (value.size() > o.maxValueBytes)
        return decodeOversized(value.size());
    if (value.empty())
        return malformed("empty string");
    if (looksBinary(value))
        return malformed("binary value (" + std::to_string(value.size()) + " bytes), not a record");

    std::string_view trimmed = value;
    while (!trimmed.empty() && std::isspace(static_cast<unsigned char>(trimmed.front())))
        trimmed.remove_prefix(1);
    if (!trimmed.empty() && trimmed.front() != '{' && trimmed.front() != '[' && trimmed.front() != '"') {
        // a plain status word?
        std::string_view word = trimmed;
        while (!word.empty() && std::isspace(static_cast<unsigned char>(word.back())))
            word.remove_suffix(1);
        if (auto st = stateFromStatus(word)) {
            Record r;
            r.format = RecordFormat::Plain;
            r.state = *st;
            r.rawStatus = std::string(word);
            return r;
        }
        const std::string shown(word.substr(0, 40));
        return malformed("plain string '" + shown + (word.size() > 40 ? "…" : "") +
                         "' is not a known status");
    }

    nlohmann::json j;
    try {
        j = nlohmann::json::parse(value);
    } catch (const nlohmann::json::exception& e) {
        std::string why = e.what();
        if (auto p = why.find("parse error"); p != std::string::npos)
            why = why.substr(p);
        return malformed("invalid JSON: " + why, RecordFormat::Json);
    }
    if (!j.is_object())
        return malformed("JSON value is not an object", RecordFormat::Json);
    auto it = j.find("status");
    if (it == j.end() || !it->is_string())
        return malformed("JSON object without a string 'status'", RecordFormat::Json);
    const std::string status = it->get<std::string>();
    auto st = stateFromStatus(status);
    if (!st)
        return malformed("unknown status '" + status + "'", RecordFormat::Json);

    Record r;
    r.format = RecordFormat::Json;
    r.state = *st;
    r.rawStatus = status;
    auto timeField = [&](const char* name) -> std::optional<std::int64_t> {
        auto f = j.find(name);
        if (f == j.end() || f->is_null())
            return std::nullopt;
        if (f->is_number())
            return epochToMs(f->get<double>());
        if (f->is_string())
            return parseTimestampMs(f->get<std::string>());
        return std::nullopt;
    };
    r.startedMs = timeField("started_at");
    r.leaseUntilMs = timeField("lock_expiry");
    r.finishedMs = timeField("completed_at");
    for (const char* name : {"response", "response_body"}) {
        auto f = j.find(name);
        if (f != j.end() && !f->is_null()) {
            r.response = f->is_string() ? f->get<std::string>() : f->dump();
            break;
        }
    }
    for (const char* name : {"error", "error_message"}) {
        auto f = j.find(name);
        if (f != j.end() && f->is_string()) {
            r.error = f->get<std::string>();
            break;
        }
    }
    for (const char* name : {"owner", "lock_owner", "token"}) {
        auto f = j.find(name);
        if (f != j.end() && f->is_string()) {
            r.owner = f->get<std::string>();
            break;
        }
    }
    for (auto f = j.begin(); f != j.end(); ++f)
        r.fields.emplace_back(f.key(), f->is_string() ? f->get<std::string>() : f->dump());
    markStale(r, o);
    return r;
}

Record decodeOversized(std::size_t bytes)
{
    return malformed("value too large to be a record (" + std::to_string(bytes) + " bytes)");
}

Record decodeOtherType(std::string_view type)
{
    return malformed("wrong key type: " + std::string(type) + " (records are hashes or strings)");
}

std::string idFromKey(std::string_view key, std::string_view keyNamespace)
{
    if (key.size() < keyNamespace.size() + 3 || !key.starts_with(keyNamespace) ||
        key.substr(keyNamespace.size(), 2) != ":{" || key.back() != '}')
        return {};
    return std::string(key.substr(keyNamespace.size() + 2, key.size() - keyNamespace.size() - 3));
}

} // namespace idem
