#pragma once

#include "idem/engine/store.h"

#include <chrono>
#include <condition_variable>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>

namespace idem {

struct WatchEntry {
    Ticket ticket;
    Millis lease{};
    std::chrono::steady_clock::time_point nextRenew;
    std::chrono::steady_clock::time_point localDeadline; // lease end as this process can vouch for
    std::stop_source lost;
    std::string why; // set before `lost` is requested
    std::list<std::shared_ptr<WatchEntry>>::iterator at; // where the watchdog keeps it: removed in O(1)
};

class AsyncStore;

// Renews the leases of running work every lease/3 from one thread. When the server says the lease
// is gone, or renewals keep failing until the lease has certainly run out, it requests `lost`.
// Given an AsyncStore, the renewals due at one moment go out together, pipelined, without waiting
// on this thread (thousands of submit()ted executions in flight). The same thread runs timers:
// submit()'s pauses before storing a result again.
class Watchdog {
public:
    explicit Watchdog(LeaseStore& store);
    ~Watchdog(); // waits for renewals still under way
    std::shared_ptr<WatchEntry> add(const Ticket& t, Millis lease,
                                    std::chrono::steady_clock::time_point localDeadline);
    void remove(const std::shared_ptr<WatchEntry>& e);
    void useAsync(AsyncStore* async);
    // Runs `task` on this thread at `when`; a task must not block.
    void after(std::chrono::steady_clock::time_point when, std::function<void()> task);

private:
    void run(std::stop_token stop);
    void renewBlocking(const std::shared_ptr<WatchEntry>& e);
    void renewAsync(const std::shared_ptr<WatchEntry>& e);
    void wakeLocked();

    LeaseStore& m_store;
    AsyncStore* m_async = nullptr; // guarded by m_mutex
    std::multimap<std::chrono::steady_clock::time_point, std::function<void()>> m_timers;
    std::size_t m_renewing = 0; // asynchronous renewals under way
    std::mutex m_mutex;
    std::condition_variable_any m_cv;
    std::list<std::shared_ptr<WatchEntry>> m_entries;
    std::uint64_t m_generation = 0; // bumped by add(): wakes the thread for an earlier deadline
    std::chrono::steady_clock::time_point m_wakeAt = std::chrono::steady_clock::time_point::min();
    std::jthread m_thread; // last: started after the members it uses
};

} // namespace idem
