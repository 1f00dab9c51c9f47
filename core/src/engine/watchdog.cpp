#include "idem/engine/watchdog.h"

#include "idem/engine/asyncstore.h"
#include "idem/errors.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace idem {

using Clock = std::chrono::steady_clock;

Watchdog::Watchdog(LeaseStore& store)
    : m_store(store), m_thread([this](std::stop_token st) { run(st); })
{
}

Watchdog::~Watchdog()
{
    m_thread.request_stop();
    m_cv.notify_all();
    if (m_thread.joinable())
        m_thread.join();
    std::unique_lock lock(m_mutex);
    m_cv.wait(lock, [this] { return m_renewing == 0; }); // their callbacks use this object
}

void Watchdog::wakeLocked()
{
    ++m_generation;
    m_cv.notify_all();
}

std::shared_ptr<WatchEntry> Watchdog::add(const Ticket& t, Millis lease, Clock::time_point localDeadline)
{
    auto e = std::make_shared<WatchEntry>();
    e->ticket = t;
    e->lease = lease;
    e->localDeadline = localDeadline;
    e->nextRenew = Clock::now() + std::max(Millis(1), lease / 3);
    std::lock_guard lock(m_mutex);
    e->at = m_entries.insert(m_entries.end(), e);
    // wake the thread only if it would sleep past this entry's first renewal: with equal
    // leases that is rare, and execute() stays free of a context switch per call
    if (e->nextRenew < m_wakeAt)
        wakeLocked();
    return e;
}

void Watchdog::remove(const std::shared_ptr<WatchEntry>& e)
{
    std::lock_guard lock(m_mutex);
    if (e->at != std::list<std::shared_ptr<WatchEntry>>::iterator()) // removed once (thousands in flight)
        m_entries.erase(std::exchange(e->at, {}));
}

void Watchdog::useAsync(AsyncStore* async)
{
    std::lock_guard lock(m_mutex);
    m_async = async;
}

void Watchdog::after(Clock::time_point when, std::function<void()> task)
{
    std::lock_guard lock(m_mutex);
    m_timers.emplace(when, std::move(task));
    if (when < m_wakeAt)
        wakeLocked();
}

void Watchdog::renewBlocking(const std::shared_ptr<WatchEntry>& e)
{
    const auto before = Clock::now();
    try {
        const OwnerResult r = m_store.renew(e->ticket, e->lease);
        std::lock_guard lock(m_mutex);
        if (r.status == OwnerStatus::LeaseLost)
            e->why = "lease lost: record is now " + r.currentState;
        else // renewed to now + lease on the server; locally count from before the call
            e->localDeadline = before + e->lease;
    } catch (const Error& ex) {
        std::lock_guard lock(m_mutex);
        if (Clock::now() >= e->localDeadline)
            e->why = std::string("lease ran out while renewals failed: ") + ex.what();
        else
            e->nextRenew = std::min(e->nextRenew, Clock::now() + std::max(Millis(1), e->lease / 10));
    }
    if (!e->why.empty())
        e->lost.request_stop();
}

void Watchdog::renewAsync(const std::shared_ptr<WatchEntry>& e)
{
    const auto before = Clock::now();
    AsyncStore* async = nullptr;
    {
        std::lock_guard lock(m_mutex);
        async = m_async;
        ++m_renewing;
    }
    auto done = [this, e, before](OwnerResult r, std::exception_ptr error) {
        bool lost = false;
        {
            std::lock_guard lock(m_mutex);
            if (!error && r.status == OwnerStatus::LeaseLost) {
                e->why = "lease lost: record is now " + r.currentState;
            } else if (!error) {
                e->localDeadline = before + e->lease;
            } else if (Clock::now() >= e->localDeadline) {
                try {
                    std::rethrow_exception(error);
                } catch (const std::exception& ex) {
                    e->why = std::string("lease ran out while renewals failed: ") + ex.what();
                }
            } else {
                e->nextRenew = std::min(e->nextRenew, Clock::now() + std::max(Millis(1), e->lease / 10));
                wakeLocked();
            }
            lost = !e->why.empty();
        }
        if (lost)
            e->lost.request_stop();
        std::lock_guard lock(m_mutex);
        if (--m_renewing == 0)
            m_cv.notify_all();
    };
    try {
        async->renew(e->ticket, e->lease, std::move(done));
    } catch (const Error& ex) { // a bad ticket: it cannot be renewed
        {
            std::lock_guard lock(m_mutex);
            e->why = std::string("lease cannot be renewed: ") + ex.what();
            --m_renewing;
        }
        e->lost.request_stop();
    }
}

void Watchdog::run(std::stop_token stop)
{
    std::unique_lock lock(m_mutex);
    while (!stop.stop_requested()) {
        auto next = Clock::now() + std::chrono::seconds(1);
        for (const auto& e : m_entries)
            next = std::min(next, e->nextRenew);
        if (!m_timers.empty())
            next = std::min(next, m_timers.begin()->first);
        if (Clock::now() < next) {
            const auto gen = m_generation;
            m_wakeAt = next;
            m_cv.wait_until(lock, stop, next, [&] { return m_generation != gen; });
            m_wakeAt = Clock::time_point::min(); // awake: add() need not notify
            continue;
        }
        std::vector<std::function<void()>> tasks;
        while (!m_timers.empty() && m_timers.begin()->first <= Clock::now()) {
            tasks.push_back(std::move(m_timers.begin()->second));
            m_timers.erase(m_timers.begin());
        }
        std::vector<std::shared_ptr<WatchEntry>> due;
        for (const auto& e : m_entries)
            if (e->nextRenew <= Clock::now() && !e->lost.stop_requested())
                due.push_back(e);
        for (const auto& e : due) // not renewed twice if renewing takes long
            e->nextRenew = Clock::now() + std::max(Millis(1), e->lease / 3);
        const bool async = m_async != nullptr;
        lock.unlock();
        for (auto& task : tasks)
            task();
        for (const auto& e : due)
            async ? renewAsync(e) : renewBlocking(e);
        lock.lock();
        // entries whose lease is lost stay until remove(); they are never renewed again
        for (const auto& e : m_entries)
            if (e->lost.stop_requested())
                e->nextRenew = Clock::time_point::max();
    }
}

} // namespace idem
