// idemctl audit: the namespace's audit stream - every operator action, from every tool and desktop.
#include "cli.h"

#include "idem/duration.h"
#include "idem/engine/store.h"
#include "idem/redis/pool.h"
#include "idem/redis/reply.h"

#include <nlohmann/json.hpp>

#include <cstdio>

namespace idemctl {

int cmdAudit(const std::vector<std::string>& argv)
{
    Args args(argv, {"--since", "--by", "--count"}, {"--json"});
    if (args.flag("--help")) {
        std::puts("usage: idemctl audit [--since DUR] [--by WHO] [--count N] [--json]\n\n"
                  "The operator actions kept in the store (the stream NAMESPACE:audit, capped at about\n"
                  "10000 entries), newest first: when (server time), what, which key, who, why, from\n"
                  "where (tool@host) and what the key was. Every purge and force-fail adds one, from\n"
                  "idemctl and from the console alike.");
        return Ok;
    }
    if (!args.positional().empty())
        throw UsageFailure{"audit takes no arguments"};
    const auto count = number<std::size_t>(args.value("--count"), 100, 1, 10000, "--count");
    std::optional<std::int64_t> sinceMs;
    if (auto s = args.value("--since"))
        sinceMs = idem::parseDuration(*s).count();
    const auto by = args.value("--by");
    const Global g = redisGlobalFrom(args);
    idem::ConnectionPool pool(g.connection, 1);
    idem::StoreOptions so;
    so.keyNamespace = g.keyNamespace;
    idem::Store store(pool, so);
    auto entries = store.audit(count);
    std::int64_t nowMs = 0; // --since counts back from the server's clock, as the entries' times do
    if (sinceMs) {
        auto conn = pool.acquire();
        nowMs = idem::reply::timeMs(conn->checked({"TIME"}).get());
    }
    nlohmann::json out = nlohmann::json::array();
    for (const auto& e : entries) {
        if (sinceMs && e.atMs < nowMs - *sinceMs)
            continue;
        if (by && e.by != *by)
            continue;
        if (args.flag("--json")) {
            out.push_back({{"id", e.id}, {"at_ms", e.atMs}, {"action", e.action}, {"key", e.key}, {"by", e.by},
                           {"why", e.why}, {"via", e.via}, {"was", e.was}});
            continue;
        }
        std::printf("%s  %-20s %s  by %s via %s (was %s): %s\n", utcTime(e.atMs).c_str(), printable(e.action).c_str(),
                    printable(e.key).c_str(), printable(e.by).c_str(), printable(e.via).c_str(), printable(e.was).c_str(),
                    printable(e.why).c_str());
    }
    if (args.flag("--json"))
        std::printf("%s\n", out.dump().c_str());
    return Ok;
}

} // namespace idemctl
