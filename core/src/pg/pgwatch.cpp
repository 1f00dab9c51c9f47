#include "idem/pg/pgwatch.h"

#include "idem/format/jsonscan.h"
#include "pg/pgconnection.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>

#include <unistd.h>
#include <string_view>

namespace idem {

PgWatch::PgWatch(const std::string& conninfo, int connectTimeoutSeconds)
    : m_conn(std::make_unique<PgConnection>(conninfo, connectTimeoutSeconds))
{
    m_conn->exec("LISTEN idem_records");
    // the notifying triggers are schema v4's; an older schema is watched by paging alone
    const PgResultPtr r = m_conn->exec(
        "SELECT count(*) FROM pg_trigger WHERE tgname = 'records_notify_update' AND tgrelid = "
        "coalesce(to_regclass('idem.records'), 0)");
    m_notifies = std::string_view(PQgetvalue(r.get(), 0, 0)) != "0";
    if (!m_notifies)
        return;
    std::random_device random;
    char name[64];
    std::snprintf(name, sizeof name, "watch-%ld-%08x%08x", static_cast<long>(::getpid()), random(), random());
    m_name = name;
    // v5: through idem.watch and idem.unwatch (a read-only role may run them); v4 writes the table
    const PgResultPtr v5 = m_conn->exec("SELECT to_regprocedure('idem.watch(text)') IS NOT NULL");
    m_viaFunctions = std::string_view(PQgetvalue(v5.get(), 0, 0)) == "t";
    if (!m_viaFunctions)
        m_conn->exec("DELETE FROM idem.watchers WHERE seen_at < now() - interval '1 hour'"); // ones that died
    renew();
}

void PgWatch::interrupt() { m_conn->interrupt(); }

PgWatch::~PgWatch()
{
    if (m_name.empty() || !m_conn->healthy())
        return;
    try {
        m_conn->exec(m_viaFunctions ? "SELECT idem.unwatch('" + m_name + "')"
                                    : "DELETE FROM idem.watchers WHERE name = '" + m_name + "'");
    } catch (const Error&) {
        // its row ages out in 30 s
    }
}

void PgWatch::renew()
{
    // (the name is this process's own: digits, letters and '-', nothing to quote)
    m_conn->exec(m_viaFunctions ? "SELECT idem.watch('" + m_name + "')"
                                : "INSERT INTO idem.watchers (name, seen_at) VALUES ('" + m_name +
                                      "', now()) ON CONFLICT (name) DO UPDATE SET seen_at = now()");
    m_renewedAt = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now().time_since_epoch()).count();
}

void PgWatch::renewIfDue()
{
    const std::int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                                 std::chrono::steady_clock::now().time_since_epoch()).count();
    if (!m_name.empty() && now - m_renewedAt >= 10'000)
        renew();
}

int PgWatch::socket() const { return PQsocket(m_conn->get()); }

PgWatch::Changes PgWatch::take()
{
    PGconn* c = m_conn->get();
    if (!PQconsumeInput(c) || PQstatus(c) != CONNECTION_OK)
        throw IoError("PostgreSQL: the listening connection was lost: " + std::string(PQerrorMessage(c)));
    Changes out;
    while (PGnotify* n = PQnotifies(c)) {
        const std::string_view payload(n->extra ? n->extra : "");
        if (auto ids = json::stringArray(payload)) {
            for (auto& id : *ids)
                out.ids.push_back(std::move(id));
        } else {
            out.everything = true; // "" (too many to name), or a sender other than the triggers
        }
        PQfreemem(n);
    }
    return out;
}

std::vector<PgWatch::Operation> PgWatch::operations(int limit) { return readPgOperations(*m_conn, limit); }

std::int64_t PgWatch::serverNowMs() { return m_conn->serverNowMs(); }

std::int64_t PgWatch::estimatedRows()
{
    const PgResultPtr r = m_conn->exec(
        "SELECT coalesce((SELECT greatest(reltuples, 0)::int8 FROM pg_class WHERE oid = to_regclass('idem.records')), 0)");
    return std::stoll(PQgetvalue(r.get(), 0, 0));
}

std::string PgWatch::describe() const { return m_conn->describe(); }

} // namespace idem
