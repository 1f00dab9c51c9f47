#pragma once

#include <cstddef>
#include <iterator>
#include <mutex>
#include <optional>
#include <vector>

namespace idem {

// Calls coalesced into units (AsyncStore's acquires and completions): while `limit` units are on
// their way, later calls wait, and when one comes back they go out together, as many per unit as
// `maxPerUnit` and `fits` (may this call share the first one's unit?) allow. The waiters would
// have waited for Redis anyway, and Redis spends less per id on one script call of many ids than
// on many calls of one. While held, every call waits, and release() sends what waited: a caller
// that issues many calls in one turn of its event loop sends them as a few units, not one each.
// Thread-safe.
template <typename P>
class UnitQueue {
public:
    // The call to send now, as a unit of its own, or nothing: it waits (`mayWait` false: it never
    // waits, as on a Redis Cluster, where a unit's keys must share a slot).
    std::optional<P> offer(P p, int limit, bool mayWait)
    {
        std::lock_guard lock(m_mutex);
        if (mayWait && (m_held > 0 || m_units >= limit)) {
            m_waiting.push_back(std::move(p));
            return std::nullopt;
        }
        ++m_units;
        return std::optional<P>(std::move(p));
    }

    // A unit sent outside offer() (a refused unit's calls sent again one by one).
    void oneMore()
    {
        std::lock_guard lock(m_mutex);
        ++m_units;
    }

    // A unit came back: the next units to send, from the calls that waited, in order (none while
    // held: release() sends them).
    template <typename Fits>
    std::vector<std::vector<P>> unitDone(int limit, std::size_t maxPerUnit, Fits fits)
    {
        std::lock_guard lock(m_mutex);
        --m_units;
        return m_held > 0 ? std::vector<std::vector<P>>() : nextUnits(limit, maxPerUnit, fits);
    }

    // Holds may nest; the last release() returns the units to send now (a release() with nothing
    // held does nothing); `all` ends every hold (the store is going).
    void hold()
    {
        std::lock_guard lock(m_mutex);
        ++m_held;
    }
    template <typename Fits>
    std::vector<std::vector<P>> release(int limit, std::size_t maxPerUnit, Fits fits, bool all)
    {
        std::lock_guard lock(m_mutex);
        if (m_held == 0 || (m_held = all ? 0 : m_held - 1) > 0)
            return {};
        return nextUnits(limit, maxPerUnit, fits);
    }

private:
    template <typename Fits>
    std::vector<std::vector<P>> nextUnits(int limit, std::size_t maxPerUnit, Fits fits)
    {
        std::vector<std::vector<P>> next;
        std::size_t from = 0;
        while (from < m_waiting.size() && m_units < limit) {
            std::size_t to = from + 1;
            while (to < m_waiting.size() && to - from < maxPerUnit && fits(m_waiting[from], m_waiting[to]))
                ++to;
            next.emplace_back(std::make_move_iterator(m_waiting.begin() + static_cast<std::ptrdiff_t>(from)),
                              std::make_move_iterator(m_waiting.begin() + static_cast<std::ptrdiff_t>(to)));
            ++m_units;
            from = to;
        }
        m_waiting.erase(m_waiting.begin(), m_waiting.begin() + static_cast<std::ptrdiff_t>(from));
        return next;
    }

    std::mutex m_mutex;
    std::vector<P> m_waiting;
    int m_units = 0;
    int m_held = 0;
};

} // namespace idem
