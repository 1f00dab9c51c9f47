// idemctl list / stats / purge --state|--stale|--pattern: the monitor engine on the command line.
#include "cli.h"

#include "idem/duration.h"
#include "idem/monitor/scanner.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

namespace idemctl {

namespace {

// Nothing under the namespace: another library's keys are elsewhere, and read only when named
void hintPattern(const Global& g)
{
    std::fprintf(stderr, "(only %s:{ID} keys are read; other libraries' keys, such as Powertools' or "
                         "node-idempotency's: --pattern GLOB, e.g. --pattern '*')\n",
                 g.keyNamespace.c_str());
}

struct Scan {
    Global g;
    idem::Scanner scanner;
    Scan(const Args& args, const Global& global) : g(global), scanner(g.connection, options(args, g), scannerOptions(args))
    {
    }
    static idem::MonitorOptions options(const Args& args, const Global& g)
    {
        idem::MonitorOptions o;
        o.keyNamespace = g.keyNamespace;
        if (auto p = args.value("--pattern")) {
            if (p->empty())
                throw UsageFailure{"--pattern must not be empty"};
            o.pattern = *p;
        }
        if (auto c = args.value("--count")) {
            // a number of keys a SCAN step asks for, not a size: "4KiB" is no count
            const bool digits = !c->empty() && c->size() <= 6 &&
                                std::all_of(c->begin(), c->end(), [](char ch) { return ch >= '0' && ch <= '9'; });
            const std::size_t n = digits ? std::stoul(*c) : 0;
            if (n < 1 || n > 10000)
                throw UsageFailure{"--count must be from 1 to 10000"};
            o.scanCount = n;
        }
        if (auto s = args.value("--stale-after"))
            o.staleAfterMs = idem::parseDuration(*s).count();
        if (auto w = args.value("--writer-ttl"))
            o.writerTtlMs = idem::parseDuration(*w).count();
        o.format = g.format;
        return o;
    }
    static idem::ScannerOptions scannerOptions(const Args& args)
    {
        idem::ScannerOptions o;
        if (auto r = args.value("--read-from")) {
            if (*r == "replica" || *r == "replicas")
                o.readFrom = idem::ReadFrom::Replicas;
            else if (*r != "primary" && *r != "primaries")
                throw UsageFailure{"--read-from must be primary or replica"};
        }
        return o;
    }
    // Every record, page by page (SCAN with a bounded COUNT; on a Redis Cluster every shard, in
    // parallel). `restarted(shard)` is called before a shard's records are read again from the
    // start (its node failed over): what was counted of it is to be forgotten.
    std::map<int, std::size_t> refused; // by shard: keys SCAN listed that this user may not read
    std::size_t refusedKeys() const
    {
        std::size_t n = 0;
        for (const auto& [shard, k] : refused)
            n += k;
        return n;
    }
    template <typename F, typename R> void each(F&& f, R&& restarted)
    {
        scanner.open();
        while (!scanner.done()) {
            idem::ScanStep step = scanner.next();
            for (const auto& note : step.notes)
                std::fprintf(stderr, "idemctl: %s\n", note.c_str());
            for (auto& p : step.pages) {
                if (p.restarted) {
                    refused.erase(p.shard);
                    restarted(p.shard);
                }
                refused[p.shard] += p.page.refused;
                for (auto& r : p.page.records)
                    f(r, p.page.serverNowMs, p.shard);
            }
        }
    }
};

// Keys SCAN listed that this user may not read (an ACL whose key patterns leave them out) are
// said, and the exit is 77: what was listed, counted or purged is not all there is (a namespace
// this user may not read is not an empty one).
int saidRefused(const Scan& scan, const char* notWhat)
{
    const std::size_t n = scan.refusedKeys();
    if (n == 0)
        return Ok;
    std::fprintf(stderr,
                 "idemctl: %zu key(s) matched that this user may not read (NOPERM: its ACL key patterns leave them "
                 "out); they are not %s: check --namespace, or the user's key patterns (idemctl acl)\n",
                 n, notWhat);
    return NoPermission;
}

idem::StateFilter filterFrom(const Args& args)
{
    idem::StateFilter f = idem::StateFilter::Any;
    if (auto s = args.value("--state")) {
        auto parsed = idem::stateFilterFromString(*s);
        if (!parsed)
            throw UsageFailure{"--state must be started, stale, blocked, completed, failed, expired, malformed, "
                               "foreign, unknown or no-ttl"};
        f = *parsed;
    }
    if (args.flag("--stale")) {
        if (args.value("--state"))
            throw UsageFailure{"give --state or --stale, not both"};
        f = idem::StateFilter::Stale;
    }
    return f;
}

} // namespace

int cmdList(const std::vector<std::string>& argv)
{
    Args args(argv, {"--state", "--pattern", "--count", "--stale-after", "--writer-ttl", "--read-from", "--table"},
              {"--json", "--stale"});
    if (args.flag("--help")) {
        std::puts("usage: idemctl list [--state S] [--stale] [--pattern GLOB] [--count N] [--stale-after DUR]\n"
                  "                   [--writer-ttl DUR] [--read-from primary|replica] [--json]\n\n"
                  "Lists the records under the namespace (SCAN MATCH NS:* COUNT 500, never KEYS; on a Redis\n"
                  "Cluster every primary in parallel, or one replica of each with --read-from replica; give\n"
                  "--pattern to read other libraries' keys, e.g. 'myfunction#*' for Powertools), with\n"
                  "their state, the library that wrote them and their TTL. S: started, stale, blocked (no\n"
                  "lease), completed, failed, expired, malformed, foreign, unknown, no-ttl.\n"
                  "--json prints one JSON object per key with key, id, state, format, library, type, node, ttl_ms\n"
                  "(-1: no TTL), stale, blocked, reason, expires_ms, partial, lease_remaining_ms, age_ms,\n"
                  "owner, fence, attempt; key_base64 (the key's bytes) when the key is not UTF-8, and\n"
                  "status_as_written for a key that is not a record idem reads. --stale-after: when a record with no lease counts as stale\n"
                  "(default never: its library keeps it until its TTL; with --table, 15m). --writer-ttl: the TTL node-idempotency or express-idempotency give their\n"
                  "records (their age is that minus the TTL left; without it their age is unknown and\n"
                  "they are never stale). With a postgresql:// URL: the rows of schema idem, or with\n"
                  "--table [SCHEMA.]NAME those of a table another program writes (read-only; its columns\n"
                  "found by name: key, status, response, locked_at, ... - docs/postgres.md).");
        return Ok;
    }
    if (!args.positional().empty())
        throw UsageFailure{"unexpected argument '" + args.positional().front() + "'"};
    refuseTableWithoutPostgres(args);
    const auto filter = filterFrom(args);
    if (postgresGiven(args))
        return pgList(args, filter);
    Scan scan(args, globalFrom(args));
    scan.scanner.open(); // a clear error before any output
    const bool json = args.flag("--json");
    std::optional<ListTable> table;
    if (!json)
        table.emplace(ListOf::RedisKeys);
    std::size_t n = 0;
    scan.each([&](const idem::Record& r, std::int64_t now, int) {
        if (!idem::matches(r, filter))
            return;
        ++n;
        if (json) {
            std::printf("%s\n", dumpLine(recordJson(r, now)).c_str());
            return;
        }
        table->add(r);
    }, [](int shard) {
        std::fprintf(stderr, "idemctl: the records of slots from %d are listed again from the start\n", shard);
    });
    if (table)
        table->flush();
    if (!json)
        std::fprintf(stderr, "%zu record(s)\n", n);
    if (n == 0 && !args.value("--pattern") && scan.refusedKeys() == 0)
        hintPattern(scan.g);
    return saidRefused(scan, "listed");
}

nlohmann::json statsJson(const idem::Stats& s)
{
    return {{"total", s.total},         {"started", s.started}, {"stale", s.stale},         {"blocked", s.blocked},
            {"completed", s.completed}, {"failed", s.failed},   {"expired", s.expired},     {"malformed", s.malformed},
            {"foreign", s.foreign},     {"other_programs", s.otherPrograms}, {"unknown", s.unknown},
            {"no_ttl", s.noTtl}};
}

void printStats(const idem::Stats& s, const std::string& expiredNote)
{
    std::printf("total      %zu\nstarted    %zu (stale %zu, blocked %zu)\ncompleted  %zu\nfailed     %zu\n"
                "expired    %zu%s\nmalformed  %zu\nforeign    %zu (other programs' data %zu)\nunknown    %zu\n"
                "no TTL     %zu\n",
                s.total, s.started, s.stale, s.blocked, s.completed, s.failed, s.expired,
                expiredNote.empty() ? "" : (" (" + expiredNote + ")").c_str(), s.malformed, s.foreign,
                s.otherPrograms, s.unknown, s.noTtl);
}

int cmdStats(const std::vector<std::string>& argv)
{
    Args args(argv, {"--pattern", "--count", "--stale-after", "--writer-ttl", "--read-from", "--table"}, {"--json"});
    if (args.flag("--help")) {
        std::puts("usage: idemctl stats [--pattern GLOB] [--stale-after DUR] [--writer-ttl DUR] [--read-from primary|replica]\n"
                  "                    [--json]\n\nCounts the records by state: total, "
                  "started (stale and no-lease ones included), stale,\nblocked (no lease: only the TTL ends "
                  "them), completed, failed, expired, malformed, foreign\n(other_programs of them: job queues' "
                  "and task backends' data), unknown, and no_ttl\n(keys that never expire). --stale-after and "
                  "--writer-ttl as for list.");
        return Ok;
    }
    if (!args.positional().empty())
        throw UsageFailure{"unexpected argument '" + args.positional().front() + "'"};
    refuseTableWithoutPostgres(args);
    if (postgresGiven(args))
        return pgStats(args);
    Scan scan(args, globalFrom(args));
    std::map<int, idem::Stats> byShard; // a shard read again after a failover is counted again
    scan.each([&](const idem::Record& r, std::int64_t, int shard) { byShard[shard].add(r); },
              [&](int shard) { byShard.erase(shard); });
    idem::Stats s;
    for (const auto& [shard, part] : byShard)
        s.merge(part);
    if (args.flag("--json")) {
        std::printf("%s\n", statsJson(s).dump().c_str());
    } else {
        if (s.total == 0 && !args.value("--pattern") && scan.refusedKeys() == 0)
            hintPattern(scan.g);
        printStats(s);
    }
    return saidRefused(scan, "counted");
}

int cmdPurgeMany(const std::vector<std::string>& argv)
{
    Args args(argv, {"--state", "--pattern", "--count", "--stale-after", "--writer-ttl", "--reason", "--by", "--read-from"},
              {"--stale", "--dry-run", "--yes", "--json", "--live"});
    if (args.flag("--help"))
        return cmdPurge({"--help"});
    if (!args.positional().empty())
        throw UsageFailure{"give an ID or --state/--stale/--pattern, not both"};
    const auto filter = filterFrom(args);
    if (filter == idem::StateFilter::Any && !args.value("--pattern"))
        throw UsageFailure{"say what to purge: --state S, --stale or --pattern GLOB"};
    // keys idem cannot read as records (or all keys of a kind) are never taken by a state alone:
    // a live lock of a library idem misread would be deleted and its work run twice
    if (filter != idem::StateFilter::Any && !idem::bulkByStateAlone(filter) && !args.value("--pattern"))
        throw UsageFailure{"--state " + std::string(idem::nameOf(filter)) +
                           " takes keys that are not records idem understands (or keys of every kind): "
                           "name them with --pattern GLOB as well"};
    const std::optional<idem::RecordFormat> forced = redisGlobalFrom(args).format;
    Scan scan(args, redisGlobalFrom(args));
    const bool act = args.flag("--yes") && !args.flag("--dry-run");
    const idem::Actor by{actorName(args), args.value("--reason").value_or("bulk purge")};
    std::size_t matched = 0, removed = 0, changed = 0, keptLive = 0, keptPartial = 0, keptUnread = 0, keptOthers = 0,
                shown = 0;
    const bool takeLive = args.flag("--live");
    std::vector<idem::Record> batch;
    // the "purge KEY" lines of a batch are printed once its deletion went through: a user who may
    // not delete (NOPERM) sees the refusal, not lines saying that keys were purged
    std::vector<std::string> said;
    auto flush = [&] {
        if (!batch.empty()) {
            const auto n = scan.scanner.unlinkIfUnchanged(batch, by);
            removed += n;
            changed += batch.size() - n;
            batch.clear();
        }
        for (const std::string& line : said)
            std::fputs(line.c_str(), stdout);
        said.clear();
    };
    idem::Stats byState;
    std::map<std::string, std::size_t> byFormat;
    const bool json = args.flag("--json");
    // one line a key: every key when only telling or with --json, a sample of what goes when acting
    const auto say = [&](const char* action, const idem::Record& r, const std::string& why) {
        if (!json && act && ++shown > 10)
            return;
        const std::string format(idem::nameOf(r.format)), state(idem::nameOf(r.state));
        std::string line;
        if (json) {
            nlohmann::json j = {{"action", action}, {"key", r.key}, {"format", format}, {"state", state},
                                {"stale", r.stale}, {"why", why}};
            addKeyBytes(j, r.key);
            line = dumpLine(j) + "\n";
        } else {
            line = std::string(action) + " " + printable(r.key) + "  (" + format + ", " + state +
                   (why.empty() ? "" : ": ") + why + ")\n";
        }
        if (act && std::string_view(action) == "purge")
            said.push_back(std::move(line));
        else
            std::fputs(line.c_str(), stdout);
    };
    scan.each([&](const idem::Record& r, std::int64_t, int) {
        if (!idem::matches(r, filter))
            return;
        // another program's data (a job queue's, a task's result): no bulk purge takes it, whatever
        // it names (--state foreign and --live included); one is deleted by key, after inspect
        if (idem::anotherProgramsData(r)) {
            ++keptOthers;
            say("keep", r, r.program + "'s data, not idempotency data: no bulk purge takes it; "
                           "`idemctl purge --key KEY` deletes one");
            return;
        }
        // a lock whose owner may still be running: deleting it lets a duplicate run beside it
        const bool live = idem::mayBeLiveLock(r); // (a record idem cannot read whose status says in progress too)
        // not understood from the bytes read (the head and tail of a large value): what inspect
        // reads whole may be a live lock
        // (or read as another library's than --format names: from part of it, that is a guess)
        const bool unsure = r.partial && (idem::notARecord(r.state) || (forced && r.format != *forced));
        // a key idem does not read as a record goes only when its state is named: a pattern, or a
        // record state, may match another library's live lock that idem could not read
        const bool notRecord = r.state == idem::RecordState::Malformed || r.state == idem::RecordState::Unknown ||
                               r.state == idem::RecordState::Foreign;
        if (notRecord && !unsure && filter != idem::StateFilter::Malformed && filter != idem::StateFilter::Unknown &&
            filter != idem::StateFilter::Foreign) {
            ++keptUnread;
            std::string state(idem::nameOf(r.state));
            std::transform(state.begin(), state.end(), state.begin(), [](unsigned char c) { return std::tolower(c); });
            say("keep", r, "not a record idem understands; --state " + state +
                               " --pattern GLOB takes it, or purge --key after inspect");
            return;
        }
        if ((live && !takeLive) || unsure) {
            ++(unsure ? keptPartial : keptLive);
            say("keep", r, unsure ? "read in part; inspect it, then purge it by key"
                                  : "live, its owner may still be running; --live takes it");
            return;
        }
        ++matched;
        byState.add(r);
        ++byFormat[std::string(idem::nameOf(r.format))];
        say(act ? "purge" : "would purge", r, r.stale ? "stale" : "");
        if (act) {
            batch.push_back(r);
            if (batch.size() >= 500)
                flush();
        }
    }, [](int) {}); // a key read twice is unlinked once: the guard finds it gone
    flush();
    if (!json && act && shown > 10)
        std::printf("(the first 10 keys are shown; %zu more: `idemctl audit --since 10m` lists every one, or "
                    "--json)\n", shown - 10);
    std::string kept;
    if (keptLive)
        kept += ", kept " + std::to_string(keptLive) + " live lock(s)";
    if (keptPartial)
        kept += ", kept " + std::to_string(keptPartial) + " read in part";
    if (keptUnread)
        kept += ", kept " + std::to_string(keptUnread) + " not understood";
    if (keptOthers)
        kept += ", kept " + std::to_string(keptOthers) + " of other programs (job queues, task results)";
    std::string formats;
    for (const auto& [name, n] : byFormat)
        formats += (formats.empty() ? "" : ", ") + name + " " + std::to_string(n);
    if (matched == 0) { // said in words, acting or not: not "purged 0 key(s) of 0 matching (none; ...)"
        std::fprintf(act && !json ? stdout : stderr, "no key matches%s; nothing %s\n", kept.c_str(),
                     act ? "purged" : "to purge");
        return saidRefused(scan, "purged (nor read)");
    }
    if (!act) {
        std::fprintf(stderr, "%zu key(s) match (%s; formats: %s)%s; nothing removed%s\n", matched,
                     byState.summary().c_str(), formats.empty() ? "none" : formats.c_str(), kept.c_str(),
                     args.flag("--dry-run") ? " (dry run)" : ": add --yes to purge them");
        return saidRefused(scan, "purged (nor read)");
    }
    std::fprintf(json ? stderr : stdout, "purged %zu key(s) of %zu matching (%s; formats: %s)%s%s\n", removed, matched,
                 byState.summary().c_str(), formats.empty() ? "none" : formats.c_str(), kept.c_str(),
                 changed ? (", left " + std::to_string(changed) + " that changed since they were read").c_str() : "");
    return saidRefused(scan, "purged (nor read)");
}

} // namespace idemctl
