// idemctl inspect / force-fail / purge: one record at a time.
#include "cli.h"

#include "idem/duration.h"
#include "idem/engine/store.h"

#include <cstdio>
#include <nlohmann/json.hpp>

namespace idemctl {

namespace {

struct Session {
    Global g;
    idem::ConnectionPool pool;
    idem::Store store;
    explicit Session(const Args& args) : g(globalFrom(args)), pool(g.connection, 1), store(pool, options(g)) {}
    static idem::StoreOptions options(const Global& g)
    {
        idem::StoreOptions o;
        o.keyNamespace = g.keyNamespace;
        return o;
    }
};

std::string oneId(const Args& args, const char* command)
{
    if (args.positional().size() != 1)
        throw UsageFailure{std::string("give exactly one ID: idemctl ") + command + " ID"};
    const std::string& id = args.positional().front();
    if (id.empty())
        throw UsageFailure{"the ID must not be empty"};
    if (id.size() > 1024)
        throw UsageFailure{"the ID is " + std::to_string(id.size()) + " bytes, over the 1024-byte limit"};
    return id;
}

std::string shown(const std::string& s, std::size_t limit = 2000)
{
    std::string out = s.substr(0, limit);
    for (char& c : out)
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t')
            c = '?';
    if (s.size() > limit)
        out += "… (" + std::to_string(s.size()) + " bytes)";
    return out;
}

nlohmann::json toJson(const idem::Record& r, const std::vector<std::pair<std::string, std::string>>& meta)
{
    using nlohmann::json;
    json j = recordJson(r, std::nullopt);
    j["status_as_written"] = r.rawStatus;
    auto opt = [&](const char* name, const std::optional<std::int64_t>& v) {
        j[name] = v ? json(*v) : json(nullptr);
    };
    opt("created_ms", r.createdMs);
    opt("started_ms", r.startedMs);
    opt("lease_until_ms", r.leaseUntilMs);
    opt("finished_ms", r.finishedMs);
    j["owner"] = r.owner;
    j["fence"] = r.fence;
    j["attempt"] = r.attempt;
    j["fingerprint"] = r.fingerprint;
    j["response"] = r.response ? json(*r.response) : json(nullptr);
    j["error"] = r.error;
    if (!r.op.empty())
        j["operator"] = {{"action", r.op}, {"by", r.opBy}, {"reason", r.opReason},
                         {"at_ms", r.opAtMs ? json(*r.opAtMs) : json(nullptr)}};
    json m = json::object();
    for (const auto& [k, v] : meta)
        m[k] = v;
    j["meta"] = m;
    return j;
}

} // namespace

int cmdInspect(const std::vector<std::string>& argv)
{
    Args args(argv, {}, {"--json"});
    if (args.flag("--help")) {
        std::puts("usage: idemctl inspect ID [--json]\n\nShows the record of ID, whichever format wrote it "
                  "(idem's hash, JSON strings, plain status words),\nits TTL and the meta key's fencing "
                  "counter and last operator action. Exit 66 when there is no record.");
        return Ok;
    }
    const std::string id = oneId(args, "inspect");
    Session s(args);
    const auto rec = s.store.inspect(id);
    const auto meta = s.store.meta(id);
    if (!rec) {
        if (args.flag("--json")) {
            nlohmann::json m = nlohmann::json::object();
            for (const auto& [k, v] : meta)
                m[k] = v;
            std::printf("%s\n", nlohmann::json{{"key", s.store.recordKey(id)}, {"id", id}, {"state", nullptr}, {"meta", m}}
                                    .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                                    .c_str());
        } else {
            std::fprintf(stderr, "idemctl inspect: no record for '%s' (key %s)\n", id.c_str(),
                         s.store.recordKey(id).c_str());
        }
        return NotFound;
    }
    if (args.flag("--json")) {
        std::printf("%s\n", toJson(*rec, meta).dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
        return Ok;
    }
    const auto& r = *rec;
    std::printf("key        %s\n", r.key.c_str());
    std::printf("state      %s%s%s\n", std::string(idem::nameOf(r.state)).c_str(),
                r.stale ? " (STALE: " : "", r.stale ? (r.staleWhy + ")").c_str() : "");
    std::printf("format     %s%s\n", std::string(idem::nameOf(r.format)).c_str(),
                r.rawStatus.empty() ? "" : (" (status '" + shown(r.rawStatus, 40) + "')").c_str());
    if (r.state == idem::RecordState::Malformed)
        std::printf("reason     %s\n", r.reason.c_str());
    std::printf("ttl        %s\n", r.ttlMs == -1 ? "none (key never expires!)"
                                   : r.ttlMs < 0 ? "unknown"
                                                 : idem::formatDuration(idem::Millis(r.ttlMs)).c_str());
    if (r.state == idem::RecordState::Started && r.leaseUntilMs)
        std::printf("lease ends %lld ms since epoch\n", static_cast<long long>(*r.leaseUntilMs));
    if (r.state == idem::RecordState::Failed)
        std::printf("failure    %s\n", r.terminal ? "terminal" : "retryable");
    if (!r.owner.empty())
        std::printf("owner      %s\n", shown(r.owner, 80).c_str());
    if (r.fence)
        std::printf("fence      %lld\n", static_cast<long long>(r.fence));
    if (r.attempt)
        std::printf("attempt    %lld\n", static_cast<long long>(r.attempt));
    if (!r.fingerprint.empty())
        std::printf("payload    %s\n", r.fingerprint.c_str());
    if (!r.error.empty())
        std::printf("error      %s\n", shown(r.error).c_str());
    if (!r.op.empty())
        std::printf("operator   %s by %s: %s\n", r.op.c_str(), r.opBy.c_str(), r.opReason.c_str());
    if (r.response)
        std::printf("response   %s\n", shown(*r.response).c_str());
    for (const auto& [k, v] : meta)
        std::printf("meta.%-6s %s\n", k.c_str(), shown(v, 200).c_str());
    return Ok;
}

int cmdForceFail(const std::vector<std::string>& argv)
{
    Args args(argv, {"--reason", "--by"}, {"--terminal"});
    if (args.flag("--help")) {
        std::puts("usage: idemctl force-fail ID [--reason R] [--terminal] [--by WHO]\n\nMarks a STARTED "
                  "or FAILED record FAILED without its owner's token: the owner's\nlate complete gets "
                  "'lease lost'. Retryable (default): the next delivery runs again;\n--terminal: "
                  "duplicates get the failure back. COMPLETED records are refused (purge them).");
        return Ok;
    }
    const std::string id = oneId(args, "force-fail");
    Session s(args);
    const std::string reason = args.value("--reason").value_or("forced by operator");
    const std::string who = args.value("--by").value_or(whoAmI());
    const auto r = s.store.forceFail(id, reason, args.flag("--terminal"), who);
    switch (r.status) {
    case idem::AdminStatus::Ok:
        std::printf("force-failed %s (was %s, now FAILED %s)\n", s.store.recordKey(id).c_str(),
                    r.previousState.c_str(), args.flag("--terminal") ? "terminal" : "retryable");
        return Ok;
    case idem::AdminStatus::NotFound:
        std::fprintf(stderr, "idemctl force-fail: no record for '%s'\n", id.c_str());
        return NotFound;
    case idem::AdminStatus::Refused:
        std::fprintf(stderr, "idemctl force-fail: refused: %s\n", r.reason.c_str());
        return Refused;
    }
    return Refused;
}

bool purgesMany(const std::vector<std::string>& argv)
{
    for (const auto& a : argv)
        if (a == "--state" || a.starts_with("--state=") || a == "--stale" || a == "--pattern" ||
            a.starts_with("--pattern="))
            return true;
    return false;
}

int cmdPurge(const std::vector<std::string>& argv)
{
    Args args(argv, {"--reason", "--by"}, {});
    if (args.flag("--help")) {
        std::puts("usage: idemctl purge ID [--reason R] [--by WHO]\n"
                  "       idemctl purge --state S | --stale | --pattern GLOB [--dry-run] [--yes]\n\n"
                  "With an ID: deletes its record (any type) so the id can run again; the last fence,\n"
                  "who, when and why are kept in the meta key.\n"
                  "With --state (started, stale, completed, failed, malformed, no-ttl), --stale or\n"
                  "--pattern: scans (SCAN, bounded COUNT) and deletes the matching keys with UNLINK in\n"
                  "batches of 500, each only if it is unchanged since it was read (a lock renewed or\n"
                  "completed meanwhile stays). Without --yes it only lists what it would remove.");
        return Ok;
    }
    const std::string id = oneId(args, "purge");
    Session s(args);
    const std::string reason = args.value("--reason").value_or("purged by operator");
    const std::string who = args.value("--by").value_or(whoAmI());
    const auto r = s.store.purge(id, who, reason);
    if (r.status == idem::AdminStatus::NotFound) {
        std::fprintf(stderr, "idemctl purge: no record for '%s'\n", id.c_str());
        return NotFound;
    }
    std::printf("purged %s (was %s)\n", s.store.recordKey(id).c_str(), r.previousState.c_str());
    return Ok;
}

} // namespace idemctl
