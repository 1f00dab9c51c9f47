// A table of idempotency keys another program writes (idem/pg/pgtable.h): its columns found by
// name, its rows read as text along its key, decoded into the records every view shows. Read-only
// but for purge(), which deletes a row whose work is over and nothing else.
#include "idem/pg/pgtable.h"

#include "idem/duration.h"
#include "pg/pgconnection.h"

#include <algorithm>
#include <cctype>

namespace idem {

namespace {

std::string lower(std::string s)
{
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

std::string upper(std::string s)
{
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    return s;
}

// The status words hand-written tables use; anything else is not guessed at.
std::optional<RecordState> stateOfWord(const std::string& word)
{
    const std::string s = upper(word);
    for (const char* w : {"STARTED", "PENDING", "PROCESSING", "IN_PROGRESS", "INPROGRESS", "RUNNING", "LOCKED"})
        if (s == w)
            return RecordState::Started;
    for (const char* w : {"COMPLETED", "COMPLETE", "DONE", "SUCCEEDED", "SUCCESS", "FINISHED"})
        if (s == w)
            return RecordState::Completed;
    for (const char* w : {"FAILED", "FAILURE", "ERROR", "ERRORED"})
        if (s == w)
            return RecordState::Failed;
    return std::nullopt;
}

const std::optional<std::string>* cell(const PgTableRow& row, const std::string& column)
{
    if (column.empty())
        return nullptr;
    for (const auto& [name, value] : row.cells)
        if (name == column)
            return &value;
    return nullptr;
}

std::string text(const PgTableRow& row, const std::string& column)
{
    const auto* c = cell(row, column);
    return c && *c ? **c : std::string();
}

// The first column of `names` the table has (compared without case).
std::string pick(const std::vector<std::string>& columns, std::initializer_list<const char*> names)
{
    for (const char* n : names)
        for (const auto& c : columns)
            if (lower(c) == n)
                return c;
    return {};
}

bool isTimeType(const std::string& type) { return type.starts_with("timestamp") || type == "date"; }

// A time written as text, in PostgreSQL's own output too ("2026-11-28 06:19:40.188632+00": an
// offset of hours alone, which the ISO 8601 reader wants as "+00:00")
std::optional<std::int64_t> textTimeMs(const std::string& text)
{
    const std::size_t sign = text.size() >= 3 ? text.size() - 3 : std::string::npos;
    const std::size_t colon = text.find(':');
    if (sign != std::string::npos && colon != std::string::npos && sign > colon &&
        (text[sign] == '+' || text[sign] == '-') && std::isdigit(static_cast<unsigned char>(text[sign + 1])) &&
        std::isdigit(static_cast<unsigned char>(text[sign + 2])))
        return parseTimestampMs(text + ":00");
    return parseTimestampMs(text);
}

} // namespace

Record decodeTableRow(const PgTableLayout& l, const PgTableRow& row, std::int64_t nowMs, std::int64_t staleAfterMs)
{
    Record r;
    r.format = RecordFormat::SqlTable;
    r.keyType = "row";
    const std::string key = text(row, l.key);
    r.id = l.scope.empty() ? key : l.scope + "=" + text(row, l.scope) + " " + key;
    r.key = r.id;
    for (const auto& [name, value] : row.cells)
        r.fields.emplace_back(name, value ? *value : std::string("NULL"));
    r.createdMs = row.createdAtMs;
    r.startedMs = row.lockedAtMs ? row.lockedAtMs : row.createdAtMs;
    r.finishedMs = row.finishedAtMs;
    r.response = row.response;
    r.error = text(row, l.error);

    // a lock time that cannot be read is not "nobody holds it": what it says is unknown
    if (const auto* held = cell(row, l.lockedAt); held && *held && !(*held)->empty() && !row.lockedAtMs) {
        r.rawStatus = text(row, l.status);
        r.state = RecordState::Malformed;
        r.reason = l.lockedAt + " '" + **held + "' is not a time idem can read: never taken for unlocked, never purged";
        return r;
    }
    const bool locked = row.lockedAtMs.has_value();
    if (!l.status.empty()) {
        r.rawStatus = text(row, l.status);
        const auto s = stateOfWord(r.rawStatus);
        if (!s) {
            r.state = RecordState::Malformed;
            r.reason = "status '" + r.rawStatus + "' is not a word idem knows for this table (STARTED, PROCESSING, "
                       "COMPLETED, FAILED, ...): never guessed, never bulk-purged";
            return r;
        }
        r.state = *s;
    } else if (!l.recoveryPoint.empty()) { // Brandur's atomic phases: 'finished' when done
        r.rawStatus = text(row, l.recoveryPoint);
        r.state = lower(r.rawStatus) == "finished" ? RecordState::Completed : RecordState::Started;
        if (r.state == RecordState::Started)
            r.reason = "recovery point '" + r.rawStatus + "': a retry resumes from there";
    } else if (row.response) {
        r.state = RecordState::Completed;
    } else if (locked) {
        r.state = RecordState::Started;
    } else {
        r.state = RecordState::Unknown;
        r.reason = "no status, no response and no lock: nothing says what this row means";
        return r;
    }
    if (r.state == RecordState::Started) {
        if (!l.lockedAt.empty() && !locked) {
            r.stale = true;
            r.staleWhy = "nobody holds it (" + l.lockedAt + " is NULL): the next request takes it over";
        } else if (locked && nowMs - *row.lockedAtMs > staleAfterMs) {
            r.stale = true;
            r.staleWhy = "locked for " + formatDuration(Millis((nowMs - *row.lockedAtMs) / 1000 * 1000)) +
                         ", over the stale-after window of " + formatDuration(Millis(staleAfterMs));
            if (l.lockedAtZoneless)
                r.staleWhy += " (at least: " + l.lockedAt + " has no time zone, so it is read as the latest instant "
                              "it can be, written at UTC-12:00)";
        } else if (locked) {
            r.changesAtMs = *row.lockedAtMs + staleAfterMs;
        }
        if (l.lockedAt.empty())
            r.blocked = true; // no lock column: in progress until the program that wrote it says otherwise
    }
    if (!l.responseCode.empty() && cell(row, l.responseCode) && *cell(row, l.responseCode))
        r.reason = (r.reason.empty() ? "" : r.reason + "; ") + "response code " + text(row, l.responseCode);
    return r;
}

struct PgTable::Impl {
    PgConnection conn;
    PgTableLayout layout;
    std::string from; // the table as PostgreSQL names it (quoted as needed)
    std::string select; // the columns every read fetches
    std::int64_t staleAfterMs;
    std::vector<std::string> types;

    Impl(const std::string& conninfo, std::int64_t stale, int connectTimeoutSeconds)
        : conn(conninfo, connectTimeoutSeconds), staleAfterMs(stale)
    {
    }

    PgResultPtr run(const std::string& sql, const std::vector<std::string>& params, const char* doing)
    {
        std::vector<const char*> values;
        for (const auto& p : params)
            values.push_back(p.c_str());
        PgResultPtr r(PQexecParams(conn.get(), sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(),
                                   nullptr, nullptr, 1),
                      &PQclear);
        if (!r || PQresultStatus(r.get()) != PGRES_TUPLES_OK)
            throwPgError(conn.get(), r.get(), doing);
        return r;
    }

    std::string quoted(const std::string& name) const
    {
        char* q = PQescapeIdentifier(conn.get(), name.c_str(), name.size());
        if (!q)
            throw IoError("PostgreSQL: out of memory");
        std::string out(q);
        PQfreemem(q);
        return out;
    }

    std::string msOf(const std::string& column, std::size_t index) const
    {
        if (column.empty() || !isTimeType(types[index]))
            return "NULL::int8";
        // without a time zone it is the writer's local time, in a zone idem cannot know (UTC-12:00
        // to UTC+14:00): read as the latest instant it can be, as if written at UTC-12:00, so a lock
        // taken a moment ago in any zone never reads as old (as idem reads a text time without zone)
        const std::string later = types[index] == "timestamp without time zone" ? " + 43200000" : "";
        return "((extract(epoch FROM " + quoted(column) + ") * 1000)::int8" + later + ")";
    }

    // " WHERE key = $1 [AND scope = $2]" for a Record::id, with its parameters
    std::string whereId(const std::string& id, std::vector<std::string>& params) const
    {
        std::string where = " WHERE " + quoted(layout.key) + "::text = $1";
        if (layout.scope.empty()) {
            params = {id};
            return where;
        }
        const std::string prefix = layout.scope + "=";
        const auto space = id.find(' ', prefix.size());
        if (!id.starts_with(prefix) || space == std::string::npos)
            throw UsageError("'" + id + "' names no row of " + layout.table + ": its keys are unique per " +
                             layout.scope + ", so a row is named '" + layout.scope + "=VALUE KEY'");
        params = {id.substr(space + 1), id.substr(prefix.size(), space - prefix.size())};
        return where + " AND coalesce(" + quoted(layout.scope) + "::text, '') = $2";
    }

    std::size_t indexOf(const std::string& column) const
    {
        return static_cast<std::size_t>(
            std::find(layout.columns.begin(), layout.columns.end(), column) - layout.columns.begin());
    }

    // now, response, locked_at, created_at, finished ms, then every column as text
    std::vector<Record> records(const PGresult* res, std::int64_t* nowMs)
    {
        std::vector<Record> out;
        const int n = PQntuples(res);
        std::int64_t now = 0;
        for (int i = 0; i < n; ++i) {
            now = pgcell::int8(res, i, 0);
            PgTableRow row;
            if (!pgcell::isNull(res, i, 1))
                row.response = pgcell::text(res, i, 1);
            auto ms = [&](int col) {
                return pgcell::isNull(res, i, col) ? std::nullopt : std::optional(pgcell::int8(res, i, col));
            };
            row.lockedAtMs = ms(2);
            row.createdAtMs = ms(3);
            row.finishedAtMs = ms(4);
            for (std::size_t c = 0; c < layout.columns.size(); ++c) {
                const int col = 5 + static_cast<int>(c);
                row.cells.emplace_back(layout.columns[c], pgcell::isNull(res, i, col)
                                                              ? std::nullopt
                                                              : std::optional(pgcell::text(res, i, col)));
            }
            // times written as text or numbers: what parseTimestampMs makes of them
            auto fromText = [&](std::optional<std::int64_t>& ms, const std::string& column) {
                if (!ms && !column.empty())
                    if (const auto* v = cell(row, column); v && *v)
                        ms = textTimeMs(**v);
            };
            fromText(row.lockedAtMs, layout.lockedAt);
            fromText(row.createdAtMs, layout.createdAt);
            fromText(row.finishedAtMs, layout.finishedAt);
            out.push_back(decodeTableRow(layout, row, now, staleAfterMs));
        }
        if (nowMs)
            *nowMs = now;
        return out;
    }
};

PgTable::PgTable(const std::string& conninfo, const std::string& table, std::int64_t staleAfterMs,
                 int connectTimeoutSeconds)
    : m_impl(std::make_unique<Impl>(conninfo, staleAfterMs, connectTimeoutSeconds))
{
    Impl& m = *m_impl;
    m.layout.table = table;
    PgResultPtr cols(nullptr, &PQclear);
    try {
        cols = m.run("SELECT $1::regclass::text, a.attname::text, format_type(a.atttypid, a.atttypmod), "
                     "EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = a.attrelid AND i.indisprimary "
                     "AND i.indnatts = 1 AND i.indkey[0] = a.attnum) "
                     "FROM pg_attribute a WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped "
                     "ORDER BY a.attnum",
                     {table}, "reading the table's columns");
    } catch (const PermissionError&) {
        throw; // (a schema the role may not use: said as such, not as "no table")
    } catch (const ConfigError&) {
        throw ConfigError("PostgreSQL: no table '" + table + "' in this database (--table [schema.]name)", "table");
    } catch (const PgError& e) {
        throw ConfigError("PostgreSQL: cannot read table '" + table + "': " + e.what(), "table");
    }
    std::string primary;
    for (int i = 0; i < PQntuples(cols.get()); ++i) {
        m.from = pgcell::text(cols.get(), i, 0);
        m.layout.columns.push_back(pgcell::text(cols.get(), i, 1));
        m.types.push_back(pgcell::text(cols.get(), i, 2));
        if (pgcell::boolean(cols.get(), i, 3))
            primary = m.layout.columns.back();
    }
    PgTableLayout& l = m.layout;
    const auto& c = l.columns;
    l.key = pick(c, {"key", "idempotency_key", "idem_key", "request_key"});
    if (l.key.empty() && !primary.empty() && m.types[m.indexOf(primary)].starts_with("text"))
        l.key = primary;
    if (l.key.empty())
        throw ConfigError("PostgreSQL: table '" + table + "' has no key column (key, idempotency_key, or a one-column "
                          "text primary key)", "table");
    l.rowKey = primary.empty() ? l.key : primary;
    if (l.rowKey != l.key)
        l.scope = pick(c, {"user_id", "client_id", "tenant_id", "account_id"});
    l.status = pick(c, {"status", "state"});
    l.recoveryPoint = pick(c, {"recovery_point"});
    l.response = pick(c, {"response", "response_body", "result"});
    l.responseCode = pick(c, {"response_code", "status_code"});
    l.lockedAt = pick(c, {"locked_at"});
    l.lockedAtZoneless = !l.lockedAt.empty() && m.types[m.indexOf(l.lockedAt)] == "timestamp without time zone";
    l.createdAt = pick(c, {"created_at"});
    l.finishedAt = pick(c, {"completed_at", "finished_at", "updated_at", "last_run_at"});
    l.error = pick(c, {"error", "error_message"});
    if (l.status.empty() && l.recoveryPoint.empty() && l.response.empty() && l.lockedAt.empty())
        throw ConfigError("PostgreSQL: table '" + table + "' has none of status, state, recovery_point, response or "
                          "locked_at: it does not look like a table of idempotency keys", "table");

    const std::string response = l.response.empty() ? std::string("NULL::bytea")
                                 : m.types[m.indexOf(l.response)] == "bytea" ? m.quoted(l.response)
                                                                             : m.quoted(l.response) + "::text";
    m.select = "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::int8, " + response + ", " +
               m.msOf(l.lockedAt, m.indexOf(l.lockedAt)) + ", " + m.msOf(l.createdAt, m.indexOf(l.createdAt)) + ", " +
               m.msOf(l.finishedAt, m.indexOf(l.finishedAt));
    for (const auto& col : c)
        m.select += ", " + (col == l.response ? std::string("NULL::text") : m.quoted(col) + "::text");
    m.select += " FROM " + m.from;
}

PgTable::~PgTable() = default;

const PgTableLayout& PgTable::layout() const { return m_impl->layout; }

PgTable::Page PgTable::page(const std::string& afterRowKey, std::size_t limit, bool first)
{
    if (limit < 1 || limit > 100'000)
        throw UsageError("a page has 1 to 100000 rows");
    Impl& m = *m_impl;
    const std::string rowKey = m.quoted(m.layout.rowKey);
    const std::string order = " ORDER BY " + rowKey + " LIMIT " + std::to_string(limit);
    const PgResultPtr res = first ? m.run(m.select + order, {}, "reading a page of the table")
                                  : m.run(m.select + " WHERE " + rowKey + " > $1" + order, {afterRowKey},
                                          "reading a page of the table");
    Page p;
    p.records = m.records(res.get(), &p.serverNowMs);
    const int n = PQntuples(res.get());
    if (n > 0)
        p.lastRowKey = pgcell::text(res.get(), n - 1, 5 + static_cast<int>(m.indexOf(m.layout.rowKey)));
    p.done = static_cast<std::size_t>(n) < limit;
    return p;
}

std::vector<Record> PgTable::inspect(const std::string& key, std::int64_t* serverNowMs)
{
    Impl& m = *m_impl;
    const PgResultPtr res = m.run(m.select + " WHERE " + m.quoted(m.layout.key) + "::text = $1 ORDER BY " +
                                      m.quoted(m.layout.rowKey) + " LIMIT 100",
                                  {key}, "reading a row of the table");
    return m.records(res.get(), serverNowMs);
}

void PgTable::interrupt() { m_impl->conn.interrupt(); }

std::int64_t PgTable::serverNowMs() { return m_impl->conn.serverNowMs(); }

std::string PgTable::describe() const { return m_impl->conn.describe(); }

std::vector<PgOperation> PgTable::operations(int limit)
{
    Impl& m = *m_impl;
    const PgResultPtr there = m.run("SELECT to_regclass('idem.operations') IS NOT NULL", {}, "finding idem.operations");
    return pgcell::boolean(there.get(), 0, 0) ? readPgOperations(m.conn, limit) : std::vector<PgOperation>{};
}

std::vector<Record> PgTable::read(const std::string& id, std::int64_t* serverNowMs)
{
    Impl& m = *m_impl;
    std::vector<std::string> params;
    const std::string where = m.whereId(id, params);
    const PgResultPtr res = m.run(m.select + where + " ORDER BY " + m.quoted(m.layout.rowKey) + " LIMIT 100", params,
                                  "reading a row of the table");
    return m.records(res.get(), serverNowMs);
}

PgTable::Purged PgTable::purge(const std::string& id, const std::string& who, const std::string& reason)
{
    Impl& m = *m_impl;
    std::vector<std::string> params;
    const std::string where = m.whereId(id, params);
    const std::string rowKey = m.quoted(m.layout.rowKey);
    Purged out;
    m.conn.exec("BEGIN");
    try {
        PgResultPtr res(nullptr, &PQclear);
        try {
            res = m.run(m.select + where + " ORDER BY " + rowKey + " LIMIT 100 FOR UPDATE NOWAIT", params,
                        "locking the row to purge");
        } catch (const PgError& e) {
            if (!e.rowHeld())
                throw;
            m.conn.exec("ROLLBACK");
            out.kept = 1;
            out.why = "a transaction holds the row right now: its work is running";
            return out;
        }
        const std::vector<Record> records = m.records(res.get(), nullptr);
        if (records.size() > 1) { // one of them may be another tenant's live work: none goes
            m.conn.exec("ROLLBACK");
            out.sharing = static_cast<int>(records.size());
            out.why = std::to_string(records.size()) + (records.size() == 100 ? " or more" : "") + " rows of " +
                      m.layout.table + " have " + m.layout.key + " '" + params.front() +
                      "' and idem cannot tell them apart (the key is unique only with another column): nothing "
                      "deleted; delete the one you mean with SQL";
            return out;
        }
        const PgResultPtr audit = m.run("SELECT to_regclass('idem.operations') IS NOT NULL", {}, "finding idem.operations");
        out.audited = pgcell::boolean(audit.get(), 0, 0);
        const int rowKeyColumn = 5 + static_cast<int>(m.indexOf(m.layout.rowKey));
        for (std::size_t i = 0; i < records.size(); ++i) {
            const Record& r = records[i];
            const bool over = r.state == RecordState::Completed || r.state == RecordState::Failed ||
                              (r.state == RecordState::Started && r.stale);
            if (!over) {
                ++out.kept;
                if (out.why.empty())
                    out.why = r.state == RecordState::Started
                                  ? "a live lock" + (r.blocked ? std::string(" (no locked_at column says when it ends)")
                                                               : std::string()) + ": its work may be running"
                                  : r.reason;
                continue;
            }
            m.run("DELETE FROM " + m.from + " WHERE " + rowKey + "::text = $1 RETURNING 1",
                  {pgcell::text(res.get(), static_cast<int>(i), rowKeyColumn)}, "purging a row");
            const std::string was = (r.stale ? "stale " : "") + std::string(nameOf(r.state));
            if (out.deleted++ == 0)
                out.was = was;
            if (out.audited)
                m.run("INSERT INTO idem.operations (at, op, id, previous_state, by, reason) "
                      "VALUES (clock_timestamp(), 'purge', $1, $2, $3, $4) RETURNING 1",
                      {m.layout.table + ": " + r.id, was, who, reason}, "writing the purge to idem.operations");
        }
        m.conn.exec("COMMIT");
    } catch (...) {
        PgResultPtr(PQexec(m.conn.get(), "ROLLBACK"), &PQclear);
        throw;
    }
    return out;
}

} // namespace idem
