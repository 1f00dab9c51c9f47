// idem-bench: idem's throughput against redis-benchmark, measured in one run on one redis-server.
//
// (a) Executor::execute() on one connection, new ids (acquire + complete = 2 round trips) and
//     duplicates (1 round trip), per round trip, versus `redis-benchmark -c 1` running EVALSHA of a
//     one-key script. Goal: >= 0.8.
// (b) Store::acquireBatch() of 16 ids per round trip versus `redis-benchmark -c 1 -P 16` running
//     the same EVALSHA. Goal: >= 0.6.
#include "idem/errors.h"
#include "idem/engine/executor.h"
#include "idem/redis/localserver.h"
#include "idem/engine/scripts.h"
#include "idem/engine/store.h"

#include <sched.h>

#include <algorithm>
#include <charconv>
#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Config {
    std::string url;
    int requests = 1000;
    int batch = 16;
    int rounds = 15;
    std::string pin = "none"; // none | split | same
    std::string load;         // fresh | duplicates | batch: only send that load (see --help)
    std::string keyNamespace = "bench-load";
    bool tls = false; // the private server on TLS only; redis-benchmark --tls as the reference
};

// --tls: a CA and a server certificate for 127.0.0.1 in a fresh directory (openssl command line)
std::string makeCertificates()
{
    char dirTemplate[] = "/tmp/idem-bench-tls-XXXXXX";
    const char* dir = ::mkdtemp(dirTemplate);
    if (!dir)
        throw idem::Error("cannot make a directory for the TLS certificates");
    const std::string d = dir;
    const std::string quiet = " >/dev/null 2>&1";
    const std::string cmds[] = {
        "printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\n' > '" + d + "/server.ext'",
        "openssl req -x509 -newkey rsa:2048 -nodes -keyout '" + d + "/ca.key' -out '" + d +
            "/ca.pem' -days 2 -subj /CN=idem-bench-ca" + quiet,
        "openssl req -newkey rsa:2048 -nodes -keyout '" + d + "/server.key' -out '" + d +
            "/server.csr' -subj /CN=localhost" + quiet,
        "openssl x509 -req -in '" + d + "/server.csr' -CA '" + d + "/ca.pem' -CAkey '" + d +
            "/ca.key' -CAcreateserial -out '" + d + "/server.pem' -days 2 -extfile '" + d + "/server.ext'" + quiet};
    for (const auto& c : cmds)
        if (std::system(c.c_str()) != 0)
            throw idem::Error("making the TLS certificates failed (is openssl installed?): " + c);
    return d;
}

// --load: the requests alone, nothing measured here; tools/server-instructions.sh counts what
// redis-server executes for them. Ids are load-<i> (batch: loadb-<i>) in the namespace given, so
// `--load duplicates` after `--load fresh` replays exactly those.
int sendLoad(const Config& cfg)
{
    idem::ConnectionPool pool(idem::ConnectionOptions::fromUrl(cfg.url), 1);
    idem::StoreOptions so;
    so.keyNamespace = cfg.keyNamespace;
    idem::Store store(pool, so);
    idem::Executor ex(store);
    auto work = [](const idem::WorkContext& ctx) { return idem::WorkResult::success("ok " + ctx.id); };
    const auto want = cfg.load == "fresh" ? idem::OutcomeKind::Executed : idem::OutcomeKind::Replayed;
    if (cfg.load == "batch") {
        std::vector<idem::AcquireRequest> rq(static_cast<std::size_t>(cfg.batch));
        for (int b = 0; b < cfg.requests / cfg.batch; ++b) {
            for (int k = 0; k < cfg.batch; ++k)
                rq[static_cast<std::size_t>(k)].id = "loadb-" + std::to_string(b * cfg.batch + k);
            for (const auto& r : store.acquireBatch(rq))
                if (r.status != idem::AcquireStatus::Acquired)
                    throw idem::Error("--load batch found ids in use: use a new --namespace");
        }
        return 0;
    }
    for (int i = 0; i < cfg.requests; ++i) {
        const idem::Outcome out = ex.execute("load-" + std::to_string(i), "", work);
        if (out.kind != want)
            throw idem::Error("--load " + cfg.load + ": id load-" + std::to_string(i) + " was " +
                              std::string(idem::nameOf(out.kind)) + (out.error.empty() ? "" : ": " + out.error));
    }
    return 0;
}

// Where the private server and this process (with every redis-benchmark it starts, and every
// thread it starts later) run. On a VM a round trip between two CPUs costs a wake-up IPI on each
// side, on one CPU a context switch; the scheduler mixes both, and the share differs between a
// long-lived process and a short redis-benchmark run. "split" puts server and clients on two
// CPUs, "same" all on one; either gives the reference and idem the same placement.
bool pinCpus(pid_t server, bool same)
{
    cpu_set_t allowed;
    if (::sched_getaffinity(0, sizeof allowed, &allowed) != 0)
        return false;
    std::vector<int> cpus;
    for (int i = 0; i < CPU_SETSIZE; ++i)
        if (CPU_ISSET(i, &allowed))
            cpus.push_back(i);
    if (cpus.size() < (same ? 1u : 2u))
        return false;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpus[0], &one);
    if (::sched_setaffinity(server, sizeof one, &one) != 0)
        return false;
    CPU_ZERO(&one);
    CPU_SET(cpus[same ? 0 : 1], &one);
    return ::sched_setaffinity(0, sizeof one, &one) == 0;
}

std::string firstLine(const char* path)
{
    std::string line;
    if (std::FILE* f = std::fopen(path, "r")) {
        char buf[128];
        if (std::fgets(buf, sizeof buf, f))
            line = buf;
        std::fclose(f);
    }
    while (!line.empty() && (line.back() == '\n' || line.back() == ' '))
        line.pop_back();
    return line;
}

// What decides a round trip between two CPUs on a virtual machine: whether an idle vCPU polls a
// while before it halts. A halted vCPU is woken by the hypervisor, which on the machine these
// figures were first taken on cost ~30 us a side and made the wake-ups, not the scripts, most of a
// loopback round trip (README: "What this machine does to a round trip").
std::string machineLine()
{
    const std::string driver = firstLine("/sys/devices/system/cpu/cpuidle/current_driver");
    std::string line = "machine: cpuidle driver " + (driver.empty() ? std::string("unknown") : driver);
    if (driver == "haltpoll") {
        const std::string ns = firstLine("/sys/module/haltpoll/parameters/guest_halt_poll_ns");
        if (ns == "0")
            line += ", guest_halt_poll_ns 0: an idle vCPU halts at once, so a round trip\n"
                    "         between two CPUs waits for the hypervisor to wake a vCPU on each side";
        else if (!ns.empty())
            line += ", an idle vCPU polls up to " + ns + " ns before it halts";
    }
    return line;
}

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
    if (o.tls.enabled)
        cmd += " --tls --cacert '" + o.tls.caFile + "'";
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

// EVALSHA's calls and microseconds so far, from the server's INFO commandstats: what the scripts
// cost Redis itself, whatever the round trip around them costs
struct EvalStats {
    double calls = 0, usec = 0;
};

EvalStats evalshaStats(idem::Connection& admin)
{
    const std::string info = idem::reply::str(admin.checked({"INFO", "commandstats"}).get());
    EvalStats s;
    const auto line = info.find("cmdstat_evalsha:");
    if (line == std::string::npos)
        return s;
    const auto field = [&](const char* name) {
        const auto p = info.find(name, line);
        return p == std::string::npos ? 0.0 : std::atof(info.c_str() + p + std::strlen(name));
    };
    s.calls = field("calls=");
    s.usec = field("usec=");
    return s;
}

// server microseconds per EVALSHA while `run` ran
template <typename Run>
double serverUsPerCall(idem::Connection& admin, Run&& run)
{
    const EvalStats a = evalshaStats(admin);
    run();
    const EvalStats b = evalshaStats(admin);
    return b.calls > a.calls ? (b.usec - a.usec) / (b.calls - a.calls) : 0.0;
}

double median(std::vector<double> v)
{
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

template <typename Samples>
void row(const char* name, const Samples& samples, double rtPerOp, double goal)
{
    std::vector<double> ratios, ratiosI, ops, refs, refsI;
    for (const auto& sm : samples) {
        ratios.push_back(sm.ops * rtPerOp / sm.reference);
        ratiosI.push_back(sm.ops * rtPerOp / sm.interleaved);
        ops.push_back(sm.ops);
        refs.push_back(sm.reference);
        refsI.push_back(sm.interleaved);
    }
    auto quantile = [](std::vector<double> v, double q) {
        std::sort(v.begin(), v.end());
        return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1) + 0.5)];
    };
    const double ratio = quantile(ratios, 0.5), ratioI = quantile(ratiosI, 0.5), op = quantile(ops, 0.5);
    std::printf("%-46s %9.0f %11.0f %11.0f %6.2f %4.2f-%4.2f %8.0f %6.2f   >= %.2f %s\n", name, op, op * rtPerOp,
                quantile(refs, 0.5), ratio, quantile(ratios, 0.25), quantile(ratios, 0.75), quantile(refsI, 0.5),
                ratioI, goal, ratio >= goal ? "met" : "MISSED");
}

} // namespace

int main(int argc, char** argv)
{
    Config cfg;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--url" && i + 1 < argc)
            cfg.url = argv[++i];
        else if ((a == "--requests" || a == "--rounds") && i + 1 < argc) {
            const std::string_view text = argv[++i];
            int n = 0;
            const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
            const int least = a == "--requests" ? 500 : 1;
            if (ec != std::errc() || end != text.data() + text.size() || n < least || n > 10'000'000) {
                std::fprintf(stderr, "idem-bench: %s takes a whole number from %d to 10000000, not '%s'\n",
                             a.c_str(), least, argv[i]);
                return 64;
            }
            (a == "--requests" ? cfg.requests : cfg.rounds) = n;
        } else if (a == "--pin" && i + 1 < argc) {
            cfg.pin = argv[++i];
            if (cfg.pin != "none" && cfg.pin != "split" && cfg.pin != "same") {
                std::fprintf(stderr, "idem-bench: --pin takes none, split or same\n");
                return 64;
            }
        } else if (a == "--load" && i + 1 < argc) {
            cfg.load = argv[++i];
            if (cfg.load != "fresh" && cfg.load != "duplicates" && cfg.load != "batch") {
                std::fprintf(stderr, "idem-bench: --load takes fresh, duplicates or batch\n");
                return 64;
            }
        } else if (a == "--tls") {
            cfg.tls = true;
        } else if (a == "--namespace" && i + 1 < argc) {
            cfg.keyNamespace = argv[++i];
        } else if (a == "--help") {
            std::puts("usage: idem-bench [--url redis://host:port/db] [--requests N] [--rounds R]\n"
                      "                  [--pin none|split|same] [--tls]\n"
                      "       idem-bench --url URL --load fresh|duplicates|batch [--requests N] [--namespace NS]\n\n"
                      "Without --url it starts a private redis-server. --pin places that server and this\n"
                      "process (with the redis-benchmark runs it starts): none = the scheduler decides\n"
                      "(default), split = one CPU each, same = both on one CPU. --tls: the private server\n"
                      "takes TLS only (certificates made with openssl), and redis-benchmark runs with --tls.\n"
                      "Needs redis-benchmark (redis-tools).\n\n"
                      "--load sends one kind of load and measures nothing: N execute() of new ids load-0..,\n"
                      "the same N again (duplicates; after fresh), or N ids in batches of 16 (loadb-0..).\n"
                      "tools/server-instructions.sh counts redis-server's instructions for each.");
            return 0;
        } else {
            std::fprintf(stderr, "idem-bench: unknown argument '%s' (see --help)\n", a.c_str());
            return 64;
        }
    }
    if (!cfg.load.empty()) {
        if (cfg.url.empty()) {
            std::fprintf(stderr, "idem-bench: --load needs --url\n");
            return 64;
        }
        try {
            return sendLoad(cfg);
        } catch (const idem::Error& e) {
            std::fprintf(stderr, "idem-bench: %s\n", e.what());
            return 1;
        }
    }
    if (!cfg.url.empty() && cfg.tls) {
        std::fprintf(stderr, "idem-bench: --tls makes a private TLS server; with --url give rediss://\n");
        return 64;
    }
    if (!cfg.url.empty() && cfg.pin != "none") {
        std::fprintf(stderr, "idem-bench: --pin places the private server; with --url use taskset\n");
        return 64;
    }
    try {
        std::string certs; // --tls: removed at the end
        struct RemoveDir {
            std::string& dir;
            ~RemoveDir()
            {
                if (!dir.empty())
                    std::filesystem::remove_all(dir);
            }
        } removeCerts{certs};
        std::unique_ptr<idem::LocalServer> server;
        idem::ConnectionOptions o;
        if (cfg.url.empty()) {
            idem::LocalServerOptions so;
            if (cfg.tls) {
                certs = makeCertificates();
                so.tls.cert = certs + "/server.pem";
                so.tls.key = certs + "/server.key";
                so.tls.ca = certs + "/ca.pem";
            }
            server = std::make_unique<idem::LocalServer>(so); // (its options carry the CA)
            o = server->connectionOptions();
            if (cfg.pin != "none" && !pinCpus(server->pid(), cfg.pin == "same"))
                throw idem::Error("cannot pin to CPUs (--pin " + cfg.pin + ")");
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
        std::printf("idem-bench: redis-server %s at %s%s, 1 connection, %d rounds of %d requests%s\n",
                    version.c_str(), o.describe().c_str(), server ? " (private)" : "", cfg.rounds, cfg.requests,
                    cfg.pin == "split" ? ", server and client pinned to a CPU each"
                    : cfg.pin == "same" ? ", server and client pinned to one CPU"
                                        : "");
        std::printf("%s\n\n", machineLine().c_str());

        idem::ConnectionPool pool(o, 2);
        idem::StoreOptions so;
        so.keyNamespace = "bench-" + idem::newToken().substr(0, 8);
        idem::Store store(pool, so);
        idem::Executor ex(store);
        auto work = [](const idem::WorkContext& ctx) { return idem::WorkResult::success("ok " + ctx.id); };
        // warm up: connections, script load
        for (int i = 0; i < 200; ++i)
            ex.execute("warm-" + std::to_string(i), "", work);

        // The machine is shared by redis-server, this client and redis-benchmark, and loopback
        // latency drifts (idle vCPUs wake slowly). Two references, so the drift shows:
        //  - redis-benchmark, measured right before and right after each idem block (mean of both);
        //  - the same one-key script sent by this process with hiredis on its own connection,
        //    interleaved request by request with idem's, so both see the same moment.
        struct Sample {
            double ops, reference, interleaved;
        };
        std::vector<Sample> fresh, dups, batch;
        int next = 0;
        using Dur = std::chrono::duration<double>;
        auto rawOne = [&](int i) {
            const std::string k = "raw:{" + std::to_string(i) + "}";
            admin.command({"EVALSHA", sha, "1", k, "v"});
        };
        // server microseconds per EVALSHA, one sample per round each (see serverUsPerCall)
        std::vector<double> refUs, refPUs, freshUs, dupUs, batchUs;
        auto refRun = [&](int n, int pipeline) {
            double rps = 0;
            const double us = serverUsPerCall(admin, [&] { rps = redisBenchmark(o, sha, n, pipeline); });
            (pipeline > 1 ? refPUs : refUs).push_back(us);
            return rps;
        };
        for (int round = 0; round < cfg.rounds; ++round) {
            const double refA = refRun(cfg.requests, 1);
            Dur idemT{0}, rawT{0};
            const int base = next;
            for (int i = 0; i < cfg.requests; ++i) {
                auto t0 = Clock::now();
                if (ex.execute("id-" + std::to_string(next++), "", work).kind != idem::OutcomeKind::Executed)
                    throw idem::Error("execute did not execute a new id");
                auto t1 = Clock::now();
                rawOne(i);
                rawOne(i + 1);
                auto t2 = Clock::now();
                idemT += t1 - t0;
                rawT += t2 - t1;
            }
            const double refB = refRun(cfg.requests, 1);
            fresh.push_back({cfg.requests / idemT.count(), (refA + refB) / 2, 2 * cfg.requests / rawT.count()});
            idemT = rawT = Dur{0};
            for (int i = 0; i < cfg.requests; ++i) {
                auto t0 = Clock::now();
                if (ex.execute("id-" + std::to_string(base + i), "", work).kind != idem::OutcomeKind::Replayed)
                    throw idem::Error("execute did not replay a duplicate");
                auto t1 = Clock::now();
                rawOne(i);
                auto t2 = Clock::now();
                idemT += t1 - t0;
                rawT += t2 - t1;
            }
            const double refC = refRun(cfg.requests, 1);
            dups.push_back({cfg.requests / idemT.count(), (refB + refC) / 2, cfg.requests / rawT.count()});

            const int batches = std::max(1, cfg.requests / cfg.batch * 4);
            const double refP = refRun(batches * cfg.batch, cfg.batch);
            std::vector<idem::AcquireRequest> rq(static_cast<std::size_t>(cfg.batch));
            std::vector<std::string> rawKeys(static_cast<std::size_t>(cfg.batch));
            std::vector<std::vector<std::string_view>> rawCmds(static_cast<std::size_t>(cfg.batch));
            idemT = rawT = Dur{0};
            for (int b = 0; b < batches; ++b) {
                for (int k = 0; k < cfg.batch; ++k)
                    rq[static_cast<std::size_t>(k)].id = "batch-" + std::to_string(round) + "-" +
                                                         std::to_string(b * cfg.batch + k);
                auto t0 = Clock::now();
                for (const auto& r : store.acquireBatch(rq))
                    if (r.status != idem::AcquireStatus::Acquired)
                        throw idem::Error("batch acquire did not acquire a new id");
                auto t1 = Clock::now();
                for (int k = 0; k < cfg.batch; ++k) {
                    const auto uk = static_cast<std::size_t>(k);
                    rawKeys[uk] = "rawp:{" + std::to_string(b * cfg.batch + k) + "}";
                    rawCmds[uk] = {"EVALSHA", sha, "1", rawKeys[uk], "v"};
                }
                admin.pipeline(rawCmds);
                auto t2 = Clock::now();
                idemT += t1 - t0;
                rawT += t2 - t1;
            }
            const double refQ = refRun(batches * cfg.batch, cfg.batch);
            batch.push_back({batches * cfg.batch / idemT.count(), (refP + refQ) / 2,
                             batches * cfg.batch / rawT.count()});

            // What the scripts cost the server itself: short blocks without the interleaved
            // reference (on a shared server given with --url, other clients' EVALSHAs count too)
            const int m = std::max(cfg.batch, cfg.requests / 4 / cfg.batch * cfg.batch);
            const std::string tag = "srv-" + std::to_string(round) + "-";
            freshUs.push_back(serverUsPerCall(admin, [&] {
                for (int i = 0; i < m; ++i)
                    ex.execute(tag + std::to_string(i), "", work);
            }));
            dupUs.push_back(serverUsPerCall(admin, [&] {
                for (int i = 0; i < m; ++i)
                    ex.execute(tag + std::to_string(i), "", work);
            }));
            batchUs.push_back(serverUsPerCall(admin, [&] {
                for (int b = 0; b < m / cfg.batch; ++b) {
                    for (int k = 0; k < cfg.batch; ++k)
                        rq[static_cast<std::size_t>(k)].id = tag + "b" + std::to_string(b * cfg.batch + k);
                    store.acquireBatch(rq);
                }
            }) / cfg.batch);
        }

        std::printf("%-46s %9s %11s %11s %6s %9s %8s %6s   %s\n", "measurement (median of rounds)", "ops/s",
                    "round-trips", "redis-bench", "ratio", "p25-p75", "hiredis", "ratio", "goal");
        row("(a) execute(), new ids (2 round trips each)", fresh, 2, 0.8);
        row("(a) execute(), duplicates (1 round trip each)", dups, 1, 0.8);
        row("(b) acquireBatch, 16 ids in 1 round trip", batch, 1, 0.6);

        std::printf("\n%-46s %9s %11s %6s\n", "server time (INFO commandstats, EVALSHA)", "us/call", "reference",
                    "ratio");
        const auto serverRow = [](const char* name, const std::vector<double>& us, const std::vector<double>& ref) {
            const double u = median(us), r = median(ref);
            std::printf("%-46s %9.2f %11.2f %6.2f\n", name, u, r, u > 0 ? r / u : 0.0);
        };
        serverRow("(a) execute(), new ids (acquire, complete)", freshUs, refUs);
        serverRow("(a) execute(), duplicates (acquire)", dupUs, refUs);
        serverRow("(b) acquireBatch, per id", batchUs, refPUs);

        std::printf("\nround-trips: idem's round trips per second (for b: ids per second).\n");
        std::printf("redis-bench: redis-benchmark -c 1 [-P %d] EVALSHA <one-key HSET script> requests per second,\n"
                    "             mean of the runs right before and after the idem block; ratio = round-trips / it\n"
                    "             (p25-p75: the middle half of the rounds' ratios; met/MISSED compares the\n"
                    "             unrounded median with the goal).\n",
                    cfg.batch);
        std::printf("hiredis:     the same script from this process on its own connection, interleaved\n"
                    "             request by request (b: pipelined 16 at a time) with idem's; ratio = round-trips / it.\n");
        std::printf("server time: microseconds Redis spent per EVALSHA (for b: per id), from INFO commandstats\n"
                    "             before and after blocks of their own (median of rounds); reference =\n"
                    "             redis-benchmark's script [-P %d] in the runs above; ratio = reference / idem.\n",
                    cfg.batch);
        return 0;
    } catch (const idem::Error& e) {
        std::fprintf(stderr, "idem-bench: %s\n", e.what());
        return 1;
    }
}
