// idemctl capture: an event log for `idemctl replay` from a Redis Stream another program writes
// (read-only: XRANGE pages, no group, no acknowledgement), or from JSON lines of another shape.
#include "cli.h"

#include "idem/lab/capture.h"
#include "idem/monitor/history.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace idemctl {

int cmdCapture(const std::vector<std::string>& argv)
{
    Args args(argv, {"--stream", "--from", "--to", "--count", "--id-field", "--payload-field", "--time-field",
                     "--from-jsonl", "--from-history", "--out", "--page-size"},
              {});
    if (args.flag("--help")) {
        std::puts(
            "usage: idemctl capture --stream KEY [--from ID] [--to ID] [--count N] [--id-field NAME]\n"
            "                       [--payload-field NAME] [--page-size N] [--out FILE]\n"
            "       idemctl capture --from-jsonl FILE [--id-field A.B] [--payload-field C] [--time-field T]\n"
            "                       [--out FILE]\n"
            "       idemctl capture --from-history DIR [--namespace NS] [--out FILE]\n\n"
            "Writes an event log for `idemctl replay` (to FILE, else to standard output). From a Redis\n"
            "Stream: its entries from ID to ID (default: all), at most N, each event's id and payload from\n"
            "the fields named (default: id, payload), its at_ms the time of the entry's id. Strictly\n"
            "read-only: XRANGE in pages of --page-size entries (default 1000); no consumer group, no\n"
            "acknowledgement, nothing written. From JSON lines: the fields at the dotted paths given\n"
            "(default id, payload; --payload-field . takes the whole line), the time in ms at T.\n"
            "From the console's history (DIR: the directory its History bar names, one per server and\n"
            "namespace): each start by a new owner the console saw (a first start, a retry, a takeover)\n"
            "is an event of that record's id, at the time it was seen.\n"
            "Entries that are no event are named on standard error (by stream id or line) and skipped;\n"
            "the counts are printed there too. Exit 0: every entry taken; 1: some were skipped.");
        return Ok;
    }
    if (!args.positional().empty())
        throw UsageFailure{"unexpected '" + args.positional().front() + "'"};
    const auto stream = args.value("--stream");
    const auto jsonl = args.value("--from-jsonl");
    const auto history = args.value("--from-history");
    if (int(stream.has_value()) + int(jsonl.has_value()) + int(history.has_value()) != 1)
        throw UsageFailure{"give one source: --stream KEY, --from-jsonl FILE or --from-history DIR"};

    idem::CaptureCallbacks callbacks;
    callbacks.problem = [](const idem::CaptureProblem& p) {
        std::fprintf(stderr, "skipped %s: %s\n", printable(p.where).c_str(), printable(p.why).c_str());
    };
    idem::CaptureResult r;
    std::string source;
    if (history) {
        for (const char* other : {"--from", "--to", "--count", "--page-size", "--id-field", "--payload-field", "--time-field"})
            if (args.value(other))
                throw UsageFailure{std::string(other) + " is not for --from-history"};
        std::error_code ec;
        if (!std::filesystem::is_directory(*history, ec))
            throw UsageFailure{"'" + *history + "' is not a history directory"};
        std::size_t segments = 0;
        const auto transitions = idem::HistoryLog::readDirectory(*history, &segments);
        if (segments == 0)
            throw UsageFailure{"'" + *history + "' holds no history (no seg-*.idh file)"};
        r.events = idem::eventsFromHistory(transitions, globalFrom(args).keyNamespace);
        r.read = transitions.size();
        source = "transitions of the history in '" + *history + "'";
    } else if (stream) {
        for (const char* jsonOnly : {"--time-field"})
            if (args.value(jsonOnly))
                throw UsageFailure{std::string(jsonOnly) + " is for --from-jsonl (a stream entry's time is its id)"};
        idem::CaptureOptions o;
        o.stream = *stream;
        o.from = args.value("--from").value_or("-");
        o.to = args.value("--to").value_or("+");
        o.count = number<std::size_t>(args.value("--count"), 0, 1, std::size_t(1) << 40, "--count");
        o.pageSize = number<std::size_t>(args.value("--page-size"), 1000, 1, 100'000, "--page-size");
        o.idField = args.value("--id-field").value_or("id");
        o.payloadField = args.value("--payload-field").value_or("payload");
        const Global g = redisGlobalFrom(args);
        r = idem::captureStream(g.connection, o, callbacks);
        source = "entries of stream '" + o.stream + "'";
    } else {
        for (const char* streamOnly : {"--from", "--to", "--count", "--page-size"})
            if (args.value(streamOnly))
                throw UsageFailure{std::string(streamOnly) + " is for --stream"};
        std::ifstream in(*jsonl);
        if (!in)
            throw UsageFailure{"cannot read '" + *jsonl + "'"};
        idem::JsonlMapping m;
        m.idField = args.value("--id-field").value_or("id");
        m.payloadField = args.value("--payload-field").value_or("payload");
        m.timeField = args.value("--time-field").value_or("");
        r = idem::captureJsonl(in, m, callbacks);
        source = "lines of '" + *jsonl + "'";
    }

    if (const auto out = args.value("--out")) {
        std::ofstream f(*out, std::ios::binary | std::ios::trunc);
        if (!f)
            throw UsageFailure{"cannot write '" + *out + "'"};
        idem::writeEventLog(f, r.events);
        f.close();
        if (!f)
            throw UsageFailure{"could not write all of '" + *out + "'"};
    } else {
        idem::writeEventLog(std::cout, r.events);
        std::cout.flush();
    }
    std::fprintf(stderr, "captured %zu event(s) from %zu %s; %zu skipped\n", r.events.size(), r.read,
                 source.c_str(), r.skipped);
    return r.skipped > 0 ? Refused : Ok;
}

} // namespace idemctl
