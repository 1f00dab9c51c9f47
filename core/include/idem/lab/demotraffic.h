#pragma once

#include "idem/redis/options.h"

#include <atomic>
#include <cstdint>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace idem {

struct DemoTrafficOptions {
    std::string keyNamespace = "idempotency";
    Millis retention{10 * 60'000}; // demo records expire, so the store stays small
    Millis tick{350};
    int workers = 3;
};

// Synthetic traffic for demos and the console's embedded default: workers executing orders
// through the real state machine (live leases, completions, duplicates, failures of every
// policy, locks left to go stale), plus records as other libraries write them (AWS Powertools,
// node-idempotency, express-idempotency, idempotent-request, under their own key shapes) and a
// few malformed keys. Everything has a TTL except the one key that shows what "no TTL" looks like.
class DemoTraffic {
public:
    DemoTraffic(ConnectionOptions connection, DemoTrafficOptions options = {});
    ~DemoTraffic();
    DemoTraffic(const DemoTraffic&) = delete;
    DemoTraffic& operator=(const DemoTraffic&) = delete;

    void seed();  // the foreign and malformed records, once
    void start(); // the workers
    void stop();
    std::size_t executions() const { return m_executions; }

private:
    void work(int worker);
    static std::vector<std::vector<std::string>> peerRecords(std::int64_t nowS);
    bool sleepFor(Millis d); // false when stopping

    ConnectionOptions m_connection;
    DemoTrafficOptions m_options;
    std::atomic<bool> m_stop{false};
    std::atomic<std::size_t> m_executions{0};
    std::atomic<int> m_next{1};
    std::mutex m_mutex;
    std::condition_variable m_cv;
    std::vector<std::thread> m_threads;
};

} // namespace idem
