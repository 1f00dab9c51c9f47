#include "pg/pgconnection.h"

#include "idem/pg/pgstore.h"

#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string_view>

namespace idem {

namespace {

// libpq's messages span lines (a hint, the position, each address tried): one line, "; " between
std::string trimmed(const char* s)
{
    std::string out;
    bool newline = false;
    for (const char* p = s ? s : ""; *p; ++p) {
        if (*p == '\n') {
            newline = true;
        } else if (newline && (*p == ' ' || *p == '\t')) {
        } else {
            if (newline && !out.empty())
                out += "; ";
            newline = false;
            out += *p;
        }
    }
    while (!out.empty() && out.back() == ' ')
        out.pop_back();
    return out;
}

void ignoreNotice(void*, const char*) {}

// The server's words for what it refused, and the setting they point at (ConfigError::field)
struct Refused {
    PgRefusal what = PgRefusal::None;
    const char* field = "";
};

// libpq's message has a "...failed: FATAL:  <the server's words>" for each address it tried, the
// server's words as its lc_messages has them (see pgRefusalOf). Role and database names are at most
// 63 bytes: " does not exist" is looked for near the start of the words, not in a later line.
Refused refusedBy(std::string_view message)
{
    static constexpr std::string_view fatal = "FATAL:  ";
    for (std::size_t at = message.find(fatal); at != std::string_view::npos; at = message.find(fatal, at + 1)) {
        const std::string_view said = message.substr(at + fatal.size());
        const std::string_view head = said.substr(0, 160);
        // 28P01 invalid_password (password, md5, scram-sha-256); 28000 for the other methods
        // ("Peer authentication failed for user ...", "Ident ...", "LDAP ...", "certificate ...")
        if (said.starts_with("password authentication failed for user \""))
            return {PgRefusal::Login, "password"};
        if (const auto p = said.find(" authentication failed for user \""); p != std::string_view::npos && p < 16)
            return {PgRefusal::Login, "user"};
        // 28000: no such role, or one without LOGIN; 42501: no CONNECT right on the database
        if (said.starts_with("role \"") && (head.find("\" does not exist") != std::string_view::npos ||
                                            head.find("\" is not permitted to log in") != std::string_view::npos))
            return {PgRefusal::Login, "user"};
        if (said.starts_with("permission denied for database \""))
            return {PgRefusal::Login, "user"};
        // 28000: no line of pg_hba.conf admits this host, user, database and encryption, or one rejects it
        if (said.starts_with("no pg_hba.conf entry for ") || said.starts_with("pg_hba.conf rejects connection for "))
            return {PgRefusal::HostRule, "url"};
        // 3D000 invalid_catalog_name
        if (said.starts_with("database \"") && head.find("\" does not exist") != std::string_view::npos)
            return {PgRefusal::Database, "url"};
    }
    // libpq's own: the server asks for a password and the URL gives none
    if (message.find("fe_sendauth: no password supplied") != std::string_view::npos)
        return {PgRefusal::Login, "password"};
    return {};
}

} // namespace

PgRefusal pgRefusalOf(std::string_view message) { return refusedBy(message).what; }

[[noreturn]] void throwPgError(PGconn* c, const PGresult* r, std::string_view doing)
{
    const char* state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
    const std::string sqlstate = state ? state : "";
    std::string message = trimmed(r ? PQresultErrorMessage(r) : nullptr);
    if (message.empty())
        message = trimmed(PQerrorMessage(c));
    message = "PostgreSQL " + std::string(doing) + ": " + message;
    const bool lost = PQstatus(c) != CONNECTION_OK || sqlstate.empty() || sqlstate.starts_with("08") ||
                      sqlstate == "57P01" || sqlstate == "57P02" || sqlstate == "57P03";
    if (lost)
        throw ClosedError(message);
    // 3F000 invalid_schema_name, 42883 undefined_function, 42P01 undefined_table, 42703
    // undefined_column (an older schema idem: v1 has no recovery points)
    if (sqlstate == "3F000" || sqlstate == "42883" || sqlstate == "42P01" || sqlstate == "42703")
        throw ConfigError(message + " (is schema idem installed in this database, and up to date? idemctl pg "
                                    "init --url ...)",
                          "schema");
    // 42501 insufficient_privilege: the role lacks a right (schema idem's roles: idemctl acl); the
    // server's words name the object, the role is said here
    if (sqlstate == "42501") {
        const char* user = PQuser(c);
        const char* primary = r ? PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY) : nullptr;
        const std::string role = user ? user : "";
        const std::string denied = trimmed(primary);
        // (the form idemctl reads back from an Outcome's error: "role 'R': DENIED [42501]")
        throw PermissionError("PostgreSQL " + std::string(doing) + ": role '" + role + "': " + denied + " [42501]",
                              role, denied);
    }
    throw PgError(message + " [" + sqlstate + "]", sqlstate);
}

void checkPgConninfo(const std::string& conninfo)
{
    // PQconnectdbParams expands "dbname" only when it is a URI or holds '=': else it is a name
    if (!conninfo.starts_with("postgresql://") && !conninfo.starts_with("postgres://") &&
        conninfo.find('=') == std::string::npos)
        return;
    char* error = nullptr;
    PQconninfoOption* options = PQconninfoParse(conninfo.c_str(), &error);
    if (!options) {
        const std::string why = error ? trimmed(error) : "out of memory";
        PQfreemem(error);
        throw UsageError("not a PostgreSQL URL or conninfo libpq can read: " + why);
    }
    // a port libpq reads only when it connects, and then as "unavailable"
    std::string bad;
    for (const PQconninfoOption* o = options; o->keyword; ++o) {
        if (std::string_view(o->keyword) != "port" || !o->val)
            continue;
        const std::string_view ports(o->val);
        std::size_t start = 0;
        for (;;) { // one per host: "5432,5433" (an empty one is the default)
            const std::size_t end = std::min(ports.find(',', start), ports.size());
            const std::string_view p = ports.substr(start, end - start);
            const bool digits = p.find_first_not_of("0123456789") == std::string_view::npos && p.size() <= 5;
            const int port = digits && !p.empty() ? std::stoi(std::string(p)) : 1;
            if (!digits || port < 1 || port > 65535)
                bad = std::string(p);
            if (end == ports.size())
                break;
            start = end + 1;
        }
    }
    PQconninfoFree(options);
    if (!bad.empty())
        throw UsageError("not a PostgreSQL URL or conninfo libpq can read: port \"" + bad +
                         "\" is not a number from 1 to 65535");
}

PgConnection::PgConnection(const std::string& conninfo, int connectTimeoutSeconds) : m_conn(nullptr, &PQfinish)
{
    checkPgConninfo(conninfo);
    // the conninfo (expanded from "dbname") overrides the keywords before it
    const std::string timeout = std::to_string(connectTimeoutSeconds);
    const char* keys[] = {"connect_timeout", "fallback_application_name", "dbname", nullptr};
    const char* values[] = {timeout.c_str(), "idem", conninfo.c_str(), nullptr};
    m_conn.reset(PQconnectdbParams(keys, values, 1));
    if (!m_conn)
        throw IoError("PostgreSQL: out of memory");
    if (PQstatus(m_conn.get()) != CONNECTION_OK) {
        // what retrying cannot fix is a ConfigError (no retries, the setting named), by the
        // server's words: libpq keeps no SQLSTATE of a connection that failed
        const std::string why = trimmed(PQerrorMessage(m_conn.get()));
        const Refused refused = refusedBy(why);
        if (refused.what != PgRefusal::None)
            throw ConfigError("PostgreSQL refused the connection: " + why, refused.field);
        throw IoError("PostgreSQL unavailable: " + why);
    }
    // NOTICEs ("schema idem already exists, skipping") are not for the caller's stderr
    PQsetNoticeProcessor(m_conn.get(), &ignoreNotice, nullptr);
}

void PgConnection::interrupt()
{
    if (const int fd = PQsocket(m_conn.get()); fd >= 0)
        ::shutdown(fd, SHUT_RDWR);
}

bool PgConnection::healthy() const
{
    return PQstatus(m_conn.get()) == CONNECTION_OK && PQtransactionStatus(m_conn.get()) == PQTRANS_IDLE;
}

std::string PgConnection::describe() const
{
    PGconn* c = m_conn.get();
    const char* host = PQhost(c);
    std::string h = host ? host : "";
    if (!h.empty() && h.front() == '/')
        h = "unix:" + h;
    return "postgresql://" + h + ":" + (PQport(c) ? PQport(c) : "") + "/" + (PQdb(c) ? PQdb(c) : "");
}

std::int64_t PgConnection::serverNowMs()
{
    const PgResultPtr r = exec("SELECT (extract(epoch FROM clock_timestamp()) * 1000)::int8");
    return std::stoll(PQgetvalue(r.get(), 0, 0));
}

std::vector<PgOperation> readPgOperations(PgConnection& conn, int limit)
{
    const PgResultPtr r = conn.exec(
        "SELECT (extract(epoch FROM at) * 1000)::int8, op, id, coalesce(previous_state, ''), coalesce(by, ''), "
        "coalesce(reason, ''), coalesce(to_jsonb(o) ->> 'session_role', '') FROM idem.operations AS o "
        "ORDER BY at DESC LIMIT " + std::to_string(std::max(1, limit)));
    std::vector<PgOperation> out;
    for (int row = 0; row < PQntuples(r.get()); ++row)
        out.push_back({std::stoll(PQgetvalue(r.get(), row, 0)), PQgetvalue(r.get(), row, 1),
                       PQgetvalue(r.get(), row, 2), PQgetvalue(r.get(), row, 3), PQgetvalue(r.get(), row, 4),
                       PQgetvalue(r.get(), row, 5), PQgetvalue(r.get(), row, 6)});
    return out;
}

void PgConnection::prepare(const char* name, const char* sql, const std::vector<Oid>& types)
{
    PgResultPtr r(PQprepare(m_conn.get(), name, sql, static_cast<int>(types.size()), types.data()), &PQclear);
    if (!r || PQresultStatus(r.get()) != PGRES_COMMAND_OK)
        throwPgError(m_conn.get(), r.get(), std::string("prepare ") + name);
}

void PgParamArrays::fill(const std::vector<PgParam>& params)
{
    values.clear();
    lengths.clear();
    formats.clear();
    for (const PgParam& p : params) {
        values.push_back(p.value ? p.value->data() : nullptr);
        lengths.push_back(p.value ? static_cast<int>(p.value->size()) : 0);
        formats.push_back(p.binary ? 1 : 0);
    }
}

PgResultPtr PgConnection::execPrepared(const char* name, const std::vector<PgParam>& params)
{
    const PgParamArrays a(params);
    PgResultPtr r(PQexecPrepared(m_conn.get(), name, a.count(), a.values.data(), a.lengths.data(), a.formats.data(), 1),
                  &PQclear);
    if (!r || PQresultStatus(r.get()) != PGRES_TUPLES_OK)
        throwPgError(m_conn.get(), r.get(), name);
    return r;
}

PgResultPtr PgConnection::execParams(const std::string& sql, const std::vector<PgParam>& params)
{
    const PgParamArrays a(params);
    PgResultPtr r(PQexecParams(m_conn.get(), sql.c_str(), a.count(), nullptr, a.values.data(), a.lengths.data(),
                               a.formats.data(), 1),
                  &PQclear);
    if (!r || PQresultStatus(r.get()) != PGRES_TUPLES_OK)
        throwPgError(m_conn.get(), r.get(), sql.substr(0, sql.find('(')));
    return r;
}

PgResultPtr PgConnection::exec(const std::string& sql)
{
    PgResultPtr r(PQexec(m_conn.get(), sql.c_str()), &PQclear);
    const ExecStatusType s = r ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
    if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK)
        throwPgError(m_conn.get(), r.get(), sql.substr(0, sql.find(' ')));
    return r;
}

namespace pgcell {

bool isNull(const PGresult* r, int row, int col) { return PQgetisnull(r, row, col) != 0; }

std::string text(const PGresult* r, int row, int col)
{
    if (isNull(r, row, col))
        return {};
    return std::string(PQgetvalue(r, row, col), static_cast<std::size_t>(PQgetlength(r, row, col)));
}

std::int64_t int8(const PGresult* r, int row, int col)
{
    if (isNull(r, row, col) || PQgetlength(r, row, col) != 8)
        return 0;
    const auto* p = reinterpret_cast<const unsigned char*>(PQgetvalue(r, row, col));
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i)
        v = (v << 8) | p[i]; // network byte order
    return static_cast<std::int64_t>(v);
}

bool boolean(const PGresult* r, int row, int col)
{
    return !isNull(r, row, col) && PQgetlength(r, row, col) == 1 && PQgetvalue(r, row, col)[0] != 0;
}

} // namespace pgcell

std::string pgInterval(std::chrono::milliseconds d)
{
    return std::to_string(d.count()) + " milliseconds";
}

} // namespace idem
