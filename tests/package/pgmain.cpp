// Links idem::pg from the installed package (and libpq through it): a store on a PostgreSQL that
// is not there fails closed.
#include <idem/errors.h>
#include <idem/pg/pgstore.h>
#include <idem/pg/schema.h>

#include <cstdio>

int main()
{
    idem::PgStoreOptions o;
    o.connectTimeoutSeconds = 2;
    idem::PgStore store("postgresql://idem@127.0.0.1:1/none", o);
    try {
        store.acquire("order-42");
    } catch (const idem::IoError& e) {
        std::printf("schema v%d; PostgreSQL away: %s\n", idem::kPgSchemaVersion, e.what());
        return 0;
    }
    return 1;
}
