#pragma once

#include "idem/engine/store.h"

#include <chrono>
#include <condition_variable>
#include <list>
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
};

// Renews the leases of running work every lease/3 from one thread. When the server says the lease
// is gone, or renewals keep failing until the lease has certainly run out, it requests `lost`.
class Watchdog {
public:
    explicit Watchdog(Store& store);
    ~Watchdog();
    std::shared_ptr<WatchEntry> add(const Ticket& t, Millis lease,
                                    std::chrono::steady_clock::time_point localDeadline);
    void remove(const std::shared_ptr<WatchEntry>& e);

private:
    void run(std::stop_token stop);

    Store& m_store;
    std::mutex m_mutex;
    std::condition_variable_any m_cv;
    std::list<std::shared_ptr<WatchEntry>> m_entries;
    std::uint64_t m_generation = 0; // bumped by add(): wakes the thread for an earlier deadline
    std::chrono::steady_clock::time_point m_wakeAt = std::chrono::steady_clock::time_point::min();
    std::jthread m_thread; // last: started after the members it uses
};

} // namespace idem
