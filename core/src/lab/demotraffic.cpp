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
    std::vector<std::vector<std::string>> all = cmds;
    for (auto& cmd : peerRecords(nowS))
        all.push_back(std::move(cmd));
    std::vector<std::vector<std::string_view>> views;
    for (const auto& cmd : all)
        views.emplace_back(cmd.begin(), cmd.end());
    c.pipeline(views);
}

// Records as the libraries services run today write them (tests/data/peers holds what they really
// wrote), under their own key shapes: the console reads each as its library means it.
std::vector<std::vector<std::string>> DemoTraffic::peerRecords(std::int64_t nowS)
{
    const std::string exp = std::to_string(nowS + 3600), liveMs = std::to_string(nowS * 1000 + 240'000);
    const std::string deadMs = std::to_string(nowS * 1000 - 90'000), gone = std::to_string(nowS - 5);
    return {
        // AWS Powertools (TypeScript): a live lock, an orphan, one written without a Lambda
        // context, a completed result, one past its expiration; and its takeover mutex
        {"SET", "checkout-fn#HXoPuS989n9jdP6e7H2ySg==",
         R"({"status":"INPROGRESS","expiration":)" + exp + R"(,"in_progress_expiration":)" + liveMs + "}", "EX", "3600"},
        {"SET", "checkout-fn#rmM7Ulp2xniMNkd1SgKDKw==",
         R"({"status":"INPROGRESS","expiration":)" + exp + R"(,"in_progress_expiration":)" + deadMs + "}", "EX", "3600"},
        {"SET", "checkout-fn#0qh8uRrnMD0JXCVHZNK0nA==", R"({"status":"INPROGRESS","expiration":)" + exp + "}", "EX",
         "3600"},
        {"SET", "checkout-fn#w2X6A1TlNBH2kQbDV2cefQ==",
         R"({"status":"COMPLETED","expiration":)" + exp + R"(,"data":{"orderId":"o-7","charged":1250,"currency":"EUR"}})",
         "EX", "3600"},
        {"SET", "checkout-fn#5tG4z4xZeddkLdvQCT6dcg==",
         R"({"status":"COMPLETED","expiration":)" + gone + R"(,"data":{"orderId":"o-8"}})", "EX", "600"},
        {"SET", "checkout-fn#rmM7Ulp2xniMNkd1SgKDKw==:lock", "true", "EX", "600"},
        // AWS Powertools (Python)
        {"SET", "billing.app.handler#6775d2c92fdf7044223899b6dd8c2f4a",
         R"({"data": "{\"invoice\": \"inv-31\", \"total\": 99}", "status": "COMPLETED", "expiration": )" + exp + "}",
         "EX", "3600"},
        // @node-idempotency/core: an in-progress request (no lease) and a stored error
        {"SET", "node-idempotency:POST:/orders:5f1c-in-flight",
         R"({"status":"IN_PROGRESS","fingerPrint":"ec426f4f8238738fd2db16e71d202108b5a33e174868495252be72ab5330c400"})",
         "PX", "86400000"},
        {"SET", "node-idempotency:POST:/orders:5f1c-declined",
         R"({"status":"COMPLETE","fingerPrint":"ec42","response":{"additional":{"statusCode":402},"error":{"message":"card declined"}}})",
         "PX", "86400000"},
        // express-idempotency: a request still in progress, and one answered
        {"SET", "7d9e0f1a-express-in-flight",
         R"({"request":{"body":{"orderId":"ex-1"},"headers":{"content-type":"application/json"},"method":"POST","query":{},"url":"/orders"}})",
         "EX", "86400"},
        {"SET", "7d9e0f1a-express-done",
         R"({"request":{"body":{"orderId":"ex-2"},"method":"POST","query":{},"url":"/orders"},"response":{"statusCode":201,"body":"{\"orderId\":\"ex-2\",\"charged\":1250}","headers":{"content-type":"application/json"}}})",
         "EX", "86400"},
        // idempotent-request (Ruby): a lock held for 20 minutes, and a stored response
        {"SET", "idempotency_keys:lock:refund-9", std::to_string(nowS - 1200) + ".25", "EX", "86400"},
        {"SET", "idempotency_keys:refund-8",
         R"({":status":201,":headers":{"content-type":"application/json"},":response":["{\"refund\":\"r-8\"}"]})",
         "EX", "86400"},
    };
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
