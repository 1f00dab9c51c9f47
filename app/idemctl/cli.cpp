#include "cli.h"

#include "idem/base64.h"
#include "idem/duration.h"
#include "idem/errors.h"
#include "idem/redis/connectionflags.h"
#include "idem/redis/localserver.h"
#include "idem/utf8.h"

#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <pwd.h>
#include <unistd.h>

namespace idemctl {

Args::Args(std::vector<std::string> argv, std::set<std::string> valued, std::set<std::string> flags)
{
    for (const auto& g : kGlobalValued)
        valued.insert(g);
    for (const auto& g : kGlobalFlags)
        flags.insert(g);
    flags.insert("--help");
    for (std::size_t i = 0; i < argv.size(); ++i) {
        const std::string& a = argv[i];
        if (a == "--") {
            m_hadDashes = true;
            m_afterDashes.assign(argv.begin() + static_cast<long>(i) + 1, argv.end());
            return;
        }
        if (a == "-h") {
            m_flags.insert("--help");
            continue;
        }
        if (a.size() > 2 && a.starts_with("--")) {
            const auto eq = a.find('=');
            const std::string name = a.substr(0, eq);
            if (valued.count(name)) {
                if (eq != std::string::npos) {
                    m_values[name] = a.substr(eq + 1);
                } else {
                    if (i + 1 >= argv.size())
                        throw UsageFailure{name + " needs a value"};
                    m_values[name] = argv[++i];
                }
            } else if (flags.count(name) && eq == std::string::npos) {
                m_flags.insert(name);
            } else {
                throw UsageFailure{"unknown option " + name};
            }
            continue;
        }
        m_positional.push_back(a);
    }
}

std::optional<std::string> Args::value(const std::string& name) const
{
    auto it = m_values.find(name);
    if (it == m_values.end())
        return std::nullopt;
    return it->second;
}

bool looksLikePostgres(const std::string& url)
{
    return url.starts_with("postgresql://") || url.starts_with("postgres://") ||
           (url.find('=') != std::string::npos && url.find("://") == std::string::npos);
}

bool postgresGiven(const Args& args)
{
    if (auto u = args.value("--url"))
        return looksLikePostgres(*u);
    const char* env = std::getenv("IDEM_URL");
    return env && *env && looksLikePostgres(env);
}

Global globalFrom(const Args& args)
{
    Global g;
    if (auto u = args.value("--url")) {
        g.url = *u;
        g.urlGiven = true;
    } else if (const char* env = std::getenv("IDEM_URL"); env && *env) {
        g.url = env;
        g.urlGiven = true;
        g.urlFromEnvironment = true;
    } else {
        g.url = "redis://127.0.0.1:6379/0";
    }
    if (looksLikePostgres(g.url)) {
        // libpq reads TLS from the conninfo (sslmode, sslrootcert, ...); schema idem has no namespaces
        for (const char* redisOnly : {"--tls-ca", "--tls-cert", "--tls-key", "--tls-server-name",
                                      "--sentinel-password", "--namespace", "--format"})
            if (args.value(redisOnly))
                throw UsageFailure{std::string(redisOnly) + " is for Redis; a PostgreSQL URL takes TLS settings "
                                                            "as sslmode=..., sslrootcert=... in the URL"};
        if (args.flag("--tls-insecure"))
            throw UsageFailure{"--tls-insecure is for Redis; use sslmode=require in the PostgreSQL URL"};
        g.postgres = true;
        return g;
    }
    idem::ConnectionFlags flags;
    flags.url = g.url;
    flags.tlsCa = args.value("--tls-ca");
    flags.tlsCert = args.value("--tls-cert");
    flags.tlsKey = args.value("--tls-key");
    flags.tlsServerName = args.value("--tls-server-name");
    flags.sentinelPassword = args.value("--sentinel-password");
    flags.tlsInsecure = args.flag("--tls-insecure");
    try {
        g.connection = idem::connectionFromFlags(flags);
    } catch (const idem::UsageError& e) {
        std::string what = e.what();
        if (what.ends_with(" or rediss-sentinel://")) // idemctl takes PostgreSQL too
            what.append(", or a PostgreSQL URL (postgresql://...)");
        throw UsageFailure{what};
    }
    if (flags.tlsInsecure)
        std::fprintf(stderr, "idemctl: warning: --tls-insecure: the server's certificate is not verified; anyone "
                             "on the path can read and change what idem sends\n");
    if (auto ns = args.value("--namespace"))
        g.keyNamespace = *ns;
    if (g.keyNamespace.empty() || g.keyNamespace.find_first_of("{}") != std::string::npos)
        throw UsageFailure{"--namespace must be non-empty and free of '{' and '}'"};
    if (auto f = args.value("--format")) {
        g.format = idem::formatFromString(*f);
        if (!g.format || !idem::isRedisFormat(*g.format))
            throw UsageFailure{"--format must be one of " + formatNames()};
    }
    return g;
}

Global redisGlobalFrom(const Args& args)
{
    Global g = globalFrom(args);
    if (g.postgres)
        throw UsageFailure{"this command works on Redis only; with PostgreSQL use run, inspect, force-fail, purge ID, "
                           "list, stats or pg"};
    return g;
}

bool writesToGivenServer(const Global& g, const char* command)
{
    if (g.urlFromEnvironment) // the operator's server, exported for the operator's commands
        std::fprintf(stderr, "idemctl %s: IDEM_URL is not written to: a private redis-server instead (--url names a "
                             "server to write to)\n", command);
    return g.urlGiven && !g.urlFromEnvironment;
}

idem::ConnectionOptions serverOrPrivate(const Global& g, std::unique_ptr<idem::LocalServer>& server,
                                        const char* command)
{
    if (writesToGivenServer(g, command))
        return g.connection;
    server = std::make_unique<idem::LocalServer>();
    return server->connectionOptions();
}

std::string formatNames()
{
    std::string out;
    for (int f = 0; f < idem::kRecordFormats; ++f)
        if (idem::isRedisFormat(static_cast<idem::RecordFormat>(f)))
            out += (out.empty() ? "" : ", ") + std::string(idem::nameOf(static_cast<idem::RecordFormat>(f)));
    return out;
}

std::string utcTime(std::int64_t ms)
{
    const std::time_t t = static_cast<std::time_t>(ms / 1000);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[64];
    std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
    return buf;
}

std::string whoAmI()
{
    std::string user;
    if (const passwd* pw = getpwuid(geteuid()))
        user = pw->pw_name;
    else if (const char* u = std::getenv("USER"))
        user = u;
    else
        user = "uid" + std::to_string(geteuid());
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    return user + "@" + host + " (idemctl)";
}

std::string actorName(const Args& args)
{
    const auto by = args.value("--by");
    if (!by)
        return whoAmI();
    if (by->find_first_not_of(" \t") == std::string::npos)
        throw UsageFailure{"--by names who acts, for the audit trail: it must not be empty"};
    for (unsigned char c : *by)
        if (c < 0x20 || c == 0x7f)
            throw UsageFailure{"--by must not hold control characters"};
    return *by;
}

void addKeyBytes(nlohmann::json& j, const std::string& key)
{
    if (!idem::validUtf8(key))
        j["key_base64"] = idem::toBase64(key);
}

void setBytes(nlohmann::json& j, const std::string& name, const std::string& value)
{
    j[name] = value;
    if (!idem::validUtf8(value))
        j[name + "_base64"] = idem::toBase64(value);
}

nlohmann::json recordJson(const idem::Record& r, std::optional<std::int64_t> nowMs)
{
    nlohmann::json j;
    j["key"] = r.key;
    addKeyBytes(j, r.key);
    setBytes(j, "id", r.id);
    j["state"] = idem::nameOf(r.state);
    j["format"] = idem::nameOf(r.format);
    j["library"] = idem::libraryOf(r.format);
    if (idem::anotherProgramsData(r))
        j["program"] = r.program; // not idempotency data: no bulk purge takes it
    j["type"] = r.keyType;
    if (!r.node.empty())
        j["node"] = r.node;
    j["ttl_ms"] = r.ttlMs;
    j["stale"] = r.stale;
    if (r.stale)
        j["stale_why"] = r.staleWhy;
    if (r.state == idem::RecordState::Started)
        j["blocked"] = r.blocked; // no lease: only the TTL ends it
    if (!r.reason.empty())
        j["reason"] = r.reason;
    if (idem::notARecord(r.state) && !r.rawStatus.empty())
        setBytes(j, "status_as_written", r.rawStatus); // its writer's word, which no state of idem's says
    if (r.expiresMs)
        j["expires_ms"] = *r.expiresMs;
    if (r.partial)
        j["partial"] = true;
    if (r.state == idem::RecordState::Failed)
        j["terminal"] = r.terminal;
    if (nowMs && r.state == idem::RecordState::Started && r.leaseUntilMs)
        j["lease_remaining_ms"] = *r.leaseUntilMs - *nowMs;
    if (nowMs && (r.createdMs || r.startedMs))
        j["age_ms"] = *nowMs - r.createdMs.value_or(r.startedMs.value_or(0));
    if (!r.owner.empty())
        j["owner"] = r.owner;
    if (r.fence)
        j["fence"] = r.fence;
    if (r.attempt)
        j["attempt"] = r.attempt;
    return j;
}

std::string jsonEscape(const std::string& s)
{
    return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string dumpLine(const nlohmann::json& j)
{
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

namespace {

// The code point of one well-formed UTF-8 sequence of 2 or 3 bytes (the bidi controls' lengths);
// 0 for any other length
char32_t codePoint(std::string_view c)
{
    const auto b = [&](std::size_t k) { return static_cast<char32_t>(static_cast<unsigned char>(c[k])); };
    if (c.size() == 2)
        return (b(0) & 0x1F) << 6 | (b(1) & 0x3F);
    if (c.size() == 3)
        return (b(0) & 0x0F) << 12 | (b(1) & 0x3F) << 6 | (b(2) & 0x3F);
    return 0;
}

} // namespace

std::string printable(std::string_view s, std::size_t width, bool tabs)
{
    std::string out;
    std::size_t i = 0, last = 0; // `last`: where the last character written starts in `out`
    while (i < s.size()) {
        const auto c = static_cast<unsigned char>(s[i]);
        std::size_t n = 1; // the character's bytes in `s`
        bool shows = (c >= 0x20 && c != 0x7f) || (tabs && c == '\t');
        if (c >= 0x80) {
            const auto next = i + 1 < s.size() ? static_cast<unsigned char>(s[i + 1]) : 0;
            const int tail = next ? idem::utf8Tail(c, next) : 0;
            bool whole = tail > 0 && i + 1 + static_cast<std::size_t>(tail) <= s.size();
            for (int k = 2; whole && k <= tail; ++k)
                whole = (static_cast<unsigned char>(s[i + static_cast<std::size_t>(k)]) & 0xC0) == 0x80;
            if (whole)
                n = 1 + static_cast<std::size_t>(tail);
            shows = whole && !(c == 0xC2 && next < 0xA0) && // U+0080..U+009F: C1 controls (CSI among them)
                    !idem::bidiControl(codePoint(s.substr(i, n)));
        }
        if (i + n > width)
            break;
        last = out.size();
        if (shows)
            out.append(s.substr(i, n));
        else
            out.push_back('?');
        i += n;
    }
    if (i < s.size()) { // cut: its last character says so
        out.resize(last);
        out.push_back('~');
    }
    return out;
}

void ListTable::add(const idem::Record& r)
{
    const bool redis = m_what == ListOf::RedisKeys;
    Row row;
    row.id = printable(r.id, r.id.size());
    row.state = idem::nameOf(r.state);
    row.format = idem::nameOf(r.format);
    row.stale = r.stale ? "yes" : "";
    row.ttl = redis && r.ttlMs == -1 ? "none!"
              : !redis && r.ttlMs < 0 ? "-"
                                      : idem::formatDuration(idem::Millis(r.ttlMs));
    // the last column: cut to fit a terminal, whole into a pipe or a file
    static const std::size_t noteWidth = ::isatty(STDOUT_FILENO) ? 60 : std::string::npos;
    row.note = printable(r.stale ? r.staleWhy : r.reason, noteWidth);
    if (m_measured)
        return print(row);
    m_held.push_back(std::move(row));
    // a selective filter over many keys finds few rows slowly: those found are not kept waiting
    if (m_held.size() >= 1000 || std::chrono::steady_clock::now() - m_since > std::chrono::milliseconds(500))
        flush();
}

void ListTable::flush()
{
    if (!m_measured) {
        m_measured = true;
        for (const Row& row : m_held)
            m_idWidth = std::max(m_idWidth, static_cast<int>(std::min<std::size_t>(row.id.size(), 100)));
        if (m_what == ListOf::RedisKeys)
            std::printf("%-*s %-10s %-19s %-6s %12s  %s\n", m_idWidth, "ID", "STATE", "FORMAT", "STALE", "TTL", "NOTE");
        else
            std::printf("%-*s %-10s %-6s %12s  %s\n", m_idWidth, "ID", "STATE", "STALE", "TTL", "NOTE");
    }
    for (const Row& row : m_held)
        print(row);
    m_held.clear();
    std::fflush(stdout);
}

void ListTable::print(const Row& r) const
{
    if (m_what == ListOf::RedisKeys)
        std::printf("%-*s %-10s %-19s %-6s %12s  %s\n", m_idWidth, r.id.c_str(), r.state.c_str(), r.format.c_str(),
                    r.stale.c_str(), r.ttl.c_str(), r.note.c_str());
    else
        std::printf("%-*s %-10s %-6s %12s  %s\n", m_idWidth, r.id.c_str(), r.state.c_str(), r.stale.c_str(),
                    r.ttl.c_str(), r.note.c_str());
}

} // namespace idemctl
