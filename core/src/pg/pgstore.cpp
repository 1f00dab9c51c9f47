#include "idem/pg/pgstore.h"

#include "idem/duration.h"
#include "idem/engine/fingerprint.h"
#include "idem/errors.h"
#include "pg/pgcalls.h"
#include "pg/pgconnection.h"
#include "pg/pgpipeline.h"

namespace idem {

using namespace pgcalls;

class PgStore::Borrowed {
public:
    Borrowed(PgStore& store, std::unique_ptr<PgConnection> c) : m_store(store), m_conn(std::move(c))
    {
        std::lock_guard lock(m_store.m_mutex);
        m_store.m_busy.push_back(m_conn.get());
    }
    Borrowed(Borrowed&&) = default;
    ~Borrowed()
    {
        if (!m_conn)
            return; // moved from
        {
            std::lock_guard lock(m_store.m_mutex);
            std::erase(m_store.m_busy, m_conn.get());
        }
        if (m_conn->healthy())
            m_store.giveBack(std::move(m_conn));
    }
    PgConnection* operator->() { return m_conn.get(); }
    PgConnection& operator*() { return *m_conn; }

private:
    PgStore& m_store;
    std::unique_ptr<PgConnection> m_conn;
};

PgStore::PgStore(std::string conninfo, PgStoreOptions options)
    : m_conninfo(std::move(conninfo)), m_options(options)
{
}

PgStore::~PgStore() = default;

PgStore::Borrowed PgStore::connection(bool* reused)
{
    std::unique_ptr<PgConnection> idle;
    {
        std::lock_guard lock(m_mutex);
        if (reused)
            *reused = !m_idle.empty();
        if (!m_idle.empty()) {
            idle = std::move(m_idle.back());
            m_idle.pop_back();
        }
    }
    if (idle)
        return Borrowed(*this, std::move(idle)); // (which takes the lock itself)
    auto c = std::make_unique<PgConnection>(m_conninfo, m_options.connectTimeoutSeconds);
    prepareAll(*c);
    return Borrowed(*this, std::move(c));
}

void PgStore::giveBack(std::unique_ptr<PgConnection> c)
{
    std::lock_guard lock(m_mutex);
    if (m_idle.size() < m_options.maxIdleConnections)
        m_idle.push_back(std::move(c));
}

void PgStore::interrupt()
{
    std::lock_guard lock(m_mutex);
    for (PgConnection* c : m_busy)
        c->interrupt();
    for (const auto& p : m_pipelines)
        p->interrupt();
}

void PgStore::checkResponse(std::string_view response) const
{
    if (response.size() > m_options.maxResponseBytes)
        throw UsageError("a response of " + std::to_string(response.size()) + " bytes is over the cap of " +
                         std::to_string(m_options.maxResponseBytes));
}

void PgStore::checkId(std::string_view id) const
{
    if (id.empty() || id.size() > m_options.maxIdBytes)
        throw UsageError("an id has 1 to " + std::to_string(m_options.maxIdBytes) + " bytes");
    if (id.find('\0') != std::string_view::npos)
        throw UsageError("an id in PostgreSQL is text: it may not contain a NUL byte");
}

void PgStore::dropIdle()
{
    std::vector<std::unique_ptr<PgConnection>> idle;
    std::lock_guard lock(m_mutex);
    idle.swap(m_idle);
}

template <typename F> auto PgStore::call(F&& f)
{
    bool reused = false;
    try {
        Borrowed c = connection(&reused);
        return f(*c);
    } catch (const ClosedError&) {
        if (!reused)
            throw;
    }
    dropIdle();
    Borrowed c = connection();
    return f(*c);
}

AcquireResult PgStore::acquire(std::string_view id, std::string_view fingerprint, std::optional<Millis> lease)
{
    checkId(id);
    const std::string token = newToken(); // a retry on a new connection is the same owner asking again
    return call([&](PgConnection& c) {
        return acquireOn(c, id, fingerprint, lease.value_or(m_options.lease), m_options.staleKeep, token);
    });
}

OwnerResult PgStore::complete(const Ticket& t, std::string_view response, std::optional<Millis> retention)
{
    checkId(t.id);
    checkResponse(response);
    return call([&](PgConnection& c) { return completeOn(c, t, response, retention.value_or(m_options.retention)); });
}

OwnerResult PgStore::fail(const Ticket& t, FailPolicy policy, std::string_view error)
{
    checkId(t.id);
    return call([&](PgConnection& c) { return failOn(c, t, policy, error, m_options.failureRetention); });
}

OwnerResult PgStore::renew(const Ticket& t, std::optional<Millis> lease)
{
    checkId(t.id);
    const PgResultPtr r = call([&](PgConnection& c) {
        return c.execPrepared("idem_renew", {PgParam::text(t.id), PgParam::text(t.token),
                                       PgParam::text(pgInterval(lease.value_or(m_options.lease))),
                                       PgParam::text(pgInterval(m_options.staleKeep))});
    });
    OwnerResult o;
    o.status = ownerStatus(pgcell::text(r.get(), 0, 0));
    o.currentState = o.status == OwnerStatus::Ok ? std::string() : pgcell::text(r.get(), 0, 1);
    o.leaseUntilMs = pgcell::int8(r.get(), 0, 2);
    o.serverNowMs = pgcell::int8(r.get(), 0, 3);
    return o;
}

OwnerResult PgStore::checkpoint(const Ticket& t, std::string_view phase, std::string_view data)
{
    checkId(t.id);
    if (phase.empty() || phase.find('\0') != std::string_view::npos)
        throw UsageError("a recovery point's phase is non-empty text without NUL bytes");
    if (data.size() > m_options.maxResponseBytes)
        throw UsageError("a recovery point's data of " + std::to_string(data.size()) + " bytes is over the cap of " +
                         std::to_string(m_options.maxResponseBytes));
    const PgResultPtr r = call([&](PgConnection& c) {
        return c.execPrepared("idem_checkpoint", {PgParam::text(t.id), PgParam::text(t.token),
                                                  PgParam::text(std::string(phase)), PgParam::bytes(data)});
    });
    OwnerResult o;
    o.status = ownerStatus(pgcell::text(r.get(), 0, 0));
    if (o.status != OwnerStatus::Ok)
        o.currentState = pgcell::text(r.get(), 0, 1);
    return o;
}

LeaseSettings PgStore::leaseSettings() const
{
    return {m_options.lease, m_options.maxResponseBytes, 0, false};
}

PgStore::Swept PgStore::sweep(std::int64_t batch, std::int64_t maxBatches)
{
    if (batch < 1 || batch > 1'000'000)
        throw UsageError("a sweep's batch is 1 to 1000000 rows");
    Swept s;
    while (maxBatches <= 0 || s.batches < maxBatches) {
        const PgResultPtr r = call(
            [&](PgConnection& c) { return c.execPrepared("idem_sweep", {PgParam::text(std::to_string(batch))}); });
        const std::int64_t n = pgcell::int8(r.get(), 0, 0);
        ++s.batches;
        s.rows += n;
        if (n < batch)
            return s;
    }
    s.more = true;
    return s;
}

namespace {

// An operator's call on one row, in a transaction of its own whose lock_timeout bounds the wait
// for a row another transaction holds (a transactional execute() whose work is under way, which
// may take minutes): Busy, nothing done, rather than a command or the console waiting that long.
template <typename F> AdminResult withinLockTimeout(PgConnection& c, Millis timeout, F&& f)
{
    c.exec("BEGIN");
    if (timeout.count() > 0)
        c.exec("SELECT set_config('lock_timeout', '" + std::to_string(timeout.count()) + "', true)");
    AdminResult a;
    try {
        a = f();
    } catch (const PgError& e) {
        if (!e.rowHeld())
            throw; // the connection, left in its transaction, is not reused (healthy() is false)
        c.exec("ROLLBACK");
        a = AdminResult{};
        a.status = AdminStatus::Busy;
        a.reason = "a running transaction holds the row (its lock was not granted within " +
                   formatDuration(timeout) + "); nothing done";
        return a;
    }
    const PgResultPtr done = c.exec("COMMIT");
    if (std::string_view(PQcmdStatus(done.get())) != "COMMIT")
        throw ClosedError("PostgreSQL rolled the operator's action back at COMMIT");
    return a;
}

AdminResult adminFrom(const PGresult* r)
{
    AdminResult a;
    a.status = adminStatus(pgcell::text(r, 0, 0));
    a.previousState = pgcell::text(r, 0, 1);
    return a;
}

} // namespace

AdminResult PgStore::forceFail(std::string_view id, std::string_view reason, bool terminal, std::string_view who)
{
    checkId(id);
    return call([&](PgConnection& c) {
        return withinLockTimeout(c, m_options.operatorLockTimeout, [&] {
            const PgResultPtr r = c.execPrepared(
                "idem_force_fail", {PgParam::text(std::string(id)),
                                    reason.empty() ? PgParam::null() : PgParam::text(std::string(reason)),
                                    PgParam::text(terminal ? "true" : "false"), PgParam::text(std::string(who)),
                                    PgParam::text(pgInterval(m_options.failureRetention))});
            AdminResult a = adminFrom(r.get());
            if (a.status == AdminStatus::Refused)
                a.reason = "a COMPLETED record keeps its result (purge it to run the id again)";
            return a;
        });
    });
}

AdminResult PgStore::purge(std::string_view id, std::string_view who, std::string_view reason, const Record* seen)
{
    checkId(id);
    const PgParam why = reason.empty() ? PgParam::null() : PgParam::text(std::string(reason));
    return call([&](PgConnection& c) {
        return withinLockTimeout(c, m_options.operatorLockTimeout, [&] {
            if (!seen)
                return adminFrom(
                    c.execPrepared("idem_purge", {PgParam::text(std::string(id)), PgParam::text(std::string(who)), why})
                        .get());
            // locked, compared and deleted in one statement (schema v5; an older one says pg init):
            // an expired row read as expired goes (answered not_found), one taken over since stays
            const PgResultPtr r = c.execParams(
                "SELECT outcome, previous_state, current_attempt::bigint FROM idem.purge_seen(id => $1, "
                "seen_state => $2, seen_token => $3, seen_fence => $4::bigint, seen_attempt => $5::integer, "
                "seen_lease_until_ms => $6::bigint, who => $7, reason => $8)",
                {PgParam::text(std::string(id)), PgParam::text(seen->rawStatus), PgParam::text(seen->owner),
                 PgParam::text(std::to_string(seen->fence)), PgParam::text(std::to_string(seen->attempt)),
                 seen->leaseUntilMs ? PgParam::text(std::to_string(*seen->leaseUntilMs)) : PgParam::null(),
                 PgParam::text(std::string(who)), why});
            if (pgcell::text(r.get(), 0, 0) != "changed")
                return adminFrom(r.get());
            AdminResult a;
            a.status = AdminStatus::Refused;
            a.reason = "it changed since it was read (now " + pgcell::text(r.get(), 0, 1) + ", attempt " +
                       std::to_string(pgcell::int8(r.get(), 0, 2)) + ")";
            return a;
        });
    });
}

std::optional<Record> PgStore::inspect(std::string_view id, std::int64_t* serverNowMs)
{
    checkId(id);
    const PgResultPtr res =
        call([&](PgConnection& c) { return c.execPrepared("idem_inspect", {PgParam::text(std::string(id))}); });
    if (PQntuples(res.get()) == 0)
        return std::nullopt;
    if (serverNowMs)
        *serverNowMs = pgcell::int8(res.get(), 0, 17);
    return recordFrom(res.get(), 0);
}

PgStore::Page PgStore::page(std::string_view afterId, std::size_t limit)
{
    if (limit < 1 || limit > 100'000)
        throw UsageError("a page has 1 to 100000 rows");
    const PgResultPtr res = call([&](PgConnection& c) {
        return c.execPrepared("idem_page", {PgParam::text(std::string(afterId)), PgParam::text(std::to_string(limit))});
    });
    Page p;
    const int n = PQntuples(res.get());
    p.records.reserve(static_cast<std::size_t>(n));
    for (int row = 0; row < n; ++row)
        p.records.push_back(recordFrom(res.get(), row));
    if (n > 0) {
        p.serverNowMs = pgcell::int8(res.get(), 0, 17);
        p.lastId = p.records.back().id;
    }
    p.done = static_cast<std::size_t>(n) < limit;
    return p;
}

std::vector<Record> PgStore::read(const std::vector<std::string>& ids, std::int64_t* serverNowMs)
{
    std::vector<Record> out;
    if (ids.empty())
        return out;
    std::string array = "{";
    for (const std::string& id : ids) {
        if (array.size() > 1)
            array += ',';
        array += '"';
        for (const char ch : id) {
            if (ch == '"' || ch == '\\')
                array += '\\';
            array += ch;
        }
        array += '"';
    }
    array += '}';
    const PgResultPtr res = call([&](PgConnection& c) { return c.execPrepared("idem_read", {PgParam::text(array)}); });
    const int n = PQntuples(res.get());
    out.reserve(static_cast<std::size_t>(n));
    for (int row = 0; row < n; ++row)
        out.push_back(recordFrom(res.get(), row));
    if (serverNowMs && n > 0)
        *serverNowMs = pgcell::int8(res.get(), 0, 17);
    return out;
}

namespace {

// 40001 serialization_failure, 40P01 deadlock_detected: under repeatable read or serializable, a
// duplicate that waited for the row's first transaction cannot read what it committed in its own
// snapshot. Nothing ran yet: a new transaction (a new snapshot) sees the row and replays it.
bool conflicted(const PgError& e) { return e.sqlstate() == "40001" || e.sqlstate() == "40P01"; }
constexpr int kAcquireTries = 5;

// The caller's lock timeout covers idem.acquire only: the work's own statements wait as the
// session says, not cancelled by a bound meant for the duplicate's wait on the row
AcquireResult acquireWithin(PgConnection& c, std::string_view id, std::string_view fp, Millis lease,
                            Millis staleKeep, const std::string& token, std::optional<Millis> lockTimeout)
{
    if (!lockTimeout)
        return acquireOn(c, id, fp, lease, staleKeep, token);
    // the session's value read before the bound is set (evaluated in this order)
    const PgResultPtr before = c.exec("SELECT current_setting('lock_timeout'), set_config('lock_timeout', '" +
                                      std::to_string(std::max<long long>(1, lockTimeout->count())) + "', true)");
    const std::string session = PQgetvalue(before.get(), 0, 0);
    AcquireResult a = acquireOn(c, id, fp, lease, staleKeep, token); // a held row: aborted, rolled back
    if (a.status == AcquireStatus::Acquired) {
        char* literal = PQescapeLiteral(c.get(), session.c_str(), session.size());
        if (!literal)
            throw IoError("PostgreSQL: out of memory");
        const std::string restore = "SELECT set_config('lock_timeout', " + std::string(literal) + ", true)";
        PQfreemem(literal);
        c.exec(restore);
    }
    return a;
}

} // namespace

AcquireResult PgStore::beginAndAcquire(std::optional<Borrowed>& held, std::string_view id, std::string_view fp,
                                       const PgExecuteOptions& options)
{
    bool reused = false;
    held.emplace(connection(&reused));
    try {
        (*held)->exec("BEGIN");
    } catch (const ClosedError&) { // an idle connection the server closed since: nothing was done
        if (!reused)
            throw;
        held.reset();
        dropIdle();
        held.emplace(connection());
        (*held)->exec("BEGIN");
    }
    PgConnection& c = **held;
    const std::string token = newToken();
    for (int tries = 1;; ++tries) {
        try {
            return acquireWithin(c, id, fp, m_options.lease, m_options.staleKeep, token, options.lockTimeout);
        } catch (const PgError& e) {
            if (!conflicted(e) || tries == kAcquireTries)
                throw;
            c.exec("ROLLBACK");
            c.exec("BEGIN");
        }
    }
}

Outcome PgStore::execute(std::string_view id, std::string_view payload, const PgWork& work,
                         const PgExecuteOptions& options)
{
    return executeWithFingerprint(id, payload.empty() ? std::string() : fingerprint(payload), work, options);
}

Outcome PgStore::executeWithFingerprint(std::string_view id, std::string_view fp, const PgWork& work,
                                        const PgExecuteOptions& options)
{
    checkId(id);
    Outcome out;
    std::optional<Borrowed> held;
    AcquireResult a;
    try {
        a = beginAndAcquire(held, id, fp, options);
        PgConnection& c = **held;
        out.fence = a.fence;
        out.attempt = a.attempt;
        if (a.status != AcquireStatus::Acquired) {
            c.exec("ROLLBACK"); // acquire changed nothing (or failed on a held row)
            switch (a.status) {
            case AcquireStatus::Duplicate:
                out.kind = OutcomeKind::Replayed;
                out.response = std::move(a.response);
                break;
            case AcquireStatus::InProgress:
                out.kind = OutcomeKind::InProgress;
                out.remainingMs = a.remainingMs;
                break;
            case AcquireStatus::FailedTerminal:
                out.kind = OutcomeKind::Failed;
                out.error = std::move(a.error);
                break;
            case AcquireStatus::Mismatch:
                out.kind = OutcomeKind::PayloadMismatch;
                break;
            default:
                out.kind = OutcomeKind::StoreUnavailable;
                break;
            }
            return out;
        }
        out.takeover = a.takeover;
        c.exec("SAVEPOINT idem_work");
    } catch (const Error& e) { // IoError, ConfigError (no schema), PgError: the work does not run
        out.kind = OutcomeKind::StoreUnavailable;
        out.error = e.what();
        return out;
    }

    PgConnection& c = **held;
    WorkResult result;
    out.workRan = true;
    try {
        result = work(PgWorkContext{std::string(id), a.fence, a.attempt, c.get()});
    } catch (const std::exception& e) {
        result = WorkResult::failure(e.what(), options.onException);
    } catch (...) {
        result = WorkResult::failure("the work threw", options.onException);
    }
    const PGTransactionStatusType ts = PQtransactionStatus(c.get());
    if (result.ok && ts == PQTRANS_INERROR)
        result = WorkResult::failure("a statement of the work failed; its transaction is aborted", options.onException);
    if (result.ok && result.response.size() > m_options.maxResponseBytes)
        result = WorkResult::failure("a response of " + std::to_string(result.response.size()) +
                                         " bytes is over the cap",
                                     FailPolicy::Release);

    try {
        if (ts != PQTRANS_INTRANS && ts != PQTRANS_INERROR) {
            if (PQstatus(c.get()) != CONNECTION_OK)
                throw ClosedError("PostgreSQL: the connection was lost while the work ran: " +
                                  std::string(PQerrorMessage(c.get())));
            throw UsageError("the work ended the transaction (it must not COMMIT or ROLLBACK)");
        }
        if (result.ok) {
            const OwnerResult done = completeOn(c, Ticket{std::string(id), a.ticket.token, a.fence, a.attempt, 0},
                                                result.response, options.retention.value_or(m_options.retention));
            if (done.status != OwnerStatus::Ok) { // cannot happen while the row is locked; roll back to be safe
                c.exec("ROLLBACK");
                out.kind = OutcomeKind::LeaseLost;
                out.error = "the record changed under the transaction: " + done.currentState;
                return out;
            }
            const PgResultPtr r = c.exec("COMMIT");
            if (std::string_view(PQcmdStatus(r.get())) != "COMMIT")
                throw ClosedError("PostgreSQL rolled the transaction back at COMMIT");
            out.kind = OutcomeKind::Executed;
            out.response = std::move(result.response);
            return out;
        }
        out.kind = OutcomeKind::Failed;
        out.error = result.error;
        if (result.policy == FailPolicy::Release) {
            c.exec("ROLLBACK"); // the work's writes and the record alike: the next delivery runs again
            return out;
        }
        c.exec("ROLLBACK TO SAVEPOINT idem_work"); // keep the failure, not the work's writes
        failOn(c, Ticket{std::string(id), a.ticket.token, a.fence, a.attempt, 0}, result.policy, result.error,
               m_options.failureRetention);
        c.exec("COMMIT");
        return out;
    } catch (const Error& e) {
        // the server rolled back or committed everything; which, the next delivery finds out
        if (PQstatus(c.get()) == CONNECTION_OK && PQtransactionStatus(c.get()) != PQTRANS_IDLE)
            PgResultPtr(PQexec(c.get(), "ROLLBACK"), &PQclear);
        out.kind = OutcomeKind::StoreUnavailable;
        out.error = std::string(e.what()) + " (the work's writes and the record commit together or not at all)";
        return out;
    }
}

} // namespace idem
