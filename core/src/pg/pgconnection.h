#pragma once

#include "idem/errors.h"
#include "idem/pg/pgoperation.h"

#include <libpq-fe.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace idem {

using PgResultPtr = std::unique_ptr<PGresult, decltype(&PQclear)>;

// PostgreSQL answered with an error that is not about the connection: its SQLSTATE tells what.
class PgError : public ReplyError {
public:
    PgError(const std::string& what, std::string sqlstate) : ReplyError(what), m_sqlstate(std::move(sqlstate)) {}
    const std::string& sqlstate() const { return m_sqlstate; }
    // 55P03, lock_not_available: a row lock not granted within lock_timeout (or NOWAIT): another
    // transaction holds the row, its work is under way
    bool rowHeld() const { return m_sqlstate == "55P03"; }

private:
    std::string m_sqlstate;
};

// A parameter of a prepared statement: NULL, text, or binary (bytea).
struct PgParam {
    std::optional<std::string> value;
    bool binary = false;
    static PgParam text(std::string v) { return {std::move(v), false}; }
    static PgParam bytes(std::string_view v) { return {std::string(v), true}; }
    static PgParam null() { return {}; }
};

// Parameters as libpq's PQexecPrepared/PQsendQueryPrepared take them, pointing into the PgParams
// (which must outlive the call). fill() reuses the arrays.
struct PgParamArrays {
    PgParamArrays() = default;
    explicit PgParamArrays(const std::vector<PgParam>& params) { fill(params); }
    void fill(const std::vector<PgParam>& params);
    int count() const { return static_cast<int>(values.size()); }
    std::vector<const char*> values;
    std::vector<int> lengths, formats;
};

// One libpq connection with idem's statements prepared on it. Errors are thrown by SQLSTATE: the
// connection lost (class 08, 57P01..57P03, or no SQLSTATE and the connection bad) as ClosedError,
// schema idem missing as ConfigError, anything else as PgError.
class PgConnection {
public:
    PgConnection(const std::string& conninfo, int connectTimeoutSeconds);
    PGconn* get() const { return m_conn.get(); }
    bool healthy() const;   // connected, and no transaction open
    std::string describe() const; // "postgresql://host:port/db", never the password
    std::int64_t serverNowMs();   // the server's clock (clock_timestamp()), one round trip
    void prepare(const char* name, const char* sql, const std::vector<Oid>& types);

    // A prepared statement, results in binary format (every column text, bytea, int8 or bool).
    PgResultPtr execPrepared(const char* name, const std::vector<PgParam>& params);
    // A statement not worth preparing on every connection (an operator's), parameters as text or
    // bytea with their types left to the server, results in binary format as execPrepared's.
    PgResultPtr execParams(const std::string& sql, const std::vector<PgParam>& params);
    // A command without parameters (BEGIN, COMMIT, SET LOCAL ...), results in text.
    PgResultPtr exec(const std::string& sql);
    // From another thread, while this one may wait in a call: shuts the socket down, so that
    // call ends at once with ClosedError (libpq has no client-side timeout of its own to wait
    // out, and a hung server would keep it forever). The connection is unusable afterwards.
    void interrupt();

private:
    std::unique_ptr<PGconn, decltype(&PQfinish)> m_conn;
};

// A conninfo libpq cannot read (a malformed URI, an unknown parameter, a port that is no number)
// throws UsageError in one line, before anything connects. PgConnection checks its own.
void checkPgConninfo(const std::string& conninfo);

// The newest rows of idem.operations, newest first (the console's Store audit view)
std::vector<PgOperation> readPgOperations(PgConnection& conn, int limit);

[[noreturn]] void throwPgError(PGconn* c, const PGresult* r, std::string_view doing);

// Readers of a binary result's cells.
namespace pgcell {
bool isNull(const PGresult* r, int row, int col);
std::string text(const PGresult* r, int row, int col); // text or bytea: the bytes ("" when NULL)
std::int64_t int8(const PGresult* r, int row, int col); // 0 when NULL
bool boolean(const PGresult* r, int row, int col);
} // namespace pgcell

// "<n> milliseconds", what an interval parameter takes
std::string pgInterval(std::chrono::milliseconds d);

} // namespace idem
