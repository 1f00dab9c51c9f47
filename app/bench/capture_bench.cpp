// Capture against its own reference: idem's captureStream over a stream of N entries, and a bare
// loop of the same XRANGE ... COUNT 1000 pages with hiredis that does nothing with the replies.
// Both read the same stream on a private redis-server, in the same run; the ratio is what capture
// adds (decoding each entry into an event log record). In ctest only as a smoke run of a few
// thousand entries; a million takes several seconds.
//
//   idem-capture-bench [--entries N] [--rounds R]
#include "idem/lab/capture.h"
#include "idem/redis/connection.h"
#include "idem/redis/localserver.h"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
// This process's CPU time: on a loaded machine, wall time alone hides what is ours.
double cpuSeconds() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

// Pipelined XADD: an id and a small JSON payload per entry, as a producer of orders would write.
void fill(const idem::ConnectionOptions& c, const std::string& stream, std::size_t entries)
{
    idem::Connection conn(c);
    conn.checked({"DEL", stream});
    constexpr std::size_t kBatch = 10'000;
    std::vector<std::string> ids, payloads;
    for (std::size_t done = 0; done < entries;) {
        const std::size_t n = std::min(kBatch, entries - done);
        ids.clear();
        payloads.clear();
        for (std::size_t i = 0; i < n; ++i) {
            ids.push_back("order-" + std::to_string(done + i));
            payloads.push_back(R"({"order":)" + std::to_string(done + i) + R"(,"amount_cents":)" +
                               std::to_string((done + i) * 37 % 100'000) + R"(,"currency":"EUR","customer":"c-)" +
                               std::to_string((done + i) % 5000) + "\"}");
        }
        std::vector<std::vector<std::string_view>> cmds;
        for (std::size_t i = 0; i < n; ++i)
            cmds.push_back({"XADD", stream, "*", "id", ids[i], "payload", payloads[i]});
        for (auto& r : conn.pipeline(cmds))
            if (!r || r->type == REDIS_REPLY_ERROR)
                throw std::runtime_error("XADD failed");
        done += n;
    }
}

// The reference: the same pages, read and freed, nothing else.
std::size_t bareLoop(const idem::ConnectionOptions& c, const std::string& stream, std::size_t page)
{
    std::unique_ptr<redisContext, decltype(&redisFree)> ctx(redisConnect(c.host.c_str(), c.port), &redisFree);
    if (!ctx || ctx->err)
        throw std::runtime_error("connect failed");
    std::size_t read = 0;
    std::string from = "-";
    const std::string count = std::to_string(page);
    for (;;) {
        auto* r = static_cast<redisReply*>(redisCommand(ctx.get(), "XRANGE %b %b + COUNT %b", stream.data(),
                                                        stream.size(), from.data(), from.size(), count.data(),
                                                        count.size()));
        if (!r || r->type != REDIS_REPLY_ARRAY)
            throw std::runtime_error("XRANGE failed");
        const std::size_t got = r->elements;
        read += got;
        if (got > 0) {
            const redisReply* last = r->element[got - 1]->element[0];
            const std::string id(last->str, last->len);
            const auto dash = id.find('-');
            from = id.substr(0, dash + 1) + std::to_string(std::stoull(id.substr(dash + 1)) + 1);
        }
        freeReplyObject(r);
        if (got < page)
            return read;
    }
}

} // namespace

int main(int argc, char** argv)
{
    std::size_t entries = 1'000'000;
    int rounds = 3;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--entries"))
            entries = std::strtoull(argv[i + 1], nullptr, 10);
        else if (!std::strcmp(argv[i], "--rounds"))
            rounds = std::atoi(argv[i + 1]);
        else {
            std::fprintf(stderr, "usage: idem-capture-bench [--entries N] [--rounds R]\n");
            return 64;
        }
    }
    if (entries < 1 || rounds < 1) {
        std::fprintf(stderr, "idem-capture-bench: --entries and --rounds must be positive\n");
        return 64;
    }
    try {
        idem::LocalServer server;
        const auto c = server.connectionOptions();
        const std::string stream = "bench:capture";
        auto t = Clock::now();
        fill(c, stream, entries);
        std::printf("filled %zu entries (pipelined XADD) in %.2f s\n", entries, secondsSince(t));
        double bestBare = 1e9, bestCapture = 1e9;
        for (int round = 0; round < rounds; ++round) {
            // in turn first and second: on a machine shared with others, the load comes and goes
            std::size_t bare = 0;
            double bareS = 0, bareCpu = 0, capS = 0, capCpu = 0;
            idem::CaptureResult r;
            auto runBare = [&] {
                const auto t0 = Clock::now();
                const double cpu = cpuSeconds();
                bare = bareLoop(c, stream, 1000);
                bareS = secondsSince(t0);
                bareCpu = cpuSeconds() - cpu;
            };
            auto runCapture = [&] {
                idem::CaptureOptions o;
                o.stream = stream;
                o.pageSize = 1000;
                const auto t0 = Clock::now();
                const double cpu = cpuSeconds();
                r = idem::captureStream(c, o);
                capS = secondsSince(t0);
                capCpu = cpuSeconds() - cpu;
            };
            if (round % 2 == 0) {
                runBare();
                runCapture();
            } else {
                runCapture();
                runBare();
            }
            if (bare != entries || r.events.size() != entries) {
                std::fprintf(stderr, "read %zu bare, %zu captured of %zu\n", bare, r.events.size(), entries);
                return 1;
            }
            std::printf("round %d: bare XRANGE loop %.3f s (%.3f s CPU here), capture %.3f s (%.3f s CPU), ratio %.2f\n",
                        round + 1, bareS, bareCpu, capS, capCpu, capS / bareS);
            bestBare = std::min(bestBare, bareS);
            bestCapture = std::min(bestCapture, capS);
        }
        double load[3] = {0, 0, 0};
        std::ifstream("/proc/loadavg") >> load[0] >> load[1] >> load[2];
        const double ratio = bestCapture / bestBare;
        std::printf("best: bare %.3f s, capture %.3f s (%.0f entries/s), ratio %.2f (target <= 1.5: %s); load %.2f %.2f "
                    "%.2f\n",
                    bestBare, bestCapture, static_cast<double>(entries) / bestCapture, ratio,
                    ratio <= 1.5 ? "met" : "missed", load[0], load[1], load[2]);
        return 0; // the figures are the verdict; 1 only when something was read wrong

    } catch (const std::exception& e) {
        std::fprintf(stderr, "idem-capture-bench: %s\n", e.what());
        return 1;
    }
}
