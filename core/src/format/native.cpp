// idem's own record: a hash at <namespace>:{<id>} written by lua/*.lua (docs/record-format.md).
#include "format/profile.h"

#include <charconv>

namespace idem::format {

namespace {

const std::string* get(const KeyRead& in, std::string_view name)
{
    for (const auto& [k, v] : in.fields)
        if (k == name)
            return &v;
    return nullptr;
}

bool has(const KeyRead& in, std::string_view name) { return get(in, name) != nullptr; }

bool ownsKey(std::string_view key, const DecodeOptions& o) { return !idFromKey(key, o.keyNamespace).empty(); }

std::optional<Record> decode(const Input& x, bool claimed)
{
    const KeyRead& in = x.in;
    if (in.type != "hash")
        return std::nullopt; // strings at <namespace>:{<id>} are hand-written status records
    const std::string* state = get(in, "state");
    if (!state) {
        if (has(in, "status") || !claimed)
            return std::nullopt; // a status hash, written by hand
        Record r = malformed(RecordFormat::Native, "hash without a 'state' field");
        r.fields = in.fields;
        return r;
    }
    Record r = make(RecordFormat::Native, RecordState::Malformed);
    r.rawStatus = *state;
    std::string bad; // the first field that cannot be what it says
    const auto getInt = [&](std::string_view name) -> std::optional<std::int64_t> {
        const std::string* v = get(in, name);
        if (!v)
            return std::nullopt;
        std::int64_t n = 0;
        const auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
        if (v->empty() || ec != std::errc() || p != v->data() + v->size() || n < 0) {
            if (bad.empty())
                bad = std::string(name) + " is not a number: " + quoted(*v);
            return std::nullopt;
        }
        return n;
    };
    const auto getTime = [&](std::string_view name, timefield::Unit unit) -> std::optional<std::int64_t> {
        const auto n = getInt(name);
        if (!n)
            return std::nullopt;
        std::string why;
        const auto t = timefield::fromNumber(std::to_string(*n), unit, &why);
        if (!t && bad.empty())
            bad = std::string(name) + " is " + why;
        return t;
    };
    r.fence = getInt("fence").value_or(0);
    r.startedMs = getTime("started_ms", timefield::Unit::Millis);
    if (!r.startedMs && r.fence > 0) // a first attempt whose fence is its clock (µs) writes no start
        r.startedMs = timefield::fromNumber(std::to_string(r.fence), timefield::Unit::Micros, nullptr);
    r.createdMs = getTime("created_ms", timefield::Unit::Millis); // written on the second attempt
    if (!r.createdMs)
        r.createdMs = r.startedMs;
    r.leaseUntilMs = getTime("lease_until_ms", timefield::Unit::Millis); // renewals and later attempts
    if (const auto lease = getInt("lease_ms"); !r.leaseUntilMs && lease && r.startedMs && *lease <= timefield::kMaxMs)
        r.leaseUntilMs = std::min(*r.startedMs + *lease, timefield::kMaxMs); // a first attempt: from its fence
    r.finishedMs = getTime("finished_ms", timefield::Unit::Millis); // FAILED records
    // COMPLETED: its TTL is the retention since then. A TTL longer than the retention (changed by
    // hand), or numbers that make no time, leave it unknown rather than wrap around.
    if (const auto retention = getInt("retention_ms"); !r.finishedMs && retention && in.ttlMs >= 0 && x.o.nowMs > 0 &&
                                                        in.ttlMs <= *retention && *retention - in.ttlMs <= x.o.nowMs &&
                                                        x.o.nowMs - (*retention - in.ttlMs) <= timefield::kMaxMs)
        r.finishedMs = x.o.nowMs - (*retention - in.ttlMs);
    r.attempt = getInt("attempt").value_or(1); // the first attempt does not write it
    if (const std::string* v = get(in, "token"))
        r.owner = *v;
    if (const std::string* v = get(in, "fp"))
        r.fingerprint = *v;
    if (const std::string* v = get(in, "response"))
        r.response = *v;
    if (const std::string* v = get(in, "error"))
        r.error = *v;
    if (const std::string* v = get(in, "failure"))
        r.terminal = *v == "terminal";
    if (const std::string* v = get(in, "op"))
        r.op = *v;
    if (const std::string* v = get(in, "op_by"))
        r.opBy = *v;
    if (const std::string* v = get(in, "op_reason"))
        r.opReason = *v;
    r.opAtMs = getTime("op_at_ms", timefield::Unit::Millis);
    r.fields = in.fields;
    if (*state == "STARTED")
        r.state = RecordState::Started;
    else if (*state == "COMPLETED")
        r.state = RecordState::Completed;
    else if (*state == "FAILED")
        r.state = RecordState::Failed;
    else
        r.reason = "unknown state " + quoted(*state);
    if (!bad.empty()) {
        r.state = RecordState::Malformed;
        r.reason = bad;
    } else if (r.state == RecordState::Started && !r.leaseUntilMs) {
        r.state = RecordState::Malformed;
        r.reason = "STARTED without a lease deadline";
    }
    r.terminal = r.terminal && r.state == RecordState::Failed; // a malformed record is no failure
    settleStarted(r, x.o);
    return r;
}

const std::vector<FieldDoc> docs = {
    {"state", "STARTED, COMPLETED or FAILED"},
    {"token", "the owner's token: only its owner may complete, fail or renew"},
    {"fence", "fencing number; a first attempt's is its start, in µs", FieldTime::Micros},
    {"attempt", "the attempt number (absent on the first)"},
    {"lease_ms", "the lease a first attempt was given, from its start"},
    {"lease_until_ms", "the lease deadline, written by renewals and later attempts", FieldTime::Millis},
    {"started_ms", "when this attempt started (later attempts)", FieldTime::Millis},
    {"created_ms", "when the first attempt started (later attempts)", FieldTime::Millis},
    {"fp", "the payload fingerprint a duplicate must match"},
    {"response", "the stored result that duplicates get back"},
    {"retention_ms", "how long the result is kept; the key's TTL counts it down"},
    {"failure", "retryable (the next delivery runs again) or terminal (duplicates get the error)"},
    {"error", "the failure's text"},
    {"finished_ms", "when it failed", FieldTime::Millis},
    {"op", "the last operator action"},
    {"op_by", "who did it"},
    {"op_at_ms", "when", FieldTime::Millis},
    {"op_reason", "why"},
};

} // namespace

const Profile native{RecordFormat::Native, ownsKey, decode, &docs};

} // namespace idem::format
