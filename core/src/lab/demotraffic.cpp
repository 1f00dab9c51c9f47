#include "idem/lab/demotraffic.h"

#include "idem/errors.h"
#include "idem/engine/executor.h"
#include "idem/engine/store.h"

#include <random>

namespace idem {

DemoTraffic::DemoTraffic(ConnectionOptions connection, DemoTrafficOptions options)
    : m_connection(std::move(connection)), m_options(std::move(options))
{
}

DemoTraffic::~DemoTraffic() { stop(); }

bool DemoTraffic::sleepFor(Millis d)
{
    std::unique_lock lock(m_mutex);
    return !m_cv.wait_for(lock, d, [this] { return m_stop.load(); });
}

void DemoTraffic::seed()
{
    Connection c(m_connection);
    const std::string ns = m_options.keyNamespace;
    const std::string ex = std::to_string(m_options.retention.count() / 1000);
    auto key = [&](const std::string& id) { return ns + ":{" + id + "}"; };
    const auto nowS = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch()).count();
    const std::string past = std::to_string(nowS - 120), future = std::to_string(nowS + 600);
    const std::vector<std::vector<std::string>> cmds = {
        {"SET", key("legacy-pay-1001"), R"({"status":"PROCESSING","started_at":)" + past + R"(,"lock_expiry":)" +
                                             std::to_string(nowS - 60) + "}", "EX", ex},
        {"SET", key("legacy-pay-1002"), R"({"status":"PENDING","started_at":)" + std::to_string(nowS) +
                                             R"(,"lock_expiry":)" + future + "}", "EX", ex},
        {"SET", key("legacy-pay-1003"),
         R"({"status":"COMPLETED","response_body":{"charged":true,"amount":1999,"currency":"EUR"}})", "EX", ex},
        {"SET", key("legacy-pay-1004"), R"({"status":"FAILED","error":"card declined"})", "EX", ex},
        {"SET", key("legacy-refund-77"), "PROCESSING", "EX", ex},
        {"SET", key("legacy-refund-78"), "COMPLETED", "EX", ex},
        {"SET", key("broken-json"), R"({"status":"COMPLETED","response":)", "EX", ex},
        {"SET", key("binary-blob"), std::string("\x00\x9f\x92\x96\xff", 5), "EX", ex},
        {"RPUSH", key("queue-by-mistake"), "a", "b"},
        {"EXPIRE", key("queue-by-mistake"), ex},
        {"SET", key("legacy-no-ttl"), R"({"status":"COMPLETED","response":"kept forever"})"},
    };
    std::vector<std::vector<std::string_view>> views;
    for (const auto& cmd : cmds)
        views.emplace_back(cmd.begin(), cmd.end());
    c.pipeline(views);
}

void DemoTraffic::start()
{
    stop();
    m_stop = false;
    for (int w = 0; w < m_options.workers; ++w)
        m_threads.emplace_back([this, w] { work(w); });
}

void DemoTraffic::stop()
{
    {
        std::lock_guard lock(m_mutex);
        m_stop = true;
    }
    m_cv.notify_all();
    for (auto& t : m_threads)
        if (t.joinable())
            t.join();
    m_threads.clear();
}

void DemoTraffic::work(int worker)
{
    std::mt19937 rng(static_cast<unsigned>(std::random_device{}()) + static_cast<unsigned>(worker));
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    ConnectionPool pool(m_connection, 2);
    StoreOptions so;
    so.keyNamespace = m_options.keyNamespace;
    so.lease = Millis(6000);
    so.retention = so.failureRetention = m_options.retention;
    so.staleKeep = m_options.retention;
    Store store(pool, so);
    Executor executor(store);
    std::vector<std::string> recent;
    while (sleepFor(Millis(m_options.tick.count() / 2 + pick(0, static_cast<int>(m_options.tick.count()))))) {
        const int roll = pick(0, 99);
        try {
            if (roll < 15 && !recent.empty()) { // a duplicate delivery
                const std::string id = recent[static_cast<std::size_t>(pick(0, static_cast<int>(recent.size()) - 1))];
                executor.execute(id, R"({"amount":1999})", [&](const WorkContext&) {
                    ++m_executions;
                    return WorkResult::success(R"({"charged":true})");
                });
                continue;
            }
            const std::string id = "order-" + std::to_string(m_next++);
            if (roll < 20) { // a worker that dies holding the lock: goes stale
                store.acquire(id, "", Millis(pick(2000, 5000)));
                continue;
            }
            const bool fails = roll < 30;
            const auto policy = static_cast<FailPolicy>(pick(0, 2));
            executor.execute(id, R"({"amount":1999})", [&](const WorkContext& ctx) {
                ++m_executions;
                for (int i = pick(3, 25); i > 0 && !ctx.leaseLost.stop_requested() && !m_stop; --i)
                    std::this_thread::sleep_for(Millis(100));
                if (fails)
                    return WorkResult::failure("gateway said no", policy);
                return WorkResult::success(R"({"charged":true,"amount":1999,"receipt":")" + id + "\"}");
            });
            recent.push_back(id);
            if (recent.size() > 50)
                recent.erase(recent.begin());
        } catch (const Error&) {
            sleepFor(Millis(1000)); // Redis away: the demo waits
        }
    }
}

} // namespace idem
