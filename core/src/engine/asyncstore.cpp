#include "idem/engine/asyncstore.h"

#include "engine/storecalls.h"
#include "idem/errors.h"
#include "redis/resp.h"

#include <hiredis/hiredis.h>

namespace idem {

namespace {
template <typename T>
std::future<T> promised(const std::function<void(StoreCallback<T>)>& call)
{
    auto promise = std::make_shared<std::promise<T>>();
    auto future = promise->get_future();
    call([promise](T value, std::exception_ptr error) {
        if (error)
            promise->set_exception(std::move(error));
        else
            promise->set_value(std::move(value));
    });
    return future;
}
} // namespace

AsyncStore::AsyncStore(AsyncPool& pool, StoreOptions options) : m_pool(pool), m_options(std::move(options))
{
    storecalls::checkOptions(m_options);
    if (m_options.minReplicas > 0)
        m_waitTrailer = waitCommand(m_options.minReplicas, m_options.replicaTimeout);
}

std::string AsyncStore::recordKey(std::string_view id) const
{
    std::string k(m_options.keyNamespace);
    k.append(storecalls::kTagOpen).append(id).append(storecalls::kTagClose);
    return k;
}

void AsyncStore::acquire(std::string_view id, std::string_view fingerprint, std::optional<Millis> lease,
                         StoreCallback<AcquireResult> done)
{
    storecalls::checkId(m_options, id);
    if (lease && lease->count() <= 0)
        throw UsageError("lease must be positive");
    const std::int64_t leaseMs = lease.value_or(m_options.lease).count();
    const Script& s = scripts::acquire();
    std::string token = newToken();
    std::string call;
    resp::Writer w(call);
    storecalls::writeAcquireCall(
        w, s, m_options.keyNamespace, 1, [&](std::size_t) { return id; }, [&](std::size_t) { return fingerprint; },
        [&](std::size_t) { return std::string_view(token); }, leaseMs, m_options.staleKeep.count());
    std::vector<std::size_t> ends = {call.size()};
    auto handler = [this, id = std::string(id), token = std::move(token), leaseMs,
                    done = std::move(done)](std::vector<ReplyPtr> replies, std::exception_ptr error) mutable {
        AcquireResult out;
        if (!error) {
            try {
                storecalls::parseAcquireOne(out, replies.front().get(), id, token, leaseMs);
                const std::int64_t acks = m_waitTrailer.empty() ? 0 : storecalls::replicasAcked(replies.back().get());
                if (!m_waitTrailer.empty() && acks < m_options.minReplicas) {
                    // a lock no replica holds can vanish in a failover and the work run twice:
                    // give it back (its lease runs out anyway if this fails) and run nothing
                    if (out.status == AcquireStatus::Acquired)
                        fail(out.ticket, FailPolicy::Release, "not replicated", [](OwnerResult, std::exception_ptr) {});
                    throw NotReplicatedError("acquire acknowledged by " + std::to_string(std::max<std::int64_t>(0, acks)) +
                                             " of the " + std::to_string(m_options.minReplicas) +
                                             " replica(s) asked within " +
                                             std::to_string(m_options.replicaTimeout.count()) +
                                             " ms; the lock is released, the work is not run");
                }
            } catch (const Error&) {
                error = std::current_exception();
                out = AcquireResult();
            }
        }
        done(std::move(out), std::move(error));
    };
    runScriptPipelinedAsync(m_pool.next(), s, std::move(call), std::move(ends), m_waitTrailer, std::move(handler));
}

void AsyncStore::ownerCall(const Script& s, const Ticket& t, std::initializer_list<std::string_view> args,
                           bool waitForReplicas, StoreCallback<OwnerResult> done)
{
    storecalls::checkId(m_options, t.id);
    const std::string rk = recordKey(t.id);
    const std::string_view key = rk;
    std::string call;
    resp::Writer w(call);
    resp::evalsha(w, s, {&key, 1}, std::span<const std::string_view>(args.begin(), args.size()));
    std::vector<std::size_t> ends = {call.size()};
    const bool waits = waitForReplicas && !m_waitTrailer.empty();
    auto handler = [this, &s, waits, done = std::move(done)](std::vector<ReplyPtr> replies, std::exception_ptr error) {
        OwnerResult out;
        if (!error) {
            try {
                const std::int64_t acks = waits ? storecalls::replicasAcked(replies.back().get()) : -1;
                out = storecalls::parseOwnerReply(s, replies.front().get(), m_options, waits, acks);
            } catch (const Error&) {
                error = std::current_exception();
                out = OwnerResult();
            }
        }
        done(std::move(out), std::move(error));
    };
    runScriptPipelinedAsync(m_pool.next(), s, std::move(call), std::move(ends),
                            waits ? std::string_view(m_waitTrailer) : std::string_view(), std::move(handler));
}

void AsyncStore::complete(const Ticket& t, std::string_view response, std::optional<Millis> retention,
                          StoreCallback<OwnerResult> done)
{
    const std::string retMs = std::to_string(storecalls::checkCompletion(m_options, response, retention).count());
    ownerCall(scripts::complete(), t, {t.token, response, retMs}, true, std::move(done));
}

void AsyncStore::fail(const Ticket& t, FailPolicy policy, std::string_view error, StoreCallback<OwnerResult> done)
{
    const std::string retMs = std::to_string(m_options.failureRetention.count());
    ownerCall(scripts::fail(), t, {t.token, nameOf(policy), error, retMs}, false, std::move(done));
}

void AsyncStore::renew(const Ticket& t, std::optional<Millis> lease, StoreCallback<OwnerResult> done)
{
    const Millis leaseFor = lease.value_or(m_options.lease);
    const std::string leaseMs = std::to_string(leaseFor.count());
    const std::string keepMs = std::to_string(m_options.staleKeep.count());
    ownerCall(scripts::renew(), t, {t.token, leaseMs, keepMs}, false,
              [leaseFor, done = std::move(done)](OwnerResult r, std::exception_ptr error) {
                  if (!error && r.status == OwnerStatus::Ok)
                      r.leaseUntilMs = r.serverNowMs + leaseFor.count(); // what the script wrote
                  done(std::move(r), std::move(error));
              });
}

std::future<AcquireResult> AsyncStore::acquire(std::string_view id, std::string_view fingerprint,
                                               std::optional<Millis> lease)
{
    return promised<AcquireResult>([&](StoreCallback<AcquireResult> cb) { acquire(id, fingerprint, lease, std::move(cb)); });
}

std::future<OwnerResult> AsyncStore::complete(const Ticket& t, std::string_view response,
                                              std::optional<Millis> retention)
{
    return promised<OwnerResult>(
        [&](StoreCallback<OwnerResult> cb) { complete(t, response, retention, std::move(cb)); });
}

} // namespace idem
