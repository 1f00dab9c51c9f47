#include "idem/monitor/monitor.h"

#include "idem/errors.h"
#include "idem/hash.h"
#include "idem/engine/scripts.h"
#include "redis/resp.h"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <cstdlib>

namespace idem {

namespace {

// What classification needs from a hash; never `response` or `error` (they can be large).
const std::vector<std::string_view> kSmallFields = {
    "state",    "token",       "fence",   "attempt",    "started_ms", "lease_until_ms", "created_ms",
    "finished_ms", "failure",  "fp",      "op",         "op_by",      "op_at_ms",       "op_reason",
    "retention_ms", "lease_ms", "status", "lock_expiry", "started_at"};

std::int64_t nowFromTime(const redisReply* r)
{
    return reply::integer(reply::element(r, 0)) * 1000 + reply::integer(reply::element(r, 1)) / 1000;
}

// unlink_if.lua's call for a record as the monitor classified it
void writeUnlinkCall(resp::Writer& w, const Record& r)
{
    // what the key was when it was classified: its type, and for hashes the state, owner and
    // lease; for strings the SHA1 of the value (when it was small enough to be read)
    const auto field = [&](std::string_view name) -> std::string {
        for (const auto& [k, v] : r.fields)
            if (k == name)
                return v;
        return {};
    };
    std::string expect, token, lease;
    if (r.keyType == "hash") {
        expect = field("state").empty() ? field("status") : field("state");
        if (r.state == RecordState::Malformed && r.format == RecordFormat::Native)
            expect = "*"; // an unknown state: the token and lease still have to match
        token = field("token");
        lease = field("lease_until_ms");
    } else if (r.keyType == "string") {
        expect = field("value_sha1");
    }
    const std::string_view key = r.key, args[] = {r.keyType, expect, token, lease};
    resp::evalsha(w, scripts::unlinkIf(), {&key, 1}, args);
}

} // namespace

std::optional<StateFilter> stateFilterFromString(std::string_view s)
{
    if (s == "any" || s == "all")
        return StateFilter::Any;
    if (s == "started")
        return StateFilter::Started;
    if (s == "stale")
        return StateFilter::Stale;
    if (s == "completed")
        return StateFilter::Completed;
    if (s == "failed")
        return StateFilter::Failed;
    if (s == "malformed")
        return StateFilter::Malformed;
    if (s == "no-ttl")
        return StateFilter::NoTtl;
    return std::nullopt;
}

bool matches(const Record& r, StateFilter f)
{
    switch (f) {
    case StateFilter::Any: return true;
    case StateFilter::Started: return r.state == RecordState::Started;
    case StateFilter::Stale: return r.state == RecordState::Started && r.stale;
    case StateFilter::Completed: return r.state == RecordState::Completed;
    case StateFilter::Failed: return r.state == RecordState::Failed;
    case StateFilter::Malformed: return r.state == RecordState::Malformed;
    case StateFilter::NoTtl: return r.ttlMs == -1;
    }
    return false;
}

void Stats::add(const Record& r)
{
    ++total;
    switch (r.state) {
    case RecordState::Started:
        ++started;
        stale += r.stale ? 1 : 0;
        break;
    case RecordState::Completed: ++completed; break;
    case RecordState::Failed: ++failed; break;
    case RecordState::Malformed: ++malformed; break;
    }
    noTtl += r.ttlMs == -1 ? 1 : 0;
}

Monitor::Monitor(Connection& connection, MonitorOptions options)
    : m_connection(connection), m_options(std::move(options))
{
    if (m_options.scanCount == 0 || m_options.scanCount > 10'000)
        throw UsageError("SCAN COUNT must be between 1 and 10000");
}

std::string Monitor::pattern() const
{
    return m_options.pattern.empty() ? m_options.keyNamespace + ":*" : m_options.pattern;
}

bool Monitor::isMetaKey(std::string_view key) const
{
    return key.ends_with("}:meta") && !idFromKey(key.substr(0, key.size() - 5), m_options.keyNamespace).empty();
}

ScanPage Monitor::scanPage(const std::string& cursor)
{
    const std::string count = std::to_string(m_options.scanCount);
    const std::string pat = pattern();
    ReplyPtr r = m_connection.checked({"SCAN", cursor, "MATCH", pat, "COUNT", count});
    ScanPage page;
    page.cursor = reply::str(reply::element(r.get(), 0));
    const redisReply* list = reply::element(r.get(), 1);
    std::vector<std::string> keys;
    keys.reserve(reply::arraySize(list));
    for (std::size_t i = 0; i < reply::arraySize(list); ++i) {
        std::string k = reply::str(reply::element(list, i));
        if (!isMetaKey(k))
            keys.push_back(std::move(k));
    }
    page.keysSeen = reply::arraySize(list);
    page.records = classify(keys, &page.serverNowMs);
    return page;
}

std::vector<Record> Monitor::classify(const std::vector<std::string>& keys, std::int64_t* serverNowMs)
{
    std::vector<std::vector<std::string_view>> cmds;
    cmds.reserve(1 + keys.size() * 3);
    cmds.push_back({"TIME"});
    for (const auto& k : keys) {
        cmds.push_back({"PTTL", k});
        std::vector<std::string_view> hm = {"HMGET", k};
        hm.insert(hm.end(), kSmallFields.begin(), kSmallFields.end());
        cmds.push_back(std::move(hm));
        cmds.push_back({"STRLEN", k});
    }
    auto replies = m_connection.pipeline(cmds);
    DecodeOptions o;
    o.nowMs = nowFromTime(replies[0].get());
    o.staleAfterMs = m_options.staleAfterMs;
    o.maxValueBytes = m_options.maxValueBytes;
    if (serverNowMs)
        *serverNowMs = o.nowMs;

    enum class Kind { Gone, Hash, SmallString, BigString, Other };
    std::vector<Kind> kinds(keys.size(), Kind::Gone);
    std::vector<Record> out;
    out.reserve(keys.size());
    std::vector<std::size_t> second; // indexes needing GET or TYPE
    std::vector<std::int64_t> ttl(keys.size(), -2), len(keys.size(), 0);
    for (std::size_t i = 0; i < keys.size(); ++i) {
        const redisReply* pttl = replies[1 + 3 * i].get();
        const redisReply* hm = replies[2 + 3 * i].get();
        const redisReply* sl = replies[3 + 3 * i].get();
        ttl[i] = reply::integer(pttl);
        if (ttl[i] == -2)
            continue; // expired or deleted since SCAN returned it
        if (!reply::isError(hm)) {
            if (reply::isError(sl)) {
                kinds[i] = Kind::Hash;
            } // else: HMGET of an absent key and STRLEN 0: gone between the commands
        } else if (!reply::isError(sl)) {
            len[i] = reply::integer(sl);
            kinds[i] = static_cast<std::size_t>(len[i]) > m_options.maxValueBytes ? Kind::BigString
                                                                                    : Kind::SmallString;
        } else {
            kinds[i] = Kind::Other;
        }
        if (kinds[i] == Kind::SmallString || kinds[i] == Kind::Other)
            second.push_back(i);
    }
    std::vector<ReplyPtr> more;
    if (!second.empty()) {
        std::vector<std::vector<std::string_view>> c2;
        for (auto i : second)
            c2.push_back({kinds[i] == Kind::SmallString ? "GET" : "TYPE", keys[i]});
        more = m_connection.pipeline(c2);
    }
    std::size_t m = 0;
    for (std::size_t i = 0; i < keys.size(); ++i) {
        Record rec;
        switch (kinds[i]) {
        case Kind::Gone:
            continue;
        case Kind::Hash: {
            const redisReply* hm = replies[2 + 3 * i].get();
            std::vector<std::pair<std::string, std::string>> fields;
            for (std::size_t f = 0; f < kSmallFields.size(); ++f) {
                const redisReply* v = reply::element(hm, f);
                if (!reply::isNil(v))
                    fields.emplace_back(std::string(kSmallFields[f]), reply::str(v));
            }
            o.ttlMs = ttl[i];
            rec = decodeHash(std::move(fields), o);
            rec.keyType = "hash";
            break;
        }
        case Kind::BigString:
            rec = decodeOversized(static_cast<std::size_t>(len[i]));
            rec.keyType = "string";
            break;
        case Kind::SmallString: {
            const redisReply* v = more[m++].get();
            if (reply::isNil(v) || reply::isError(v))
                continue; // gone, or replaced by another type, since the first round trip
            const std::string value = reply::str(v);
            rec = decodeString(value, o);
            rec.keyType = "string";
            // what a guarded purge compares (redis.sha1hex in unlink_if.lua), not the value itself
            rec.fields = {{"value_sha1", toHex(sha1(value))}};
            break;
        }
        case Kind::Other: {
            const std::string type = reply::str(more[m++].get());
            if (type == "none")
                continue;
            rec = decodeOtherType(type);
            rec.keyType = type;
            break;
        }
        }
        rec.key = keys[i];
        rec.id = idFromKey(keys[i], m_options.keyNamespace);
        if (rec.id.empty())
            rec.id = keys[i];
        rec.ttlMs = ttl[i];
        out.push_back(std::move(rec));
    }
    return out;
}

bool Monitor::unlinkIfUnchanged(const Record& seen)
{
    return unlinkIfUnchanged(std::vector<Record>{seen}) == 1;
}

std::size_t Monitor::unlinkIfUnchanged(const std::vector<Record>& seen)
{
    if (seen.empty())
        return 0;
    for (const auto& r : seen)
        if (r.keyType.empty())
            throw UsageError("unlinkIfUnchanged needs a record read by the monitor");
    std::string calls;
    std::vector<std::size_t> ends;
    resp::Writer w(calls);
    for (const auto& r : seen) {
        writeUnlinkCall(w, r);
        ends.push_back(calls.size());
    }
    std::size_t n = 0;
    for (const auto& r : runScriptPipelined(m_connection, scripts::unlinkIf(), calls, ends)) {
        if (reply::isError(r.get()))
            throw ReplyError("unlink: " + std::string(reply::errorText(r.get())));
        n += reply::integer(r.get()) == 1 ? 1 : 0;
    }
    return n;
}

} // namespace idem
