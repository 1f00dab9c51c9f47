// idem-bench: idem's throughput against redis-benchmark, measured in one run on one redis-server.
//
// (a) Executor::execute() on one connection, new ids (acquire + complete = 2 round trips) and
//     duplicates (1 round trip), per round trip, versus `redis-benchmark -c 1` running EVALSHA of a
//     one-key script. Goal: >= 0.8.
// (b) Store::acquireBatch() of 16 ids per round trip versus `redis-benchmark -c 1 -P 16` running
//     the same EVALSHA. Goal: >= 0.6.
#include "idem/errors.h"
#include "idem/executor.h"
#include "idem/localserver.h"
#include "idem/scripts.h"
#include "idem/store.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Config {
    std::string url;
    int requests = 5000;
    int batch = 16;
    int rounds = 5;
};

double seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

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

// requests per second from redis-benchmark --csv: "test","rps",... then "EVALSHA ...","9699.32",...
double redisBenchmark(const idem::ConnectionOptions& o, const std::string& sha, int n, int pipeline)
{
    std::string cmd = "redis-benchmark -h " + o.host + " -p " + std::to_string(o.port) + " -c 1 -n " +
                      std::to_string(n) + " -r 1000000 --csv";
    if (!o.password.empty())
        cmd += " -a '" + o.password + "'";
    if (pipeline > 1)
        cmd += " -P " + std::to_string(pipeline);
    cmd += " EVALSHA " + sha + " 1 bench:{__rand_int__} v 2>/dev/null";
    const std::string out = capture(cmd);
    const auto line = out.find("\"EVALSHA");
    if (line == std::string::npos)
        throw idem::Error("redis-benchmark gave no result (is redis-tools installed?): " + out);
    const auto comma = out.find("\",\"", line);
    return std::atof(out.c_str() + comma + 3);
}

template <typename Samples>
void row(const char* name, const Samples& samples, double rtPerOp, double goal)
{
    std::vector<double> ratios, ops, refs;
    for (const auto& sm : samples) {
        ratios.push_back(sm.ops * rtPerOp / sm.reference);
        ops.push_back(sm.ops);
        refs.push_back(sm.reference);
    }
    auto median = [](std::vector<double> v) {
        std::sort(v.begin(), v.end());
        return v[v.size() / 2];
    };
    const double ratio = median(ratios), op = median(ops);
    std::printf("%-46s %10.0f %14.0f %14.0f %7.2f   ", name, op, op * rtPerOp, median(refs), ratio);
    if (goal > 0)
        std::printf(">= %.2f %s\n", goal, ratio >= goal ? "met" : "MISSED");
    else
        std::printf("(info)\n");
}

} // namespace

int main(int argc, char** argv)
{
    Config cfg;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--url" && i + 1 < argc)
            cfg.url = argv[++i];
        else if (a == "--requests" && i + 1 < argc)
            cfg.requests = std::max(1000, std::atoi(argv[++i]));
        else if (a == "--rounds" && i + 1 < argc)
            cfg.rounds = std::max(1, std::atoi(argv[++i]));
        else if (a == "--help") {
            std::puts("usage: idem-bench [--url redis://host:port/db] [--requests N] [--rounds R]\n\nWithout --url it "
                      "starts a private redis-server. Needs redis-benchmark (redis-tools).");
            return 0;
        } else {
            std::fprintf(stderr, "idem-bench: unknown argument '%s' (see --help)\n", a.c_str());
            return 64;
        }
    }
    try {
        std::unique_ptr<idem::LocalServer> server;
        idem::ConnectionOptions o;
        if (cfg.url.empty()) {
            server = std::make_unique<idem::LocalServer>();
            o = server->connectionOptions();
        } else {
            o = idem::ConnectionOptions::fromUrl(cfg.url);
        }
        idem::Connection admin(o);
        const std::string sha = idem::reply::str(
            admin.checked({"SCRIPT", "LOAD", "return redis.call('HSET', KEYS[1], 'state', ARGV[1])"}).get());
        const std::string version = [&] {
            const std::string info = idem::reply::str(admin.checked({"INFO", "server"}).get());
            const auto p = info.find("redis_version:");
            return p == std::string::npos ? std::string("?") : info.substr(p + 14, info.find('\r', p) - p - 14);
        }();
        std::printf("idem-bench: redis-server %s at %s%s, 1 connection, %d rounds of %d requests\n\n",
                    version.c_str(), o.describe().c_str(), server ? " (private)" : "", cfg.rounds, cfg.requests);

        idem::ConnectionPool pool(o, 2);
        idem::StoreOptions so;
        so.keyNamespace = "bench-" + idem::newToken().substr(0, 8);
        idem::Store store(pool, so);
        idem::Executor ex(store);
        auto work = [](const idem::WorkContext& ctx) { return idem::WorkResult::success("ok " + ctx.id); };
        // warm up: connections, script load
        for (int i = 0; i < 200; ++i)
            ex.execute("warm-" + std::to_string(i), "", work);

        // The machine is shared by redis-server, this client and redis-benchmark: each round measures
        // a reference right before idem, and the report takes the median of the rounds' ratios.
        struct Sample {
            double ops, reference;
        };
        std::vector<Sample> rawRt, fresh, dups, batch;
        int next = 0;
        for (int round = 0; round < cfg.rounds; ++round) {
            const double ref1 = redisBenchmark(o, sha, cfg.requests, 1);
            auto r0 = Clock::now();
            for (int i = 0; i < cfg.requests; ++i) {
                const std::string k = "raw:{" + std::to_string(i) + "}";
                admin.command({"EVALSHA", sha, "1", k, "v"});
            }
            auto t0 = Clock::now();
            const int base = next;
            for (int i = 0; i < cfg.requests; ++i)
                if (ex.execute("id-" + std::to_string(next++), "", work).kind != idem::OutcomeKind::Executed)
                    throw idem::Error("execute did not execute a new id");
            auto t1 = Clock::now();
            for (int i = 0; i < cfg.requests; ++i)
                if (ex.execute("id-" + std::to_string(base + i), "", work).kind != idem::OutcomeKind::Replayed)
                    throw idem::Error("execute did not replay a duplicate");
            auto t2 = Clock::now();
            rawRt.push_back({cfg.requests / seconds(r0, t0), ref1});
            fresh.push_back({cfg.requests / seconds(t0, t1), ref1});
            dups.push_back({cfg.requests / seconds(t1, t2), ref1});

            const int batches = std::max(1, cfg.requests * 4 / cfg.batch);
            const double refP = redisBenchmark(o, sha, batches * cfg.batch, cfg.batch);
            std::vector<idem::AcquireRequest> rq(static_cast<std::size_t>(cfg.batch));
            auto t3 = Clock::now();
            for (int b = 0; b < batches; ++b) {
                for (int k = 0; k < cfg.batch; ++k)
                    rq[static_cast<std::size_t>(k)].id = "batch-" + std::to_string(round) + "-" +
                                                         std::to_string(b * cfg.batch + k);
                for (const auto& r : store.acquireBatch(rq))
                    if (r.status != idem::AcquireStatus::Acquired)
                        throw idem::Error("batch acquire did not acquire a new id");
            }
            auto t4 = Clock::now();
            batch.push_back({batches * cfg.batch / seconds(t3, t4), refP});
        }

        std::printf("%-46s %10s %14s %14s %7s   %s\n", "measurement (median of rounds)", "ops/s",
                    "round trips/s", "reference/s", "ratio", "goal");
        row("hiredis, blocking EVALSHA of the same script", rawRt, 1, 0.0);
        row("(a) execute(), new ids (2 round trips each)", fresh, 2, 0.8);
        row("(a) execute(), duplicates (1 round trip each)", dups, 1, 0.8);
        row("(b) acquireBatch, 16 ids in 1 round trip", batch, 1, 0.6);
        std::printf("\nreference (a): redis-benchmark -c 1 EVALSHA <one-key HSET script>, measured each round\n");
        std::printf("reference (b): redis-benchmark -c 1 -P %d, the same script, measured each round\n", cfg.batch);
        std::printf("ratio: idem's round trips per second (for b: ids per second) / reference requests per "
                    "second;\nthe hiredis row is informational: what a blocking client gets on this machine.\n");
        return 0;
    } catch (const idem::Error& e) {
        std::fprintf(stderr, "idem-bench: %s\n", e.what());
        return 1;
    }
}
