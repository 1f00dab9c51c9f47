#include "idem/monitor/history.h"

#include <algorithm>
#include <array>
#include <functional>
#include <queue>
#include <utility>

namespace idem {

namespace {
enum Series : std::uint8_t { None, Started, Stale, Completed, Failed, Malformed, SeriesCount };

// As KeyRow::isStale and KeyTableModel::stats() count a row HistoryRecorder::rowOf made: a lease
// that ran out makes STARTED stale; a COMPLETED row from the history has no expiry to turn EXPIRED.
Series seriesOf(const HistoryEntry& e, std::int64_t atMs)
{
    if (e.flags & Transition::Gone)
        return None;
    switch (e.state) {
    case RecordState::Started: return e.leaseUntilMs > 0 && e.leaseUntilMs <= atMs ? Stale : Started;
    case RecordState::Completed: return Completed;
    case RecordState::Failed: return Failed;
    case RecordState::Malformed: return Malformed;
    default: return None;
    }
}
} // namespace

std::vector<StateCounts> HistoryIndex::countsOver(std::int64_t fromMs, std::int64_t toMs, std::int64_t stepMs) const
{
    std::vector<StateCounts> out;
    if (stepMs <= 0 || toMs < fromMs)
        return out;
    const std::int64_t steps = (toMs - fromMs) / stepMs + 1;
    out.reserve(static_cast<std::size_t>(steps));

    const auto begin = m_entries.begin() + static_cast<std::ptrdiff_t>(m_start);
    auto next = std::upper_bound(begin, m_entries.end(), fromMs,
                                 [](std::int64_t t, const HistoryEntry& e) { return t < e.atMs; });
    std::vector<const HistoryEntry*> last(m_keys.size(), nullptr); // by key: its transition standing now
    for (auto it = begin; it != next; ++it)
        last[it->key] = &*it;

    std::vector<std::uint8_t> in(m_keys.size(), None); // by key: the series it is counted in
    std::array<std::size_t, SeriesCount> n{};
    // Leases still running, soonest first. One whose key has moved on since is skipped when it
    // comes up, which is cheaper than finding and removing it when the key moves.
    using Deadline = std::pair<std::int64_t, const HistoryEntry*>;
    std::priority_queue<Deadline, std::vector<Deadline>, std::greater<>> leases;
    const auto place = [&](const HistoryEntry& e, std::int64_t atMs) {
        if (in[e.key] != None)
            --n[in[e.key]];
        const Series s = seriesOf(e, atMs);
        in[e.key] = s;
        last[e.key] = &e;
        if (s != None)
            ++n[s];
        if (s == Started && e.leaseUntilMs > 0)
            leases.emplace(e.leaseUntilMs, &e);
    };
    for (const HistoryEntry* e : last)
        if (e)
            place(*e, fromMs);

    for (std::int64_t i = 0; i < steps; ++i) {
        const std::int64_t atMs = fromMs + i * stepMs;
        for (; next != m_entries.end() && next->atMs <= atMs; ++next)
            place(*next, atMs);
        for (; !leases.empty() && leases.top().first <= atMs; leases.pop()) {
            const HistoryEntry* e = leases.top().second;
            if (last[e->key] == e && in[e->key] == Started) {
                --n[Started];
                ++n[Stale];
                in[e->key] = Stale;
            }
        }
        out.push_back({atMs, n[Started], n[Stale], n[Completed], n[Failed], n[Malformed]});
    }
    return out;
}

} // namespace idem
