#pragma once

#include "engine/acquireanswer.h"
#include "idem/engine/store.h"
#include "idem/redis/reply.h"
#include "redis/resp.h"

#include <cstdint>
#include <string>
#include <string_view>

struct redisReply;

// What Store and AsyncStore send and how they read the answers: one spelling of the keys, one
// encoder of acquire.lua's calls, one reader of each script's reply. Internal to the engine.
namespace idem::storecalls {

// <namespace>:{<id>} and <namespace>:{<id>}:meta (the braces: a Redis Cluster hash tag)
inline constexpr std::string_view kTagOpen = ":{", kTagClose = "}", kMetaSuffix = ":meta";

void checkOptions(const StoreOptions& o);
void checkId(const StoreOptions& o, std::string_view id);
// complete's checks: the response under the cap, a positive retention; returns the retention
Millis checkCompletion(const StoreOptions& o, std::string_view response, std::optional<Millis> retention);
// What Executor needs of these options on this pool (Store's and AsyncStore's)
LeaseSettings leaseSettings(const StoreOptions& o, const ConnectionOptions& pool);

// One acquire.lua call for `count` ids: idAt(k), fingerprintAt(k) and tokenAt(k) give id k's.
template <typename IdAt, typename FingerprintAt, typename TokenAt>
void writeAcquireCall(resp::Writer& w, const Script& s, std::string_view ns, std::size_t count, IdAt idAt,
                      FingerprintAt fingerprintAt, TokenAt tokenAt, std::int64_t leaseMs, std::int64_t staleKeepMs)
{
    resp::evalshaHead(w, s, 2 * count, 2 + 2 * count);
    for (std::size_t k = 0; k < count; ++k) {
        const std::string_view id = idAt(k);
        w.bulkConcat(ns, kTagOpen, id, kTagClose);
        w.bulkConcat(ns, kTagOpen, id, kTagClose, kMetaSuffix);
    }
    w.bulk(static_cast<long long>(leaseMs));
    w.bulk(static_cast<long long>(leaseMs + staleKeepMs));
    for (std::size_t k = 0; k < count; ++k) {
        w.bulk(fingerprintAt(k));
        w.bulk(tokenAt(k));
    }
}

// The answer of an acquire call for one id: "<now_us> <line>", or "<now_us>" alone (acquired
// fresh). An error reply throws ReplyError.
void parseAcquireOne(AcquireResult& out, const redisReply* r, std::string_view id, std::string_view token,
                     std::int64_t leaseMs);

// The answer of an acquire call for `count` ids, more than one: a line per id, then the server's
// time (µs). each(k, line, serverNowMs) reads id k's line (acquireanswer::parseAcquireLine). An
// error reply throws ReplyError.
template <typename Each>
void readAcquireLines(const redisReply* r, std::size_t count, Each each)
{
    if (reply::isError(r))
        throw ReplyError("acquire: " + reply::errorMessage(r));
    if (reply::arraySize(r) != count + 1)
        throw ProtoError("acquire script answered for the wrong number of ids");
    const std::int64_t serverNowMs = reply::integer(reply::element(r, count)) / 1000;
    for (std::size_t k = 0; k < count; ++k) {
        acquireanswer::LineReader in(reply::view(reply::element(r, k)));
        each(k, in, serverNowMs);
    }
}

// An owner script's answer (complete, fail, renew): the server time alone when done, else
// {status, detail, server time}. `acks` is WAIT's answer when the call waited for replicas (-1
// otherwise); fewer than o.minReplicas make a done completion NotReplicated and a refusal
// NotReplicatedError (the node may not be the primary). An error reply throws ReplyError.
OwnerResult parseOwnerReply(const Script& s, const redisReply* r, const StoreOptions& o, bool waitedForReplicas,
                            std::int64_t acks);

// WAIT's answer: how many replicas acknowledged (-1 for an error reply)
std::int64_t replicasAcked(const redisReply* r);

} // namespace idem::storecalls
