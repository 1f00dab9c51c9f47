// The GRANTs of schema idem's roles (idem/pg/schema.h): what `idemctl acl ROLE --user NAME` prints
// for a postgresql:// URL. The functions are named with their argument types, as GRANT needs them.
#include "idem/pg/schema.h"

#include <algorithm>

namespace idem {

namespace {

const char* const kService[] = {
    "idem.acquire(text, interval, bytea, uuid, interval)",
    "idem.complete(text, uuid, bytea, interval)",
    "idem.fail(text, uuid, text, text, interval)",
    "idem.renew(text, uuid, interval, interval)",
    "idem.checkpoint(text, uuid, text, bytea)",
    "idem.sweep(integer)",
};

const char* const kWatch[] = {"idem.watch(text)", "idem.unwatch(text)"};

const char* const kOperator[] = {
    "idem.force_fail(text, text, boolean, text, interval)",
    "idem.purge(text, text, text)",
    "idem.purge_seen(text, text, text, bigint, integer, bigint, text, text)",
    "idem.sweep(integer)",
};

// a role's name as an SQL identifier: always quoted, so that any name means itself
std::string quoted(const std::string& name)
{
    std::string q = "\"";
    for (const char c : name) {
        if (c == '"')
            q += '"';
        q += c;
    }
    return q + "\"";
}

template <std::size_t N> std::string functions(const char* const (&names)[N])
{
    std::string out;
    for (const char* f : names)
        out += (out.empty() ? "" : ", ") + std::string(f);
    return out;
}

} // namespace

const std::vector<std::string>& pgRoleNames()
{
    static const std::vector<std::string> names = {"monitor", "operator", "service"};
    return names;
}

std::vector<std::string> pgRoleGrants(const std::string& role, const std::string& user)
{
    if (std::find(pgRoleNames().begin(), pgRoleNames().end(), role) == pgRoleNames().end())
        throw UsageError("unknown role '" + role + "' (monitor, operator or service)");
    if (user.empty() || user.find('\0') != std::string::npos)
        throw UsageError("a PostgreSQL role's name is non-empty text without NUL");
    const std::string to = " TO " + quoted(user) + ";";
    const std::string from = " FROM " + quoted(user) + ";";
    // like ACL SETUSER's reset: whatever the role held in schema idem before goes first
    std::vector<std::string> sql = {
        "REVOKE ALL ON ALL TABLES IN SCHEMA idem" + from,
        "REVOKE ALL ON ALL SEQUENCES IN SCHEMA idem" + from,
        "REVOKE ALL ON ALL FUNCTIONS IN SCHEMA idem" + from,
        "REVOKE ALL ON SCHEMA idem" + from,
        "GRANT USAGE ON SCHEMA idem" + to,
    };
    if (role == "service") {
        sql.push_back("GRANT SELECT ON idem.migrations" + to); // the schema's version, read on connecting
        sql.push_back("GRANT EXECUTE ON FUNCTION " + functions(kService) + to);
        return sql;
    }
    sql.push_back("GRANT SELECT ON idem.migrations, idem.records, idem.operations" + to);
    sql.push_back("GRANT EXECUTE ON FUNCTION " + functions(kWatch) + to);
    if (role == "operator") {
        sql.push_back("GRANT EXECUTE ON FUNCTION " + functions(kOperator) + to);
        // the guarded purge of a table idem did not make logs itself; session_role is the server's
        sql.push_back("GRANT INSERT (at, op, id, fence, previous_state, by, reason) ON idem.operations" + to);
    }
    return sql;
}

} // namespace idem
