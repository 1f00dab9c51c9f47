// What PgStore sends (its prepared statements and their parameters) and how it reads the answers,
// shared by the blocking calls, the transactional mode and the pipelined calls.
#include "pg/pgcalls.h"

#include "idem/errors.h"
#include "idem/pg/schema.h"

#include <algorithm>

namespace idem::pgcalls {

namespace {

// type OIDs (pg_type.h is a server header): fixed since PostgreSQL 7
constexpr Oid kText = 25, kBytea = 17, kInterval = 1186, kUuid = 2950, kBool = 16, kTextArray = 1009,
              kByteaArray = 1001;

#define IDEM_MS(x) "(extract(epoch from " x ") * 1000)::bigint"
// a row as recordFrom() reads it
#define IDEM_ROW                                                                                                  \
    "state, token::text, fence, attempt::bigint, " IDEM_MS("lease_until") ", " IDEM_MS("expires_at")              \
    ", fingerprint, response, error, policy, " IDEM_MS("created_at") ", " IDEM_MS("started_at") ", "            \
    IDEM_MS("finished_at") ", op, op_by, " IDEM_MS("op_at") ", op_reason, " IDEM_MS("clock_timestamp()")        \
    ", id, phase"

struct Statement {
    const char* name;
    const char* sql;
    std::vector<Oid> types;
};

const std::vector<Statement>& statements()
{
    static const std::vector<Statement> s = {
        {"idem_acquire",
         "SELECT outcome, token::text, fence, attempt::bigint, response, error, " IDEM_MS("time_left") ", "
         IDEM_MS("lease_until") ", takeover, stored_fingerprint, " IDEM_MS("server_time")
         ", phase, phase_data FROM idem.acquire(id => $1, lease => $2, fingerprint => $3, proposed_token => $4, stale_keep => $5)",
         {kText, kInterval, kBytea, kUuid, kInterval}},
        {"idem_complete",
         "SELECT outcome, state FROM idem.complete(id => $1, token => $2, response => $3, retention => $4)",
         {kText, kUuid, kBytea, kInterval}},
        // the same two for many calls at once (acquireBatch, completeBatch): each parameter an
        // array of the calls' values, as text where the single statement takes interval or uuid
        {"idem_acquire_many",
         "SELECT outcome, token::text, fence, attempt::bigint, response, error, " IDEM_MS("time_left") ", "
         IDEM_MS("lease_until") ", takeover, stored_fingerprint, " IDEM_MS("server_time")
         ", phase, phase_data FROM unnest($1, $2, $3, $4, $5) WITH ORDINALITY AS u(u_id, u_lease, u_fp, u_token, "
         "u_keep, u_n), LATERAL idem.acquire(id => u_id, lease => u_lease::interval, fingerprint => u_fp, "
         "proposed_token => u_token::uuid, stale_keep => u_keep::interval) ORDER BY u_n",
         {kTextArray, kTextArray, kByteaArray, kTextArray, kTextArray}},
        {"idem_complete_many",
         "SELECT outcome, state FROM unnest($1, $2, $3, $4) WITH ORDINALITY AS u(u_id, u_token, u_response, "
         "u_retention, u_n), LATERAL idem.complete(id => u_id, token => u_token::uuid, response => u_response, "
         "retention => u_retention::interval) ORDER BY u_n",
         {kTextArray, kTextArray, kByteaArray, kTextArray}},
        {"idem_fail",
         "SELECT outcome, state FROM idem.fail(id => $1, token => $2, policy => $3, error => $4, retention => $5)",
         {kText, kUuid, kText, kText, kInterval}},
        {"idem_renew",
         "SELECT outcome, state, " IDEM_MS("lease_until") ", " IDEM_MS("server_time")
         " FROM idem.renew(id => $1, token => $2, lease => $3, stale_keep => $4)",
         {kText, kUuid, kInterval, kInterval}},
        {"idem_force_fail",
         "SELECT outcome, previous_state FROM idem.force_fail(id => $1, reason => $2, terminal => $3, who => $4, "
         "retention => $5)",
         {kText, kText, kBool, kText, kInterval}},
        {"idem_checkpoint", "SELECT outcome, state FROM idem.checkpoint(id => $1, token => $2, phase => $3, data => $4)",
         {kText, kUuid, kText, kBytea}},
        {"idem_sweep", "SELECT idem.sweep(batch => $1::integer)", {kText}},
        {"idem_purge", "SELECT outcome, previous_state FROM idem.purge(id => $1, who => $2, reason => $3)",
         {kText, kText, kText}},
        {"idem_inspect", "SELECT " IDEM_ROW " FROM idem.records WHERE id = $1", {kText}},
        // keyset pagination: one range scan of the primary key per page, however deep
        {"idem_page", "SELECT " IDEM_ROW " FROM idem.records WHERE id > $1 ORDER BY id LIMIT $2::integer",
         {kText, kText}},
        // the rows a notification named (ids as a text[] literal)
        {"idem_read", "SELECT " IDEM_ROW " FROM idem.records WHERE id = ANY($1::text[])", {kText}},
    };
    return s;
}

#undef IDEM_ROW
#undef IDEM_MS

} // namespace

namespace {

// A newer schema's functions may mean something else (states, outcomes this idem does not know):
// it is not written to, as `idemctl pg init` does not downgrade it
void refuseNewerSchema(PgConnection& c)
{
    const PgResultPtr r = c.exec("SELECT coalesce(max(version), 0) FROM idem.migrations");
    const int found = std::stoi(PQgetvalue(r.get(), 0, 0));
    if (found > kPgSchemaVersion)
        throw SchemaTooNewError("schema idem is at version " + std::to_string(found) + ", newer than this idem knows (" +
                                    std::to_string(kPgSchemaVersion) + "): use a newer idem",
                                found);
}

} // namespace

void prepareAll(PgConnection& c)
{
    refuseNewerSchema(c);
    for (const Statement& s : statements())
        c.prepare(s.name, s.sql, s.types);
}

namespace {

std::optional<std::int64_t> optInt8(const PGresult* r, int row, int col)
{
    if (pgcell::isNull(r, row, col))
        return std::nullopt;
    return pgcell::int8(r, row, col);
}

// One row of IDEM_ROW as a Record (state Expired when its expiry has passed)
} // namespace

Record recordFrom(const PGresult* r, int row)
{
    Record rec;
    rec.key = rec.id = pgcell::text(r, row, 18);
    rec.keyType = "row";
    rec.format = RecordFormat::Native;
    rec.rawStatus = pgcell::text(r, row, 0);
    rec.owner = pgcell::text(r, row, 1);
    rec.fence = pgcell::int8(r, row, 2);
    rec.attempt = pgcell::int8(r, row, 3);
    rec.leaseUntilMs = optInt8(r, row, 4);
    const std::int64_t expires = pgcell::int8(r, row, 5);
    if (!pgcell::isNull(r, row, 6))
        rec.fingerprint = pgcell::text(r, row, 6);
    if (!pgcell::isNull(r, row, 7))
        rec.response = pgcell::text(r, row, 7);
    rec.error = pgcell::text(r, row, 8);
    const std::string policy = pgcell::text(r, row, 9);
    rec.createdMs = optInt8(r, row, 10);
    rec.startedMs = optInt8(r, row, 11);
    rec.finishedMs = optInt8(r, row, 12);
    rec.op = pgcell::text(r, row, 13);
    rec.opBy = pgcell::text(r, row, 14);
    rec.opAtMs = optInt8(r, row, 15);
    rec.opReason = pgcell::text(r, row, 16);
    if (!pgcell::isNull(r, row, 19))
        rec.fields.emplace_back("phase", pgcell::text(r, row, 19));
    const std::int64_t now = pgcell::int8(r, row, 17);
    // the time left; none once expired (0: a TTL below 0 is a sentinel, -1 "no TTL", -2 "unknown")
    rec.ttlMs = std::max<std::int64_t>(0, expires - now);
    rec.expiresMs = expires;
    if (expires <= now) {
        rec.state = RecordState::Expired;
        rec.reason = "expired: counts as absent";
    } else if (rec.rawStatus == "STARTED") {
        rec.state = RecordState::Started;
        rec.changesAtMs = rec.leaseUntilMs;
        // strictly before: both are rounded to the millisecond, so one equal to now may still be
        // up to half a millisecond ahead of it, and an acquire then still finds the lease held
        rec.stale = rec.leaseUntilMs && *rec.leaseUntilMs < now;
        if (rec.stale)
            rec.staleWhy = "its lease ran out; the next acquire takes over";
    } else if (rec.rawStatus == "COMPLETED") {
        rec.state = RecordState::Completed;
    } else if (rec.rawStatus == "FAILED") {
        rec.state = RecordState::Failed;
        rec.terminal = policy == "terminal";
    } else { // a newer schema's state: its meaning is not guessed (it may be a live lock)
        rec.state = RecordState::Malformed;
        rec.reason = "unknown state '" + rec.rawStatus + "' (a newer schema's? this idem knows STARTED, "
                     "COMPLETED and FAILED)";
    }
    return rec;
}

OwnerStatus ownerStatus(const std::string& outcome)
{
    return outcome == "ok" ? OwnerStatus::Ok : OwnerStatus::LeaseLost;
}

AdminStatus adminStatus(const std::string& outcome)
{
    if (outcome == "ok")
        return AdminStatus::Ok;
    return outcome == "refused" ? AdminStatus::Refused : AdminStatus::NotFound;
}

std::string_view policyWord(FailPolicy p)
{
    switch (p) {
    case FailPolicy::Release: return "release";
    case FailPolicy::Retryable: return "retryable";
    case FailPolicy::Terminal: return "terminal";
    }
    return "release";
}


// Each call's parameters and the reading of its answer, shared by the blocking calls and the
// pipelined ones.
std::vector<PgParam> acquireParams(std::string_view id, std::string_view fingerprint, Millis lease, Millis staleKeep,
                                   const std::string& token)
{
    return {PgParam::text(std::string(id)), PgParam::text(pgInterval(lease)),
            fingerprint.empty() ? PgParam::null() : PgParam::bytes(fingerprint), PgParam::text(token),
            PgParam::text(pgInterval(staleKeep))};
}

const PgBatch acquireBatch{"idem_acquire_many", {kText, kText, kBytea, kText, kText}};
const PgBatch completeBatch{"idem_complete_many", {kText, kText, kBytea, kText}};

AcquireResult acquireFrom(const PGresult* p, int row, std::string_view id)
{
    if (PQntuples(p) <= row)
        throw ProtoError("idem.acquire answered " + std::to_string(PQntuples(p)) + " rows");
    AcquireResult a;
    const std::string outcome = pgcell::text(p, row, 0);
    a.fence = pgcell::int8(p, row, 2);
    a.attempt = pgcell::int8(p, row, 3);
    a.serverNowMs = pgcell::int8(p, row, 10);
    if (outcome == "acquired") {
        a.status = AcquireStatus::Acquired;
        a.ticket = Ticket{std::string(id), pgcell::text(p, row, 1), a.fence, a.attempt, pgcell::int8(p, row, 7)};
        a.takeover = pgcell::boolean(p, row, 8);
        a.phase = pgcell::text(p, row, 11);
        a.phaseData = pgcell::text(p, row, 12);
    } else if (outcome == "duplicate") {
        a.status = AcquireStatus::Duplicate;
        a.response = pgcell::text(p, row, 4);
    } else if (outcome == "in_progress") {
        a.status = AcquireStatus::InProgress;
        a.remainingMs = pgcell::int8(p, row, 6);
    } else if (outcome == "failed") {
        a.status = AcquireStatus::FailedTerminal;
        a.error = pgcell::text(p, row, 5);
    } else if (outcome == "mismatch") {
        a.status = AcquireStatus::Mismatch;
        a.storedFingerprint = pgcell::text(p, row, 9);
    } else {
        throw ProtoError("idem.acquire answered an unknown outcome: " + outcome);
    }
    return a;
}

std::vector<PgParam> completeParams(const Ticket& t, std::string_view response, Millis retention)
{
    return {PgParam::text(t.id), PgParam::text(t.token), PgParam::bytes(response), PgParam::text(pgInterval(retention))};
}

std::vector<PgParam> failParams(const Ticket& t, FailPolicy policy, std::string_view error, Millis retention)
{
    return {PgParam::text(t.id), PgParam::text(t.token), PgParam::text(std::string(policyWord(policy))),
            error.empty() ? PgParam::null() : PgParam::text(std::string(error)), PgParam::text(pgInterval(retention))};
}

// complete's and fail's answer: (outcome, state)
OwnerResult ownerFrom(const PGresult* r, int row)
{
    if (PQntuples(r) <= row)
        throw ProtoError("PostgreSQL answered " + std::to_string(PQntuples(r)) + " rows to an owner's call");
    OwnerResult o;
    o.status = ownerStatus(pgcell::text(r, row, 0));
    if (o.status != OwnerStatus::Ok)
        o.currentState = pgcell::text(r, row, 1);
    return o;
}

AcquireResult rowHeldAcquire()
{
    AcquireResult busy;
    busy.status = AcquireStatus::InProgress;
    return busy;
}

AcquireResult acquireOn(PgConnection& c, std::string_view id, std::string_view fingerprint, Millis lease,
                        Millis staleKeep, const std::string& token)
{
    try {
        return acquireFrom(c.execPrepared("idem_acquire", acquireParams(id, fingerprint, lease, staleKeep, token)).get(),
                           0, id);
    } catch (const PgError& e) {
        if (!e.rowHeld())
            throw;
        return rowHeldAcquire();
    }
}

OwnerResult completeOn(PgConnection& c, const Ticket& t, std::string_view response, Millis retention)
{
    return ownerFrom(c.execPrepared("idem_complete", completeParams(t, response, retention)).get(), 0);
}

OwnerResult failOn(PgConnection& c, const Ticket& t, FailPolicy policy, std::string_view error, Millis retention)
{
    return ownerFrom(c.execPrepared("idem_fail", failParams(t, policy, error, retention)).get(), 0);
}

} // namespace idem::pgcalls
