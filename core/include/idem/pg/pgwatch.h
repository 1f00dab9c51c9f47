#pragma once

#include "idem/pg/pgoperation.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace idem {

class PgConnection;

// What a watcher of a PostgreSQL store (the console) needs beside PgStore's page(), read() and
// actions: a dedicated connection that LISTENs on channel idem_records (schema v4's triggers
// notify it with the ids each statement changed), whose socket the caller polls in its own event
// loop, and the server's clock. The triggers notify only while a watcher's row in idem.watchers
// is younger than 30 s (NOTIFY serialises commits): it is written on connecting, renewed by
// renewIfDue() (call it every few seconds; it writes every 10 s) and deleted on destruction,
// through idem.watch and idem.unwatch from schema v5 (what a monitor role may run).
// Not thread-safe: one thread owns it.
class PgWatch {
public:
    // Connects and LISTENs. Throws as PgStore does (IoError unreachable, ConfigError refused).
    PgWatch(const std::string& conninfo, int connectTimeoutSeconds = 5);
    ~PgWatch();
    PgWatch(const PgWatch&) = delete;
    PgWatch& operator=(const PgWatch&) = delete;

    // The connection's socket: readable when a notification (or the server's goodbye) arrived.
    int socket() const;
    // Whether the schema has the triggers that notify (version 4 or later).
    bool notifies() const { return m_notifies; }

    struct Changes {
        std::vector<std::string> ids; // changed, inserted or deleted: read them again
        bool everything = false;      // a statement changed too many to name: read the table again
    };
    // Reads what arrived on the socket without waiting. Throws IoError when the connection is lost.
    Changes take();

    // The newest operator actions of table idem.operations (force_fail, purge), newest first
    using Operation = PgOperation;
    std::vector<Operation> operations(int limit);

    std::int64_t serverNowMs();     // one round trip
    void renewIfDue();              // this watcher's row in idem.watchers, every 10 s
    std::int64_t estimatedRows();   // the planner's estimate (pg_class.reltuples), 0 when unknown
    std::string describe() const;   // "postgresql://host:port/db" of the connection, never the password
    // Thread-safe: a call waiting on the server ends at once with ClosedError (PgConnection::interrupt)
    void interrupt();

private:
    std::unique_ptr<PgConnection> m_conn;
    bool m_notifies = false;
    bool m_viaFunctions = false; // schema v5: idem.watch / idem.unwatch
    std::string m_name; // this watcher's row in idem.watchers
    std::int64_t m_renewedAt = 0; // steady clock, ms
    void renew();
};

} // namespace idem
