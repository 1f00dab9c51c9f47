// AWS Powertools for Lambda idempotency, Redis/cache persistence layer (TypeScript 2.x and
// Python 3.x; tools/peers/FORMATS.md). A JSON string at <prefix>#<hash of the payload>:
//   {"status":"INPROGRESS","expiration":S,"in_progress_expiration":MS,"validation":H}
//   {"status":"COMPLETED","expiration":S,"data":...}        (Python: data first, a JSON string)
// expiration in epoch seconds: past it the library treats the record as absent (EXPIRED), though
// the key can live on. in_progress_expiration in epoch ms, written only with a Lambda context:
// past it, the next call takes the record over (Powertools' orphan path). Without it, versions
// differ on bytes that are the same: TS 2.35.0 and Python before PR #8387 take the record over
// at the next call (a double execution, their bug), later ones (TS PR #5680, Python #8387) keep
// it locked until expiration. No reader can tell which wrote it, so idem reads it as the later
// ones do: a live lock without a lease (blocked until expiration), never stale, never taken by a
// bulk purge. The handler throwing deletes the record. <key>:lock ("true"/"True") is its
// takeover mutex, never a record.
#include "format/profile.h"

namespace idem::format {

namespace {

bool isBase64(std::string_view s)
{
    for (char c : s)
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/' || c == '='))
            return false;
    return true;
}

bool isHex(std::string_view s)
{
    for (char c : s)
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return false;
    return true;
}

// The hash after the last '#': TypeScript writes base64 (md5: 24 characters; sha1 28, sha256 44,
// sha512 88), Python hex (md5: 32; sha1 40, sha256 64, sha512 128).
std::string_view hashPart(std::string_view key)
{
    if (key.ends_with(":lock"))
        key.remove_suffix(5);
    const auto hash = key.rfind('#');
    return hash == std::string_view::npos ? std::string_view() : key.substr(hash + 1);
}

bool typescriptKey(std::string_view key, const DecodeOptions&)
{
    const std::string_view h = hashPart(key);
    return (h.size() == 24 || h.size() == 28 || h.size() == 44 || h.size() == 88) && h.back() == '=' && isBase64(h);
}

bool pythonKey(std::string_view key, const DecodeOptions&)
{
    const std::string_view h = hashPart(key);
    return (h.size() == 32 || h.size() == 40 || h.size() == 64 || h.size() == 128) && isHex(h);
}

std::optional<Record> decodeAs(RecordFormat f, const Input& x, bool claimed)
{
    const KeyRead& in = x.in;
    const std::string_view lib = f == RecordFormat::Powertools ? "Powertools" : "Powertools (Python)";
    if (in.type != "string")
        return claimed ? std::optional(malformed(f, "a " + in.type + " where " + std::string(lib) +
                                                        " keeps a JSON string"))
                       : std::nullopt;
    if (in.key.ends_with(":lock") && claimed) {
        Record r = foreign(f, std::string(lib) + "'s takeover mutex for " +
                                  std::string(std::string_view(in.key).substr(0, in.key.size() - 5)) +
                                  " (set while one caller takes an orphaned record over; expires by itself)");
        r.fields = {{"value", in.value}};
        return r;
    }
    if (!x.object) {
        if (!claimed)
            return std::nullopt;
        return malformed(f, "not JSON: " + quoted(in.value) + "; " + std::string(lib) +
                                " takes the key over at the next call and runs it");
    }
    const json::Object& j = *x.object;
    if (!j.error.empty())
        return claimed ? std::optional(malformed(f, j.error + "; " + std::string(lib) +
                                                        " takes the key over at the next call and runs it"))
                       : std::nullopt;
    const std::string* status = j.string("status");
    // its signature: a status word of its own and an expiration
    if (!claimed && (!status || (*status != "INPROGRESS" && *status != "COMPLETED" && *status != "EXPIRED") ||
                     !j.has("expiration")))
        return std::nullopt;
    Record r = make(f, RecordState::Malformed);
    addMembers(r, x);
    if (!status) {
        r.reason = j.has("status") || !j.cut ? "no string 'status'" : "its status lies beyond what was read";
        if (j.cut && !j.has("status"))
            r.state = RecordState::Unknown;
        // Powertools lets its attributes be renamed (statusAttr, expiryAttr, inProgressExpiryAttr;
        // status_attr, ... in Python): a member holding INPROGRESS is its lock under another name,
        // whose deadline idem cannot tell from the other numbers — a live lock, never stale (unless
        // a member under the default names is no time at all: broken, as any record of it)
        std::string bad;
        timeMember(j, "expiration", timefield::Unit::Seconds, &bad);
        timeMember(j, "in_progress_expiration", timefield::Unit::Millis, &bad);
        if (!bad.empty()) {
            r.reason = bad;
            return r;
        }
        for (const json::Member& m : j.members)
            if (m.kind == json::Kind::String && m.key != "status" && m.text == "INPROGRESS") {
                r.state = RecordState::Started;
                r.rawStatus = m.text;
                r.reason = "INPROGRESS in '" + m.key + "' (attributes renamed): a live lock whose deadline idem " +
                           "cannot tell, blocked until the key's TTL";
                settleStarted(r, x.o);
                break;
            }
        return r;
    }
    r.rawStatus = *status;
    std::string bad;
    r.expiresMs = timeMember(j, "expiration", timefield::Unit::Seconds, &bad);
    r.leaseUntilMs = timeMember(j, "in_progress_expiration", timefield::Unit::Millis, &bad);
    if (!bad.empty()) {
        r.reason = bad;
        return r;
    }
    if (const std::string* v = j.string("validation"))
        r.fingerprint = *v;
    const bool expired = r.expiresMs && x.o.nowMs > 0 && *r.expiresMs < x.o.nowMs;
    if (*status == "INPROGRESS" || *status == "COMPLETED" || *status == "EXPIRED") {
        if (*status == "EXPIRED" || expired) {
            r.state = RecordState::Expired;
            r.reason = "past its expiration: " + std::string(lib) + " treats it as absent and runs the next call";
        } else if (*status == "INPROGRESS") {
            r.state = RecordState::Started;
            if (!r.leaseUntilMs && unread(j, "in_progress_expiration")) {
                // a large record whose deadline, if it has one, was not read: not known to be stale
                r.state = RecordState::Unknown;
                r.partial = true;
                r.reason = "its in_progress_expiration (if any) lies beyond what was read";
                return r;
            }
            if (!r.leaseUntilMs) // no Lambda context: see the top of this file
                r.reason = "no in_progress_expiration (written without a Lambda context): a live lock until its "
                           "expiration, as " + std::string(lib) +
                           " keeps it since its fix for taking such locks over (older versions take it over at "
                           "the next call)";
        } else {
            r.state = RecordState::Completed;
            r.changesAtMs = r.expiresMs;
        }
    } else {
        r.reason = "status " + quoted(*status) + " is not one " + std::string(lib) +
                   " has: every call fails until the key expires";
        return r;
    }
    if (const json::Member* data = j.find("data"); data && r.state != RecordState::Started) {
        if (data->cut) {
            r.partial = true;
        } else if (f == RecordFormat::PowertoolsPython && data->kind == json::Kind::String) {
            r.response = data->text; // Python stores the result as a JSON string inside the JSON
        } else {
            r.response = rawMember(x, *data);
        }
    }
    settleStarted(r, x.o);
    if (r.state == RecordState::Started && !r.leaseUntilMs) {
        // blocked until expiration (then the library treats it as absent), whatever its age
        r.blocked = true;
        r.stale = false;
        r.staleWhy.clear();
        r.changesAtMs = r.expiresMs;
    }
    return r;
}

// Without a key shape to go by, the JSON's spacing tells them apart: Python's json.dumps writes
// '": ' and '", ', JavaScript's JSON.stringify neither.
bool pythonSpacing(const Input& x)
{
    return x.in.value.substr(0, 64).find("\": ") != std::string::npos;
}

std::optional<Record> decodeTs(const Input& x, bool claimed)
{
    if (!claimed && pythonSpacing(x))
        return std::nullopt;
    return decodeAs(RecordFormat::Powertools, x, claimed);
}

std::optional<Record> decodePython(const Input& x, bool claimed)
{
    if (!claimed && !pythonSpacing(x))
        return std::nullopt;
    return decodeAs(RecordFormat::PowertoolsPython, x, claimed);
}

const std::vector<FieldDoc> docs = {
    {"status", "INPROGRESS or COMPLETED (EXPIRED is worked out from expiration, not stored)"},
    {"expiration", "when the record expires: past it the library treats it as absent and runs again",
     FieldTime::Seconds},
    {"in_progress_expiration", "the in-progress deadline (the Lambda's remaining time); past it, or without it, "
                               "the next call takes over",
     FieldTime::Millis},
    {"validation", "hash of the payload part a duplicate must match (payloadValidationJmesPath)"},
    {"data", "the handler's result, returned to duplicates"},
};

} // namespace

const Profile powertools{RecordFormat::Powertools, typescriptKey, decodeTs, &docs};
const Profile powertoolsPython{RecordFormat::PowertoolsPython, pythonKey, decodePython, &docs};

} // namespace idem::format
