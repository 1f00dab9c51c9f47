// idemctl acl: the ACL SETUSER line of a least-privilege role, and the words idemctl says when a
// user lacks a permission. Redis checks the commands a script calls (redis.call inside EVALSHA)
// against the caller's ACL, so each role allows what its scripts call (lua/*.lua), not only
// EVALSHA.
#include "cli.h"

#include "idem/hash.h"

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
                  "                 [--live-updates [--db N]]\n\n"
                  "Prints the ACL SETUSER line that makes NAME a least-privilege user of the namespace\n"
                  "(keys NS:*), for redis-cli or an ACL file. Roles:\n"
                  "  monitor   list, stats, inspect, audit, the console read-only: no write command\n"
                  "  operator  monitor, and purge and force-fail (their scripts and the audit stream)\n"
                  "  service   run and execute: the acquire, complete, fail and renew scripts (keys\n"
                  "            NS:{*: the records, never the audit stream NS:audit)\n"
                  "--password-stdin reads the password from the first line of stdin; the line carries\n"
                  "only its SHA-256. --nopass: any password is accepted (a socket only trusted users\n"
                  "reach). --live-updates (monitor, operator): the console's keyspace notifications:\n"
                  "CONFIG GET (it shows the server's configuration) and the channel of database N.");
        return Ok;
    }
    // before the role's checks: with PostgreSQL no ACL line is the answer, whatever else was given
    if (postgresGiven(args))
        throw UsageFailure{"acl writes a Redis ACL line; on PostgreSQL, grant the role's rights with SQL (GRANT)"};
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

} // namespace idemctl
