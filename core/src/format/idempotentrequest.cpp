// idempotent-request, the Rack middleware by Qonto (tools/peers/FORMATS.md): a lock
// idempotency_keys:lock:<key> holding its start time (epoch seconds with a fraction) while the
// request runs, and once it succeeded a record idempotency_keys:<key> in Oj's object mode,
//   {":status":201,":headers":{..},":response":["<body>"]}
// No deadline: a killed process's lock holds the key (429) until its TTL ends, or for ever
// without expire_time. Keys are lower-cased.
#include "format/profile.h"

namespace idem::format {

namespace {

constexpr std::string_view kPrefix = "idempotency_keys:", kLock = "idempotency_keys:lock:";

bool ownsKey(std::string_view key, const DecodeOptions&) { return key.starts_with(kPrefix); }

std::optional<Record> decodeLock(const Input& x)
{
    constexpr auto f = RecordFormat::IdempotentRequest;
    const KeyRead& in = x.in;
    if (x.in.companionExists) {
        Record r = foreign(f, "a lock left beside its record: the record is replayed, the lock goes with its TTL");
        r.fields = {{"value", in.value}};
        return r;
    }
    std::string why;
    // versions 0.1.2 and 0.1.3 of the gem write `true`: a lock whose start is unknown
    const bool early = in.value == "true";
    const auto started = early ? std::nullopt : timefield::fromText(in.value, timefield::Unit::Seconds, &why);
    Record r = make(f, RecordState::Started);
    r.startedMs = started;
    r.fields = {{"value", in.value}};
    r.reason = in.ttlMs == -1 ? "no lease and no TTL: the key answers 429 for ever"
                              : "no lease: idempotent-request answers 429 until the lock's TTL ends";
    if (!started && !early) {
        // the gem holds a lock by the key's existence, whatever it holds: a value it does not write
        // (another version's, another writer's) is still its lock, never a malformed key to purge
        r.blocked = true;
        r.reason = "the lock holds " + why + ", not a time the gem writes; it locks by existing: " + r.reason;
        return r;
    }
    settleStarted(r, x.o);
    return r;
}

std::optional<Record> decode(const Input& x, bool claimed)
{
    constexpr auto f = RecordFormat::IdempotentRequest;
    const KeyRead& in = x.in;
    if (in.type != "string")
        return claimed ? std::optional(malformed(f, "a " + in.type + ", not a string")) : std::nullopt;
    if (claimed && in.key.starts_with(kLock))
        return decodeLock(x);
    if (!x.object || !x.object->error.empty())
        return claimed ? std::optional(malformed(f, x.object ? x.object->error : "not JSON: " + quoted(in.value)))
                       : std::nullopt;
    const json::Object& j = *x.object;
    // Oj's object mode writes symbol keys as ":name"; other Oj modes write "name"
    const bool symbols = j.has(":status");
    const json::Member* status = j.find(symbols ? ":status" : "status");
    const json::Member* body = j.find(symbols ? ":response" : "response");
    if (!claimed && (!symbols || !body))
        return std::nullopt;
    Record r = make(f, RecordState::Malformed);
    addMembers(r, x);
    if (!status || status->kind != json::Kind::Number || !body) {
        r.reason = "no status and response";
        return r;
    }
    r.state = RecordState::Completed;
    r.reason = "HTTP " + status->text + " stored: replayed to any request with this key (no fingerprint)";
    if (body->cut) {
        r.partial = true;
    } else if (body->kind == json::Kind::Array) {
        // the body parts, as Rack gave them: one string each
        const std::string raw = rawMember(x, *body);
        if (const auto parts = json::stringArray(raw)) {
            std::string joined;
            for (const std::string& part : *parts)
                joined += part;
            r.response = std::move(joined);
        } else {
            r.response = raw;
        }
    }
    return r;
}

const std::vector<FieldDoc> docs = {
    {":status", "the HTTP status replayed"},
    {":headers", "the headers replayed"},
    {":response", "the body replayed, in parts"},
    {"value", "the lock's start time (epoch seconds); no deadline", FieldTime::Seconds},
};

} // namespace

const Profile idempotentRequest{RecordFormat::IdempotentRequest, ownsKey, decode, &docs};

} // namespace idem::format
