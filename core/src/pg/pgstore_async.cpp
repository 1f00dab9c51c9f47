// PgStore's pipelined calls (AsyncLeaseStore, what Executor::submit() uses): over
// PgStoreOptions::pipelineConnections PgPipelines, made on the first call.
#include "idem/pg/pgstore.h"

#include "idem/errors.h"
#include "pg/pgcalls.h"
#include "pg/pgconnection.h"
#include "pg/pgpipeline.h"

#include <algorithm>

namespace idem {

using namespace pgcalls;

namespace {

// The pipelined answer read by `parse`, or the error, handed to `done`
template <typename T, typename Parse> PgPipeline::Done answerTo(StoreCallback<T> done, Parse parse)
{
    return [done = std::move(done), parse = std::move(parse)](const PGresult* r, int row, std::exception_ptr error) {
        if (error)
            return done(T{}, error);
        T value;
        try {
            value = parse(r, row);
        } catch (...) {
            return done(T{}, std::current_exception());
        }
        done(std::move(value), nullptr);
    };
}

} // namespace

PgPipeline& PgStore::pipeline()
{
    std::call_once(m_pipelinesOnce, [this] {
        std::vector<std::unique_ptr<PgPipeline>> made;
        for (std::size_t i = 0; i < std::max<std::size_t>(1, m_options.pipelineConnections); ++i)
            made.push_back(std::make_unique<PgPipeline>(
                m_conninfo, m_options.connectTimeoutSeconds, m_options.pipelineCallTimeout,
                [lockTimeout = m_options.pipelineLockTimeout](PgConnection& c) {
                    prepareAll(c);
                    c.exec("SET lock_timeout = " + std::to_string(std::max<long long>(1, lockTimeout.count())));
                    // The functions' statements (all by primary key) planned once per connection:
                    // left to choose, the server planned some of them anew on every call, a tenth
                    // of its time (these connections run nothing but idem's statements)
                    c.exec("SET plan_cache_mode = force_generic_plan");
                }));
        std::lock_guard lock(m_mutex);
        m_pipelines = std::move(made);
    });
    // the first one with fewer than kFill calls pending, else the least loaded: calls kept together
    // make batches (one statement for many calls is what saves the server's time), and past a
    // batch of kFill the next connection's backend works beside the first one's
    constexpr std::size_t kFill = 8;
    PgPipeline* least = nullptr;
    for (const auto& p : m_pipelines) {
        if (p->pending() < kFill)
            return *p;
        if (!least || p->pending() < least->pending())
            least = p.get();
    }
    return *least;
}

PgPipelineCounts PgStore::pipelineCounts()
{
    PgPipelineCounts sum;
    std::lock_guard lock(m_mutex);
    for (const auto& p : m_pipelines) {
        const PgPipelineCounts c = p->counts();
        sum.statements += c.statements;
        sum.batches += c.batches;
        sum.batchedCalls += c.batchedCalls;
        sum.batchesResent += c.batchesResent;
    }
    return sum;
}

void PgStore::acquireAsync(std::string_view id, std::string_view fingerprint, Millis lease,
                           StoreCallback<AcquireResult> done)
{
    checkId(id);
    // a row another transaction holds past the lock timeout: in progress, as the blocking acquire says
    StoreCallback<AcquireResult> held = [done = std::move(done)](AcquireResult a, std::exception_ptr error) {
        if (error) {
            try {
                std::rethrow_exception(error);
            } catch (const PgError& e) {
                if (e.rowHeld())
                    return done(rowHeldAcquire(), nullptr);
            } catch (...) {
            }
        }
        done(std::move(a), error);
    };
    pipeline().send("idem_acquire", acquireParams(id, fingerprint, lease, m_options.staleKeep, newToken()),
                    answerTo<AcquireResult>(std::move(held), [id = std::string(id)](const PGresult* r, int row) {
                        return acquireFrom(r, row, id);
                    }),
                    &acquireBatch);
}

void PgStore::completeAsync(const Ticket& t, std::string_view response, std::optional<Millis> retention,
                            StoreCallback<OwnerResult> done)
{
    checkId(t.id);
    checkResponse(response);
    pipeline().send("idem_complete", completeParams(t, response, retention.value_or(m_options.retention)),
                    answerTo<OwnerResult>(std::move(done), &ownerFrom), &completeBatch);
}

void PgStore::failAsync(const Ticket& t, FailPolicy policy, std::string_view error, StoreCallback<OwnerResult> done)
{
    checkId(t.id);
    pipeline().send("idem_fail", failParams(t, policy, error, m_options.failureRetention),
                    answerTo<OwnerResult>(std::move(done), &ownerFrom));
}

} // namespace idem
