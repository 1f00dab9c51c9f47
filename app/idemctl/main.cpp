// idemctl: the idem command line for operators and scripts.
#include "cli.h"

#include "idem/engine/store.h"
#include "idem/errors.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <unistd.h>

namespace {

const char* kUsage = R"(usage: idemctl [--url URL] [--namespace NAME] [--format NAME] COMMAND [options]

Exactly-once execution and inspection of idempotency records in Redis or PostgreSQL.

commands:
  run --key ID [--lease DUR] [--ttl DUR] [--payload-file F] [--wait DUR] [--on-failure P]
      [--min-replicas N] -- CMD [ARGS...]
                        run CMD unless ID already has a completed run; replay it otherwise
  inspect ID | --key KEY [--json]
                        show one record (any library's) and its fencing counter
  force-fail ID | --key KEY [--reason R] [--terminal] [--by WHO] [--lock-timeout DUR]
                        mark a record FAILED without its owner token (stuck work); another
                        library's record is released (deleted) as that library does on failure
  purge ID | --key KEY [--reason R] [--live] [--by WHO] [--lock-timeout DUR]
                        delete a record so the id can run again (a live lock only with --live)
  purge --state S | --stale | --pattern GLOB [--dry-run] [--yes] [--live] [--reason R] [--by WHO]
                        delete many, in bounded batches, only if unchanged since read; keys
                        that are not records (malformed, foreign, unknown) need --pattern too
  list [--state S] [--stale] [--pattern GLOB] [--json]
                        records by state, library and TTL (SCAN, never KEYS)
  stats [--pattern GLOB] [--json]
                        counts by state: started (stale, no lease), completed, failed, expired,
                        malformed, foreign, unknown, no TTL
  audit [--since DUR] [--by WHO] [--count N] [--json]
                        operator actions kept in the store (every tool, every desktop)
  acl monitor|operator|service --user NAME (--nopass | --password-stdin) [--live-updates]
                        the ACL SETUSER line of a least-privilege user of the namespace; with
                        a postgresql:// URL, the GRANTs of that role in schema idem
  demo [--ids N] [--duplicates D]
                        race duplicate deliveries through `idemctl run` on a private redis-server
  race [--strategy naive|setnx|watch|lua|all] [--workers W] [--events N] [--duplicates D]
       [--crash-rate R] [--pause-rate R] [--seed S] [--forced-interleaving] [--json]
                        the race lab: the same duplicates through four strategies, counted
  pg init --url postgresql://...
                        install or upgrade schema idem in a PostgreSQL database (docs/postgres.md)
  pg sweep --url postgresql://... [--batch N] [--max-batches N]
                        delete expired rows in bounded batches along the expires_at index
  replay FILE [--speed X] [--duplicates D] [--crash-rate R] [--via-stream] [--json]
                        an event log (JSON lines) through idem, directly or via a Redis Stream
  capture --stream KEY [--from ID] [--to ID] [--count N] [--id-field F] [--payload-field F]
  capture --from-jsonl FILE [--id-field A.B] [--payload-field C] [--time-field T]   [--out FILE]
  capture --from-history DIR [--namespace NS] [--out FILE]
                        an event log for replay from a Redis Stream (read-only: XRANGE), from
                        JSON lines of another shape, or from the console's recorded history

global options:
  --url URL          redis://[user:password@]host[:port][/db], rediss://... (TLS),
                     unix:///path.sock[?db=N], redis-sentinel://[user:pw@]h1[:p1],h2[:p2][/db]#MASTER
                     or rediss-sentinel://... (default: $IDEM_URL, else redis://127.0.0.1:6379/0);
                     or PostgreSQL (schema idem): postgresql://[user[:pw]@]host[:port]/db[?sslmode=...]
                     or "host=/run/postgresql dbname=db sslmode=verify-full ..." (libpq's forms);
                     run, inspect, force-fail, purge ID, list and stats work on both
  --tls-ca FILE      CA bundle that verifies the server (default: the system's)
  --tls-cert FILE    client certificate, and --tls-key FILE its key (tls-auth-clients yes)
  --tls-server-name NAME  the name to verify and send as SNI (default: the host)
  --tls-insecure     do not verify the server's certificate (a warning is printed every time)
  --sentinel-password PW  the sentinels' own password
  --namespace NAME   key namespace (default: idempotency); records live at NAME:{ID}
  --format NAME      read every key as this library's records (default: each key's own):
                     idem, powertools, powertools-python, powertools-java, node-idempotency,
                     express-idempotency, idempotent-request, camel, json, plain
  --help             help for idemctl or for a command

exit codes: 0 or CMD's own code on success; 64 usage (or no such PostgreSQL database); 65 payload
mismatch; 66 no such record; 69 store unavailable (CMD not run); 70 CMD ran but its result was
not stored; 75 in progress (PostgreSQL: or a running transaction holds the row, nothing done);
77 credentials (or a PostgreSQL login) refused, or the user's ACL or role does not allow it;
78 the key holds another program's record; 79 a terminal failure is stored for the id;
1 operator action refused.
)";

// The user and namespace the arguments name, for a NOPERM in words (the command parsed them once
// already, so they parse).
std::pair<std::string, std::string> userAndNamespace(const std::vector<std::string>& rest)
{
    std::string url = std::getenv("IDEM_URL") ? std::getenv("IDEM_URL") : "", ns = "idempotency";
    for (std::size_t k = 0; k + 1 < rest.size() && rest[k] != "--"; ++k) {
        if (rest[k] == "--url")
            url = rest[k + 1];
        else if (rest[k] == "--namespace")
            ns = rest[k + 1];
        else if (rest[k].starts_with("--url="))
            url = rest[k].substr(6);
        else if (rest[k].starts_with("--namespace="))
            ns = rest[k].substr(12);
    }
    std::string user;
    try {
        user = url.empty() ? std::string() : idem::ConnectionOptions::fromUrl(url).user;
    } catch (const idem::Error&) {
    }
    return {user, ns};
}

// A store error that is not the ACL's, in one line.
int storeFailure(const std::string& command, const idem::Error& error)
{
    if (dynamic_cast<const idem::IoError*>(&error)) {
        std::fprintf(stderr, "idemctl %s: store unavailable: %s\n", command.c_str(),
                     idemctl::printable(error.what()).c_str());
    } else if (const auto* c = dynamic_cast<const idem::ConfigError*>(&error)) {
        std::fprintf(stderr, "idemctl %s: store unavailable: %s (check %s)\n", command.c_str(),
                     idemctl::printable(error.what()).c_str(), c->field().c_str());
    } else {
        std::fprintf(stderr, "idemctl %s: %s\n", command.c_str(), idemctl::printable(error.what()).c_str());
    }
    return idemctl::Unavailable;
}

// The running executable, to start more of itself (argv[0] may be a bare name from PATH).
std::string selfPath(const char* argv0)
{
    char buf[4096];
    const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
    return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string(argv0);
}

} // namespace

int main(int argc, char** argv)
{
    idem::setToolName("idemctl");
    std::vector<std::string> args(argv + 1, argv + argc);
    // global options may come before the command
    std::vector<std::string> globals;
    std::size_t i = 0;
    bool lastTookValue = false; // the last global option took the next word as its value
    while (i < args.size() && (args[i].starts_with("--") || args[i] == "-h") && args[i] != "--") {
        const std::string a = args[i];
        if (a == "--help" || a == "-h") {
            std::fputs(kUsage, stdout);
            return 0;
        }
        if (a == "--version") {
            std::puts("idemctl 0.1.0");
            return 0;
        }
        // before the command, only the global options: what else is there is said, not guessed at
        // (a command's option there would take the command for its value)
        const std::string name = a.substr(0, a.find('='));
        const bool flag = idemctl::kGlobalFlags.count(name) > 0;
        if (flag && name != a) {
            std::fprintf(stderr, "idemctl: %s takes no value (see idemctl --help)\n", name.c_str());
            return idemctl::Usage;
        }
        if (!flag && !idemctl::kGlobalValued.count(name)) {
            std::fprintf(stderr, "idemctl: unknown option %s before the command (a command's own options go after "
                                 "it; see idemctl --help)\n", name.c_str());
            return idemctl::Usage;
        }
        globals.push_back(a);
        // a global flag stands alone; any other global option takes the next word as its value
        if (!flag && a.find('=') == std::string::npos) {
            if (i + 1 >= args.size()) {
                std::fprintf(stderr, "idemctl: %s needs a value (see idemctl --help)\n", a.c_str());
                return idemctl::Usage;
            }
            globals.push_back(args[++i]);
        }
        lastTookValue = !flag && a.find('=') == std::string::npos;
        ++i;
    }
    if (args.empty()) {
        std::fputs(kUsage, stderr);
        return idemctl::Usage;
    }
    if (i >= args.size()) { // options only: one line (the last one may have taken the command for its value)
        const std::string took = lastTookValue ? " (" + globals[globals.size() - 2] + " took '" + globals.back() +
                                                     "' as its value)"
                                               : std::string();
        std::fprintf(stderr, "idemctl: no command after the options%s; see idemctl --help\n", took.c_str());
        return idemctl::Usage;
    }
    const std::string command = args[i];
    std::vector<std::string> rest = globals;
    rest.insert(rest.end(), args.begin() + static_cast<long>(i) + 1, args.end());
    try {
        if (command == "run")
            return idemctl::cmdRun(rest);
        if (command == "inspect")
            return idemctl::cmdInspect(rest);
        if (command == "force-fail")
            return idemctl::cmdForceFail(rest);
        if (command == "purge")
            return idemctl::purgesMany(rest) ? idemctl::cmdPurgeMany(rest) : idemctl::cmdPurge(rest);
        if (command == "replay")
            return idemctl::cmdReplay(rest);
        if (command == "capture")
            return idemctl::cmdCapture(rest);
        if (command == "race")
            return idemctl::cmdRace(rest);
        if (command == "list")
            return idemctl::cmdList(rest);
        if (command == "stats")
            return idemctl::cmdStats(rest);
        if (command == "audit")
            return idemctl::cmdAudit(rest);
        if (command == "acl")
            return idemctl::cmdAcl(rest);
        if (command == "pg")
            return idemctl::cmdPg(rest);
        if (command == "demo")
            return idemctl::cmdDemo(rest, selfPath(argv[0]));
        if (command == "help") {
            std::fputs(kUsage, stdout);
            return 0;
        }
        std::fprintf(stderr, "idemctl: unknown command '%s' (see idemctl --help)\n", command.c_str());
        return idemctl::Usage;
    } catch (const idemctl::UsageFailure& e) {
        std::fprintf(stderr, "idemctl %s: %s (see idemctl %s --help)\n", command.c_str(),
                     e.message.c_str(), command.c_str());
        return idemctl::Usage;
    } catch (const idem::UsageError& e) {
        std::fprintf(stderr, "idemctl %s: %s\n", command.c_str(), idemctl::printable(e.what()).c_str());
        return idemctl::Usage;
    } catch (const idem::PermissionError& e) { // PostgreSQL's 42501: the role, the right, the grant
        std::fprintf(stderr, "idemctl: %s\n", idemctl::pgPermissionAdvice(command, rest, e.role(), e.denied()).c_str());
        return idemctl::NoPermission;
    } catch (const idem::Error& e) {
        if (idemctl::isPermissionError(e.what())) { // the ACL: which permission, which role has it
            const auto [user, ns] = userAndNamespace(rest);
            std::fprintf(stderr, "idemctl: %s\n",
                         idemctl::printable(idemctl::permissionAdvice(command, user, ns, e.what())).c_str());
            return idemctl::NoPermission;
        }
        if (const auto refused = idemctl::pgRefusalLine(e.what())) { // PostgreSQL: the login, the database
            std::fprintf(stderr, "idemctl %s: %s\n", command.c_str(), refused->line.c_str());
            return refused->exit;
        }
        if (idemctl::isAuthenticationError(e.what())) {
            std::fprintf(stderr, "idemctl %s: %s\n", command.c_str(), idemctl::authenticationAdvice(e.what()).c_str());
            return idemctl::NoPermission;
        }
        return storeFailure(command, e);
    }
}
