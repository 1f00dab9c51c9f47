// idemctl race: the race lab on the command line.
#include "cli.h"

#include "idem/redis/connection.h"
#include "idem/duration.h"
#include "idem/redis/localserver.h"
#include "idem/lab/racelab.h"

#include <charconv>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

namespace idemctl {

namespace {

const char* kRaceHelp = R"(usage: idemctl race [--strategy naive|setnx|watch|lua|all] [--workers W] [--events N]
                   [--duplicates D] [--crash-rate R] [--pause-rate R] [--lease DUR] [--seed S]
                   [--forced-interleaving] [--json] [--trace]

Fires N synthetic events, each delivered D times, at W concurrent workers through each strategy,
on a real Redis (a private redis-server unless --url names one; never IDEM_URL's), and counts what
happened from an independent ledger: executions, double executions, fenced effects, lost events.
  naive   GET then SET            setnx  SET NX PX only, no states
  watch   WATCH/GET/MULTI/EXEC    lua    idem's state machine with fencing numbers
--crash-rate: a worker dies after acquiring, before completing; the delivery comes back later.
--pause-rate: a worker stalls past its lease after acquiring (a GC pause), then carries on.
--forced-interleaving: two workers, one event: A reads, B reads, A writes, B writes.
--json: one object per strategy; --trace adds every worker's events.
)";

} // namespace

int cmdRace(const std::vector<std::string>& argv)
{
    Args args(argv, {"--strategy", "--workers", "--events", "--duplicates", "--crash-rate", "--pause-rate", "--seed",
                     "--lease"},
              {"--forced-interleaving", "--json", "--trace"});
    if (args.flag("--help")) {
        std::fputs(kRaceHelp, stdout);
        return Ok;
    }
    if (!args.positional().empty())
        throw UsageFailure{"unexpected argument '" + args.positional().front() + "'"};
    idem::Workload w;
    w.workers = number(args.value("--workers"), 8, 1, 256, "--workers");
    w.events = number(args.value("--events"), 50, 1, 1'000'000, "--events");
    w.duplicates = number(args.value("--duplicates"), 3, 1, 1000, "--duplicates");
    w.crashRate = number(args.value("--crash-rate"), 0.0, 0.0, 1.0, "--crash-rate");
    w.pauseRate = number(args.value("--pause-rate"), 0.0, 0.0, 1.0, "--pause-rate");
    w.seed = number<std::uint64_t>(args.value("--seed"), 1, 0, UINT64_MAX, "--seed");
    if (auto l = args.value("--lease"))
        w.lease = idem::parseDuration(*l);
    if (w.lease.count() < 20)
        throw UsageFailure{"--lease must be at least 20ms"};
    w.pause = w.lease * 3;            // a stall well past the lease
    w.redeliverAfter = w.lease + w.lease / 2;
    w.forcedInterleaving = args.flag("--forced-interleaving");
    const std::string which = args.value("--strategy").value_or("all");
    std::vector<idem::Strategy> strategies;
    if (which == "all")
        strategies = {idem::Strategy::Naive, idem::Strategy::SetNx, idem::Strategy::Watch, idem::Strategy::Lua};
    else if (auto s = idem::strategyFromString(which))
        strategies = {*s};
    else
        throw UsageFailure{"--strategy must be naive, setnx, watch, lua or all"};

    Global g = redisGlobalFrom(args);
    std::unique_ptr<idem::LocalServer> server;
    const idem::ConnectionOptions conn = serverOrPrivate(g, server, "race");
    w.keyNamespace = g.keyNamespace == "idempotency" ? "racelab" : g.keyNamespace;

    idem::Connection(conn).connect(); // a clear error before any output
    if (server == nullptr) // said before anything is written there (the demo says it too)
        std::fprintf(stderr, "idemctl race: writing to %s, under %s: (each key expires within 10 minutes)\n",
                     conn.describe().c_str(), w.keyNamespace.c_str());
    const bool json = args.flag("--json");
    if (!json)
        std::printf("%-7s %7s %10s %10s %7s %7s %5s %10s %8s %8s\n", "", "events", "deliveries", "executions",
                    "double", "fenced", "lost", "per second", "p50 ms", "p99 ms");
    for (auto s : strategies) {
        const idem::RaceResult r = idem::runRace(conn, s, w);
        if (json) {
            nlohmann::json j = {{"strategy", idem::nameOf(r.strategy)},
                                {"events", r.events},
                                {"deliveries", r.deliveries},
                                {"executions", r.executions},
                                {"double_executions", r.doubleExecutions},
                                {"fenced", r.fenced},
                                {"lost", r.lost},
                                {"throughput_per_s", r.throughputPerS},
                                {"p50_ms", r.p50Ms},
                                {"p99_ms", r.p99Ms},
                                {"seed", w.seed}};
            if (args.flag("--trace")) {
                nlohmann::json t = nlohmann::json::array();
                for (const auto& e : r.trace)
                    t.push_back({{"worker", e.worker}, {"event", e.eventId}, {"kind", idem::nameOf(e.kind)},
                                 {"server_ms", e.serverMs}, {"fence", e.fence}});
                j["trace"] = t;
            }
            std::printf("%s\n", j.dump().c_str());
        } else {
            std::printf("%-7s %7d %10d %10d %7d %7d %5d %10.0f %8.1f %8.1f\n", std::string(idem::nameOf(r.strategy)).c_str(),
                        r.events, r.deliveries, r.executions, r.doubleExecutions, r.fenced, r.lost, r.throughputPerS,
                        r.p50Ms, r.p99Ms);
            if (args.flag("--trace"))
                for (const auto& e : r.trace)
                    std::printf("    %13lld  worker %-3d %-8s %-11s %s\n", static_cast<long long>(e.serverMs), e.worker,
                                e.eventId.c_str(), std::string(idem::nameOf(e.kind)).c_str(),
                                e.fence ? std::to_string(e.fence).c_str() : "");
        }
        std::fflush(stdout);
    }
    return Ok;
}

} // namespace idemctl
