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

struct AsyncStore::Shared : std::enable_shared_from_this<AsyncStore::Shared> {
    StoreOptions options;
    std::string waitTrailer; // WAIT, with minReplicas
    AsyncPool* pool = nullptr;

    void ownerCall(const Script& s, const Ticket& t, std::initializer_list<std::string_view> args,
                   bool waitForReplicas, StoreCallback<OwnerResult> done) const;
    void fail(const Ticket& t, FailPolicy policy, std::string_view error, StoreCallback<OwnerResult> done) const;
};

AsyncStore::AsyncStore(AsyncPool& pool, StoreOptions options) : m_pool(pool), m_options(std::move(options))
{
    storecalls::checkOptions(m_options);
    auto shared = std::make_shared<Shared>();
    shared->options = m_options;
    if (m_options.minReplicas > 0)
        shared->waitTrailer = waitCommand(m_options.minReplicas, m_options.replicaTimeout);
    shared->pool = &pool;
    m_shared = std::move(shared);
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
    auto handler = [shared = m_shared, id = std::string(id), token = std::move(token), leaseMs,
                    done = std::move(done)](std::vector<ReplyPtr> replies, std::exception_ptr error) mutable {
        AcquireResult out;
        if (!error) {
            try {
                storecalls::parseAcquireOne(out, replies.front().get(), id, token, leaseMs);
                const StoreOptions& o = shared->options;
                const bool waited = !shared->waitTrailer.empty();
                const std::int64_t acks = waited ? storecalls::replicasAcked(replies.back().get()) : 0;
                if (waited && acks < o.minReplicas) {
                    // a lock no replica holds can vanish in a failover and the work run twice:
                    // give it back (its lease runs out anyway if this fails) and run nothing
                    if (out.status == AcquireStatus::Acquired)
                        shared->fail(out.ticket, FailPolicy::Release, "not replicated", [](OwnerResult, std::exception_ptr) {});
                    throw NotReplicatedError("acquire acknowledged by " + std::to_string(std::max<std::int64_t>(0, acks)) +
                                             " of the " + std::to_string(o.minReplicas) + " replica(s) asked within " +
                                             std::to_string(o.replicaTimeout.count()) +
                                             " ms; the lock is released, the work is not run");
                }
            } catch (const Error&) {
                error = std::current_exception();
                out = AcquireResult();
            }
        }
        done(std::move(out), std::move(error));
    };
    runScriptRoutedAsync(m_pool, recordKey(id), s, std::move(call), std::move(ends), m_shared->waitTrailer,
                         std::move(handler));
}

void AsyncStore::Shared::ownerCall(const Script& s, const Ticket& t, std::initializer_list<std::string_view> args,
                                   bool waitForReplicas, StoreCallback<OwnerResult> done) const
{
    storecalls::checkId(options, t.id);
    std::string rk(options.keyNamespace);
    rk.append(storecalls::kTagOpen).append(t.id).append(storecalls::kTagClose);
    const std::string_view key = rk;
    std::string call;
    resp::Writer w(call);
    resp::evalsha(w, s, {&key, 1}, std::span<const std::string_view>(args.begin(), args.size()));
    std::vector<std::size_t> ends = {call.size()};
    const bool waits = waitForReplicas && !waitTrailer.empty();
    auto handler = [shared = shared_from_this(), &s, waits, done = std::move(done)](std::vector<ReplyPtr> replies,
                                                                                    std::exception_ptr error) {
        OwnerResult out;
        if (!error) {
            try {
                const std::int64_t acks = waits ? storecalls::replicasAcked(replies.back().get()) : -1;
                out = storecalls::parseOwnerReply(s, replies.front().get(), shared->options, waits, acks);
            } catch (const Error&) {
                error = std::current_exception();
                out = OwnerResult();
            }
        }
        done(std::move(out), std::move(error));
    };
    runScriptRoutedAsync(*pool, key, s, std::move(call), std::move(ends),
                         waits ? std::string_view(waitTrailer) : std::string_view(), std::move(handler));
}

void AsyncStore::Shared::fail(const Ticket& t, FailPolicy policy, std::string_view error,
                              StoreCallback<OwnerResult> done) const
{
    const std::string retMs = std::to_string(options.failureRetention.count());
    ownerCall(scripts::fail(), t, {t.token, nameOf(policy), error, retMs}, false, std::move(done));
}

void AsyncStore::complete(const Ticket& t, std::string_view response, std::optional<Millis> retention,
                          StoreCallback<OwnerResult> done)
{
    const std::string retMs = std::to_string(storecalls::checkCompletion(m_options, response, retention).count());
    m_shared->ownerCall(scripts::complete(), t, {t.token, response, retMs}, true, std::move(done));
}

void AsyncStore::fail(const Ticket& t, FailPolicy policy, std::string_view error, StoreCallback<OwnerResult> done)
{
    m_shared->fail(t, policy, error, std::move(done));
}

void AsyncStore::renew(const Ticket& t, std::optional<Millis> lease, StoreCallback<OwnerResult> done)
{
    const Millis leaseFor = lease.value_or(m_options.lease);
    const std::string leaseMs = std::to_string(leaseFor.count());
    const std::string keepMs = std::to_string(m_options.staleKeep.count());
    m_shared->ownerCall(scripts::renew(), t, {t.token, leaseMs, keepMs}, false,
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
