#include "scaledata.h"

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace idembench {

void loadScaleData(int n, const std::function<idem::Connection&(std::string_view key)>& connectionFor)
{
    const long long nowMs =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    const std::string now = std::to_string(nowMs), live = std::to_string(nowMs + 600'000),
                      gone = std::to_string(nowMs - 60'000);
    std::map<idem::Connection*, std::vector<std::vector<std::string>>> pending;
    const auto flush = [](idem::Connection& c, std::vector<std::vector<std::string>>& cmds) {
        std::vector<std::vector<std::string_view>> views;
        views.reserve(cmds.size());
        for (const auto& cmd : cmds)
            views.emplace_back(cmd.begin(), cmd.end());
        c.pipeline(views);
        cmds.clear();
    };
    for (int i = 0; i < n; ++i) {
        const std::string key = "scale:{order-" + std::to_string(i) + "}";
        idem::Connection& c = connectionFor(key);
        auto& cmds = pending[&c];
        const std::string token = "0123456789abcdef0123456789abcdef", fence = std::to_string(1795000000000000LL + i);
        const int kind = i % 100;
        if (kind < 60)
            cmds.push_back({"HSET", key, "state", "COMPLETED", "token", token, "fence", fence, "started_ms", now,
                            "lease_until_ms", now, "finished_ms", now, "response",
                            R"({"charged":true,"amount":1999,"currency":"EUR"})"});
        else if (kind < 70)
            cmds.push_back({"HSET", key, "state", "STARTED", "token", token, "fence", fence, "started_ms", now,
                            "lease_until_ms", live});
        else if (kind < 75)
            cmds.push_back({"HSET", key, "state", "STARTED", "token", token, "fence", fence, "started_ms", now,
                            "lease_until_ms", gone});
        else if (kind < 85)
            cmds.push_back({"HSET", key, "state", "FAILED", "token", token, "fence", fence, "started_ms", now,
                            "failure", kind % 2 ? "terminal" : "retryable", "error", "declined", "finished_ms", now});
        else if (kind < 95)
            cmds.push_back({"SET", key, R"({"status":"COMPLETED","response_body":"ok","started_at":1790000000})"});
        else if (kind < 98)
            cmds.push_back({"SET", key, "PROCESSING"});
        else if (kind < 99)
            cmds.push_back({"SET", key, R"({"status":)"});
        else
            cmds.push_back({"RPUSH", key, "x"});
        if (kind != 99) // one key in a hundred has no TTL
            cmds.push_back({"PEXPIRE", key, "86400000"});
        if (cmds.size() >= 10'000)
            flush(c, cmds);
    }
    for (auto& [c, cmds] : pending)
        if (!cmds.empty())
            flush(*c, cmds);
}

} // namespace idembench
