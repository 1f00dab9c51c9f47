// idemctl pg: the PostgreSQL store's schema (docs/postgres.md).
#include "cli.h"

#include "idem/pg/pgstore.h"
#include "idem/pg/schema.h"

#include <cstdio>
#include <cstdlib>

namespace idemctl {

namespace {

const char* kPgUsage = R"(usage: idemctl pg init --url postgresql://[user[:password]@]host[:port]/database
       idemctl pg sweep --url ... [--batch N] [--max-batches N]

  init   install schema idem (the records table and the functions idem.acquire, idem.complete, ...)
         into the database, or upgrade it; idempotent. Refuses a schema newer than this idemctl
         (exit 1, nothing changed).
  sweep  delete expired rows (they already count as absent), oldest expiry first along the
         expires_at index, at most N per transaction (--batch, default 1000), until a batch comes
         back short or --max-batches ran (default: no limit); prints how many went. Rows another
         transaction holds are skipped, never waited for.

--url takes libpq's forms: postgresql:// or postgres:// URIs, or "host=... dbname=..." (default:
$IDEM_URL). Exit codes: 0 done, 1 refused, 64 usage (or no such database), 69 PostgreSQL
unavailable, 77 the login refused (or the role lacks a right).
)";

} // namespace

int cmdPg(const std::vector<std::string>& argv)
{
    const Args args(argv, {"--batch", "--max-batches"}, {});
    if (args.flag("--help")) {
        std::fputs(kPgUsage, stdout);
        return Ok;
    }
    const std::string what = args.positional().empty() ? std::string() : args.positional()[0];
    if (args.positional().size() != 1 || (what != "init" && what != "sweep"))
        throw UsageFailure{what.empty() ? "which pg command? (init, sweep)"
                                        : "unknown pg command '" + what + "' (init, sweep)"};
    if (what == "init" && (args.value("--batch") || args.value("--max-batches")))
        throw UsageFailure{"--batch and --max-batches are for pg sweep"};
    const auto batch = number<std::int64_t>(args.value("--batch"), 1000, 1, 1'000'000, "--batch");
    const auto maxBatches = number<std::int64_t>(args.value("--max-batches"), 0, 1, 1'000'000'000, "--max-batches");
    std::string url;
    if (auto u = args.value("--url"))
        url = *u;
    else if (const char* env = std::getenv("IDEM_URL"); env && *env)
        url = env;
    if (url.empty() || !looksLikePostgres(url))
        throw UsageFailure{url.empty() ? "--url postgresql://... is required"
                                       : "--url must name a PostgreSQL database (postgresql://...), not " + url};
    if (what == "sweep") {
        idem::PgStore store(url);
        const idem::PgStore::Swept swept = store.sweep(batch, maxBatches);
        std::printf("swept %lld expired row(s) in %lld batch(es) of up to %lld%s\n",
                    static_cast<long long>(swept.rows), static_cast<long long>(swept.batches),
                    static_cast<long long>(batch), swept.more ? "; more remain (--max-batches reached)" : "");
        return Ok;
    }
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
