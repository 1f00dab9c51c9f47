#include "idem/engine/asyncstore.h"

#include "engine/asyncshared.h"
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
    auto shared = std::make_shared<Shared>();
    shared->options = m_options;
    if (m_options.minReplicas > 0)
        shared->waitTrailer = waitCommand(m_options.minReplicas, m_options.replicaTimeout);
    shared->pool = &pool;
    m_shared = std::move(shared);
}

std::string AsyncStore::recordKey(std::string_view id) const { return m_shared->recordKey(id); }

void AsyncStore::hold() { m_shared->hold(); }

void AsyncStore::release() { m_shared->release(); }

AsyncStore::~AsyncStore() { m_shared->release(true); }

std::string AsyncStore::Shared::recordKey(std::string_view id) const
{
    std::string k(options.keyNamespace);
    k.append(storecalls::kTagOpen).append(id).append(storecalls::kTagClose);
    return k;
}

void AsyncStore::acquire(std::string_view id, std::string_view fingerprint, std::optional<Millis> lease,
                         StoreCallback<AcquireResult> done)
{
    storecalls::checkId(m_options, id);
    if (lease && lease->count() <= 0)
        throw UsageError("lease must be positive");
    m_shared->acquire(PendingAcquire{std::string(id), std::string(fingerprint), newToken(),
                                     lease.value_or(m_options.lease).count(), std::move(done)});
}

void AsyncStore::Shared::ownerCall(const Script& s, const Ticket& t, std::initializer_list<std::string_view> args,
                                   bool waitForReplicas, StoreCallback<OwnerResult> done) const
{
    storecalls::checkId(options, t.id);
    const std::string rk = recordKey(t.id);
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
                const std::int64_t acks = shared->replicasAcked(replies, waits);
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

std::int64_t AsyncStore::Shared::replicasAcked(const std::vector<ReplyPtr>& replies, bool waited) const
{
    if (!waited)
        return -1;
    const std::int64_t acks = storecalls::replicasAcked(replies.back().get());
    if (acks < options.minReplicas)
        pool->checkPrimariesSoon();
    return acks;
}

void AsyncStore::Shared::fail(const Ticket& t, FailPolicy policy, std::string_view error,
                              StoreCallback<OwnerResult> done, bool waitForReplicas) const
{
    const std::string retMs = std::to_string(options.failureRetention.count());
    ownerCall(scripts::fail(), t, {t.token, nameOf(policy), error, retMs}, waitForReplicas, std::move(done));
}

void AsyncStore::complete(const Ticket& t, std::string_view response, std::optional<Millis> retention,
                          StoreCallback<OwnerResult> done)
{
    storecalls::checkId(m_options, t.id);
    m_shared->complete(PendingCompletion{t.id, t.token, std::string(response),
                                         std::to_string(storecalls::checkCompletion(m_options, response, retention).count()),
                                         std::move(done)});
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
    m_shared->ownerCall(scripts::renew(), t, {t.token, leaseMs, keepMs}, true,
              [leaseFor, done = std::move(done)](OwnerResult r, std::exception_ptr error) {
                  if (!error && r.status != OwnerStatus::LeaseLost)
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
