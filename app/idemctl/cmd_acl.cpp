// idemctl acl: the ACL SETUSER line of a least-privilege role, and the words idemctl says when a
// user lacks a permission. Redis checks the commands a script calls (redis.call inside EVALSHA)
// against the caller's ACL, so each role allows what its scripts call (lua/*.lua), not only
// EVALSHA.
#include "cli.h"

#include "idem/hash.h"
#include "idem/pg/pgstore.h"
#include "idem/pg/schema.h"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <regex>

namespace idemctl {
namespace {

// What every role's connections send: the handshake (AUTH, SELECT for /db, PING), and what finds
// the topology: INFO cluster and CLUSTER SLOTS (a Cluster), ASKING (a slot migrating), ROLE (the
// node a Sentinel names). The sentinels' own ACL is theirs (SENTINEL get-master-addr-by-name).
const char* kConnect = "+auth +hello +ping +select +info +role +cluster|slots +asking";

// monitor: list, stats, inspect, audit and the console, read-only (%R~: no write to any key even
// through a command added later). SCAN and DBSIZE name no key; the rest read the namespace's keys.
// READONLY and CLUSTER NODES: reading a Cluster's replicas and checking the scan covers every slot.
const char* kMonitor = "+readonly +cluster|nodes +time +scan +dbsize +type +pttl +exists +hmget +hget +hgetall "
                       "+hstrlen +strlen +get +getrange +xrevrange +xrange +xread +xlen";

// operator: EVALSHA of purge.lua and force_fail.lua, and the commands they call beyond the
// monitor's (HSET, HDEL, PEXPIRE, UNLINK, XADD); on a Cluster the audit entry follows the script
// as XADD + PEXPIRE of its own.
const char* kOperator = "+script|load +evalsha +hset +hdel +pexpire +unlink +xadd";

// service: EVALSHA of acquire, complete, fail and renew and what they call; WAIT for minReplicas.
const char* kService = "+script|load +evalsha +wait +time +exists +type +hmget +hget +hset +hsetnx +hdel "
                       "+pexpire +del";

// keyspace notifications for the console's live updates: CONFIG GET tells whether the server sends
// them, and PSUBSCRIBE patterns are matched literally against the allowed channels
std::string liveRules(const std::string& ns, int db)
{
    return " +config|get +psubscribe +punsubscribe &__keyspace@" + std::to_string(db) + "__:" + ns + ":*";
}

// one word of a line that redis-cli and ACL LOAD read: no spaces, quotes or control characters
bool plainWord(const std::string& s)
{
    if (s.empty())
        return false;
    for (unsigned char c : s)
        if (c <= ' ' || c == '"' || c == '\'' || c == 0x7f)
            return false;
    return true;
}

// PostgreSQL: the GRANTs of one of schema idem's roles, one statement a line, for psql
int pgAcl(const Args& args)
{
    for (const char* redisOnly : {"--nopass", "--password-stdin", "--live-updates"})
        if (args.flag(redisOnly))
            throw UsageFailure{std::string(redisOnly) + " is for Redis: a PostgreSQL role logs in as the server says "
                               "(CREATE ROLE NAME LOGIN PASSWORD ...); acl prints its grants"};
    if (args.value("--db"))
        throw UsageFailure{"--db is for Redis; monitor and operator may always watch (idem.watch)"};
    globalFrom(args); // --namespace, --tls-*: refused for PostgreSQL in one line
    if (args.positional().size() != 1)
        throw UsageFailure{"acl takes one role: monitor, operator or service"};
    const auto user = args.value("--user");
    if (!user || user->empty())
        throw UsageFailure{"acl needs --user NAME (an existing PostgreSQL role)"};
    try {
        for (const std::string& line : idem::pgRoleGrants(args.positional()[0], *user))
            std::printf("%s\n", line.c_str());
    } catch (const idem::UsageError& e) {
        throw UsageFailure{e.what()};
    }
    return Ok;
}

} // namespace

const std::vector<std::string>& roleNames()
{
    static const std::vector<std::string> names = {"monitor", "operator", "service"};
    return names;
}

std::string aclLine(const std::string& role, const std::string& user, const std::string& ns, const std::string& secret,
                    bool live, int db)
{
    const std::string keys = idem::globEscape(ns) + ":*";
    std::string line = "ACL SETUSER " + user + " reset on " + secret + " resetchannels -@all " + kConnect;
    if (role == "monitor")
        line += std::string(" ") + kMonitor + " %R~" + keys;
    else if (role == "operator")
        line += std::string(" ") + kMonitor + " " + kOperator + " ~" + keys;
    else if (role == "service") // its records and meta keys (NS:{id}, NS:{id}:meta), not the audit stream
        line += std::string(" ") + kService + " ~" + idem::globEscape(ns) + ":{*";
    else
        throw UsageFailure{"unknown role '" + role + "' (monitor, operator or service)"};
    if (live && role != "service")
        line += liveRules(idem::globEscape(ns), db);
    return line;
}

int cmdAcl(const std::vector<std::string>& argv)
{
    Args args(argv, {"--user", "--db"}, {"--nopass", "--password-stdin", "--live-updates"});
    if (args.flag("--help")) {
        std::puts("usage: idemctl [--namespace NS] acl ROLE --user NAME (--nopass | --password-stdin)\n"
                  "                 [--live-updates [--db N]]\n"
                  "       idemctl --url postgresql://... acl ROLE --user NAME\n\n"
                  "Prints the ACL SETUSER line that makes NAME a least-privilege user of the namespace\n"
                  "(keys NS:*), for redis-cli or an ACL file. Roles:\n"
                  "  monitor   list, stats, inspect, audit, the console read-only: no write command\n"
                  "  operator  monitor, and purge and force-fail (their scripts and the audit stream)\n"
                  "  service   run and execute: the acquire, complete, fail and renew scripts (keys\n"
                  "            NS:{*: the records, never the audit stream NS:audit)\n"
                  "--password-stdin reads the password from the first line of stdin; the line carries\n"
                  "only its SHA-256. --nopass: any password is accepted (a socket only trusted users\n"
                  "reach). --live-updates (monitor, operator): the console's keyspace notifications:\n"
                  "CONFIG GET (it shows the server's configuration) and the channel of database N.\n\n"
                  "With a postgresql:// URL: the SQL that gives the existing role NAME exactly the\n"
                  "rights of ROLE in schema idem (v5), for the schema's owner to run (| psql ...):\n"
                  "what NAME held in the schema is revoked first, then granted:\n"
                  "  monitor   SELECT on idem.records, idem.operations, idem.migrations; idem.watch\n"
                  "            (the console's live updates); no function that writes a record\n"
                  "  operator  monitor, and idem.force_fail, idem.purge, idem.purge_seen, idem.sweep\n"
                  "            (each writes its row to idem.operations, naming the session's role)\n"
                  "  service   idem.acquire, complete, fail, renew, checkpoint, sweep (also in its own\n"
                  "            transaction); no right on the tables: no DELETE, UPDATE or purge\n"
                  "Nothing is connected to: the statements are printed only.");
        return Ok;
    }
    // before the role's checks: with PostgreSQL no ACL line is the answer, whatever else was given
    if (postgresGiven(args))
        return pgAcl(args);
    if (args.positional().size() != 1)
        throw UsageFailure{"acl takes one role: monitor, operator or service"};
    const std::string role = args.positional()[0];
    if (std::find(roleNames().begin(), roleNames().end(), role) == roleNames().end())
        throw UsageFailure{"unknown role '" + role + "' (monitor, operator or service)"};
    const auto user = args.value("--user");
    if (!user)
        throw UsageFailure{"acl needs --user NAME"};
    if (!plainWord(*user))
        throw UsageFailure{"--user must be one word without spaces or quotes"};
    const Global g = globalFrom(args);
    if (!plainWord(g.keyNamespace))
        throw UsageFailure{"--namespace must be one word without spaces or quotes for an ACL"};
    const bool nopass = args.flag("--nopass"), stdinPass = args.flag("--password-stdin");
    if (nopass == stdinPass)
        throw UsageFailure{nopass ? "--nopass and --password-stdin exclude each other"
                                  : "acl needs --password-stdin (the password on stdin) or --nopass"};
    if (args.value("--db") && !args.flag("--live-updates"))
        throw UsageFailure{"--db goes with --live-updates (it names the notification channel)"};
    const int db = number<int>(args.value("--db"), 0, 0, 1 << 20, "--db");
    std::string secret = "nopass";
    if (stdinPass) {
        std::string password;
        std::getline(std::cin, password);
        if (!password.empty() && password.back() == '\r')
            password.pop_back();
        if (password.empty())
            throw UsageFailure{"--password-stdin read no password (an empty first line)"};
        secret = "#" + idem::toHex(idem::sha256(password));
    }
    std::printf("%s\n", aclLine(role, *user, g.keyNamespace, secret, args.flag("--live-updates"), db).c_str());
    return Ok;
}

bool isPermissionError(const std::string& error)
{
    return error.find("NOPERM") != std::string::npos || error.find("user executing the script can't") != std::string::npos;
}

bool isAuthenticationError(const std::string& error)
{
    // Redis's error codes begin its words, which begin the message or follow our "...: "
    for (std::string_view code : {"WRONGPASS", "NOAUTH"})
        if (error.starts_with(code) || error.find(": " + std::string(code)) != std::string::npos)
            return true;
    return false;
}

std::string authenticationAdvice(const std::string& error, bool commandNotRun)
{
    const bool sentinel = error.starts_with("sentinel ");
    return "credentials refused: " + printable(error) +
           (sentinel ? " (check --sentinel-password" : " (check the user and password in --url or $IDEM_URL") +
           "; retrying will not help" + (commandNotRun ? "; command not run)" : ")");
}

std::optional<PgRefusalLine> pgRefusalLine(const std::string& error, bool commandNotRun)
{
    const std::string tail = commandNotRun ? "; command not run)" : ")";
    switch (idem::pgRefusalOf(error)) {
    case idem::PgRefusal::None:
        break;
    case idem::PgRefusal::Login:
        // 42501 at connect: the login was accepted, the database's CONNECT right is missing
        if (error.find("permission denied for database \"") != std::string::npos)
            return PgRefusalLine{NoPermission, "no CONNECT right: " + printable(error) +
                                                   " (the role logged in but may not connect to this database: "
                                                   "GRANT CONNECT ON DATABASE to it, or check the user and "
                                                   "database in --url or $IDEM_URL; retrying will not help" + tail};
        return PgRefusalLine{NoPermission, authenticationAdvice(error, commandNotRun)};
    case idem::PgRefusal::HostRule:
        return PgRefusalLine{NoPermission, "login refused: " + printable(error) +
                                               " (the server's pg_hba.conf admits no such connection: check the "
                                               "user, database and sslmode in --url or $IDEM_URL, or have its "
                                               "lines changed; retrying will not help" + tail};
    case idem::PgRefusal::Database:
        return PgRefusalLine{Usage, "no such database: " + printable(error) +
                                        " (check the database name in --url or $IDEM_URL; idemctl pg init "
                                        "installs schema idem into a database that exists; retrying will not help" +
                                        tail};
    }
    return std::nullopt;
}

std::string permissionAdvice(const std::string& command, const std::string& user, const std::string& ns,
                             const std::string& error)
{
    // the role that has what `command` needs
    std::string role = "monitor";
    if (command == "purge" || command == "force-fail")
        role = "operator";
    else if (command == "run" || command == "replay" || command == "demo")
        role = "service";
    const std::string who = user.empty() ? "default" : user;
    const bool keys = error.find("keys") != std::string::npos || error.find("channels") != std::string::npos;
    std::smatch m;
    std::string what = "NOPERM";
    if (std::regex_search(error, m, std::regex("run the '([^']+)' command")))
        what = "NOPERM: " + m[1].str();
    else if (error.find("executing the script") != std::string::npos)
        what = keys ? "NOPERM: a key the script touches" : "NOPERM: a command the script calls";
    if (keys)
        return "user '" + who + "' may not " + command + " keys under '" + ns + ":' (" + what + "); the " + role +
               " role of that namespace has it: see `idemctl --namespace " + ns + " acl " + role + " --help`";
    return "user '" + who + "' may not " + command + " (" + what + "); the " + role +
           " role has it: see `idemctl acl " + role + " --help`";
}

std::optional<std::pair<std::string, std::string>> pgPermissionFrom(const std::string& error)
{
    static const std::string tail = " [42501]", lead = "role '";
    if (!error.ends_with(tail))
        return std::nullopt;
    const std::size_t at = error.find(lead);
    const std::size_t end = at == std::string::npos ? at : error.find("': ", at + lead.size());
    if (end == std::string::npos)
        return std::nullopt;
    return std::make_pair(error.substr(at + lead.size(), end - at - lead.size()),
                          error.substr(end + 3, error.size() - tail.size() - end - 3));
}

std::string pgPermissionAdvice(const std::string& command, const std::vector<std::string>& argv,
                               const std::string& role, const std::string& denied)
{
    std::string doing = command, has = "the monitor role has it";
    if (command == "purge" || command == "force-fail") {
        has = "the operator role has it";
    } else if (command == "run") {
        has = "the service role has it";
    } else if (command == "pg") {
        const bool init = std::find(argv.begin(), argv.end(), "init") != argv.end();
        doing = init ? "pg init" : "pg sweep";
        if (init) // creating and altering the schema is its owner's, not a role's of idemctl acl
            return "role '" + role + "' may not pg init (" + denied +
                   "): run it as the role that owns schema idem (or may create it in this database)";
        has = "the operator and service roles have it";
    }
    return "role '" + role + "' may not " + doing + " in schema idem (" + denied + "); " + has +
           ": `idemctl --url postgresql://... acl ROLE --user " + role +
           "` prints its GRANTs for the schema's owner to run";
}

} // namespace idemctl
