#include "idem/engine/watchdog.h"

#include "idem/errors.h"

#include <algorithm>
#include <vector>

namespace idem {

using Clock = std::chrono::steady_clock;

Watchdog::Watchdog(Store& store)
    : m_store(store), m_thread([this](std::stop_token st) { run(st); })
{
}

Watchdog::~Watchdog()
{
    m_thread.request_stop();
    m_cv.notify_all();
}

std::shared_ptr<WatchEntry> Watchdog::add(const Ticket& t, Millis lease, Clock::time_point localDeadline)
{
    auto e = std::make_shared<WatchEntry>();
    e->ticket = t;
    e->lease = lease;
    e->localDeadline = localDeadline;
    e->nextRenew = Clock::now() + std::max(Millis(1), lease / 3);
    bool wake = false;
    {
        std::lock_guard lock(m_mutex);
        m_entries.push_back(e);
        // wake the thread only if it would sleep past this entry's first renewal: with equal
        // leases that is rare, and execute() stays free of a context switch per call
        wake = e->nextRenew < m_wakeAt;
        if (wake)
            ++m_generation;
    }
    if (wake)
        m_cv.notify_all();
    return e;
}

void Watchdog::remove(const std::shared_ptr<WatchEntry>& e)
{
    std::lock_guard lock(m_mutex);
    m_entries.remove(e);
}

void Watchdog::run(std::stop_token stop)
{
    std::unique_lock lock(m_mutex);
    while (!stop.stop_requested()) {
        auto next = Clock::now() + std::chrono::seconds(1);
        for (const auto& e : m_entries)
            next = std::min(next, e->nextRenew);
        if (Clock::now() < next) {
            const auto gen = m_generation;
            m_wakeAt = next;
            m_cv.wait_until(lock, stop, next, [&] { return m_generation != gen; });
            m_wakeAt = Clock::time_point::min(); // awake: add() need not notify
            continue;
        }
        std::vector<std::shared_ptr<WatchEntry>> due;
        for (const auto& e : m_entries)
            if (e->nextRenew <= Clock::now() && !e->lost.stop_requested())
                due.push_back(e);
        for (const auto& e : due) // not renewed twice if renewing takes long
            e->nextRenew = Clock::now() + std::max(Millis(1), e->lease / 3);
        lock.unlock();
        for (const auto& e : due) {
            const auto before = Clock::now();
            try {
                const OwnerResult r = m_store.renew(e->ticket, e->lease);
                if (r.status == OwnerStatus::LeaseLost) {
                    e->why = "lease lost: record is now " + r.currentState;
                    e->lost.request_stop();
                } else {
                    // renewed to now + lease on the server; locally count from before the call
                    e->localDeadline = before + e->lease;
                }
            } catch (const Error& ex) {
                if (Clock::now() >= e->localDeadline) {
                    e->why = std::string("lease ran out while renewals failed: ") + ex.what();
                    e->lost.request_stop();
                } else {
                    e->nextRenew = std::min(e->nextRenew, Clock::now() + std::max(Millis(1), e->lease / 10));
                }
            }
        }
        lock.lock();
        // entries whose lease is lost stay until remove(); they are never renewed again
        for (const auto& e : m_entries)
            if (e->lost.stop_requested())
                e->nextRenew = Clock::time_point::max();
    }
}

} // namespace idem
