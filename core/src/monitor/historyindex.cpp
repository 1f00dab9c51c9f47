#include "idem/monitor/history.h"

#include "idem/duration.h"

#include <algorithm>

namespace idem {

std::uint32_t HistoryIndex::intern(std::vector<std::string>& names, std::unordered_map<std::string, std::uint32_t>& ids,
                                   const std::string& s, bool zeroIsEmpty)
{
    if (zeroIsEmpty && s.empty())
        return 0;
    auto [at, added] = ids.try_emplace(s, static_cast<std::uint32_t>(names.size()));
    if (added)
        names.push_back(s);
    return at->second;
}

void HistoryIndex::add(const Transition& t)
{
    HistoryEntry e;
    e.atMs = m_entries.size() > m_start ? std::max(t.atMs, m_entries.back().atMs) : t.atMs;
    e.fence = t.fence;
    e.leaseUntilMs = t.leaseUntilMs;
    e.expiresAtMs = t.expiresAtMs;
    e.attempt = t.attempt;
    e.createdMs = t.createdMs;
    e.keyType = t.keyType;
    e.key = intern(m_keys, m_keyIds, t.key, false);
    e.owner = intern(m_strings, m_stringIds, t.owner, true);
    e.actor = intern(m_strings, m_stringIds, t.op.empty() ? t.actor : t.op + (t.actor.empty() ? "" : " by " + t.actor), true);
    e.state = t.state;
    e.format = t.format;
    e.flags = t.flags;
    e.source = t.source;
    m_entries.push_back(e);
    Transition& last = m_latest[e.key];
    last = t;
    last.atMs = e.atMs;
}

void HistoryIndex::trim()
{
    if (size() == 0)
        return;
    const std::int64_t oldest = lastMs() - m_limits.maxAgeMs;
    std::size_t start = m_start;
    if (size() > m_limits.maxTransitions)
        start = m_entries.size() - m_limits.maxTransitions;
    while (start < m_entries.size() && m_entries[start].atMs < oldest)
        ++start;
    if (start != m_start)
        ++m_trims;
    m_start = start;
    if (m_start > 4096 && m_start > m_entries.size() / 4) { // drop the front in bulk, not one by one
        m_entries.erase(m_entries.begin(), m_entries.begin() + static_cast<std::ptrdiff_t>(m_start));
        m_erased += m_start;
        m_start = 0;
    }
}

Transition HistoryIndex::expand(const HistoryEntry& e) const
{
    Transition t;
    t.atMs = e.atMs;
    t.key = m_keys[e.key];
    t.state = e.state;
    t.format = e.format;
    t.flags = e.flags;
    t.source = e.source;
    t.attempt = e.attempt;
    t.createdMs = e.createdMs;
    t.keyType = e.keyType;
    t.fence = e.fence;
    t.leaseUntilMs = e.leaseUntilMs;
    t.expiresAtMs = e.expiresAtMs;
    t.owner = m_strings[e.owner];
    const std::string& who = m_strings[e.actor]; // "op by actor", or just "actor"
    if (const auto by = who.find(" by "); by != std::string::npos) {
        t.op = who.substr(0, by);
        t.actor = who.substr(by + 4);
    } else
        t.actor = who;
    return t;
}

std::vector<Transition> HistoryIndex::timeline(const std::string& key) const
{
    std::vector<Transition> out;
    const auto id = m_keyIds.find(key);
    if (id == m_keyIds.end())
        return out;
    for (std::size_t i = m_start; i < m_entries.size(); ++i)
        if (m_entries[i].key == id->second)
            out.push_back(expand(m_entries[i]));
    return out;
}

std::vector<const HistoryEntry*> HistoryIndex::stateAt(std::int64_t atMs) const
{
    std::vector<const HistoryEntry*> last(m_keys.size(), nullptr);
    const auto end = std::upper_bound(m_entries.begin() + static_cast<std::ptrdiff_t>(m_start), m_entries.end(), atMs,
                                      [](std::int64_t t, const HistoryEntry& e) { return t < e.atMs; });
    for (auto it = m_entries.begin() + static_cast<std::ptrdiff_t>(m_start); it != end; ++it)
        last[it->key] = &*it;
    std::vector<const HistoryEntry*> out;
    for (const HistoryEntry* e : last)
        if (e && !(e->flags & Transition::Gone))
            out.push_back(e);
    return out;
}

const HistoryEntry* HistoryIndex::bySequence(std::int64_t sequence) const
{
    if (sequence < 0 || static_cast<std::uint64_t>(sequence) < m_erased + m_start)
        return nullptr;
    const std::uint64_t i = static_cast<std::uint64_t>(sequence) - m_erased;
    return i < m_entries.size() ? &m_entries[i] : nullptr;
}

std::vector<std::uint32_t> HistoryIndex::seek(Cursor& c, std::int64_t atMs) const
{
    const auto begin = m_entries.begin() + static_cast<std::ptrdiff_t>(m_start);
    const auto endIt = std::upper_bound(begin, m_entries.end(), atMs,
                                        [](std::int64_t t, const HistoryEntry& e) { return t < e.atMs; });
    const std::uint64_t end = m_erased + static_cast<std::uint64_t>(endIt - m_entries.begin());
    std::vector<std::uint32_t> changed;
    if (!c.valid || c.trims != m_trims || end < c.end) { // from the start: then only what differs
        std::vector<std::int64_t> last(m_keys.size(), -1);
        for (auto it = begin; it != endIt; ++it)
            last[it->key] = static_cast<std::int64_t>(m_erased) + (it - m_entries.begin());
        const std::vector<std::int64_t>& before = c.valid ? c.last : std::vector<std::int64_t>();
        for (std::uint32_t k = 0; k < last.size(); ++k)
            if (last[k] != (k < before.size() ? before[k] : -1))
                changed.push_back(k);
        c.last = std::move(last);
    } else { // forward: only the transitions in between
        c.last.resize(m_keys.size(), -1);
        for (std::uint64_t s = c.end; s < end; ++s) {
            const HistoryEntry& e = m_entries[s - m_erased];
            if (c.last[e.key] < static_cast<std::int64_t>(c.end))
                changed.push_back(e.key); // once per key
            c.last[e.key] = static_cast<std::int64_t>(s);
        }
    }
    c.atMs = atMs;
    c.end = end;
    c.trims = m_trims;
    c.valid = true;
    return changed;
}

std::vector<Transition> HistoryIndex::between(std::int64_t fromMs, std::int64_t toMs) const
{
    std::vector<Transition> out;
    for (std::size_t i = m_start; i < m_entries.size(); ++i)
        if (m_entries[i].atMs >= fromMs && m_entries[i].atMs <= toMs)
            out.push_back(expand(m_entries[i]));
    return out;
}

const Transition* HistoryIndex::latest(const std::string& key) const
{
    const auto id = m_keyIds.find(key);
    if (id == m_keyIds.end())
        return nullptr;
    const auto t = m_latest.find(id->second);
    return t == m_latest.end() ? nullptr : &t->second;
}

std::vector<std::string> HistoryIndex::presentKeys() const
{
    std::vector<std::string> out;
    for (const auto& [id, t] : m_latest)
        if (!t.gone())
            out.push_back(m_keys[id]);
    return out;
}

std::size_t HistoryIndex::memoryBytes() const
{
    std::size_t n = m_entries.capacity() * sizeof(HistoryEntry);
    const auto strings = [](const std::vector<std::string>& v) {
        std::size_t b = v.capacity() * sizeof(std::string);
        for (const auto& s : v)
            b += s.capacity() > 15 ? s.capacity() + 1 : 0;
        return b;
    };
    n += 2 * strings(m_keys) + 2 * strings(m_strings); // each string once in its vector, once as a map key
    n += (m_keyIds.size() + m_stringIds.size()) * 32 + (m_keyIds.bucket_count() + m_stringIds.bucket_count()) * 8;
    n += m_latest.size() * (sizeof(Transition) + 48);
    return n;
}

namespace {
std::string shortToken(const std::string& owner)
{
    if (owner.empty())
        return "an unknown owner";
    return owner.size() > 12 ? owner.substr(0, 8) + "…" : owner;
}
} // namespace

std::vector<TimelineLine> describeTimeline(const std::vector<Transition>& ts, std::int64_t nowMs)
{
    std::vector<TimelineLine> out;
    const Transition* prev = nullptr;
    for (std::size_t i = 0; i < ts.size(); ++i) {
        const Transition& t = ts[i];
        // a lease that ran out before this transition (or before now, for the last one)
        if (prev && prev->state == RecordState::Started && !prev->gone() && prev->leaseUntilMs > 0 &&
            prev->leaseUntilMs < t.atMs)
            out.push_back({prev->leaseUntilMs, "lease of " + shortToken(prev->owner) + " expired", true});
        std::string text;
        const std::string by = t.actor.empty() ? std::string() : (t.op.empty() ? " by " : " (" + t.op + ") by ") + t.actor;
        if (t.gone()) {
            if (t.actor.empty())
                text = "gone (expired or deleted)";
            else
                text = (t.op == "purge" ? std::string("purged") : "gone after " + (t.op.empty() ? "an operator" : t.op)) +
                       " by " + t.actor;
        } else if (t.state == RecordState::Started) {
            const std::string attempt = t.attempt > 1 ? ", attempt " + std::to_string(t.attempt) : std::string();
            if (prev && !prev->gone() && prev->state == RecordState::Started && prev->owner == t.owner)
                text = t.leaseUntilMs != prev->leaseUntilMs ? "lease renewed by " + shortToken(t.owner)
                                                            : "STARTED by " + shortToken(t.owner) + " (TTL changed)";
            else if (prev && !prev->gone() && prev->state == RecordState::Started)
                text = "taken over by " + shortToken(t.owner) + attempt;
            else if (prev && !prev->gone() && prev->state == RecordState::Failed)
                text = "retried by " + shortToken(t.owner) + attempt;
            else
                text = "STARTED by " + shortToken(t.owner) + attempt;
        } else {
            text = std::string(nameOf(t.state));
            if (t.state == RecordState::Failed)
                text += (t.flags & Transition::Terminal) ? " (terminal)" : " (retryable)";
            if (prev && !prev->gone() && prev->state == RecordState::Started && !prev->owner.empty() &&
                (t.state == RecordState::Completed || t.state == RecordState::Failed) && t.op.empty())
                text += " by " + shortToken(prev->owner);
            text += by;
            if (prev && !prev->gone() && prev->state == t.state && t.op.empty())
                text = std::string(nameOf(t.state)) + " (TTL or fields changed)";
        }
        if (!prev && !t.gone() && t.source == Transition::Scan)
            text += " (first seen)";
        out.push_back({t.atMs, text, false});
        prev = &t;
    }
    if (prev && prev->state == RecordState::Started && !prev->gone() && prev->leaseUntilMs > 0 && prev->leaseUntilMs <= nowMs)
        out.push_back({prev->leaseUntilMs, "lease of " + shortToken(prev->owner) + " expired", true});
    // in time order: a lock first seen after its lease had run out says so before it is seen
    std::stable_sort(out.begin(), out.end(), [](const TimelineLine& a, const TimelineLine& b) { return a.atMs < b.atMs; });
    return out;
}

} // namespace idem
