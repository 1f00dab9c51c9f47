#include "idem/monitor/monitor.h"

#include "idem/errors.h"
#include "idem/engine/scripts.h"
#include "idem/engine/store.h"
#include "engine/guard.h"
#include "redis/resp.h"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <cstdlib>

namespace idem {

namespace {

} // namespace

namespace {
constexpr std::pair<StateFilter, std::string_view> kFilters[] = {
    {StateFilter::Any, "any"},           {StateFilter::Started, "started"},     {StateFilter::Stale, "stale"},
    {StateFilter::Blocked, "blocked"},   {StateFilter::Completed, "completed"}, {StateFilter::Failed, "failed"},
    {StateFilter::Expired, "expired"},   {StateFilter::Malformed, "malformed"}, {StateFilter::Foreign, "foreign"},
    {StateFilter::Unknown, "unknown"},   {StateFilter::NoTtl, "no-ttl"}};
} // namespace

std::optional<StateFilter> stateFilterFromString(std::string_view s)
{
    if (s == "all")
        return StateFilter::Any;
    for (const auto& [f, name] : kFilters)
        if (name == s)
            return f;
    return std::nullopt;
}

std::string_view nameOf(StateFilter f)
{
    for (const auto& [filter, name] : kFilters)
        if (filter == f)
            return name;
    return "any";
}

bool matches(const Record& r, StateFilter f)
{
    switch (f) {
    case StateFilter::Any: return true;
    case StateFilter::Started: return r.state == RecordState::Started;
    case StateFilter::Stale: return r.state == RecordState::Started && r.stale;
    case StateFilter::Blocked: return r.state == RecordState::Started && r.blocked;
    case StateFilter::Completed: return r.state == RecordState::Completed;
    case StateFilter::Failed: return r.state == RecordState::Failed;
    case StateFilter::Expired: return r.state == RecordState::Expired;
    case StateFilter::Malformed: return r.state == RecordState::Malformed;
    case StateFilter::Foreign: return r.state == RecordState::Foreign;
    case StateFilter::Unknown: return r.state == RecordState::Unknown;
    case StateFilter::NoTtl: return r.ttlMs == -1;
    }
    return false;
}

bool bulkByStateAlone(StateFilter f)
{
    return f != StateFilter::Any && f != StateFilter::NoTtl && f != StateFilter::Malformed &&
           f != StateFilter::Foreign && f != StateFilter::Unknown;
}

void Stats::add(const Record& r)
{
    ++total;
    switch (r.state) {
    case RecordState::Started:
        ++started;
        stale += r.stale ? 1 : 0;
        blocked += r.blocked ? 1 : 0;
        break;
    case RecordState::Completed: ++completed; break;
    case RecordState::Failed: ++failed; break;
    case RecordState::Expired: ++expired; break;
    case RecordState::Malformed: ++malformed; break;
    case RecordState::Foreign: ++foreign; break;
    case RecordState::Unknown: ++unknown; break;
    }
    noTtl += r.ttlMs == -1 ? 1 : 0;
    otherPrograms += anotherProgramsData(r) ? 1 : 0;
}

void Stats::merge(const Stats& o)
{
    total += o.total;
    started += o.started;
    stale += o.stale;
    blocked += o.blocked;
    completed += o.completed;
    failed += o.failed;
    expired += o.expired;
    malformed += o.malformed;
    foreign += o.foreign;
    unknown += o.unknown;
    noTtl += o.noTtl;
    otherPrograms += o.otherPrograms;
}

std::string Stats::summary() const
{
    std::string out;
    const auto add = [&](const char* name, std::size_t n, std::string extra = {}) {
        if (n == 0)
            return;
        out += (out.empty() ? "" : ", ") + std::string(name) + " " + std::to_string(n) + extra;
    };
    std::string inner;
    if (stale)
        inner += "stale " + std::to_string(stale);
    if (blocked)
        inner += (inner.empty() ? "" : ", ") + std::string("no lease ") + std::to_string(blocked);
    add("started", started, inner.empty() ? std::string() : " (" + inner + ")");
    add("completed", completed);
    add("failed", failed);
    add("expired", expired);
    add("malformed", malformed);
    add("foreign", foreign, otherPrograms ? " (other programs' data " + std::to_string(otherPrograms) + ")" : "");
    add("unknown", unknown);
    return out.empty() ? "none" : out;
}

Monitor::Monitor(Connection& connection, MonitorOptions options)
    : m_connection(connection), m_options(std::move(options))
{
    if (m_options.scanCount == 0 || m_options.scanCount > 10'000)
        throw UsageError("SCAN COUNT must be between 1 and 10000");
}

std::string globEscape(std::string_view s)
{
    std::string out;
    out.reserve(s.size());
    for (char c : s) {
        if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\')
            out += '\\';
        out += c;
    }
    return out;
}

std::string Monitor::pattern() const
{
    return m_options.pattern.empty() ? globEscape(m_options.keyNamespace) + ":*" : m_options.pattern;
}

bool Monitor::isMetaKey(std::string_view key) const
{
    // an idem record's meta key, or the namespace's audit stream: idem's own bookkeeping, not records
    return static_cast<bool>(ownKey(key, m_options.keyNamespace));
}

ScanPage Monitor::scanPage(const std::string& cursor, std::vector<Redirected>* redirected)
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
    page.records = classify(keys, &page.serverNowMs, redirected);
    page.refused = m_refused;
    return page;
}

DecodeOptions Monitor::decodeOptions(std::int64_t nowMs) const
{
    DecodeOptions o;
    o.nowMs = nowMs;
    o.keyNamespace = m_options.keyNamespace;
    o.staleAfterMs = m_options.staleAfterMs;
    o.writerTtlMs = m_options.writerTtlMs;
    o.format = m_options.format;
    return o;
}

std::vector<Record> Monitor::classify(const std::vector<std::string>& keys, std::int64_t* serverNowMs,
                                     std::vector<Redirected>* redirected, bool asking)
{
    const std::vector<std::string_view>& hashFields = hashFieldsToRead();
    const std::string lastByte = std::to_string(m_options.prefixBytes - 1);
    // After an ASK redirect every command goes after its own ASKING; replies are found through
    // `at`, which skips ASKING's +OK.
    const std::size_t step = asking ? 2 : 1;
    const auto add = [&](std::vector<std::vector<std::string_view>>& cmds, std::vector<std::string_view> cmd) {
        if (asking)
            cmds.push_back({"ASKING"});
        cmds.push_back(std::move(cmd));
    };
    // per key: PTTL, HMGET (a hash's small fields, and those named after its key, which the purge
    // guard compares whether there or not; WRONGTYPE otherwise), GETRANGE (a string's first bytes,
    // all of it when shorter; WRONGTYPE otherwise)
    std::vector<std::vector<std::string_view>> cmds;
    cmds.reserve(1 + keys.size() * 3 * step);
    cmds.push_back({"TIME"});
    std::vector<std::vector<std::string>> extra(keys.size()); // Powertools for Java: "<key>:status", ...
    for (std::size_t i = 0; i < keys.size(); ++i) {
        const std::string& k = keys[i];
        add(cmds, {"PTTL", k});
        std::vector<std::string_view> hm = {"HMGET", k};
        hm.insert(hm.end(), hashFields.begin(), hashFields.end());
        extra[i] = extraHashFieldsToRead(k);
        hm.insert(hm.end(), extra[i].begin(), extra[i].end());
        add(cmds, std::move(hm));
        add(cmds, {"GETRANGE", k, "0", lastByte});
    }
    auto replies = m_connection.pipeline(cmds);
    const auto at = [&](std::size_t logical) { return replies[logical * step].get(); }; // TIME is 0
    const auto refusedHere = [](const redisReply* r) { return reply::isError(r) && reply::errorText(r).starts_with("NOPERM"); };
    m_refused = 0;
    const DecodeOptions o = decodeOptions(m_options.asOfMs > 0 ? m_options.asOfMs : reply::timeMs(replies[0].get()));
    if (serverNowMs)
        *serverNowMs = o.nowMs;

    std::vector<std::optional<KeyRead>> reads(keys.size());
    // the second round trip: TYPE of other types, the length and tail of large strings, companion keys
    enum class More { Type, Length, Tail, Companion };
    std::vector<std::pair<std::size_t, More>> second;
    std::vector<std::string> companions(keys.size());
    const std::string tailFrom = "-" + std::to_string(m_options.prefixBytes);
    for (std::size_t i = 0; i < keys.size(); ++i) {
        const redisReply* pttl = at(1 + 3 * i);
        const redisReply* hm = at(2 + 3 * i);
        const redisReply* head = at(3 + 3 * i);
        if (auto to = reply::redirect(pttl)) { // a cluster node that no longer serves the key
            if (redirected)
                redirected->push_back({keys[i], to->address, to->ask});
            continue;
        }
        // PTTL refused for this key alone (an ACL whose key patterns leave it out: SCAN lists every
        // key, PTTL is checked against the patterns): it cannot be read, the rest of the page
        // stands, and the refusal is counted (a namespace this user may not read is not empty)
        if (reply::isError(pttl)) {
            m_refused += refusedHere(pttl) ? 1 : 0;
            continue;
        }
        const std::int64_t ttl = reply::integer(pttl);
        if (ttl == -2)
            continue; // expired or deleted since SCAN returned it
        KeyRead in;
        in.key = keys[i];
        in.ttlMs = ttl;
        if (!reply::isError(hm)) {
            if (!reply::isError(head))
                continue; // HMGET and GETRANGE of an absent key both answer: gone between the commands
            in.type = "hash";
            for (std::size_t f = 0; f < hashFields.size(); ++f)
                if (const redisReply* v = reply::element(hm, f); !reply::isNil(v))
                    in.fields.emplace_back(std::string(hashFields[f]), reply::str(v));
            for (std::size_t f = 0; f < extra[i].size(); ++f)
                if (const redisReply* v = reply::element(hm, hashFields.size() + f); !reply::isNil(v))
                    in.fields.emplace_back(extra[i][f], reply::str(v));
        } else if (!reply::isError(head)) {
            in.type = "string";
            in.value = reply::str(head);
            in.valueBytes = static_cast<std::int64_t>(in.value.size());
            // empty: an empty string, or a key that expired between HMGET and GETRANGE (which
            // answers "" for a key that is gone): TYPE says which
            if (in.value.empty() && ttl >= 0)
                second.emplace_back(i, More::Type);
            if (in.value.size() >= m_options.prefixBytes) { // maybe longer: its length and last bytes
                second.emplace_back(i, More::Length);
                second.emplace_back(i, More::Tail);
            }
        } else {
            second.emplace_back(i, More::Type);
        }
        if (companions[i] = companionKey(keys[i]); !companions[i].empty())
            second.emplace_back(i, More::Companion);
        reads[i] = std::move(in);
    }
    if (!second.empty()) {
        std::vector<std::vector<std::string_view>> c2;
        for (const auto& [i, what] : second)
            add(c2, what == More::Type     ? std::vector<std::string_view>{"TYPE", keys[i]}
                    : what == More::Length ? std::vector<std::string_view>{"STRLEN", keys[i]}
                    : what == More::Tail   ? std::vector<std::string_view>{"GETRANGE", keys[i], tailFrom, "-1"}
                                           : std::vector<std::string_view>{"EXISTS", companions[i]});
        const auto more = m_connection.pipeline(c2);
        for (std::size_t m = 0; m < second.size(); ++m) {
            auto& in = reads[second[m].first];
            if (!in)
                continue; // gone or moved since the first round trip (TYPE said so for another entry)
            const redisReply* r = more[m * step + step - 1].get();
            if (reply::redirect(r)) { // moved between the round trips: the next pass reads it there
                in.reset();
                continue;
            }
            switch (second[m].second) {
            case More::Type:
                // an error (a TYPE refused for this key alone): the monitor cannot say what the
                // key is, and the rest of the page stands
                if (reply::isError(r)) {
                    m_refused += refusedHere(r) ? 1 : 0;
                    in.reset();
                    break;
                }
                in->type = reply::str(r);
                if (in->type == "none")
                    in.reset(); // gone since the first round trip
                break;
            case More::Length:
                if (!reply::isError(r) && reply::integer(r) > in->valueBytes)
                    in->valueBytes = reply::integer(r);
                break;
            case More::Tail:
                // (a value that grew between the round trips: its tail is what it is now)
                in->tail = reply::isError(r) || in->valueBytes <= static_cast<std::int64_t>(in->value.size())
                               ? std::string()
                               : reply::str(r);
                break;
            case More::Companion: in->companionExists = !reply::isError(r) && reply::integer(r) == 1; break;
            }
        }
    }
    std::vector<Record> out;
    out.reserve(keys.size());
    for (auto& in : reads)
        if (in)
            out.push_back(decode(*in, o));
    return out;
}

bool Monitor::unlinkIfUnchanged(const Record& seen, const Actor& by)
{
    return unlinkIfUnchanged(std::vector<Record>{seen}, by) == 1;
}

std::size_t Monitor::unlinkIfUnchanged(const std::vector<Record>& seen, const Actor& by)
{
    const UnlinkResult r = unlinkEach(seen, by, true);
    if (!r.redirected.empty())
        throw ReplyError("unlink: " + seen[r.redirected.front()].key + " is served by another cluster node now");
    return r.unlinked;
}

UnlinkResult Monitor::unlinkEach(const std::vector<Record>& seen, const Actor& by, bool auditHere)
{
    UnlinkResult result;
    if (seen.empty())
        return result;
    for (const auto& r : seen)
        if (r.keyType.empty())
            throw UsageError("unlinkIfUnchanged needs a record read by the monitor");
        else if (isMetaKey(r.key)) // the fence keeper or the audit trail: no purge takes them
            throw UsageError("unlinkIfUnchanged: " + r.key + " is idem's own key, not a record");
    const std::string stream = guard::auditKey(m_options.keyNamespace);
    const guard::Actor actor{by.who, by.why};
    std::string calls;
    std::vector<std::size_t> ends;
    resp::Writer w(calls);
    for (const auto& r : seen) {
        guard::writePurge(w, r.key, guard::metaKeyOf(r, m_options.keyNamespace),
                          auditHere ? std::string_view(stream) : std::string_view(), &r, actor, m_options.purgeKeepMetaMs);
        ends.push_back(calls.size());
    }
    const auto replies = runScriptPipelined(m_connection, scripts::purge(), calls, ends);
    for (std::size_t i = 0; i < replies.size(); ++i) {
        const redisReply* r = replies[i].get();
        if (reply::redirect(r))
            result.redirected.push_back(i);
        else if (reply::isError(r))
            throw ReplyError("purge: " + std::string(reply::errorText(r)));
        else if (reply::str(reply::element(r, 0)) == "OK") {
            ++result.unlinked;
            result.purged.emplace_back(i, reply::str(reply::element(r, 1)));
        }
    }
    return result;
}

} // namespace idem
