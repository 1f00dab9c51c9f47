// AWS Powertools for Lambda idempotency, Java 2.x Redis persistence (RedisPersistenceStore in
// powertools-idempotency-redis). A hash at {<prefix>:<keyAttr>:<idempotency key>} (defaults
// "idempotency" and "id"; the braces make every field share one Cluster slot) whose field names
// carry the key too: <key>:status (INPROGRESS, COMPLETED), <key>:expiration (epoch seconds; the
// key EXPIREATs it, and past it the library treats the record as absent), <key>:in-progress-
// expiration (epoch ms, only with a Lambda context; past it the next call takes the record over),
// <key>:data, <key>:validation. Without the in-progress deadline its script takes an INPROGRESS
// record over only once expiration passes: a live lock without a lease, blocked until then. The
// handler throwing deletes the record.
#include "format/profile.h"

namespace idem::format {

bool javaKey(std::string_view key, const DecodeOptions&);

bool javaKey(std::string_view key, const DecodeOptions&)
{
    // {prefix:attr:key}: braces around the whole key, two colons inside at least
    if (key.size() < 6 || key.front() != '{' || key.back() != '}')
        return false;
    const std::string_view inner = key.substr(1, key.size() - 2);
    const auto colon = inner.find(':');
    return colon != std::string_view::npos && colon > 0 && inner.find(':', colon + 2) != std::string_view::npos &&
           inner.find_first_of("{}") == std::string_view::npos;
}

namespace {

const std::string* fieldOf(const KeyRead& in, std::string_view suffix)
{
    for (const auto& [k, v] : in.fields)
        if (k.size() == in.key.size() + 1 + suffix.size() && k.starts_with(in.key) && k[in.key.size()] == ':' &&
            std::string_view(k).substr(in.key.size() + 1) == suffix)
            return &v;
    return nullptr;
}

// A hash at the library's key shape without "<key>:status": its builder renames the fields
// (withStatusAttr, withExpiryAttr, withInProgressExpiryAttr). A field of this key holding INPROGRESS
// is its lock, deadline unknown (as for TypeScript's renamed attributes); a scan that read only the
// default names saw none of its fields, which is no reason to call it broken: read in part, so
// that no bulk purge takes it and `inspect` (which reads every field) tells.
Record renamed(const KeyRead& in)
{
    bool own = false;
    for (const auto& [k, v] : in.fields) {
        if (!(k.size() > in.key.size() + 1 && k.starts_with(in.key) && k[in.key.size()] == ':'))
            continue;
        own = true;
        if (v == "INPROGRESS") {
            Record r = make(RecordFormat::PowertoolsJava, RecordState::Started);
            r.rawStatus = v;
            r.fields = in.fields;
            r.blocked = true;
            r.reason = "'" + k + "' says INPROGRESS (its fields renamed): its lock, deadline unknown, held until its TTL";
            return r;
        }
    }
    if (own)
        return malformed(RecordFormat::PowertoolsJava, "no '" + in.key + ":status' field, nor one saying INPROGRESS");
    Record r = make(RecordFormat::PowertoolsJava, RecordState::Unknown);
    r.partial = true;
    r.reason = "none of its fields under their default names ('" + in.key +
               ":status', ...): renamed by its builder? `inspect` reads them all";
    return r;
}

std::optional<Record> decodeJava(const Input& x, bool claimed)
{
    const KeyRead& in = x.in;
    constexpr std::string_view lib = "Powertools (Java)";
    if (!javaKey(in.key, x.o))
        return claimed ? std::optional(malformed(RecordFormat::PowertoolsJava,
                                                 "not a key Powertools (Java) writes ({prefix:id:key})"))
                       : std::nullopt;
    if (in.type != "hash")
        return claimed ? std::optional(malformed(RecordFormat::PowertoolsJava,
                                                 "a " + in.type + " where " + std::string(lib) + " keeps a hash"))
                       : std::nullopt;
    const std::string* status = fieldOf(in, "status");
    if (!status)
        return renamed(in);
    Record r = make(RecordFormat::PowertoolsJava, RecordState::Malformed);
    r.rawStatus = *status;
    r.fields = in.fields;
    std::string bad;
    const auto timeOf = [&](std::string_view suffix, timefield::Unit unit) -> std::optional<std::int64_t> {
        const std::string* v = fieldOf(in, suffix);
        if (!v)
            return std::nullopt;
        std::string why;
        auto t = timefield::fromText(*v, unit, &why);
        if (!t && bad.empty())
            bad = std::string(suffix) + " is " + why;
        return t;
    };
    r.expiresMs = timeOf("expiration", timefield::Unit::Seconds);
    r.leaseUntilMs = timeOf("in-progress-expiration", timefield::Unit::Millis);
    if (!bad.empty()) {
        r.reason = bad;
        return r;
    }
    if (const std::string* v = fieldOf(in, "validation"))
        r.fingerprint = *v;
    const bool expired = r.expiresMs && x.o.nowMs > 0 && *r.expiresMs < x.o.nowMs;
    if (*status == "INPROGRESS" || *status == "COMPLETED") {
        if (expired) {
            r.state = RecordState::Expired;
            r.reason = "past its expiration: " + std::string(lib) + " treats it as absent and runs the next call";
        } else if (*status == "INPROGRESS") {
            r.state = RecordState::Started;
            if (!r.leaseUntilMs)
                r.reason = "no in-progress-expiration (written without a Lambda context): a live lock until its "
                           "expiration";
        } else {
            r.state = RecordState::Completed;
            r.changesAtMs = r.expiresMs;
        }
    } else {
        r.reason = "status " + quoted(*status) + " is not one " + std::string(lib) + " has";
        return r;
    }
    if (const std::string* data = fieldOf(in, "data"); data && r.state != RecordState::Started)
        r.response = *data;
    settleStarted(r, x.o);
    if (r.state == RecordState::Started && !r.leaseUntilMs) { // blocked until expiration, whatever its age
        r.blocked = true;
        r.stale = false;
        r.staleWhy.clear();
        r.changesAtMs = r.expiresMs;
    }
    return r;
}

const std::vector<FieldDoc> docs = {
    {"<key>:status", "INPROGRESS or COMPLETED (EXPIRED is worked out from expiration, not stored)"},
    {"<key>:expiration", "when the record expires (the key's EXPIREAT): past it the library runs again",
     FieldTime::Seconds},
    {"<key>:in-progress-expiration", "the in-progress deadline (the Lambda's remaining time); past it the next "
                                     "call takes over; without it, not before expiration",
     FieldTime::Millis},
    {"<key>:validation", "hash of the payload part a duplicate must match"},
    {"<key>:data", "the handler's result, returned to duplicates"},
};

} // namespace

const Profile powertoolsJava{RecordFormat::PowertoolsJava, javaKey, decodeJava, &docs};

std::vector<std::string> javaHashFields(std::string_view key)
{
    std::vector<std::string> out;
    if (javaKey(key, DecodeOptions{}))
        for (std::string_view suffix : {"status", "expiration", "in-progress-expiration", "validation"})
            out.push_back(std::string(key).append(":").append(suffix));
    return out;
}

} // namespace idem::format
