// idemctl inspect / force-fail / purge: one record at a time.
#include "cli.h"

#include "idem/base64.h"
#include "idem/duration.h"
#include "idem/engine/store.h"
#include "idem/format/httpanswer.h"
#include "idem/monitor/scanner.h"

#include <cstdio>
#include <ctime>
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
    idem::DecodeOptions decodeOptions() const
    {
        idem::DecodeOptions o;
        o.keyNamespace = g.keyNamespace;
        o.format = g.format;
        return o;
    }
    // A key of another library's, unlinked only if it is still what `seen` read (on a cluster,
    // on the primary serving its slot).
    bool unlinkIfUnchanged(const idem::Record& seen, const std::string& who, const std::string& why)
    {
        idem::MonitorOptions o;
        o.keyNamespace = g.keyNamespace;
        return idem::Scanner(g.connection, o).unlinkIfUnchanged({seen}, idem::Actor{who, why}) == 1;
    }
};

// What a command acts on: an ID (its key <namespace>:{ID}) or, with --key, any key.
struct Target {
    std::string key;
    std::string id; // empty for a key outside the namespace's <namespace>:{ID} shape
};

// --key KEY, or --key-base64 B64 for a key of any bytes (list --json's key_base64)
std::optional<std::string> keyOption(const Args& args)
{
    const auto b64 = args.value("--key-base64");
    if (!b64)
        return args.value("--key");
    if (args.value("--key"))
        throw UsageFailure{"give --key or --key-base64, not both"};
    auto key = idem::fromBase64(*b64);
    if (!key)
        throw UsageFailure{"--key-base64 must be standard base64 with padding (as list --json's key_base64)"};
    return key;
}

Target oneTarget(const Args& args, const Session& s, const char* command)
{
    if (auto key = keyOption(args)) {
        if (!args.positional().empty())
            throw UsageFailure{std::string("give an ID or --key KEY, not both: idemctl ") + command};
        if (key->empty())
            throw UsageFailure{"--key must not be empty"};
        return {*key, idem::idFromKey(*key, s.g.keyNamespace)};
    }
    if (args.positional().size() != 1)
        throw UsageFailure{std::string("give exactly one ID (or --key KEY): idemctl ") + command + " ID"};
    const std::string& id = args.positional().front();
    if (id.empty())
        throw UsageFailure{"the ID must not be empty"};
    if (id.size() > 1024)
        throw UsageFailure{"the ID is " + std::to_string(id.size()) + " bytes, over the 1024-byte limit"};
    return {s.store.recordKey(id), id};
}

// What one of idem's own keys is (idem::ownKey), in words; empty for any other key.
std::string ownKeyWords(const idem::OwnKey& own, const std::string& ns)
{
    switch (own.kind) {
    case idem::OwnKey::Kind::AuditTrail:
        return "idem's audit trail: every operator action in namespace '" + ns + "' (idemctl audit lists it)";
    case idem::OwnKey::Kind::Meta:
        return "idem's meta key of record " + printable(own.id) +
               ": keeps its last fence, so fencing numbers keep rising across purges";
    case idem::OwnKey::Kind::None:
        break;
    }
    return {};
}

// purge and force-fail --key never take idem's own keys: the audit trail is what says who did what,
// and a meta key's fence is what makes a purged id's next owner's fence higher than the last one.
bool refusedAsOwn(const Target& t, const Session& s, const char* command)
{
    const idem::OwnKey own = idem::ownKey(t.key, s.g.keyNamespace);
    if (!own)
        return false;
    std::fprintf(stderr, "idemctl %s: refused: %s is %s; no operator action takes it%s\n", command,
                 printable(t.key).c_str(), ownKeyWords(own, s.g.keyNamespace).c_str(),
                 own.kind == idem::OwnKey::Kind::Meta ? " (give the ID to act on the record)" : "");
    return true;
}

// A time as ms since the epoch, in UTC, and how far from now.
std::string when(std::int64_t ms, std::int64_t nowMs)
{
    const std::int64_t d = ms - nowMs;
    return utcTime(ms) + (d >= 0 ? " (in " + idem::formatDuration(idem::Millis(d / 1000 * 1000)) + ")"
                                      : " (" + idem::formatDuration(idem::Millis(-d / 1000 * 1000)) + " ago)");
}

// A value the record holds, on one line (printable, tabs kept): at most `limit` bytes of it.
std::string shown(std::string_view s, std::size_t limit)
{
    std::string out = printable(s, limit, true);
    if (s.size() > limit) {
        out.pop_back(); // its '~'
        out += "… (" + std::to_string(s.size()) + " bytes)";
    }
    return out;
}

// Text of many lines (an error, a stored response) under a field's name: every line after the
// first indented past the names, so none of it can pass for a line of inspect's own.
std::string shownLines(const std::string& s, std::size_t limit = 2000)
{
    std::string out;
    const std::string_view all = std::string_view(s).substr(0, limit);
    for (std::size_t start = 0;;) {
        const std::size_t nl = all.find('\n', start);
        std::string_view line = all.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start);
        if (nl != std::string_view::npos && line.ends_with('\r'))
            line.remove_suffix(1);
        out += printable(line, std::string::npos, true);
        if (nl == std::string_view::npos)
            break;
        out += "\n           ";
        start = nl + 1;
    }
    if (s.size() > limit)
        out += "… (" + std::to_string(s.size()) + " bytes)";
    return out;
}

// An answer idem-gateway stored: its status, route and kept headers, the body as it reads (JSON
// pretty-printed, text as text, binary as a hex dump), as the console's inspector shows it.
void printHttpAnswer(const idem::HttpAnswer& a)
{
    std::printf("response   HTTP %d to %s %s (stored by idem-gateway; replayed with Idempotent-Replayed: true)\n",
                a.status, shown(a.method, 16).c_str(), shown(a.route, 200).c_str());
    for (const auto& [name, value] : a.headers)
        std::printf("  header   %s: %s\n", shown(name, 80).c_str(), shown(value, 200).c_str());
    const std::string* type = a.header("Content-Type");
    const idem::BodyView body = idem::viewBody(a.body, type ? *type : std::string_view());
    std::printf("  body     %s, %zu bytes%s\n", std::string(idem::nameOf(body.kind)).c_str(), body.bytes,
                body.cut ? " (the first part)" : "");
    std::string line;
    for (std::size_t i = 0; i <= body.text.size(); ++i)
        if (i == body.text.size() || body.text[i] == '\n') {
            if (!line.empty() || i < body.text.size())
                std::printf("    %s\n", shown(line, 4000).c_str());
            line.clear();
        } else {
            line += body.text[i];
        }
}

nlohmann::json httpJson(const idem::HttpAnswer& a)
{
    nlohmann::json headers = nlohmann::json::array();
    for (const auto& [name, value] : a.headers)
        headers.push_back({name, value});
    const std::string* type = a.header("Content-Type");
    const idem::BodyView body = idem::viewBody(a.body, type ? *type : std::string_view(), std::string::npos, 0);
    nlohmann::json j = {{"method", a.method}, {"route", a.route}, {"status", a.status}, {"headers", headers},
                        {"body_kind", std::string(idem::nameOf(body.kind))}, {"body_bytes", a.body.size()}};
    if (body.kind == idem::BodyKind::Json || body.kind == idem::BodyKind::Text)
        j["body"] = a.body;
    return j;
}

nlohmann::json toJson(const idem::Record& r, const std::vector<std::pair<std::string, std::string>>& meta)
{
    using nlohmann::json;
    json j = recordJson(r, std::nullopt);
    setBytes(j, "status_as_written", r.rawStatus);
    auto opt = [&](const char* name, const std::optional<std::int64_t>& v) {
        j[name] = v ? json(*v) : json(nullptr);
    };
    opt("created_ms", r.createdMs);
    opt("started_ms", r.startedMs);
    opt("lease_until_ms", r.leaseUntilMs);
    opt("finished_ms", r.finishedMs);
    setBytes(j, "owner", r.owner);
    // idem's own counters; another library's record has neither (null, not a fence 0)
    const bool idemRecord = r.format == idem::RecordFormat::Native;
    j["fence"] = idemRecord ? json(r.fence) : json(nullptr);
    j["attempt"] = idemRecord ? json(r.attempt) : json(nullptr);
    setBytes(j, "fingerprint", r.fingerprint);
    if (r.response)
        setBytes(j, "response", *r.response);
    else
        j["response"] = nullptr;
    if (r.response)
        if (const auto http = idem::decodeHttpAnswer(*r.response))
            j["http"] = httpJson(*http); // the gateway's answer, decoded
    setBytes(j, "error", r.error);
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

nlohmann::json inspectJson(const idem::Record& r) { return toJson(r, {}); }

void printRecord(const idem::Record& r, std::int64_t now)
{
    std::printf("key        %s\n", printable(r.key).c_str());
    std::printf("state      %s%s%s%s\n", std::string(idem::nameOf(r.state)).c_str(),
                r.stale ? " (STALE: " : "", r.stale ? (printable(r.staleWhy) + ")").c_str() : "",
                r.blocked && !r.stale ? " (no lease: blocked until its TTL ends)" : "");
    std::printf("library    %s (format %s)%s\n", std::string(idem::libraryOf(r.format)).c_str(),
                std::string(idem::nameOf(r.format)).c_str(),
                r.rawStatus.empty() ? "" : (", status '" + shown(r.rawStatus, 40) + "'").c_str());
    if (idem::anotherProgramsData(r))
        std::printf("program    %s: not idempotency data (no bulk purge takes it; purge --key does)\n",
                    printable(r.program).c_str());
    if (!r.reason.empty())
        std::printf("%-10s %s\n", idem::notARecord(r.state) ? "reason" : "note", printable(r.reason).c_str());
    if (r.partial)
        std::printf("partial    read from the first and last bytes of a %lld-byte value\n",
                    static_cast<long long>(r.valueBytes));
    std::printf("ttl        %s\n", r.ttlMs == -1 ? "none (key never expires!)"
                                   : r.ttlMs < 0 ? "unknown"
                                                 : idem::formatDuration(idem::Millis(r.ttlMs)).c_str());
    if (r.startedMs)
        std::printf("started    %s\n", when(*r.startedMs, now).c_str());
    if (r.state == idem::RecordState::Started && r.leaseUntilMs)
        std::printf("lease ends %s\n", when(*r.leaseUntilMs, now).c_str());
    if (r.expiresMs)
        std::printf("expires    %s (the library's own expiry)\n", when(*r.expiresMs, now).c_str());
    if (r.finishedMs)
        std::printf("finished   %s\n", when(*r.finishedMs, now).c_str());
    if (r.state == idem::RecordState::Failed)
        std::printf("failure    %s\n", r.terminal ? "terminal" : "retryable");
    if (!r.owner.empty())
        std::printf("owner      %s\n", shown(r.owner, 80).c_str());
    if (r.fence)
        std::printf("fence      %lld\n", static_cast<long long>(r.fence));
    if (r.attempt)
        std::printf("attempt    %lld\n", static_cast<long long>(r.attempt));
    if (!r.fingerprint.empty())
        std::printf("payload    %s\n", shown(r.fingerprint, 200).c_str());
    if (!r.error.empty())
        std::printf("error      %s\n", shownLines(r.error).c_str());
    if (!r.op.empty())
        std::printf("operator   %s by %s: %s\n", printable(r.op).c_str(), printable(r.opBy).c_str(),
                    printable(r.opReason).c_str());
    if (r.response) {
        if (const auto http = idem::decodeHttpAnswer(*r.response))
            printHttpAnswer(*http);
        else
            std::printf("response   %s\n", shownLines(*r.response).c_str());
    }
    if (r.format != idem::RecordFormat::Native)
        for (const auto& [k, v] : r.fields) {
            const idem::FieldDoc* doc = idem::fieldDoc(r.format, k);
            std::printf("field %-22s %s%s\n", printable(k).c_str(), shown(v, 200).c_str(),
                        doc ? ("  -- " + std::string(doc->meaning)).c_str() : "");
        }
}

int cmdInspect(const std::vector<std::string>& argv)
{
    Args args(argv, {"--key", "--key-base64", "--table", "--stale-after"}, {"--json"});
    if (args.flag("--help")) {
        std::puts("usage: idemctl inspect ID [--json]\n       idemctl inspect --key KEY | --key-base64 B64 [--json]\n\n"
                  "Shows the record of ID (or any KEY), whichever library wrote it, what its library\n"
                  "means by it, its TTL and, for idem's records, the meta key's fencing counter and last\n"
                  "operator action. Exit 66 when there is no record. With a postgresql:// URL and\n"
                  "--table [SCHEMA.]NAME: the rows of a table another program writes whose key is KEY.");
        return Ok;
    }
    refuseTableWithoutPostgres(args);
    if (postgresGiven(args))
        return pgInspect(args);
    if (args.value("--stale-after"))
        throw UsageFailure{"--stale-after goes with --table"};
    Session s(args);
    const Target t = oneTarget(args, s, "inspect");
    if (const idem::OwnKey own = idem::ownKey(t.key, s.g.keyNamespace)) { // not a record: what it is
        const auto meta = own.kind == idem::OwnKey::Kind::Meta ? s.store.meta(own.id)
                                                                : std::vector<std::pair<std::string, std::string>>();
        // (a meta key always has fields; an audit stream without entries is no key)
        if (own.kind == idem::OwnKey::Kind::Meta ? meta.empty() : s.store.audit(1).empty()) {
            std::fprintf(stderr, "idemctl inspect: no key at %s (%s)\n", printable(t.key).c_str(),
                         ownKeyWords(own, s.g.keyNamespace).c_str());
            return NotFound;
        }
        if (args.flag("--json")) {
            nlohmann::json m = nlohmann::json::object();
            for (const auto& [k, v] : meta)
                m[k] = v;
            nlohmann::json j = {{"key", t.key},
                                {"idem_key", own.kind == idem::OwnKey::Kind::Meta ? "meta" : "audit"},
                                {"what", ownKeyWords(own, s.g.keyNamespace)}};
            addKeyBytes(j, t.key);
            if (own.kind == idem::OwnKey::Kind::Meta) {
                j["id"] = own.id;
                j["meta"] = m;
            }
            std::printf("%s\n", dumpLine(j).c_str());
        } else {
            std::printf("key        %s\nwhat       %s\n", printable(t.key).c_str(),
                        ownKeyWords(own, s.g.keyNamespace).c_str());
            for (const auto& [k, v] : meta)
                std::printf("meta.%-6s %s\n", printable(k).c_str(), shown(v, 200).c_str());
        }
        return Ok;
    }
    idem::DecodeOptions o = s.decodeOptions();
    const auto rec = s.store.inspectKey(t.key, o);
    const auto meta = t.id.empty() ? std::vector<std::pair<std::string, std::string>>() : s.store.meta(t.id);
    if (!rec) {
        if (args.flag("--json")) {
            nlohmann::json m = nlohmann::json::object();
            for (const auto& [k, v] : meta)
                m[k] = v;
            nlohmann::json j = {{"key", t.key}, {"id", t.id}, {"state", nullptr}, {"meta", m}};
            addKeyBytes(j, t.key);
            std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
        } else {
            // a purged record's last action stays in its meta key
            std::map<std::string, std::string> m(meta.begin(), meta.end());
            std::string last;
            if (m.count("last_op"))
                last = printable("; " + m["last_op"] + "d by " + m["last_op_by"] + " at " +
                                 utcTime(std::atoll(m["last_op_at_ms"].c_str())) +
                                 (m["last_op_via"].empty() ? "" : " via " + m["last_op_via"]) + " (was " +
                                 m["last_op_prev_state"] + "): " + m["last_op_reason"]);
            std::fprintf(stderr, "idemctl inspect: no record at %s%s\n", printable(t.key).c_str(), last.c_str());
        }
        return NotFound;
    }
    if (args.flag("--json")) {
        std::printf("%s\n", toJson(*rec, meta).dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
        return Ok;
    }
    const auto& r = *rec;
    // the server's clock: the TTL's deadline is now + ttl, and the record's times were read against it
    std::int64_t now = 0;
    {
        auto conn = s.pool.acquire();
        const auto time = conn->checked({"TIME"});
        now = idem::reply::timeMs(time.get());
    }
    printRecord(r, now);
    for (const auto& [k, v] : meta)
        std::printf("meta.%-6s %s\n", printable(k).c_str(), shown(v, 200).c_str());
    return Ok;
}

int cmdForceFail(const std::vector<std::string>& argv)
{
    Args args(argv, {"--reason", "--by", "--key", "--key-base64", "--table", "--lock-timeout"}, {"--terminal", "--live"});
    if (args.flag("--help")) {
        std::puts("usage: idemctl force-fail ID [--reason R] [--terminal] [--live] [--by WHO]\n"
                  "       idemctl force-fail --key KEY | --key-base64 B64 [--reason R] [--terminal] [--live] [--by WHO]\n\nMarks a "
                  "STARTED or FAILED record FAILED without its owner's token: the owner's\nlate complete gets "
                  "'lease lost'. Retryable (default): the next delivery runs again;\n--terminal: "
                  "duplicates get the failure back. COMPLETED records are refused (purge them).\n"
                  "Another library's in-progress record is released instead: deleted if unchanged since\n"
                  "read (the next call runs); idem never writes its fields into it, and --terminal is\n"
                  "refused (those libraries keep no failure). Its owner cannot hear of a release: one\n"
                  "whose lease has not run out (or that has none) is refused unless --live is given.\n"
                  "A hash idem cannot read as its own record is refused (inspect it; purge --key).\n"
                  "PostgreSQL: a row another transaction holds (a service's transaction under way) is\n"
                  "waited for at most --lock-timeout (default 5s), then left alone (exit 75).");
        return Ok;
    }
    refuseTableWrite(args, "force-fail");
    if (postgresGiven(args))
        return pgForceFail(args);
    refuseLockTimeout(args);
    Session s(args);
    const Target t = oneTarget(args, s, "force-fail");
    if (refusedAsOwn(t, s, "force-fail"))
        return Refused;
    const std::string reason = args.value("--reason").value_or("forced by operator");
    const std::string who = actorName(args);
    const auto rec = s.store.inspectKey(t.key, s.decodeOptions());
    if (!rec) {
        std::fprintf(stderr, "idemctl force-fail: no record at %s\n", printable(t.key).c_str());
        return NotFound;
    }
    if (rec->format != idem::RecordFormat::Native) {
        const std::string lib(idem::libraryOf(rec->format));
        if (idem::notARecord(rec->state)) {
            std::fprintf(stderr, "idemctl force-fail: refused: %s is %s (%s); purge it explicitly if you mean to\n",
                         printable(t.key).c_str(), std::string(idem::nameOf(rec->state)).c_str(), printable(rec->reason).c_str());
            return Refused;
        }
        if (rec->state != idem::RecordState::Started) {
            std::fprintf(stderr, "idemctl force-fail: refused: the record is %s; purge it to run the id again\n",
                         std::string(idem::nameOf(rec->state)).c_str());
            return Refused;
        }
        if (args.flag("--terminal")) {
            std::fprintf(stderr, "idemctl force-fail: refused: %s keeps no failed state, so a terminal failure "
                                 "cannot be stored in its record; without --terminal the record is released\n",
                         lib.c_str());
            return Refused;
        }
        if (refusedAsLive(rec, args, "force-fail"))
            return Refused;
        if (!s.unlinkIfUnchanged(*rec, who, "force-fail (released): " + reason)) {
            std::fprintf(stderr, "idemctl force-fail: %s changed since it was read; nothing done\n", printable(t.key).c_str());
            return Refused;
        }
        std::printf("released %s (%s, was STARTED%s): deleted; the next call runs\n", printable(t.key).c_str(),
                    std::string(idem::nameOf(rec->format)).c_str(), rec->stale ? ", stale" : "");
        return Ok;
    }
    if (idem::notARecord(rec->state)) { // idem's shape, but not what idem writes: its owner is someone else
        std::fprintf(stderr, "idemctl force-fail: refused: %s is %s (%s); inspect it, and purge --key it if you mean to\n",
                     printable(t.key).c_str(), std::string(idem::nameOf(rec->state)).c_str(), printable(rec->reason).c_str());
        return Refused;
    }
    if (t.id.empty()) {
        std::fprintf(stderr, "idemctl force-fail: refused: %s is outside the namespace '%s' (idem's records are "
                             "%s:{ID}); give --namespace\n",
                     printable(t.key).c_str(), s.g.keyNamespace.c_str(), s.g.keyNamespace.c_str());
        return Refused;
    }
    const auto r = s.store.forceFail(t.id, reason, args.flag("--terminal"), who);
    switch (r.status) {
    case idem::AdminStatus::Ok:
        std::printf("force-failed %s (was %s, now FAILED %s)\n", printable(t.key).c_str(), printable(r.previousState).c_str(),
                    args.flag("--terminal") ? "terminal" : "retryable");
        return Ok;
    case idem::AdminStatus::NotFound:
        std::fprintf(stderr, "idemctl force-fail: no record at %s\n", printable(t.key).c_str());
        return NotFound;
    case idem::AdminStatus::Refused:
        std::fprintf(stderr, "idemctl force-fail: refused: %s\n", printable(r.reason).c_str());
        return Refused;
    case idem::AdminStatus::Busy: // PostgreSQL's only
        std::fprintf(stderr, "idemctl force-fail: %s: %s\n", printable(t.key).c_str(), printable(r.reason).c_str());
        return InProgress;
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

// A lock whose owner may still be running: purging it lets a duplicate run beside the first. Said
// in words, and done only with --live.
bool refusedAsLive(const std::optional<idem::Record>& r, const Args& args, const char* command)
{
    if (!r || !idem::mayBeLiveLock(*r) || args.flag("--live"))
        return false;
    if (idem::anotherProgramsData(*r)) { // a job a worker runs now, or its lock: work in flight
        const std::string how = r->rawStatus.empty() ? "a lock while its TTL runs" : "status " + printable(r->rawStatus);
        std::fprintf(stderr, "idemctl %s: %s is %s's work in progress (%s; %s): deleting it pulls it from under "
                             "its worker; add --live to do it anyway\n",
                     command, printable(r->key).c_str(), printable(r->program).c_str(), how.c_str(),
                     printable(r->reason).c_str());
        return true;
    }
    const std::string why = r->state != idem::RecordState::Started
                                ? std::string(idem::nameOf(r->state)) + " with the status " + printable(r->rawStatus) +
                                      ": " + printable(r->reason) + "; idem cannot tell when it ends"
                            : r->blocked ? "no lease: held until its TTL ends"
                                         : "its lease has not run out";
    std::fprintf(stderr,
                 "idemctl %s: %s is a live lock (%s, %s): its owner may still be running, and %s lets a "
                 "duplicate run beside it; add --live to do it anyway\n",
                 command, printable(r->key).c_str(), std::string(idem::nameOf(r->format)).c_str(), why.c_str(),
                 std::string_view(command) == "purge" ? "purging it" : "releasing it");
    return true;
}

int cmdPurge(const std::vector<std::string>& argv)
{
    Args args(argv, {"--reason", "--by", "--key", "--key-base64", "--table", "--stale-after", "--lock-timeout"},
              {"--live"});
    if (args.flag("--help")) {
        std::puts("usage: idemctl purge ID [--live] [--reason R] [--by WHO]\n"
                  "       idemctl purge --key KEY | --key-base64 B64 [--live] [--reason R] [--by WHO]\n"
                  "       idemctl --url postgresql://... purge KEY --table [SCHEMA.]NAME [--stale-after DUR]\n"
                  "       idemctl purge --state S | --stale | --pattern GLOB [--dry-run] [--yes] [--live] [--json]\n"
                  "                     [--reason R] [--by WHO] [--stale-after DUR] [--writer-ttl DUR]\n\n"
                  "A live lock (STARTED, its lease not over, or with no lease) is refused (exit 1): its\n"
                  "owner may still be running; --live purges it anyway.\n"
                  "With an ID: deletes its record (any type) so the id can run again; the last fence,\n"
                  "who, when and why are kept in the meta key. With --key: any key, another library's\n"
                  "record included, deleted only if unchanged since it was read; --key-base64 B64 names\n"
                  "a key that is not UTF-8 by its bytes (list --json's key_base64).\n"
                  "With --state (started, stale, blocked, completed, failed, expired), --stale or\n"
                  "--pattern: scans (SCAN, bounded COUNT) and deletes the matching keys with UNLINK in\n"
                  "batches of 500, each only if it is unchanged since it was read (a lock renewed or\n"
                  "completed meanwhile stays). Keys that are not records (--state malformed, foreign,\n"
                  "unknown) go only when that state is named, with --pattern as well: any other bulk\n"
                  "purge (--pattern alone included) keeps them, since what idem cannot read may be\n"
                  "another library's live lock; --state no-ttl needs --pattern too. A live lock\n"
                  "(STARTED, its lease not over, or with no lease: its owner may still be running;\n"
                  "--stale-after DUR makes no-lease locks stale after DUR) is kept unless\n"
                  "--live is given, and so is a key read only in part (a large value's head and tail)\n"
                  "that reads as unknown or malformed; each kept key is listed with why. Without --yes\n"
                  "it only lists what it would remove, with each key's library and state.\n"
                  "With --table: deletes the row of a table another program writes whose work is over\n"
                  "(COMPLETED, FAILED, or a lock older than --stale-after, default 15m); a live lock, a\n"
                  "row a transaction holds and a status idem does not know are kept (exit 1).\n"
                  "PostgreSQL (schema idem): a row another transaction holds (a service's transaction\n"
                  "under way) is waited for at most --lock-timeout (default 5s), then left alone (exit 75).");
        return Ok;
    }
    refuseTableWithoutPostgres(args);
    if (!args.value("--table") && args.value("--stale-after"))
        throw UsageFailure{"--stale-after goes with --table"};
    if (postgresGiven(args))
        return pgPurge(args);
    refuseLockTimeout(args);
    Session s(args);
    const Target t = oneTarget(args, s, "purge");
    if (refusedAsOwn(t, s, "purge"))
        return Refused;
    const std::string reason = args.value("--reason").value_or("purged by operator");
    const std::string who = actorName(args);
    if (t.id.empty()) { // another library's key: as read, or not at all
        const auto rec = s.store.inspectKey(t.key, s.decodeOptions());
        if (!rec) {
            std::fprintf(stderr, "idemctl purge: no key %s\n", printable(t.key).c_str());
            return NotFound;
        }
        if (refusedAsLive(rec, args, "purge"))
            return Refused;
        if (!s.unlinkIfUnchanged(*rec, who, reason)) {
            std::fprintf(stderr, "idemctl purge: %s changed since it was read; nothing done\n", printable(t.key).c_str());
            return Refused;
        }
        std::printf("purged %s (was %s %s)\n", printable(t.key).c_str(),
                    idem::anotherProgramsData(*rec) ? (printable(rec->program) + "'s").c_str()
                                                    : std::string(idem::nameOf(rec->format)).c_str(),
                    std::string(idem::nameOf(rec->state)).c_str());
        return Ok;
    }
    const auto seen = s.store.inspectKey(t.key, s.decodeOptions());
    if (!seen && !args.flag("--live")) { // (a purge sent now would take a lock acquired since the read)
        std::fprintf(stderr, "idemctl purge: no record at %s\n", printable(t.key).c_str());
        return NotFound;
    }
    if (refusedAsLive(seen, args, "purge"))
        return Refused;
    // without --live, only what was just read as not live: a lock taken meanwhile stays
    const auto r = s.store.purge(t.id, who, reason, seen && !args.flag("--live") ? &*seen : nullptr);
    if (r.status == idem::AdminStatus::NotFound) {
        std::fprintf(stderr, "idemctl purge: no record at %s\n", printable(t.key).c_str());
        return NotFound;
    }
    if (r.status == idem::AdminStatus::Refused) {
        std::fprintf(stderr, "idemctl purge: %s: %s; nothing done\n", printable(t.key).c_str(), printable(r.reason).c_str());
        return Refused;
    }
    // what was read, as read ("COMPLETED powertools"), rather than the key's type ("string")
    if (seen && seen->format != idem::RecordFormat::Native)
        std::printf("purged %s (was %s %s)\n", printable(t.key).c_str(), std::string(idem::nameOf(seen->format)).c_str(),
                    std::string(idem::nameOf(seen->state)).c_str());
    else
        std::printf("purged %s (was %s)\n", printable(t.key).c_str(), printable(r.previousState).c_str());
    return Ok;
}

} // namespace idemctl
