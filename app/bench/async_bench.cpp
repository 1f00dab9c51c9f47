// idem-async-bench: Executor::submit() against its peers and redis-benchmark, in one run, on one
// private redis-server.
//
//  - idem with C concurrent callers (16, 64): C chains of submit(), each submitting its next
//    call from the completion of the last, fresh ids then the same ids again (duplicates);
//  - the same with @node-idempotency/core (node-redis) and AWS Powertools TypeScript idempotency
//    (cache persistence layer, @redis/client), installed with npm into a temporary directory;
//  - redis-benchmark -c 16 -P 16 running EVALSHA of a one-key script: the reference for script
//    calls per second;
//  - one thread submitting 100 000 executions with 64 in flight: p50/p99 latency; and the heap
//    each in-flight execution holds.
#include "idem/engine/asyncstore.h"
#include "idem/engine/executor.h"
#include "idem/errors.h"
#include "idem/redis/asyncconnection.h"
#include "idem/redis/localserver.h"
#include "peers.h"

#include <malloc.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Config {
    int calls = 20000;      // per measurement
    int latencyCalls = 100000;
    // One connection, not AsyncPool's default of one per hardware thread: on the 2-CPU machine the
    // figures come from, redis-server needs one CPU, and a second I/O thread only competes for it.
    int connections = 1;
    bool peers = true;
    std::vector<int> concurrency = {16, 64};
};

std::string capture(const std::string& cmd)
{
    std::string out;
    FILE* p = ::popen(cmd.c_str(), "r");
    if (!p)
        return out;
    std::array<char, 4096> buf{};
    while (std::fgets(buf.data(), buf.size(), p))
        out += buf.data();
    ::pclose(p);
    return out;
}

double redisBenchmark(const idem::ConnectionOptions& o, const std::string& sha, int n)
{
    const std::string cmd = "redis-benchmark -h " + o.host + " -p " + std::to_string(o.port) + " -c 16 -P 16 -n " +
                            std::to_string(n) + " -r 1000000 --csv EVALSHA " + sha +
                            " 1 bench:{__rand_int__} v 2>/dev/null";
    const std::string out = capture(cmd);
    const auto line = out.find("\"EVALSHA");
    if (line == std::string::npos)
        throw idem::Error("redis-benchmark gave no result (is redis-tools installed?): " + out);
    return std::atof(out.c_str() + out.find("\",\"", line) + 3);
}

// C chains of submit(): each completion submits the chain's next id; calls per second
double chains(idem::Executor& ex, const std::vector<std::string>& ids, int concurrency, idem::OutcomeKind want)
{
    std::mutex m;
    std::condition_variable cv;
    std::atomic<std::size_t> next{0}, done{0}, wrong{0};
    const auto work = [](const idem::WorkContext& ctx) { return idem::WorkResult::success("ok " + ctx.id); };
    std::function<void()> step = [&] {
        const std::size_t i = next++;
        if (i >= ids.size())
            return;
        ex.submit(ids[i], "", work, [&](idem::Outcome o) {
            if (o.kind != want)
                ++wrong;
            step(); // first: once the last is counted, this function returns
            if (++done == ids.size()) {
                std::lock_guard lock(m);
                cv.notify_all();
            }
        });
    };
    const auto t0 = Clock::now();
    for (int c = 0; c < concurrency; ++c)
        step();
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return done == ids.size(); });
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (wrong)
        throw idem::Error(std::to_string(wrong.load()) + " calls were not " + std::string(idem::nameOf(want)));
    return static_cast<double>(ids.size()) / s;
}

// one thread submitting n executions, at most `inFlight` at a time: latency percentiles (µs)
std::pair<double, double> latency(idem::Executor& ex, int n, int inFlight, const std::string& prefix)
{
    std::mutex m;
    std::condition_variable cv;
    int running = 0;
    std::vector<double> us(static_cast<std::size_t>(n));
    const auto work = [](const idem::WorkContext& ctx) { return idem::WorkResult::success("ok " + ctx.id); };
    for (int i = 0; i < n; ++i) {
        {
            std::unique_lock lock(m);
            cv.wait(lock, [&] { return running < inFlight; });
            ++running;
        }
        const auto t0 = Clock::now();
        ex.submit(prefix + std::to_string(i), "", work, [&, t0, i](idem::Outcome) {
            us[static_cast<std::size_t>(i)] = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
            std::lock_guard lock(m);
            --running;
            cv.notify_all();
        });
    }
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return running == 0; });
    std::sort(us.begin(), us.end());
    return {us[us.size() / 2], us[us.size() * 99 / 100]};
}

// heap bytes per execution in flight: n submitted, each holding its work until all have acquired
double bytesPerInFlight(idem::Executor& ex, int n, const std::string& prefix)
{
    std::mutex m;
    std::vector<std::function<void()>> parked;
    std::atomic<int> completed{0};
    idem::ExecuteOptions o;
    o.runOn = [&](std::function<void()> task) {
        std::lock_guard lock(m);
        parked.push_back(std::move(task));
    };
    const auto work = [](const idem::WorkContext& ctx) { return idem::WorkResult::success("ok " + ctx.id); };
    std::vector<std::string> ids;
    for (int i = 0; i < n; ++i)
        ids.push_back(prefix + std::to_string(i));
    parked.reserve(static_cast<std::size_t>(n));
    const auto before = ::mallinfo2().uordblks;
    for (const auto& id : ids)
        ex.submit(id, "", work, [&](idem::Outcome) { ++completed; }, o);
    while (true) {
        std::lock_guard lock(m);
        if (parked.size() == static_cast<std::size_t>(n))
            break;
    }
    const auto during = ::mallinfo2().uordblks;
    for (auto& task : parked)
        task();
    while (completed < n)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return (static_cast<double>(during) - static_cast<double>(before)) / n;
}

struct PeerResult {
    std::string lib;
    int concurrency = 0;
    std::string kind;
    double rps = 0;
};

// Installs the peers with npm into a temporary directory and runs them; empty (and says why on
// stdout) when npm or node is missing or the install fails.
std::vector<PeerResult> runPeers(int port, const Config& cfg)
{
    if (capture("command -v npm >/dev/null 2>&1 && command -v node >/dev/null 2>&1 && echo yes").empty()) {
        std::printf("peers: skipped (npm or node is not installed)\n");
        return {};
    }
    const char* tmp = std::getenv("TMPDIR");
    std::string dirPattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/idem-async-bench.XXXXXX";
    std::vector<char> pattern(dirPattern.begin(), dirPattern.end());
    pattern.push_back('\0');
    if (!::mkdtemp(pattern.data()))
        throw idem::Error("cannot make a temporary directory");
    const std::filesystem::path dir(pattern.data());
    std::ofstream(dir / "package.json") << idembench::kPeersPackageJson;
    std::ofstream(dir / "bench.mjs") << idembench::kPeersBenchMjs;
    std::printf("peers: npm install of the pinned packages into %s (temporary, removed after) ...\n",
                dir.c_str());
    std::fflush(stdout);
    std::vector<PeerResult> out;
    const std::string q = "'" + dir.string() + "'";
    if (std::system(("cd " + q + " && npm install --no-audit --no-fund --loglevel=error >npm.log 2>&1").c_str()) != 0) {
        std::printf("peers: skipped (npm install failed; see its log: %s/npm.log)\n", dir.c_str());
        return out;
    }
    std::string conc;
    for (int c : cfg.concurrency)
        conc += (conc.empty() ? "" : ",") + std::to_string(c);
    const std::string lines = capture("cd " + q + " && BENCH_REDIS_PORT=" + std::to_string(port) +
                                      " BENCH_CALLS=" + std::to_string(cfg.calls) + " BENCH_CONCURRENCY=" + conc +
                                      " node bench.mjs 2>node.log");
    std::size_t from = 0;
    while (from < lines.size()) {
        const auto end = lines.find('\n', from);
        const std::string line = lines.substr(from, end == std::string::npos ? std::string::npos : end - from);
        from = end == std::string::npos ? lines.size() : end + 1;
        const auto j = nlohmann::json::parse(line, nullptr, false);
        if (j.is_object())
            out.push_back({j.value("lib", ""), j.value("concurrency", 0), j.value("kind", ""), j.value("rps", 0.0)});
    }
    if (out.empty())
        std::printf("peers: no figures (node's log: %s/node.log)\n", dir.c_str());
    else
        std::filesystem::remove_all(dir);
    return out;
}

} // namespace

int main(int argc, char** argv)
{
    Config cfg;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const auto number = [&](int& v, int least) {
            const std::string_view t = i + 1 < argc ? argv[++i] : "";
            const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
            if (ec != std::errc() || end != t.data() + t.size() || v < least) {
                std::fprintf(stderr, "idem-async-bench: %s takes a whole number from %d\n", a.c_str(), least);
                std::exit(64);
            }
        };
        if (a == "--calls")
            number(cfg.calls, 100);
        else if (a == "--latency-calls")
            number(cfg.latencyCalls, 100);
        else if (a == "--connections")
            number(cfg.connections, 1);
        else if (a == "--no-peers")
            cfg.peers = false;
        else if (a == "--help") {
            std::puts("usage: idem-async-bench [--calls N] [--latency-calls N] [--connections N] [--no-peers]\n\n"
                      "Starts a private redis-server; measures Executor::submit() with 16 and 64 concurrent\n"
                      "callers (fresh ids, duplicates), its peers (npm install into a temporary directory;\n"
                      "skipped without npm), redis-benchmark -c 16 -P 16 of a one-key script, and one thread\n"
                      "submitting --latency-calls executions with 64 in flight. Needs redis-benchmark.\n"
                      "--connections: the AsyncPool's size (default 1: the server shares this machine).");
            return 0;
        } else {
            std::fprintf(stderr, "idem-async-bench: unknown argument '%s' (see --help)\n", a.c_str());
            return 64;
        }
    }
    try {
        idem::LocalServer server;
        const idem::ConnectionOptions o = server.connectionOptions();
        idem::Connection admin(o);
        const std::string sha = idem::reply::str(
            admin.checked({"SCRIPT", "LOAD", "return redis.call('HSET', KEYS[1], 'state', ARGV[1])"}).get());
        idem::ConnectionPool blocking(o, 1);
        idem::StoreOptions so;
        so.keyNamespace = "abench";
        idem::Store store(blocking, so);
        idem::AsyncPool pool(o, static_cast<std::size_t>(cfg.connections)); // 0: one per hardware thread
        idem::AsyncStore async(pool, so);
        idem::Executor ex(store, async);
        std::printf("idem-async-bench: private redis-server at %s, AsyncPool of %zu connection(s), %d calls "
                    "per measurement\n\n",
                    o.describe().c_str(), pool.size(), cfg.calls);

        const auto ids = [&](const std::string& p, int n) {
            std::vector<std::string> v;
            for (int i = 0; i < n; ++i)
                v.push_back(p + std::to_string(i));
            return v;
        };
        chains(ex, ids("warm-", 2000), 16, idem::OutcomeKind::Executed);

        // This machine is shared and its speed drifts: idem is measured right before and right after
        // the peers, and redis-benchmark before and after all of them; each figure is the mean of
        // its two runs (both are printed).
        const int refCalls = std::max(50000, cfg.calls * 20);
        const double refBefore = redisBenchmark(o, sha, refCalls);
        std::map<std::pair<int, std::string>, std::vector<double>> idemRuns;
        const auto idemRound = [&](const std::string& tag) {
            for (const int c : cfg.concurrency) {
                const auto v = ids(tag + std::to_string(c) + "-", cfg.calls);
                idemRuns[{c, "fresh"}].push_back(chains(ex, v, c, idem::OutcomeKind::Executed));
                idemRuns[{c, "duplicates"}].push_back(chains(ex, v, c, idem::OutcomeKind::Replayed));
            }
        };
        idemRound("a");
        const std::vector<PeerResult> peers = cfg.peers ? runPeers(server.port(), cfg) : std::vector<PeerResult>{};
        if (!cfg.peers)
            std::printf("peers: skipped (--no-peers)\n");
        idemRound("b");
        const double perInFlight = bytesPerInFlight(ex, 10000, "mem-");
        const auto [p50, p99] = latency(ex, cfg.latencyCalls, 64, "lat-");
        const double refAfter = redisBenchmark(o, sha, refCalls);
        const double reference = (refBefore + refAfter) / 2;
        std::map<std::pair<int, std::string>, double> idemRps;
        for (const auto& [key, runs] : idemRuns)
            idemRps[key] = (runs.front() + runs.back()) / 2;

        std::printf("\n%-42s %8s %-11s %10s\n", "calls/s", "callers", "ids", "calls/s");
        for (const auto& [key, rps] : idemRps)
            std::printf("%-42s %8d %-11s %10.0f   (%.0f before the peers, %.0f after)\n", "idem Executor::submit()",
                        key.first, key.second.c_str(), rps, idemRuns[key].front(), idemRuns[key].back());
        for (const auto& p : peers)
            std::printf("%-42s %8d %-11s %10.0f\n", p.lib.c_str(), p.concurrency, p.kind.c_str(), p.rps);
        std::printf("%-42s %8d %-11s %10.0f   (%.0f first, %.0f last)\n", "redis-benchmark -c 16 -P 16 EVALSHA (1 key)",
                    16, "script", reference, refBefore, refAfter);

        if (!peers.empty()) {
            std::printf("\n%-42s %8s %-11s %10s %8s\n", "idem / best peer", "callers", "ids", "ratio", "goal");
            for (const auto& [key, rps] : idemRps) {
                const PeerResult* best = nullptr;
                for (const auto& p : peers)
                    if (p.concurrency == key.first && p.kind == key.second && (!best || p.rps > best->rps))
                        best = &p;
                if (best)
                    std::printf("%-42s %8d %-11s %10.2f %8s %s\n", ("vs " + best->lib).c_str(), key.first,
                                key.second.c_str(), rps / best->rps, ">= 1.5", rps / best->rps >= 1.5 ? "met" : "MISSED");
            }
        }
        std::printf("\n%-42s %8s %-11s %10s %8s\n", "idem id steps/s / redis-benchmark calls/s", "callers", "ids", "ratio",
                    "goal");
        for (const auto& [key, rps] : idemRps) {
            const double scripts = rps * (key.second == "fresh" ? 2 : 1); // acquire (+ complete)
            std::printf("%-42s %8d %-11s %10.2f %8s %s\n", "", key.first, key.second.c_str(), scripts / reference,
                        ">= 0.5", scripts / reference >= 0.5 ? "met" : "MISSED");
        }
        std::printf("\none thread submitting %d executions, 64 in flight: p50 %.0f us, p99 %.0f us\n",
                    cfg.latencyCalls, p50, p99);
        std::printf("heap per execution in flight (10 000 parked in their work): %.0f bytes\n", perInFlight);
        std::printf("\nid steps: acquire + complete (2) per fresh call, acquire (1) per duplicate; steps queued\n"
                    "together go to Redis as one script call of many ids. Work runs inline on the I/O thread;\n"
                    "each completion submits its caller's next call.\n");
        return 0;
    } catch (const idem::Error& e) {
        std::fprintf(stderr, "idem-async-bench: %s\n", e.what());
        return 1;
    }
}
