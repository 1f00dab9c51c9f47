// idemctl pg: the PostgreSQL store's schema (docs/postgres.md).
#include "cli.h"

#include "idem/pg/schema.h"

#include <cstdio>
#include <cstdlib>

namespace idemctl {

namespace {

const char* kPgUsage = R"(usage: idemctl pg init --url postgresql://[user[:password]@]host[:port]/database

  init   install schema idem (the records table and the functions idem.acquire, idem.complete, ...)
         into the database, or upgrade it; idempotent. Refuses a schema newer than this idemctl
         (exit 1, nothing changed).

--url takes libpq's forms: postgresql:// or postgres:// URIs, or "host=... dbname=..." (default:
$IDEM_URL). Exit codes: 0 done, 1 refused, 64 usage, 69 PostgreSQL unavailable.
)";

bool looksLikePostgres(const std::string& url)
{
    return url.starts_with("postgresql://") || url.starts_with("postgres://") ||
           (url.find('=') != std::string::npos && url.find("://") == std::string::npos);
}

} // namespace

int cmdPg(const std::vector<std::string>& argv)
{
    const Args args(argv, {}, {});
    if (args.flag("--help")) {
        std::fputs(kPgUsage, stdout);
        return Ok;
    }
    if (args.positional().size() != 1 || args.positional()[0] != "init")
        throw UsageFailure{args.positional().empty() ? "which pg command? (init)"
                                                     : "unknown pg command '" + args.positional()[0] + "' (init)"};
    std::string url;
    if (auto u = args.value("--url"))
        url = *u;
    else if (const char* env = std::getenv("IDEM_URL"); env && *env)
        url = env;
    if (url.empty() || !looksLikePostgres(url))
        throw UsageFailure{url.empty() ? "--url postgresql://... is required"
                                       : "--url must name a PostgreSQL database (postgresql://...), not " + url};
    try {
        const idem::PgSchemaChange c = idem::installPgSchema(url);
        if (c.before == c.after)
            std::printf("schema idem: version %d, nothing to do\n", c.after);
        else if (c.before == 0)
            std::printf("schema idem: installed version %d\n", c.after);
        else
            std::printf("schema idem: upgraded from version %d to %d\n", c.before, c.after);
        return Ok;
    } catch (const idem::SchemaTooNewError& e) {
        std::fprintf(stderr, "idemctl pg init: %s\n", e.what());
        return Refused;
    }
}

} // namespace idemctl
