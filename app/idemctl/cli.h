#pragma once

#include "idem/redis/options.h"
#include "idem/format/record.h"
#include "idem/monitor/monitor.h"

#include <nlohmann/json_fwd.hpp>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

namespace idem {
class LocalServer;
}

namespace idemctl {

// Exit codes (sysexits.h where one fits); the README lists them.
enum Exit : int {
    Ok = 0,
    Usage = 64,
    PayloadMismatch = 65,
    NotFound = 66,
    Unavailable = 69,
    NotStored = 70,   // the command ran but its result is not stored (lease lost / Redis went away)
    InProgress = 75,
    NoPermission = 77, // the user's ACL lacks a command or key the action needs (EX_NOPERM)
    KeyUnusable = 78,  // the key holds another program's record (or a newer schema's): run never takes it
    TerminalFailure = 79,
    Refused = 1,
};

// A usage problem: printed as one line, exit 64.
struct UsageFailure {
    std::string message;
};

// Options of one subcommand: --name value, --name=value, --flag; "--" ends options.
class Args {
public:
    Args(std::vector<std::string> argv, std::set<std::string> valued, std::set<std::string> flags);
    std::optional<std::string> value(const std::string& name) const;
    bool flag(const std::string& name) const { return m_flags.count(name) > 0; }
    const std::vector<std::string>& positional() const { return m_positional; }
    const std::vector<std::string>& afterDashes() const { return m_afterDashes; }
    bool hadDashes() const { return m_hadDashes; }

private:
    std::map<std::string, std::string> m_values;
    std::set<std::string> m_flags;
    std::vector<std::string> m_positional;
    std::vector<std::string> m_afterDashes;
    bool m_hadDashes = false;
};

struct Global {
    idem::ConnectionOptions connection; // Redis (unless `postgres`)
    bool postgres = false; // --url is a PostgreSQL conninfo: the PostgreSQL store (docs/postgres.md)
    std::string keyNamespace = "idempotency";
    std::string url;
    bool urlGiven = false;
    bool urlFromEnvironment = false; // IDEM_URL, not --url: demo, race and replay never write there
    std::optional<idem::RecordFormat> format; // --format: read every key as this library's
};

// Global options every subcommand takes.
inline const std::set<std::string> kGlobalValued = {"--url",     "--namespace",       "--format",
                                                    "--tls-ca",  "--tls-cert",        "--tls-key",
                                                    "--tls-server-name", "--sentinel-password"};
inline const std::set<std::string> kGlobalFlags = {"--tls-insecure"};
Global globalFrom(const Args& args);
// The same, for the commands that work on Redis only: a PostgreSQL URL is a usage failure.
Global redisGlobalFrom(const Args& args);
// libpq's forms: postgresql:// or postgres:// URIs, or "host=... dbname=..." pairs
bool looksLikePostgres(const std::string& url);
// --url (or $IDEM_URL) names a PostgreSQL database
bool postgresGiven(const Args& args);

// A bound as a person writes it: 0 and 1, not 0.000000 and 1.000000
template <typename T> std::string shown(T v)
{
    if constexpr (std::is_floating_point_v<T>) {
        char b[32];
        std::snprintf(b, sizeof b, "%g", v);
        return b;
    } else {
        return std::to_string(v);
    }
}

// A number option within [lo, hi]; anything else is a usage failure naming the option.
template <typename T> T number(const std::optional<std::string>& v, T fallback, T lo, T hi, const char* name)
{
    if (!v)
        return fallback;
    T n{};
    auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
    if (ec != std::errc() || p != v->data() + v->size() || n < lo || n > hi)
        throw UsageFailure{std::string(name) + " must be a number from " + shown(lo) + " to " + shown(hi)};
    return n;
}

// Whether demo, race and replay write to the server given: only one --url names. IDEM_URL names the
// operator's server; they say so on stderr and start a private one instead.
bool writesToGivenServer(const Global& g, const char* command);
// The server --url names, or else a private redis-server kept in `server`.
idem::ConnectionOptions serverOrPrivate(const Global& g, std::unique_ptr<idem::LocalServer>& server,
                                        const char* command);
std::string whoAmI();
// Who an operator action is recorded as: --by, or else user@host (idemctl). An empty or blank
// --by, or one with control characters, is a usage error: the audit trail must name someone.
std::string actorName(const Args& args);
// A time given as ms since the epoch, in UTC: "2026-11-23 19:21:22 UTC".
std::string utcTime(std::int64_t ms);
std::string jsonEscape(const std::string& s);
// The fields `list --json` prints for a record (and `inspect --json` starts from); lease_remaining_ms
// and age_ms need the server's time.
nlohmann::json recordJson(const idem::Record& r, std::optional<std::int64_t> serverNowMs);
// A key that is not UTF-8 (which JSON would change) also as "key_base64": its bytes, for --key-base64.
void addKeyBytes(nlohmann::json& j, const std::string& key);
// j[name] = value, and j[name + "_base64"] = its bytes when it is not UTF-8 (JSON strings hold text:
// the dump replaces such bytes, so the value alone would not give them back)
void setBytes(nlohmann::json& j, const std::string& name, const std::string& value);
// The names --format takes, "idem, powertools, ...".
std::string formatNames();
// One line of JSON; bytes that are not UTF-8 replaced.
std::string dumpLine(const nlohmann::json& j);
// Text the server holds (keys, ids, notes, reasons, owners, errors) as text output shows it: every
// control character (C0 with tab, newline, CR and ESC; DEL; C1, U+0080 to U+009F), every Unicode
// bidirectional control (U+061C, U+200E/F, U+202A-U+202E, U+2066-U+2069) and every byte that is
// not part of well-formed UTF-8 as one '?', so a key can neither end a line early, forge one, be
// shown reordered as another nor send the terminal a command; `tabs` keeps tabs. At most `width`
// bytes of `s`, a cut one ending in '~'. (--json keeps the bytes: key_base64.)
std::string printable(std::string_view s, std::size_t width = std::string::npos, bool tabs = false);
// `idemctl list`'s table, the same for both stores: Redis keys have a FORMAT column (and -1 for a
// TTL means none), PostgreSQL rows hold idem's own records (an expired one has 0 left; a TTL below
// 0, "-", is a table's that keeps no expiry).
enum class ListOf { RedisKeys, PgRows };
// The ID column is as wide as the longest id of the first rows (held back until 1000 have come,
// half a second has passed, or the listing ends; at most 100 wide), so ids of one shape - a gateway's, with their credential
// digest, are long - line up; a longer one later moves the columns of its own row only. Ids are
// never cut: an id is what `inspect` is given next. Rows held back are printed when it goes, also
// when an error ends the listing.
class ListTable {
public:
    explicit ListTable(ListOf what) : m_what(what) {}
    ~ListTable()
    {
        if (!m_held.empty()) // an error ends the listing: what came before it is shown
            flush();
    }
    ListTable(const ListTable&) = delete;
    ListTable& operator=(const ListTable&) = delete;
    void add(const idem::Record& r);
    void flush(); // prints what is held (the header first, also when nothing is)

private:
    struct Row {
        std::string id, state, format, stale, ttl, note;
    };
    void print(const Row& row) const;
    ListOf m_what;
    std::chrono::steady_clock::time_point m_since = std::chrono::steady_clock::now();
    std::vector<Row> m_held;
    bool m_measured = false;
    int m_idWidth = 2;
};

int cmdRun(const std::vector<std::string>& argv);
int cmdInspect(const std::vector<std::string>& argv);
int cmdForceFail(const std::vector<std::string>& argv);
int cmdPurge(const std::vector<std::string>& argv);
bool purgesMany(const std::vector<std::string>& argv);
// purge: a lock whose owner may still be running is refused, in words, unless --live is given
bool refusedAsLive(const std::optional<idem::Record>& r, const Args& args, const char* command = "purge");
int cmdList(const std::vector<std::string>& argv);
int cmdStats(const std::vector<std::string>& argv);
int cmdAudit(const std::vector<std::string>& argv);
int cmdPurgeMany(const std::vector<std::string>& argv);
int cmdRace(const std::vector<std::string>& argv);
int cmdReplay(const std::vector<std::string>& argv);
int cmdCapture(const std::vector<std::string>& argv);
int cmdDemo(const std::vector<std::string>& argv, const std::string& self);
int cmdPg(const std::vector<std::string>& argv);
int cmdAcl(const std::vector<std::string>& argv);

// The roles `idemctl acl` knows, and the ACL SETUSER line of one (`secret`: "nopass" or
// "#<sha256 hex>"; `live`: the console's keyspace notifications of database `db`).
const std::vector<std::string>& roleNames();
std::string aclLine(const std::string& role, const std::string& user, const std::string& ns, const std::string& secret,
                    bool live, int db);
// A NOPERM refusal (or a script's "user executing the script can't") in words: which user may
// not do what, which permission is missing, and which role has it.
std::string permissionAdvice(const std::string& command, const std::string& user, const std::string& ns,
                             const std::string& error);
bool isPermissionError(const std::string& error);
// Redis refused who this is (WRONGPASS: a wrong password, an unknown or disabled user; NOAUTH: no
// password given): retrying cannot fix it, so it exits 77 as a missing permission does, not 69.
bool isAuthenticationError(const std::string& error);
// That refusal in one line: the server's words and what to check (and, for run, that CMD did not run).
std::string authenticationAdvice(const std::string& error, bool commandNotRun = false);
// PostgreSQL refused the login or the database the URL names (idem::pgRefusalOf): the exit code
// (77 for the login, as for credentials Redis refuses; 64 for a database that does not exist, a
// URL as wrong as one libpq cannot read) and one line with the server's words and what to change;
// nullopt for any other error. (`commandNotRun`: run says that CMD did not run.)
struct PgRefusalLine {
    int exit = Unavailable;
    std::string line;
};
std::optional<PgRefusalLine> pgRefusalLine(const std::string& error, bool commandNotRun = false);
// PostgreSQL's refusal (SQLSTATE 42501) in words: which role may not do what, the server's words
// for the right, and which of schema idem's roles has it (`argv`: the command's, for its URL)
std::string pgPermissionAdvice(const std::string& command, const std::vector<std::string>& argv,
                               const std::string& role, const std::string& denied);
// The role and the server's words of an idem::PermissionError's text (an Outcome's error keeps
// only the text): "... role 'R': DENIED [42501]"; nullopt for any other error
std::optional<std::pair<std::string, std::string>> pgPermissionFrom(const std::string& error);

// The same commands on the PostgreSQL store (cmd_pgstore.cpp)
int pgInspect(const Args& args);
int pgForceFail(const Args& args);
int pgPurge(const Args& args);
int pgList(const Args& args, idem::StateFilter filter);
int pgStats(const Args& args);
// --table (a PostgreSQL table another program writes): only with a postgresql:// URL, never written
void refuseTableWithoutPostgres(const Args& args);
void refuseTableWrite(const Args& args, const char* command);
// --lock-timeout (force-fail, purge): PostgreSQL's bound on the wait for a row another transaction
// holds; a usage failure on Redis, whose scripts never wait
void refuseLockTimeout(const Args& args);
// What stats prints of its counts, the same fields for every store (docs/operations.md), as JSON
// and as text; `expiredNote` follows the expired count (cmd_monitor.cpp)
nlohmann::json statsJson(const idem::Stats& s);
void printStats(const idem::Stats& s, const std::string& expiredNote = {});
// What inspect prints of a record, as text and as JSON (cmd_admin.cpp)
void printRecord(const idem::Record& r, std::int64_t serverNowMs);
nlohmann::json inspectJson(const idem::Record& r);

} // namespace idemctl
