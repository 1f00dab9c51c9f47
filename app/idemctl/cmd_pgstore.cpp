// idemctl inspect / force-fail / purge / list / stats with a postgresql:// URL: the same commands
// on the PostgreSQL store (schema idem, docs/postgres.md), through its functions.
#include "cli.h"

#include "idem/pg/pgstore.h"
#include "idem/pg/pgtable.h"

#include <cstdio>
#include <nlohmann/json.hpp>

namespace idemctl {

namespace {

std::string oneId(const Args& args, const char* command)
{
    if (args.value("--key") || args.value("--key-base64"))
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

// --table: a table another program writes, read-only (idem/pg/pgtable.h)
template <typename F> void eachTableRow(idem::PgTable& table, F&& f)
{
    std::string after;
    for (bool first = true;; first = false) {
        idem::PgTable::Page p = table.page(after, 1000, first);
        for (const auto& r : p.records)
            f(r, p.serverNowMs);
        if (p.done)
            return;
        after = p.lastRowKey;
    }
}

// A state this idem does not know (a newer schema's): what it means is not guessed, so it goes
// only with --live, as a live lock does
bool refusedAsUnknown(const std::optional<idem::Record>& r, const Args& args)
{
    if (!r || r->state != idem::RecordState::Malformed || args.flag("--live"))
        return false;
    std::fprintf(stderr, "idemctl purge: %s: %s; add --live to purge it anyway\n", printable(r->id).c_str(), printable(r->reason).c_str());
    return true;
}

std::int64_t staleAfterMs(const Args& args)
{
    const auto d = args.value("--stale-after");
    return d ? idem::parseDuration(*d).count() : 15 * 60'000;
}

// The store for one operator action: --lock-timeout bounds the wait for a held row (default 5s)
idem::PgStoreOptions operatorOptions(const Args& args)
{
    idem::PgStoreOptions o;
    if (const auto t = args.value("--lock-timeout")) {
        o.operatorLockTimeout = idem::parseDuration(*t);
        if (o.operatorLockTimeout.count() < 1 || o.operatorLockTimeout > std::chrono::hours(1))
            throw UsageFailure{"--lock-timeout must be from 1ms to 1h"};
    }
    return o;
}

int tableInspect(const Args& args, const std::string& url, const std::string& table)
{
    if (args.positional().size() != 1 || args.positional().front().empty())
        throw UsageFailure{"give exactly one key: idemctl inspect KEY --table " + table};
    idem::PgTable t(url, table, staleAfterMs(args));
    std::int64_t now = 0;
    const auto rows = t.inspect(args.positional().front(), &now);
    if (rows.empty()) {
        std::fprintf(stderr, "idemctl inspect: no row of %s has %s '%s'\n", table.c_str(), t.layout().key.c_str(),
                     args.positional().front().c_str());
        return NotFound;
    }
    if (args.flag("--json")) {
        nlohmann::json all = nlohmann::json::array();
        for (const auto& r : rows) {
            nlohmann::json j = inspectJson(r);
            j.erase("meta");
            j["table"] = table;
            all.push_back(std::move(j));
        }
        std::printf("%s\n", all.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
        return Ok;
    }
    for (std::size_t i = 0; i < rows.size(); ++i) {
        if (i)
            std::printf("\n");
        std::printf("table      %s (read-only: idem never writes to a table it did not make)\n", table.c_str());
        printRecord(rows[i], now);
    }
    return Ok;
}

} // namespace

void refuseTableWithoutPostgres(const Args& args)
{
    if (args.value("--table") && !postgresGiven(args))
        throw UsageFailure{"--table names a PostgreSQL table: give a postgresql:// URL (--url or IDEM_URL)"};
}

void refuseLockTimeout(const Args& args)
{
    if (args.value("--lock-timeout"))
        throw UsageFailure{"--lock-timeout is for PostgreSQL (a row another transaction holds); Redis never waits"};
}

void refuseTableWrite(const Args& args, const char* command)
{
    if (const auto t = args.value("--table"))
        throw UsageFailure{std::string("idemctl ") + command + " does not write to '" + *t +
                           "': the failure word of the program that owns it is its own (purge the row instead: "
                           "its next request runs again; docs/postgres.md)"};
}

int pgInspect(const Args& args)
{
    const Global g = globalFrom(args);
    if (const auto table = args.value("--table"))
        return tableInspect(args, g.url, *table);
    const std::string id = oneId(args, "inspect");
    idem::PgStore store(g.url);
    std::int64_t now = 0;
    const auto rec = store.inspect(id, &now);
    if (!rec) {
        if (args.flag("--json"))
            std::printf("%s\n", dumpLine(nlohmann::json{{"key", id}, {"id", id}, {"state", nullptr}}).c_str());
        else
            std::fprintf(stderr, "idemctl inspect: no record %s\n", printable(id).c_str());
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
    const std::string who = actorName(args);
    idem::PgStore store(g.url, operatorOptions(args));
    const auto r = store.forceFail(id, reason, args.flag("--terminal"), who);
    switch (r.status) {
    case idem::AdminStatus::Ok:
        std::printf("force-failed %s (was %s, now FAILED %s)\n", printable(id).c_str(), printable(r.previousState).c_str(),
                    args.flag("--terminal") ? "terminal" : "retryable");
        return Ok;
    case idem::AdminStatus::NotFound:
        std::fprintf(stderr, "idemctl force-fail: no record %s\n", printable(id).c_str());
        return NotFound;
    case idem::AdminStatus::Refused:
        std::fprintf(stderr, "idemctl force-fail: refused: %s\n", printable(r.reason).c_str());
        return Refused;
    case idem::AdminStatus::Busy:
        std::fprintf(stderr, "idemctl force-fail: %s: %s\n", printable(id).c_str(), printable(r.reason).c_str());
        return InProgress;
    }
    return Refused;
}

int pgPurge(const Args& args)
{
    const Global g = globalFrom(args);
    const std::string id = oneId(args, "purge");
    const std::string reason = args.value("--reason").value_or("purged by operator");
    const std::string who = actorName(args);
    if (const auto table = args.value("--table")) { // the guarded delete (idem/pg/pgtable.h)
        if (args.value("--lock-timeout"))
            throw UsageFailure{"--lock-timeout is for schema idem: a purge with --table never waits for a row "
                               "(FOR UPDATE NOWAIT)"};
        idem::PgTable t(g.url, *table, staleAfterMs(args));
        const auto r = t.purge(id, who, reason);
        if (r.sharing > 1) {
            std::fprintf(stderr, "idemctl purge: %s\n", printable(r.why).c_str());
            return Refused;
        }
        if (r.deleted == 0 && r.kept == 0) {
            std::fprintf(stderr, "idemctl purge: no row of %s is %s\n", table->c_str(), printable(id).c_str());
            return NotFound;
        }
        if (r.deleted > 0)
            std::printf("purged %s from %s (was %s%s)\n", printable(id).c_str(), table->c_str(), printable(r.was).c_str(),
                        r.audited ? "; written to idem.operations" : "");
        if (r.kept > 0) {
            std::fprintf(stderr, "idemctl purge: kept %s in %s: %s\n", printable(id).c_str(), table->c_str(), printable(r.why).c_str());
            return Refused;
        }
        return Ok;
    }
    idem::PgStore store(g.url, operatorOptions(args));
    // as on Redis: a live lock only with --live; without it, only the row just read, so a lock
    // taken between the read and the delete stays (compared under the row's lock). An expired row
    // is compared too: a delivery may take it over right after the read.
    // An id read as absent is asked about all the same, as absent: a transaction may hold its first
    // acquire, which no other transaction sees before it commits (schema v6 waits for it, as for a
    // row it holds: Busy past --lock-timeout; what it committed meanwhile is "changed")
    const auto seen = store.inspect(id);
    const bool live = args.flag("--live");
    if (refusedAsLive(seen, args) || refusedAsUnknown(seen, args))
        return Refused;
    const idem::Record absent;
    const auto r = store.purge(id, who, reason, live ? nullptr : seen ? &*seen : &absent);
    if (r.status == idem::AdminStatus::NotFound) {
        std::fprintf(stderr, "idemctl purge: no record %s\n", printable(id).c_str());
        return NotFound;
    }
    if (r.status == idem::AdminStatus::Refused) {
        std::fprintf(stderr, "idemctl purge: %s: %s; nothing done\n", printable(id).c_str(), printable(r.reason).c_str());
        return Refused;
    }
    if (r.status == idem::AdminStatus::Busy) {
        std::fprintf(stderr, "idemctl purge: %s: %s\n", printable(id).c_str(), printable(r.reason).c_str());
        return InProgress;
    }
    std::printf("purged %s (was %s)\n", printable(id).c_str(), printable(r.previousState).c_str());
    return Ok;
}

int pgList(const Args& args, idem::StateFilter filter)
{
    const auto table = args.value("--table");
    refuseRedisOnly(args, {"--pattern", "--count", "--writer-ttl", "--read-from"});
    if (!table)
        refuseRedisOnly(args, {"--stale-after"});
    const Global g = globalFrom(args);
    const bool json = args.flag("--json");
    std::optional<ListTable> rows;
    if (!json)
        rows.emplace(ListOf::PgRows);
    std::size_t n = 0;
    const auto each = [&](const idem::Record& r, std::int64_t now) {
        if (!idem::matches(r, filter))
            return;
        ++n;
        if (json) {
            std::printf("%s\n", dumpLine(recordJson(r, now)).c_str());
            return;
        }
        rows->add(r);
    };
    if (table) {
        idem::PgTable t(g.url, *table, staleAfterMs(args));
        eachTableRow(t, each);
    } else {
        idem::PgStore store(g.url);
        eachRow(store, each);
    }
    if (rows)
        rows->flush();
    if (!json)
        std::fprintf(stderr, "%zu record(s)\n", n);
    return Ok;
}

int pgStats(const Args& args)
{
    const auto table = args.value("--table");
    refuseRedisOnly(args, {"--pattern", "--count", "--writer-ttl", "--read-from"});
    if (!table)
        refuseRedisOnly(args, {"--stale-after"});
    const Global g = globalFrom(args);
    idem::Stats s;
    const auto add = [&](const idem::Record& r, std::int64_t) { s.add(r); };
    if (table) {
        idem::PgTable t(g.url, *table, staleAfterMs(args));
        eachTableRow(t, add);
        if (args.flag("--json")) {
            nlohmann::json j = statsJson(s);
            j["table"] = *table;
            std::printf("%s\n", j.dump().c_str());
        } else {
            printStats(s);
        }
        return Ok;
    }
    idem::PgStore store(g.url);
    eachRow(store, add);
    // the same fields as Redis's stats, every row counted once (a newer schema's state as malformed)
    if (args.flag("--json"))
        std::printf("%s\n", statsJson(s).dump().c_str());
    else
        printStats(s, "counted as absent; idemctl pg sweep deletes them");
    return Ok;
}

} // namespace idemctl
