#include "engine/storecalls.h"

#include "engine/acquireanswer.h"
#include "idem/errors.h"

namespace idem::storecalls {

void checkOptions(const StoreOptions& o)
{
    if (o.keyNamespace.empty())
        throw UsageError("namespace must not be empty");
    if (o.keyNamespace.find_first_of("{}") != std::string::npos)
        throw UsageError("namespace must not contain '{' or '}' (they delimit the cluster hash tag)");
    if (o.lease.count() <= 0)
        throw UsageError("lease must be positive");
}

void checkId(const StoreOptions& o, std::string_view id)
{
    if (id.empty())
        throw UsageError("idempotency id must not be empty");
    if (id.size() > o.maxIdBytes)
        throw UsageError("idempotency id is " + std::to_string(id.size()) + " bytes, over the " +
                         std::to_string(o.maxIdBytes) + "-byte limit");
}

LeaseSettings leaseSettings(const StoreOptions& o, const ConnectionOptions& pool)
{
    return {o.lease, o.maxResponseBytes, o.minReplicas, o.minReplicas > 0 || pool.viaSentinel()};
}

Millis checkCompletion(const StoreOptions& o, std::string_view response, std::optional<Millis> retention)
{
    if (response.size() > o.maxResponseBytes)
        throw UsageError("response is " + std::to_string(response.size()) + " bytes, over the " +
                         std::to_string(o.maxResponseBytes) + "-byte cap");
    const auto ret = retention.value_or(o.retention);
    if (ret.count() <= 0)
        throw UsageError("retention must be positive");
    return ret;
}

void parseAcquireOne(AcquireResult& out, const redisReply* r, std::string_view id, std::string_view token,
                     std::int64_t leaseMs)
{
    using namespace acquireanswer;
    if (reply::isError(r))
        throw ReplyError("acquire: " + reply::errorMessage(r));
    LineReader in(reply::view(r));
    const std::int64_t nowUs = in.number();
    if (in.atEnd()) {
        acquiredFresh(out, nowUs, id, token, leaseMs);
        in.finish();
    } else {
        parseAcquireLine(out, in, id, token, leaseMs);
    }
    out.serverNowMs = nowUs / 1000;
}

std::int64_t replicasAcked(const redisReply* r) { return reply::isError(r) ? -1 : reply::integer(r); }

OwnerResult parseOwnerReply(const Script& s, const redisReply* r, const StoreOptions& o, bool waitedForReplicas,
                            std::int64_t acks)
{
    using namespace reply;
    if (isError(r))
        throw ReplyError("script " + std::string(s.name) + ": " + errorMessage(r));
    OwnerResult out;
    // done: the owner scripts answer the server time alone, an integer or its digits (the common
    // case, kept cheap for Redis; complete answers 0: it reads no clock); refused: {status,
    // detail, server time or 0}
    if (isInteger(r) || isString(r)) {
        const bool asked = waitedForReplicas && o.minReplicas > 0;
        out.status = asked && acks < o.minReplicas ? OwnerStatus::NotReplicated : OwnerStatus::Ok;
        out.replicas = acks;
        out.serverNowMs = integer(r);
        return out;
    }
    const std::string status = str(element(r, 0));
    out.serverNowMs = integer(element(r, arraySize(r) - 1));
    if (status != "LEASE_LOST")
        throw ProtoError(std::string(s.name) + " script answered '" + status + "'");
    out.status = OwnerStatus::LeaseLost;
    out.currentState = str(element(r, 1));
    // A refusal is believed only from a node its replicas follow: a primary that came back empty
    // after a failover, and still thinks itself the primary, answers "missing" for every lease,
    // and a completion that believed it would be lost while the true record waits elsewhere (the
    // caller retries; the next try goes to the primary the sentinels name now).
    if (waitedForReplicas && o.minReplicas > 0 && acks < o.minReplicas)
        throw NotReplicatedError(std::string(s.name) + ": the lease was answered lost (record " + out.currentState +
                                 ") by a node " + std::to_string(std::max<std::int64_t>(0, acks)) + " of the " +
                                 std::to_string(o.minReplicas) +
                                 " replica(s) asked follow; not believed (a primary that came back empty "
                                 "answers the same)");
    return out;
}

} // namespace idem::storecalls
