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
    int requests = 20000;
    int batch = 16;
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

void row(const char* name, double ops, double rtPerOp, double reference, double goal)
{
    const double rts = ops * rtPerOp;
    const double ratio = rts / reference;
    std::printf("%-44s %10.0f %14.0f %14.0f %7.2f   >= %.2f %s\n", name, ops, rts, reference, ratio, goal,
                ratio >= goal ? "met" : "MISSED");
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
        else if (a == "--help") {
            std::puts("usage: idem-bench [--url redis://host:port/db] [--requests N]\n\nWithout --url it "
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
        std::printf("idem-bench: redis-server %s at %s%s, %d requests per measurement, 1 connection\n\n",
                    version.c_str(), o.describe().c_str(), server ? " (private)" : "", cfg.requests);

        idem::ConnectionPool pool(o, 2);
        idem::StoreOptions so;
        so.keyNamespace = "bench-" + idem::newToken().substr(0, 8);
        idem::Store store(pool, so);
        idem::Executor ex(store);
        auto work = [](const idem::WorkContext& ctx) { return idem::WorkResult::success("ok " + ctx.id); };
        // warm up: connections, script load
        for (int i = 0; i < 200; ++i)
            ex.execute("warm-" + std::to_string(i), "", work);

        const double ref1Before = redisBenchmark(o, sha, cfg.requests, 1);
        auto r0 = Clock::now();
        for (int i = 0; i < cfg.requests; ++i) {
            const std::string k = "raw:{" + std::to_string(i) + "}";
            admin.command({"EVALSHA", sha, "1", k, "v"});
        }
        auto r1 = Clock::now();
        auto t0 = Clock::now();
        for (int i = 0; i < cfg.requests; ++i)
            if (ex.execute("id-" + std::to_string(i), "", work).kind != idem::OutcomeKind::Executed)
                throw idem::Error("execute did not execute a new id");
        auto t1 = Clock::now();
        for (int i = 0; i < cfg.requests; ++i)
            if (ex.execute("id-" + std::to_string(i), "", work).kind != idem::OutcomeKind::Replayed)
                throw idem::Error("execute did not replay a duplicate");
        auto t2 = Clock::now();
        const double ref1After = redisBenchmark(o, sha, cfg.requests, 1);
        const double ref1 = (ref1Before + ref1After) / 2;

        const int batches = std::max(1, cfg.requests * 5 / cfg.batch);
        const double refPBefore = redisBenchmark(o, sha, batches * cfg.batch, cfg.batch);
        std::vector<idem::AcquireRequest> rq(static_cast<std::size_t>(cfg.batch));
        auto t3 = Clock::now();
        for (int b = 0; b < batches; ++b) {
            for (int k = 0; k < cfg.batch; ++k)
                rq[static_cast<std::size_t>(k)].id = "batch-" + std::to_string(b * cfg.batch + k);
            store.acquireBatch(rq);
        }
        auto t4 = Clock::now();
        const double refPAfter = redisBenchmark(o, sha, batches * cfg.batch, cfg.batch);
        const double refP = (refPBefore + refPAfter) / 2;

        std::printf("%-44s %10s %14s %14s %7s   %s\n", "measurement", "ops/s", "round trips/s",
                    "reference/s", "ratio", "goal");
        row("hiredis blocking EVALSHA, same script (info)", cfg.requests / seconds(r0, r1), 1, ref1, 0.0);
        row("(a) execute(), new ids (2 round trips each)", cfg.requests / seconds(t0, t1), 2, ref1, 0.8);
        row("(a) execute(), duplicates (1 round trip)", cfg.requests / seconds(t1, t2), 1, ref1, 0.8);
        row("(b) acquireBatch, 16 ids per round trip", batches * cfg.batch / seconds(t3, t4), 1, refP, 0.6);
        std::printf("\nreference (a): redis-benchmark -c 1 EVALSHA <one-key HSET script>, mean of %.0f and %.0f/s\n",
                    ref1Before, ref1After);
        std::printf("reference (b): redis-benchmark -c 1 -P %d, same script, mean of %.0f and %.0f/s\n", cfg.batch,
                    refPBefore, refPAfter);
        std::printf("ratio = idem's round trips (or ids, for b) per second / reference requests per second\n");
        return 0;
    } catch (const idem::Error& e) {
        std::fprintf(stderr, "idem-bench: %s\n", e.what());
        return 1;
    }
}
