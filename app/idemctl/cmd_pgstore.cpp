// idemctl inspect / force-fail / purge / list / stats with a postgresql:// URL: the same commands
// on the PostgreSQL store (schema idem, docs/postgres.md), through its functions.
#include "cli.h"

#include "idem/pg/pgstore.h"

#include <cstdio>
#include <nlohmann/json.hpp>

namespace idemctl {

namespace {

std::string oneId(const Args& args, const char* command)
{
    if (args.value("--key"))
        throw UsageFailure{"--key is for Redis keys; a PostgreSQL record is named by its ID"};
    if (args.positional().size() != 1)
        throw UsageFailure{std::string("give exactly one ID: idemctl ") + command + " ID"};
    const std::string& id = args.positional().front();
    if (id.empty())
        throw UsageFailure{"the ID must not be empty"};
    if (id.size() > 1024)
        throw UsageFailure{"the ID is " + std::to_string(id.size()) + " bytes, over the 1024-byte limit"};
    if (id.find('\0') != std::string::npos)
        throw UsageFailure{"an ID in PostgreSQL may not contain a NUL byte"};
    return id;
}

void refuseRedisOnly(const Args& args, std::initializer_list<const char*> options)
{
    for (const char* o : options)
        if (args.value(o))
            throw UsageFailure{std::string(o) + " is for Redis; not with a PostgreSQL URL"};
}

// Every row, page by page along the primary key (keyset pagination: no OFFSET, no long snapshot).
template <typename F> void eachRow(idem::PgStore& store, F&& f)
{
    std::string after;
    for (;;) {
        idem::PgStore::Page p = store.page(after, 1000);
        for (const auto& r : p.records)
            f(r, p.serverNowMs);
        if (p.done)
            return;
        after = p.lastId;
    }
}

} // namespace

int pgInspect(const Args& args)
{
    const Global g = globalFrom(args);
    const std::string id = oneId(args, "inspect");
    idem::PgStore store(g.url);
    std::int64_t now = 0;
    const auto rec = store.inspect(id, &now);
    if (!rec) {
        if (args.flag("--json"))
            std::printf("%s\n", dumpLine(nlohmann::json{{"key", id}, {"id", id}, {"state", nullptr}}).c_str());
        else
            std::fprintf(stderr, "idemctl inspect: no record %s\n", id.c_str());
        return NotFound;
    }
    std::string phase;
    for (const auto& [k, v] : rec->fields)
        if (k == "phase")
            phase = v;
    if (args.flag("--json")) {
        nlohmann::json j = inspectJson(*rec);
        j.erase("meta");
        j["phase"] = phase.empty() ? nlohmann::json(nullptr) : nlohmann::json(phase);
        std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
        return Ok;
    }
    printRecord(*rec, now);
    if (!phase.empty())
        std::printf("phase      %s (the last recovery point)\n", printable(phase, 200).c_str());
    return Ok;
}

int pgForceFail(const Args& args)
{
    const Global g = globalFrom(args);
    const std::string id = oneId(args, "force-fail");
    const std::string reason = args.value("--reason").value_or("forced by operator");
    const std::string who = args.value("--by").value_or(whoAmI());
    idem::PgStore store(g.url);
    const auto r = store.forceFail(id, reason, args.flag("--terminal"), who);
    switch (r.status) {
    case idem::AdminStatus::Ok:
        std::printf("force-failed %s (was %s, now FAILED %s)\n", id.c_str(), r.previousState.c_str(),
                    args.flag("--terminal") ? "terminal" : "retryable");
        return Ok;
    case idem::AdminStatus::NotFound:
        std::fprintf(stderr, "idemctl force-fail: no record %s\n", id.c_str());
        return NotFound;
    case idem::AdminStatus::Refused:
        std::fprintf(stderr, "idemctl force-fail: refused: %s\n", r.reason.c_str());
        return Refused;
    }
    return Refused;
}

int pgPurge(const Args& args)
{
    const Global g = globalFrom(args);
    const std::string id = oneId(args, "purge");
    const std::string reason = args.value("--reason").value_or("purged by operator");
    const std::string who = args.value("--by").value_or(whoAmI());
    idem::PgStore store(g.url);
    const auto r = store.purge(id, who, reason);
    if (r.status == idem::AdminStatus::NotFound) {
        std::fprintf(stderr, "idemctl purge: no record %s\n", id.c_str());
        return NotFound;
    }
    std::printf("purged %s (was %s)\n", id.c_str(), r.previousState.c_str());
    return Ok;
}

int pgList(const Args& args, idem::StateFilter filter)
{
    refuseRedisOnly(args, {"--pattern", "--count", "--stale-after", "--writer-ttl", "--read-from"});
    const Global g = globalFrom(args);
    idem::PgStore store(g.url);
    const bool json = args.flag("--json");
    bool header = false;
    std::size_t n = 0;
    eachRow(store, [&](const idem::Record& r, std::int64_t now) {
        if (!json && !header) { // after the first page answered: an error comes before any output
            printListHeader(ListOf::PgRows);
            header = true;
        }
        if (!idem::matches(r, filter))
            return;
        ++n;
        if (json) {
            std::printf("%s\n", dumpLine(recordJson(r, now)).c_str());
            return;
        }
        printListRow(r, ListOf::PgRows);
    });
    if (!json)
        std::fprintf(stderr, "%zu record(s)\n", n);
    return Ok;
}

int pgStats(const Args& args)
{
    refuseRedisOnly(args, {"--pattern", "--count", "--stale-after", "--writer-ttl", "--read-from"});
    const Global g = globalFrom(args);
    idem::PgStore store(g.url);
    idem::Stats s;
    eachRow(store, [&](const idem::Record& r, std::int64_t) { s.add(r); });
    if (args.flag("--json")) {
        const nlohmann::json j = {{"total", s.total},         {"started", s.started}, {"stale", s.stale},
                                  {"completed", s.completed}, {"failed", s.failed},   {"expired", s.expired}};
        std::printf("%s\n", j.dump().c_str());
    } else {
        std::printf("total      %zu\nstarted    %zu (stale %zu)\ncompleted  %zu\nfailed     %zu\nexpired    %zu "
                    "(counted as absent; idemctl pg sweep deletes them)\n",
                    s.total, s.started, s.stale, s.completed, s.failed, s.expired);
    }
    return Ok;
}

} // namespace idemctl
