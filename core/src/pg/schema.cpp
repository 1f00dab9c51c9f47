#include "idem/pg/schema.h"

#include "pg/pgconnection.h"

#include <algorithm>
#include <string_view>

namespace idem {

namespace sql {
extern const std::string_view v1;
extern const std::string_view v2;
extern const std::string_view v3;
extern const std::string_view v4;
extern const std::string_view v5;
extern const std::string_view v6;
extern const std::string_view v7;
}

namespace {

// sql/v<N>.sql for N = 1..kPgSchemaVersion
const std::string_view kMigrations[] = {sql::v1, sql::v2, sql::v3, sql::v4, sql::v5, sql::v6, sql::v7};
static_assert(std::size(kMigrations) == kPgSchemaVersion);

int installedVersion(PgConnection& c)
{
    // two statements: a query naming a table that does not exist fails even in a branch not taken
    if (std::string_view(PQgetvalue(c.exec("SELECT to_regclass('idem.migrations') IS NULL").get(), 0, 0)) == "t")
        return 0;
    const PgResultPtr r = c.exec("SELECT coalesce(max(version), 0) FROM idem.migrations");
    return std::stoi(PQgetvalue(r.get(), 0, 0));
}

} // namespace

PgSchemaChange installPgSchema(const std::string& conninfo, int version)
{
    if (version < 1 || version > kPgSchemaVersion)
        throw UsageError("schema idem has versions 1 to " + std::to_string(kPgSchemaVersion));
    PgConnection c(conninfo, 10);
    c.exec("BEGIN");
    // one installer at a time; the key is arbitrary but fixed ("idem" in ASCII)
    c.exec("SELECT pg_advisory_xact_lock(1768187245)");
    PgSchemaChange change;
    change.before = installedVersion(c);
    if (change.before > kPgSchemaVersion) {
        c.exec("ROLLBACK");
        throw SchemaTooNewError("schema idem is at version " + std::to_string(change.before) +
                                    ", newer than this idem knows (" + std::to_string(kPgSchemaVersion) +
                                    "): use a newer idem; nothing was changed",
                                change.before);
    }
    c.exec("CREATE SCHEMA IF NOT EXISTS idem");
    c.exec("CREATE TABLE IF NOT EXISTS idem.migrations (version integer PRIMARY KEY, "
           "applied_at timestamptz NOT NULL DEFAULT now())");
    for (int v = change.before + 1; v <= version; ++v) {
        const std::string source(kMigrations[v - 1]);
        PgResultPtr r(PQexec(c.get(), source.c_str()), &PQclear);
        if (!r || PQresultStatus(r.get()) != PGRES_COMMAND_OK)
            throwPgError(c.get(), r.get(), "migration v" + std::to_string(v));
        c.exec("INSERT INTO idem.migrations (version) VALUES (" + std::to_string(v) + ")");
    }
    c.exec("COMMIT");
    change.after = std::max(change.before, version);
    return change;
}

int pgSchemaVersion(const std::string& conninfo)
{
    PgConnection c(conninfo, 10);
    return installedVersion(c);
}

} // namespace idem
