// Hand-written records, as services that roll their own write them: a JSON string (or a hash) with
// a "status" of STARTED / PENDING / PROCESSING / IN_PROGRESS, COMPLETED or FAILED, and optionally
// started_at, lock_expiry (the lease), completed_at, response or response_body, error, owner:
// epoch seconds, milliseconds or ISO 8601. And plain status words ("PROCESSING"). Both are read at
// idem's own <namespace>:{<id>} keys and under --format json. Elsewhere a status word is no
// signature (job trackers, caches and Celery's results keep one too): a value there is read as
// such a record only while it says in progress, which protects it as a lock; a COMPLETED or FAILED
// one is another program's value (unknown), never a record for a purge by state to take.
#include "format/profile.h"

#include <algorithm>
#include <cctype>

namespace idem::format {

std::optional<RecordState> handWrittenState(std::string_view status)
{
    std::string s(status);
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    if (s == "STARTED" || s == "PENDING" || s == "PROCESSING" || s == "IN_PROGRESS")
        return RecordState::Started;
    if (s == "COMPLETED")
        return RecordState::Completed;
    if (s == "FAILED")
        return RecordState::Failed;
    return std::nullopt;
}

namespace {

bool inNamespace(std::string_view key, const DecodeOptions& o) { return !idFromKey(key, o.keyNamespace).empty(); }

bool looksBinary(std::string_view s)
{
    // control bytes other than whitespace, or invalid UTF-8
    std::size_t i = 0;
    while (i < s.size()) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c < 0x80) {
            if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f)
                return true;
            ++i;
            continue;
        }
        const int len = (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
        if (len == 0 || i + static_cast<std::size_t>(len) > s.size())
            return i + static_cast<std::size_t>(len) <= s.size() || len == 0; // a prefix may cut a character
        for (int k = 1; k < len; ++k)
            if ((static_cast<unsigned char>(s[i + k]) >> 6) != 0x2)
                return true;
        i += static_cast<std::size_t>(len);
    }
    return false;
}

// A hash with a "status" field (read with the monitor's small fields), at idem's key shape.
std::optional<Record> decodeHash(const Input& x, bool claimed)
{
    const KeyRead& in = x.in;
    const std::string* status = nullptr;
    const std::string* lockExpiry = nullptr;
    const std::string* startedAt = nullptr;
    for (const auto& [k, v] : in.fields) {
        status = k == "status" ? &v : status;
        lockExpiry = k == "lock_expiry" ? &v : lockExpiry;
        startedAt = k == "started_at" ? &v : startedAt;
    }
    // a status field alone is no signature: RQ's jobs (rq:job:<id>, "failed", "started"), Sidekiq's
    // and Celery's hashes keep one too. A hash is a hand-written record only where idem's key shape
    // or --format json says so; elsewhere it is no known library's, never a FAILED one to purge
    if (!status || !claimed)
        return std::nullopt;
    const auto st = handWrittenState(*status);
    Record r = make(RecordFormat::StatusJson, st.value_or(RecordState::Malformed));
    r.rawStatus = *status;
    r.fields = in.fields;
    if (!st) {
        r.reason = "unknown status " + quoted(*status);
        return r;
    }
    std::string why;
    if (lockExpiry && !(r.leaseUntilMs = timefield::fromText(*lockExpiry, timefield::Unit::Guess, &why))) {
        r.state = RecordState::Malformed;
        r.reason = "lock_expiry is " + why;
        return r;
    }
    if (startedAt && !(r.startedMs = timefield::fromText(*startedAt, timefield::Unit::Guess, &why))) {
        r.state = RecordState::Malformed;
        r.reason = "started_at is " + why;
        return r;
    }
    settleStarted(r, x.o);
    return r;
}

std::optional<Record> decodeJson(const Input& x, bool claimed)
{
    const KeyRead& in = x.in;
    if (in.type == "hash")
        return decodeHash(x, claimed);
    if (in.type != "string" || !x.object)
        return std::nullopt;
    const json::Object& j = *x.object;
    constexpr auto f = RecordFormat::StatusJson;
    if (looksBinary(in.value))
        return claimed ? std::optional(malformed(RecordFormat::Unknown, "binary value (" + std::to_string(in.valueBytes) +
                                                                             " bytes), not a record"))
                       : std::nullopt;
    if (!j.error.empty())
        return claimed ? std::optional(malformed(f, j.error)) : std::nullopt;
    const std::string* status = j.string("status");
    const auto st = status ? handWrittenState(*status) : std::nullopt;
    if (!claimed && st != RecordState::Started)
        return std::nullopt;
    Record r = make(f, st.value_or(RecordState::Malformed));
    addMembers(r, x);
    if (!status) {
        r.reason = j.cut ? "its status lies beyond what was read" : "JSON object without a string 'status'";
        if (j.cut)
            r.state = RecordState::Unknown;
        return r;
    }
    r.rawStatus = *status;
    if (!st) {
        r.reason = "unknown status " + quoted(*status);
        return r;
    }
    if (*st == RecordState::Started && unread(j, "lock_expiry")) {
        // a large record whose lease, if it has one, was not read: not known to be stale
        r.state = RecordState::Unknown;
        r.partial = true;
        r.reason = "its lock_expiry (if any) lies beyond what was read";
        return r;
    }
    std::string bad;
    r.startedMs = timeMember(j, "started_at", timefield::Unit::Guess, &bad);
    r.leaseUntilMs = timeMember(j, "lock_expiry", timefield::Unit::Guess, &bad);
    r.finishedMs = timeMember(j, "completed_at", timefield::Unit::Guess, &bad);
    if (!bad.empty()) {
        r.state = RecordState::Malformed;
        r.reason = bad;
        return r;
    }
    for (const char* name : {"response", "response_body"})
        if (const json::Member* m = j.find(name); m && m->kind != json::Kind::Null) {
            if (m->cut)
                r.partial = true;
            else
                r.response = m->kind == json::Kind::String ? m->text : rawMember(x, *m);
            break;
        }
    for (const char* name : {"error", "error_message"})
        if (const std::string* v = j.string(name)) {
            r.error = *v;
            break;
        }
    for (const char* name : {"owner", "lock_owner", "token"})
        if (const std::string* v = j.string(name)) {
            r.owner = *v;
            break;
        }
    settleStarted(r, x.o);
    if (r.state == RecordState::Started && r.reason.empty())
        for (const char* name : {"lock_expiry", "started_at"})
            if (const std::string* v = j.string(name); v && timefield::zoneless(*v)) {
                r.reason = std::string(name) + " has no time zone: read as the latest it can be (UTC-12:00), so " +
                           "the lock is never taken for older than it is";
                break;
            }
    return r;
}

std::optional<Record> decodePlain(const Input& x, bool claimed)
{
    const KeyRead& in = x.in;
    if (in.type != "string" || x.object)
        return std::nullopt;
    const std::string_view word = trimmedWord(in.value);
    const auto st = word.size() <= 16 ? handWrittenState(word) : std::nullopt;
    if (st && (claimed || *st == RecordState::Started)) {
        Record r = make(RecordFormat::Plain, *st);
        r.rawStatus = std::string(word);
        if (*st == RecordState::Started)
            r.reason = "a status word alone: no lease, no start";
        settleStarted(r, x.o);
        return r;
    }
    if (!claimed)
        return std::nullopt;
    if (in.value.empty())
        return malformed(RecordFormat::Unknown, "empty string");
    if (looksBinary(in.value))
        return malformed(RecordFormat::Unknown, "binary value (" + std::to_string(in.valueBytes) + " bytes), not a record");
    return malformed(RecordFormat::Unknown, "plain string " + quoted(word) + " is not a known status");
}

const std::vector<FieldDoc> jsonDocs = {
    {"status", "STARTED, PENDING, PROCESSING, IN_PROGRESS, COMPLETED or FAILED"},
    {"started_at", "when the work started", FieldTime::Any},
    {"lock_expiry", "the lease deadline", FieldTime::Any},
    {"completed_at", "when it completed", FieldTime::Any},
    {"response", "the stored result"},
    {"response_body", "the stored result"},
    {"error", "the failure's text"},
    {"owner", "who holds the lock"},
};
const std::vector<FieldDoc> plainDocs;

} // namespace

const Profile statusJson{RecordFormat::StatusJson, inNamespace, decodeJson, &jsonDocs};
const Profile plain{RecordFormat::Plain, inNamespace, decodePlain, &plainDocs};

} // namespace idem::format
