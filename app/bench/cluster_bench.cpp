// idem-cluster-bench: a snapshot of a Redis Cluster against the same data on one server, in one
// run. N keys (default 1,000,000) are loaded into a private redis-server and into a private
// cluster of P primaries (default 3); the monitor's whole snapshot (SCAN COUNT 500 + classifying
// every key) is timed on each, alternately, R rounds. On the cluster the Scanner reads the
// primaries in parallel, one connection and thread each. Goal: cluster time <= 0.75 x one server's.
#include "scaledata.h"

#include "idem/errors.h"
#include "idem/monitor/scanner.h"
#include "idem/redis/cluster.h"
#include "idem/redis/localcluster.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Pass {
    double seconds = 0;
    std::size_t records = 0;
};

Pass snapshot(const idem::ConnectionOptions& seed)
{
    idem::MonitorOptions mo;
    mo.keyNamespace = "scale";
    idem::Scanner scanner(seed, mo);
    const auto t0 = std::chrono::steady_clock::now();
    Pass p;
    scanner.open();
    while (!scanner.done())
        p.records += scanner.next().records();
    p.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return p;
}

bool parseInt(const char* text, int least, int most, int* out)
{
    const std::size_t len = std::strlen(text);
    const auto [end, ec] = std::from_chars(text, text + len, *out);
    return ec == std::errc() && end == text + len && *out >= least && *out <= most;
}

} // namespace

int main(int argc, char** argv)
{
    int keys = 1'000'000, primaries = 3, rounds = 3;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        int* target = a == "--keys" ? &keys : a == "--primaries" ? &primaries : a == "--rounds" ? &rounds : nullptr;
        const int least = a == "--keys" ? 1000 : a == "--primaries" ? 2 : 1;
        const int most = a == "--keys" ? 50'000'000 : a == "--primaries" ? 16 : 100;
        if (a == "--help") {
            std::puts("usage: idem-cluster-bench [--keys N] [--primaries P] [--rounds R]\n\n"
                      "Loads N keys (default 1000000) into a private redis-server and into a private Redis\n"
                      "Cluster of P primaries (default 3), then times the monitor's whole snapshot of each,\n"
                      "alternately, R rounds (default 3). Goal: cluster <= 0.75 x one server.");
            return 0;
        }
        if (!target || i + 1 >= argc) {
            std::fprintf(stderr, "idem-cluster-bench: unknown argument '%s' (see --help)\n", a.c_str());
            return 64;
        }
        if (!parseInt(argv[++i], least, most, target)) {
            std::fprintf(stderr, "idem-cluster-bench: %s takes a whole number from %d to %d, not '%s'\n", a.c_str(),
                         least, most, argv[i]);
            return 64;
        }
    }
    try {
        idem::LocalServer single;
        idem::LocalCluster cluster(primaries);
        const auto t0 = std::chrono::steady_clock::now();
        {
            idem::Connection one(single.connectionOptions());
            idembench::loadScaleData(keys, [&](std::string_view) -> idem::Connection& { return one; });
            std::vector<std::unique_ptr<idem::Connection>> nodes;
            for (int i = 0; i < primaries; ++i)
                nodes.push_back(std::make_unique<idem::Connection>(cluster.node(i)));
            idembench::loadScaleData(keys, [&](std::string_view key) -> idem::Connection& {
                // LocalCluster's ranges: node i serves 16384*i/P .. 16384*(i+1)/P - 1
                const int slot = idem::hashSlot(key);
                int owner = 0;
                while (slot > 16384 * (owner + 1) / primaries - 1)
                    ++owner;
                return *nodes[static_cast<std::size_t>(owner)];
            });
        }
        std::printf("idem-cluster-bench: %d keys loaded into one redis-server and into a cluster of %d primaries "
                    "in %.1f s; %u CPUs\n\n",
                    keys, primaries,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                    std::thread::hardware_concurrency());
        std::printf("%-6s %14s %14s %8s\n", "round", "one server s", "cluster s", "ratio");
        std::vector<double> ratios;
        for (int r = 0; r < rounds; ++r) {
            const Pass a = snapshot(single.connectionOptions());
            const Pass b = snapshot(cluster.node(0));
            if (a.records != b.records)
                throw idem::Error("the snapshots differ: " + std::to_string(a.records) + " records on one server, " +
                                  std::to_string(b.records) + " on the cluster");
            ratios.push_back(b.seconds / a.seconds);
            std::printf("%-6d %14.2f %14.2f %8.2f\n", r + 1, a.seconds, b.seconds, ratios.back());
        }
        std::sort(ratios.begin(), ratios.end());
        const double median = ratios[ratios.size() / 2];
        std::printf("\ncluster snapshot / one-server snapshot (median of %d, %zu records each): %.2f (%.2f-%.2f)   "
                    "goal <= 0.75 %s\n",
                    rounds, static_cast<std::size_t>(keys), median, ratios.front(), ratios.back(),
                    median <= 0.75 ? "met" : "MISSED");
        if (std::thread::hardware_concurrency() < static_cast<unsigned>(primaries) + 1)
            std::printf("(this machine has fewer CPUs than primaries + the client: the primaries' SCANs share "
                        "CPUs, which caps what parallel reading can gain)\n");
        return 0;
    } catch (const idem::Error& e) {
        std::fprintf(stderr, "idem-cluster-bench: %s\n", e.what());
        return 1;
    }
}
