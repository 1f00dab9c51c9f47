// decode(): which profile reads a key, and what every profile shares.
#include "format/profile.h"

#include "idem/duration.h"
#include "idem/hash.h"

#include <algorithm>
#include <cctype>

namespace idem {

namespace format {

const std::vector<const Profile*>& profiles()
{
    // Asked in this order when no key shape decides: the libraries with a signature of their own
    // first, the loose hand-written shapes last.
    static const std::vector<const Profile*> all = {&native,          &powertools,         &powertoolsPython,
                                                    &powertoolsJava,  &nodeIdempotency,    &expressIdempotency,
                                                    &idempotentRequest, &camel,            &statusJson,
                                                    &plain};
    return all;
}

const Profile& profileOf(RecordFormat f)
{
    for (const Profile* p : profiles())
        if (p->format == f)
            return *p;
    return statusJson;
}

Record make(RecordFormat f, RecordState s)
{
    Record r;
    r.format = f;
    r.state = s;
    return r;
}

Record malformed(RecordFormat f, std::string reason)
{
    Record r = make(f, RecordState::Malformed);
    r.reason = std::move(reason);
    return r;
}

Record foreign(RecordFormat f, std::string reason)
{
    Record r = make(f, RecordState::Foreign);
    r.reason = std::move(reason);
    return r;
}

void settleStarted(Record& r, const DecodeOptions& o)
{
    if (r.state != RecordState::Started)
        return;
    if (r.leaseUntilMs) {
        r.changesAtMs = r.leaseUntilMs;
        if (o.nowMs > 0 && *r.leaseUntilMs <= o.nowMs) {
            r.stale = true;
            r.staleWhy = "lease expired " + formatDuration(Millis(o.nowMs - *r.leaseUntilMs)) + " ago";
        }
        return;
    }
    r.blocked = true;
    if (!r.startedMs || o.staleAfterMs <= 0)
        return; // no start known, or no window given: blocked until its TTL, as its library keeps it
    r.changesAtMs = *r.startedMs + o.staleAfterMs;
    if (o.nowMs > 0 && o.nowMs - *r.startedMs > o.staleAfterMs) {
        r.stale = true;
        r.staleWhy = "in progress for " + formatDuration(Millis((o.nowMs - *r.startedMs) / 1000 * 1000)) +
                     ", over the " + formatDuration(Millis(o.staleAfterMs)) + " window, with no lease deadline";
    }
}

std::optional<std::int64_t> timeMember(const json::Object& j, std::string_view name, timefield::Unit unit,
                                       std::string* why)
{
    const json::Member* m = j.find(name);
    if (!m || m->kind == json::Kind::Null || m->cut)
        return std::nullopt;
    std::string whyNot;
    std::optional<std::int64_t> t;
    if (m->kind == json::Kind::Number || m->kind == json::Kind::String)
        t = timefield::fromText(m->text, unit, &whyNot);
    else
        whyNot = "not a time";
    if (!t && why && why->empty())
        *why = std::string(name) + " is " + whyNot;
    return t;
}

bool unread(const json::Object& j, std::string_view name)
{
    const json::Member* m = j.find(name);
    return m ? m->cut : j.cut;
}

std::string rawMember(const Input& in, const json::Member& m)
{
    const std::string& text = m.fromTail ? in.in.tail : in.in.value;
    if (m.cut || m.end < m.begin || m.end > text.size())
        return {};
    return text.substr(m.begin, m.end - m.begin);
}

void addMembers(Record& r, const Input& in)
{
    if (!in.object)
        return;
    for (const json::Member& m : in.object->members) {
        if (m.cut)
            r.fields.emplace_back(m.key, "(not read: the value is larger than what was read)");
        else if (m.kind == json::Kind::String)
            r.fields.emplace_back(m.key, m.text);
        else
            r.fields.emplace_back(m.key, rawMember(in, m));
    }
}

std::string_view trimmedWord(std::string_view s)
{
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())))
        s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
        s.remove_suffix(1);
    return s;
}

std::string quoted(std::string_view s)
{
    std::string out;
    for (char c : s.substr(0, 40))
        out.push_back(static_cast<unsigned char>(c) < 0x20 ? '?' : c);
    return "'" + out + (s.size() > 40 ? "…'" : "'");
}

std::optional<std::int64_t> startFromTtl(const Input& in)
{
    if (in.o.writerTtlMs <= 0 || in.in.ttlMs < 0 || in.o.nowMs <= 0 || in.in.ttlMs > in.o.writerTtlMs)
        return std::nullopt;
    const std::int64_t start = in.o.nowMs - (in.o.writerTtlMs - in.in.ttlMs);
    if (start < 0 || start > timefield::kMaxMs) // a writer's TTL longer than the clock has run: unknown
        return std::nullopt;
    return start;
}

} // namespace format

using namespace format;

namespace {

bool terminalWord(std::string_view word)
{
    const auto st = handWrittenState(word);
    return st && *st != RecordState::Started;
}

// A string no profile reads. A status it says is its writer's word, as a hash's is: shown, and an
// in-progress one protects it from a purge without --live (mayBeLiveLock); a FAILED one is no
// FAILED record. Outside idem's key shape a COMPLETED or FAILED status is such a word too, and
// the note says how to read it as a hand-written record.
Record unknownString(const Input& x)
{
    Record r = make(RecordFormat::Unknown, RecordState::Unknown);
    const json::Object* j = x.object;
    std::string_view word;
    if (j && !j->error.empty()) {
        r.reason = j->error;
        return r;
    }
    if (j) {
        const std::string* status = j->string("status");
        status = status ? status : j->string("state");
        word = status ? std::string_view(*status) : std::string_view();
        r.reason = "a JSON object no known library writes" + (status ? ", status " + quoted(*status) : std::string());
    } else {
        word = trimmedWord(x.in.value);
        r.reason = "a string no known library writes: " + quoted(x.in.value);
    }
    if (inProgressWord(word) || terminalWord(word))
        r.rawStatus = std::string(word);
    if (terminalWord(word))
        r.reason += j ? " (hand-written idempotency records? --format json with a --pattern of only them reads them so)"
                      : " (hand-written status words? --format plain with a --pattern of only them reads them so)";
    return r;
}

// A record read by its value alone, at a key without its library's shape. A value's signature is
// a guess there: an API log's {"request":…,"response":…}, an export job's {"status":"COMPLETED",
// "expiration":…} look like express-idempotency's and Powertools' records. The guess may make a key
// a lock (which protects it), never a record a bulk purge takes: a COMPLETED, FAILED or EXPIRED
// reading is unknown, and a lock whose lease ran out is not stale. --format (or, for idem's own
// records, --namespace) reads such keys as the library's records.
Record byValueAlone(Record r)
{
    const bool native = r.format == RecordFormat::Native;
    // (a format applies to every key a pattern covers: it is said with a pattern of only such keys)
    const std::string how = native ? "--namespace NAME (its records live at NAME:{id})"
                                   : "--format " + std::string(nameOf(r.format)) + " with a --pattern of only its keys";
    const std::string reading = "reads as " + std::string(libraryOf(r.format)) + "'s ";
    if (r.state == RecordState::Started) {
        if (r.stale) {
            r.reason = reading + "lock by its value alone, and its lease ran out (" + r.staleWhy +
                       "); at a key without that library's shape it is not taken for stale: " + how +
                       " reads it so";
            r.stale = false;
            r.staleWhy.clear();
        }
        return r;
    }
    if (r.state != RecordState::Completed && r.state != RecordState::Failed && r.state != RecordState::Expired)
        return r;
    Record u = make(RecordFormat::Unknown, RecordState::Unknown);
    u.rawStatus = r.rawStatus;
    u.reason = reading + std::string(nameOf(r.state)) + " record by its value alone, at a key without that " +
               "library's shape: another program's data is not taken for one; " + how + " reads it so";
    return u;
}

// A quoted word in a value idem cannot parse that says in progress ('INPROGRESS', "PROCESSING"):
// what a cut JSON or a Python repr of a lock still says. Empty when there is none.
std::string quotedInProgressWord(std::string_view v)
{
    v = v.substr(0, 4096);
    for (std::size_t i = 0; i < v.size(); ++i) {
        if (v[i] != '"' && v[i] != '\'')
            continue;
        const std::size_t end = v.find(v[i], i + 1);
        if (end == std::string_view::npos)
            break;
        const std::string_view word = v.substr(i + 1, end - i - 1);
        if (word.size() <= 32 && inProgressWord(word))
            return std::string(word);
        i = end; // the closing quote is no opening one
    }
    return {};
}

bool startsJsonObject(std::string_view v)
{
    std::size_t i = 0;
    while (i < v.size() && (v[i] == ' ' || v[i] == '\t' || v[i] == '\n' || v[i] == '\r'))
        ++i;
    return i < v.size() && v[i] == '{';
}

} // namespace

Record decode(const KeyRead& in, const DecodeOptions& o)
{
    Input x{in, o};
    json::Object object;
    x.prefix = in.type == "string" && in.valueBytes > static_cast<std::int64_t>(in.value.size());
    if (in.type == "string" && startsJsonObject(in.value)) {
        object = json::scanObject(in.value, x.prefix);
        if (x.prefix && object.cut && !in.tail.empty()) // the last members, from the tail
            for (json::Member& m : json::scanTail(in.tail))
                if (!object.has(m.key))
                    object.members.push_back(std::move(m));
        x.object = &object;
    }
    // what another profile than `f` reads as a record (by the key's shape first, then the value)
    const auto otherThan = [&x, &in, &o](RecordFormat f) {
        for (const bool claimed : {true, false})
            for (const Profile* p : profiles())
                if (p->format != f && (!claimed || p->ownsKey(in.key, o)))
                    if (std::optional<Record> r = p->decode(x, claimed); r && r->state != RecordState::Malformed)
                        return claimed ? r : std::optional(byValueAlone(std::move(*r)));
        return std::optional<Record>();
    };
    // a record another profile than `f` reads at its own key shape (not broken, foreign or unknown)
    const auto shapeOwner = [&x, &in, &o](RecordFormat f) {
        for (const Profile* p : profiles())
            if (p->format != f && p->ownsKey(in.key, o))
                if (std::optional<Record> r = p->decode(x, true); r && !notARecord(r->state))
                    return r;
        return std::optional<Record>();
    };
    std::optional<Record> got;
    const bool otherType = in.type != "string" && in.type != "hash";
    // A job queue's or a task backend's key (BullMQ, RQ, Sidekiq, Celery) is that program's data,
    // whatever --format names and whatever its value looks like (a Celery result says "STARTED"):
    // never a record, a lock or an unknown key a bulk purge takes. A library's own key shape wins.
    if (std::none_of(profiles().begin(), profiles().end(), [&](const Profile* p) { return p->ownsKey(in.key, o); }))
        got = programData(x);
    if (!got && o.format) {
        got = profileOf(*o.format).decode(x, true);
        // Another library's record is not a broken one of the format the operator named: read as
        // what it is, a live lock of it can never be taken for malformed and purged as such
        if (!got || got->state == RecordState::Malformed) {
            if (std::optional<Record> other = otherThan(*o.format))
                got = std::move(other);
        } else if (got->state == RecordState::Foreign) {
            // (Camel takes any string for a message id, Powertools any ':lock' key for its mutex:
            // one that another library reads as its lock is that lock, and so is a record at that
            // library's own key shape - a Powertools COMPLETED record is no message id to purge as
            // foreign; other readings are guesses)
            if (std::optional<Record> owner = shapeOwner(*o.format))
                got = std::move(owner);
            else if (std::optional<Record> other = otherThan(*o.format); other && other->state == RecordState::Started)
                got = std::move(other);
        }
        if (got && otherType && got->state == RecordState::Malformed)
            got.reset(); // a list, set, sorted set or stream: a valid key of something else
    } else if (!got) {
        for (const Profile* p : profiles())
            if (p->ownsKey(in.key, o) && (got = p->decode(x, true)))
                break;
        // the key's shape is a hint, not proof: a value the shape's library cannot read, which
        // another library reads as its lock, is that lock (an express-idempotency key that looks
        // like a Powertools hash; a status record under 'idempotency_keys:'), never hidden as
        // malformed or foreign. (Other states stay the shape's library's reading: a Powertools key
        // holding "FAILED" is a broken Powertools record, which that library fails on.)
        if (got && (got->state == RecordState::Malformed || got->state == RecordState::Foreign))
            if (std::optional<Record> other = otherThan(got->format); other && other->state == RecordState::Started)
                got = std::move(other);
        for (auto it = profiles().begin(); !got && it != profiles().end(); ++it)
            if ((got = (*it)->decode(x, false)))
                got = byValueAlone(std::move(*got));
    }
    // No profile took it: another type is a valid key of something else (a queue, a set of
    // message ids); a string or a hash is unknown
    // a hash's status as written: a word that says in progress makes it a live lock (mayBeLiveLock)
    std::string hashStatus;
    for (const auto& [k, v] : in.fields)
        if (in.type == "hash" && (k == "status" || k == "state"))
            hashStatus = v;
    Record r;
    if (got) {
        r = std::move(*got);
    } else if (o.format && !otherType) {
        // the operator said whose records these are: a string or hash that library cannot read
        // (and no other can) is malformed
        r = malformed(*o.format, "not a record " + std::string(libraryOf(*o.format)) + " writes: a " + in.type +
                                     (in.type == "string" ? " " + quoted(in.value) : std::string()));
        r.rawStatus = hashStatus;
    } else if (in.type == "hash") {
        // (its status is its writer's word, never idem's state: an RQ job's "failed" is no FAILED record)
        r = make(RecordFormat::Unknown, RecordState::Unknown);
        r.reason = "a hash no known library writes" + (hashStatus.empty() ? "" : ", status " + quoted(hashStatus));
        r.rawStatus = hashStatus;
    } else if (in.type == "string") {
        r = unknownString(x);
    } else {
        r = foreign(RecordFormat::Unknown, "a " + in.type + ": not a record of any known library");
    }
    if (r.state == RecordState::Malformed && r.rawStatus.empty() && in.type == "string")
        r.rawStatus = quotedInProgressWord(in.value); // (a cut JSON, a Python repr that says INPROGRESS)
    r.key = in.key;
    r.keyType = in.type;
    r.ttlMs = in.ttlMs;
    r.id = idFromKey(in.key, o.keyNamespace);
    if (r.id.empty())
        r.id = in.key;
    if (in.type == "string") {
        r.valueBytes = in.valueBytes >= 0 ? in.valueBytes : static_cast<std::int64_t>(in.value.size());
        r.guardBytes = in.value.size();
        // read in part: the tail too (purge.lua hashes the same last bytes)
        const bool tail = !in.tail.empty() && r.valueBytes > static_cast<std::int64_t>(in.value.size());
        r.guardTailBytes = tail ? in.tail.size() : 0;
        r.guardSha1 = toHex(sha1(tail ? in.value + in.tail : in.value));
        r.partial = r.partial || x.prefix;
    } else if (in.type == "hash") {
        // the guard compares what the record keeps of what was read (purge.lua is sent the same names)
        if (r.fields.empty())
            r.fields = in.fields;
        r.guardSha1 = hashGuardSha1(in.key, r.fields);
    }
    return r;
}

std::vector<std::string> guardFieldNames(std::string_view key,
                                         const std::vector<std::pair<std::string, std::string>>& fields)
{
    // what every monitor reads of this key, present or not, whatever was found; then the rest read
    std::vector<std::string> names(hashFieldsToRead().begin(), hashFieldsToRead().end());
    for (std::string& extra : extraHashFieldsToRead(key))
        names.push_back(std::move(extra));
    const auto read = static_cast<std::ptrdiff_t>(names.size());
    for (const auto& [k, v] : fields)
        if (std::find(names.begin(), names.begin() + read, k) == names.begin() + read)
            names.push_back(k);
    return names;
}

std::string hashGuardSha1(std::string_view key, const std::vector<std::pair<std::string, std::string>>& fields)
{
    std::string s;
    for (const std::string& name : guardFieldNames(key, fields)) {
        const auto f = std::find_if(fields.begin(), fields.end(), [&](const auto& kv) { return kv.first == name; });
        if (f == fields.end())
            s += '-';
        else
            s.append("+").append(std::to_string(f->second.size())).append(":").append(f->second);
    }
    return toHex(sha1(s));
}

std::vector<std::string> extraHashFieldsToRead(std::string_view key)
{
    std::vector<std::string> out = javaHashFields(key);
    for (std::string_view f : programHashFields(key))
        out.emplace_back(f);
    return out;
}

const std::vector<std::string_view>& hashFieldsToRead()
{
    // the small fields of idem's hash and of hand-written status hashes that a row shows; never
    // `response` or `error` (they can be large), nor the operator's note (the inspector reads it)
    static const std::vector<std::string_view> f = {
        "state",   "token",        "fence",    "attempt", "started_ms",  "lease_until_ms", "created_ms", "finished_ms",
        "failure", "retention_ms", "lease_ms", "fp",      "status",      "lock_expiry",    "started_at"};
    return f;
}

std::string companionKey(std::string_view key)
{
    // idempotent-request: a lock at <ns>:lock:<key> means little while its record <ns>:<key> exists
    constexpr std::string_view lock = "idempotency_keys:lock:";
    if (key.starts_with(lock))
        return "idempotency_keys:" + std::string(key.substr(lock.size()));
    return {};
}

const std::vector<FieldDoc>& fieldDocs(RecordFormat f)
{
    static const std::vector<FieldDoc> none;
    if (!isRedisFormat(f)) // a table's columns are its own (PgTableLayout)
        return none;
    return *profileOf(f).docs;
}

const FieldDoc* fieldDoc(RecordFormat f, std::string_view name)
{
    for (const FieldDoc& d : fieldDocs(f))
        if (d.name == name)
            return &d;
    return nullptr;
}

} // namespace idem
