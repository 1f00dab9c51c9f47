// Records that other programs wrote into a store, as every reader decodes them (idem::decode: list,
// stats, inspect, purge --stale, the console). One target for every profile: the first byte picks
// the profile the operator forces with --format (or none: the key's shape and the value decide, as
// by default), so one input can reach every profile and the corpus is shared.
//
// Input: [profile][flags][ttl i64][now i64][stale-after i64][writer-ttl i64][prefix extra i64]
//        key \x1f namespace \x1f value (a hash: name \x1e value \x1e name ...) \x1f tail
// flags: bits 0-2 the key's type (string, hash, list, set, zset, stream), bit 3 the companion key
// exists, bit 4 the value is only the first bytes of a longer one, bit 5 the native round trip
// (nativeroundtrip.h) instead.
#include "fuzzcheck.h"
#include "nativeroundtrip.h"

#include "format/time.h"
#include "idem/format/jsonscan.h"
#include "idem/format/record.h"

#include <algorithm>
#include <optional>

using namespace idem;
using fuzzsupport::Input;

namespace {

constexpr std::int64_t kMaxMs = timefield::kMaxMs;
constexpr std::int64_t kMaxOption = 1'000'000'000'000'000; // what parseDuration accepts

// The value's top-level members as decode() sees them (the prefix, then the tail's last members).
json::Object scanned(const KeyRead& in)
{
    const bool prefix = in.valueBytes > static_cast<std::int64_t>(in.value.size());
    json::Object j = json::scanObject(in.value, prefix);
    if (prefix && j.cut && !in.tail.empty())
        for (json::Member& m : json::scanTail(in.tail))
            if (!j.has(m.key))
                j.members.push_back(std::move(m));
    return j;
}

const std::string* field(const KeyRead& in, std::string_view name)
{
    const std::string* got = nullptr;
    for (const auto& [k, v] : in.fields)
        if (k == name)
            got = &v;
    return got;
}

// The JSON member, when it is there and whole (not null, not cut).
const json::Member* whole(const json::Object& j, std::string_view name)
{
    const json::Member* m = j.find(name);
    return m && m->kind != json::Kind::Null && !m->cut ? m : nullptr;
}

bool isRecord(RecordState s) { return !notARecord(s); }

void checkTime(const std::optional<std::int64_t>& t, const char* name, const Record& r)
{
    if (!t)
        return;
    FUZZ_CHECK(*t >= 0 && *t <= kMaxMs, std::string(name) + " = " + std::to_string(*t) + " in a " +
                                            std::string(nameOf(r.state)) + " record: " + r.reason);
}

// A time field of a record that was read as a record (not malformed) parses as one.
void checkParses(const json::Member* m, timefield::Unit unit, const char* name)
{
    if (!m)
        return;
    std::string why;
    FUZZ_CHECK((m->kind == json::Kind::Number || m->kind == json::Kind::String) &&
                   timefield::fromText(m->text, unit, &why),
               std::string(name) + " '" + m->text + "' cannot be a time (" + why + ") yet the record is not malformed");
}

void checkDecoded(const KeyRead& in, const DecodeOptions& o, const Record& r)
{
    FUZZ_CHECK(r.key == in.key);
    FUZZ_CHECK(r.keyType == in.type);
    FUZZ_CHECK(r.ttlMs == in.ttlMs);
    // the forced profile could not read it, another did: never a broken record of that other
    // format (a live lock of it must not look malformed)
    if (o.format && r.format != *o.format && r.format != RecordFormat::Unknown)
        FUZZ_CHECK(r.state != RecordState::Malformed,
                   std::string(nameOf(r.format)) + " malformed under --format " + std::string(nameOf(*o.format)));
    // a list, set, sorted set or stream is never a malformed record of a forced format
    FUZZ_CHECK(!o.format || in.type == "string" || in.type == "hash" || r.state != RecordState::Malformed,
               "a " + in.type + " malformed under --format");
    FUZZ_CHECK(isRecord(r.state) || !r.reason.empty(), "a " + std::string(nameOf(r.state)) + " record without a reason");

    // every time is one (1970 .. 9999), whatever the record held
    checkTime(r.createdMs, "createdMs", r);
    checkTime(r.startedMs, "startedMs", r);
    checkTime(r.leaseUntilMs, "leaseUntilMs", r);
    checkTime(r.finishedMs, "finishedMs", r);
    checkTime(r.expiresMs, "expiresMs", r);
    checkTime(r.opAtMs, "opAtMs", r);
    if (r.changesAtMs)
        FUZZ_CHECK(*r.changesAtMs >= 0 && *r.changesAtMs <= kMaxMs + o.staleAfterMs, std::to_string(*r.changesAtMs));

    FUZZ_CHECK(!r.stale || r.state == RecordState::Started, "stale but " + std::string(nameOf(r.state)));
    FUZZ_CHECK(!r.stale || !r.staleWhy.empty());
    FUZZ_CHECK(!r.blocked || r.state == RecordState::Started);
    FUZZ_CHECK(!r.terminal || r.state == RecordState::Failed);
    if (in.type == "string")
        FUZZ_CHECK(r.valueBytes >= static_cast<std::int64_t>(in.value.size()));

    const bool json = in.type == "string" && r.format != RecordFormat::Unknown;
    const json::Object j = json ? scanned(in) : json::Object{};

    // A stale record is stale for a reason the record states: a lease that passed, or a start longer
    // ago than the window when the record has no lease field at all. Never for a time that could
    // not be read, and never a Powertools lock without in_progress_expiration: the versions that
    // fixed taking those over keep them locked until their expiration (a live lock, no lease).
    if (r.stale) {
        if (r.leaseUntilMs) {
            FUZZ_CHECK(o.nowMs > 0 && *r.leaseUntilMs <= o.nowMs);
        } else {
            // the field where the record's own library keeps a lease
            const bool powertools = r.format == RecordFormat::Powertools || r.format == RecordFormat::PowertoolsPython;
            const bool leaseWritten = r.format == RecordFormat::Native ? field(in, "lease_until_ms") || field(in, "lease_ms")
                                      : powertools ? whole(j, "in_progress_expiration") != nullptr
                                      : r.format == RecordFormat::StatusJson
                                          ? (in.type == "hash" ? field(in, "lock_expiry") != nullptr : j.has("lock_expiry"))
                                          : false;
            FUZZ_CHECK(!leaseWritten, "stale without a lease although the record has a lease field: " + r.staleWhy);
            const bool hasLeaseField = r.format == RecordFormat::StatusJson || r.format == RecordFormat::Powertools ||
                                       r.format == RecordFormat::PowertoolsPython;
            FUZZ_CHECK(!hasLeaseField || !j.cut, "stale without a lease, but its lease may lie in what was not read: " +
                                                      r.staleWhy);
            FUZZ_CHECK(r.startedMs.has_value(), "stale with neither a lease nor a start: " + r.staleWhy);
            if (r.startedMs)
                FUZZ_CHECK(o.nowMs > 0 && o.nowMs - *r.startedMs > o.staleAfterMs);
        }
    }
    if ((r.format == RecordFormat::Powertools || r.format == RecordFormat::PowertoolsPython) &&
        r.state == RecordState::Started && !r.leaseUntilMs)
        FUZZ_CHECK(!r.stale && r.blocked, "a Powertools lock without a deadline must read as live, blocked");

    // What a profile read as a record has times that are times; otherwise it is malformed.
    if (!isRecord(r.state))
        return;
    if (r.format == RecordFormat::StatusJson && in.type == "string") {
        checkParses(whole(j, "started_at"), timefield::Unit::Guess, "started_at");
        checkParses(whole(j, "lock_expiry"), timefield::Unit::Guess, "lock_expiry");
        checkParses(whole(j, "completed_at"), timefield::Unit::Guess, "completed_at");
    }
    if (r.format == RecordFormat::StatusJson && in.type == "hash")
        for (const char* name : {"lock_expiry", "started_at"})
            if (const std::string* v = field(in, name))
                FUZZ_CHECK(timefield::fromText(*v, timefield::Unit::Guess, nullptr), std::string(name) + " " + *v);
    if (r.format == RecordFormat::Powertools || r.format == RecordFormat::PowertoolsPython) {
        checkParses(whole(j, "expiration"), timefield::Unit::Seconds, "expiration");
        checkParses(whole(j, "in_progress_expiration"), timefield::Unit::Millis, "in_progress_expiration");
    }
    if (r.format == RecordFormat::Native)
        for (const char* name : {"started_ms", "created_ms", "lease_until_ms", "finished_ms", "op_at_ms"})
            if (const std::string* v = field(in, name))
                FUZZ_CHECK(timefield::fromNumber(*v, timefield::Unit::Millis, nullptr), std::string(name) + " " + *v);
}

constexpr const char* kTypes[] = {"string", "hash", "list", "set", "zset", "stream", "string", "string"};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    Input f(data, size);
    const std::uint8_t profile = f.byte();
    const std::uint8_t flags = f.byte();
    if (flags & 0x20) {
        fuzzsupport::nativeRoundTrip(f);
        return 0;
    }
    KeyRead in;
    DecodeOptions o;
    in.type = kTypes[flags & 7];
    in.companionExists = flags & 8;
    in.ttlMs = f.i64();
    o.nowMs = f.range(0, kMaxMs);
    o.staleAfterMs = f.range(0, kMaxOption);
    o.writerTtlMs = f.range(0, kMaxOption);
    const std::int64_t extra = f.range(1, std::int64_t(1) << 40);
    if (profile % 11 >= 1 && profile % 11 <= 9)
        o.format = static_cast<RecordFormat>(profile % 11 - 1);
    in.key = std::string(f.section());
    o.keyNamespace = std::string(f.section());
    if (in.type == "hash") {
        std::string_view list = f.section();
        while (!list.empty()) {
            const auto sep = list.find('\x1e');
            const std::string_view name = list.substr(0, sep);
            list.remove_prefix(sep == std::string_view::npos ? list.size() : sep + 1);
            const auto sep2 = list.find('\x1e');
            const std::string_view value = list.substr(0, sep2);
            list.remove_prefix(sep2 == std::string_view::npos ? list.size() : sep2 + 1);
            // a hash's field names are unique: a repeated one sets it again, as HSET does
            auto same = std::find_if(in.fields.begin(), in.fields.end(), [&](const auto& kv) { return kv.first == name; });
            if (same != in.fields.end())
                same->second = std::string(value);
            else
                in.fields.emplace_back(std::string(name), std::string(value));
        }
    } else if (in.type == "string") {
        in.value = std::string(f.section());
        in.tail = std::string(f.section());
        in.valueBytes = static_cast<std::int64_t>(in.value.size());
        if (flags & 0x10)
            in.valueBytes += extra;
        else
            in.tail.clear(); // a whole value has no separate tail
    }
    const Record r = decode(in, o); // never throws
    checkDecoded(in, o, r);
    return 0;
}
