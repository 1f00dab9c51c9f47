// idemctl replay: an event log through idem, directly or at least once through a Redis Stream.
#include "cli.h"

#include "idem/duration.h"
#include "idem/redis/localserver.h"
#include "idem/lab/replay.h"

#include <charconv>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

namespace idemctl {

int cmdReplay(const std::vector<std::string>& argv)
{
    Args args(argv, {"--speed", "--duplicates", "--reorder", "--crash-rate", "--consumers", "--seed", "--lease",
                     "--timeout"},
              {"--via-stream", "--json"});
    if (args.flag("--help")) {
        std::puts("usage: idemctl replay FILE [--speed X] [--duplicates D] [--reorder DUR] [--crash-rate R]\n"
                  "                          [--consumers N] [--via-stream] [--seed S] [--json]\n\n"
                  "Replays an event log (JSON lines: {\"id\": ..., \"payload\": ..., \"at_ms\": ...}) through idem\n"
                  "at X times the logged pace (0: as fast as possible), each event delivered D times, shifted\n"
                  "by up to DUR, consumers dying after acquiring at rate R. --via-stream publishes to a Redis\n"
                  "Stream read by a consumer group; what a dead consumer left pending is taken over with\n"
                  "XAUTOCLAIM. Prints how many events executed, how many twice, how many were lost; its\n"
                  "deliveries count every attempt, so a delivery that found its event in progress and came\n"
                  "back later, or one a dead consumer left, counts again (more than events x D).");
        return Ok;
    }
    if (args.positional().size() != 1)
        throw UsageFailure{"give one event log: idemctl replay FILE"};
    std::ifstream in(args.positional().front());
    if (!in)
        throw UsageFailure{"cannot read '" + args.positional().front() + "'"};
    const auto events = idem::parseEventLog(in);
    idem::ReplayOptions o;
    o.speed = number(args.value("--speed"), 1.0, 0.0, 1e6, "--speed");
    o.duplicates = number(args.value("--duplicates"), 1, 1, 1000, "--duplicates");
    o.crashRate = number(args.value("--crash-rate"), 0.0, 0.0, 1.0, "--crash-rate");
    o.consumers = number(args.value("--consumers"), 3, 1, 64, "--consumers");
    o.seed = number<std::uint64_t>(args.value("--seed"), 1, 0, UINT64_MAX, "--seed");
    if (auto r = args.value("--reorder"))
        o.reorder = idem::parseDuration(*r);
    if (auto l = args.value("--lease"))
        o.lease = idem::parseDuration(*l);
    if (auto t = args.value("--timeout"))
        o.timeout = idem::parseDuration(*t);
    o.viaStream = args.flag("--via-stream");

    Global g = redisGlobalFrom(args);
    std::unique_ptr<idem::LocalServer> server;
    const idem::ConnectionOptions conn = serverOrPrivate(g, server, "replay");
    o.keyNamespace = g.keyNamespace == "idempotency" ? "replay" : g.keyNamespace;
    if (server == nullptr) // said before anything is written there
        std::fprintf(stderr, "idemctl replay: writing to %s, under %s:\n", conn.describe().c_str(),
                     o.keyNamespace.c_str());
    const auto r = idem::replay(conn, events, o);
    if (args.flag("--json")) {
        const nlohmann::json j = {{"events", r.events},         {"deliveries", r.deliveries},
                                  {"executions", r.executions}, {"double_executions", r.doubleExecutions},
                                  {"lost", r.lost},             {"crashes", r.crashes},
                                  {"claimed", r.claimed},       {"timed_out", r.timedOut},
                                  {"seconds", r.seconds},       {"via_stream", o.viaStream}};
        std::printf("%s\n", j.dump().c_str());
    } else {
        std::printf("%d events, %d deliveries%s: %d executed, %d twice, %d lost; %d consumer crash(es)%s, %.1f s%s\n",
                    r.events, r.deliveries, o.viaStream ? " through a Redis Stream" : "", r.executions,
                    r.doubleExecutions, r.lost, r.crashes,
                    o.viaStream ? (", " + std::to_string(r.claimed) + " message(s) claimed with XAUTOCLAIM").c_str() : "",
                    r.seconds, r.timedOut ? " (TIMED OUT)" : "");
    }
    return r.timedOut || r.lost || r.doubleExecutions ? Refused : Ok;
}

} // namespace idemctl
