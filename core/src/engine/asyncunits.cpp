// AsyncStore's acquires and completions, coalesced into units (see UnitQueue): one script call of
// many ids, its answer read id by id.
#include "engine/asyncshared.h"
#include "engine/storecalls.h"
#include "idem/errors.h"
#include "redis/resp.h"

#include <hiredis/hiredis.h>

#include <algorithm>

namespace idem {

namespace {
// A unit of many ids sent to a Redis Cluster before the pool knew it was one.
bool crossSlot(std::size_t ids, const std::vector<ReplyPtr>& replies, const std::exception_ptr& error)
{
    return !error && ids > 1 && reply::isError(replies.front().get()) &&
           reply::errorText(replies.front().get()).starts_with("CROSSSLOT");
}

template <typename P>
std::vector<P> unitOf(P p)
{
    std::vector<P> unit;
    unit.push_back(std::move(p));
    return unit;
}

// A unit refused as a whole (CROSSSLOT): each of its calls again in a unit of its own.
template <typename P, typename Send>
void eachAlone(std::vector<P>& unit, UnitQueue<P>& queue, Send send)
{
    for (auto& p : unit) {
        queue.oneMore();
        send(unitOf(std::move(p)));
    }
}

// Each call's answer to its caller; what a caller's handler throws is dropped, as AsyncConnection
// drops it, and the others still get theirs.
template <typename P, typename T>
void handOut(std::vector<P>& unit, std::vector<T>& out, const std::vector<std::exception_ptr>& errors)
{
    for (std::size_t k = 0; k < unit.size(); ++k) {
        try {
            unit[k].done(errors[k] ? T() : std::move(out[k]), errors[k]);
        } catch (...) {
        }
    }
}
bool sameLease(const PendingAcquire& a, const PendingAcquire& b) { return a.leaseMs == b.leaseMs; }
bool anyTwo(const PendingCompletion&, const PendingCompletion&) { return true; }
} // namespace

void AsyncStore::Shared::hold() const
{
    acquires.hold();
    completions.hold();
}

void AsyncStore::Shared::release(bool all) const
{
    // both queues' holds end before anything is sent
    auto a = acquires.release(unitsLimit(), idsPerUnit(), sameLease, all);
    auto c = completions.release(unitsLimit(), idsPerUnit(), anyTwo, all);
    for (auto& unit : a)
        sendAcquires(std::move(unit));
    for (auto& unit : c)
        sendCompletions(std::move(unit));
}

void AsyncStore::Shared::acquire(PendingAcquire p) const
{
    if (auto now = acquires.offer(std::move(p), unitsLimit(), !pool->isCluster()))
        sendAcquires(unitOf(std::move(*now)));
}

void AsyncStore::Shared::sendAcquires(std::vector<PendingAcquire> unit) const
{
    const Script& s = scripts::acquire();
    std::string call;
    resp::Writer w(call);
    storecalls::writeAcquireCall(
        w, s, options.keyNamespace, unit.size(), [&](std::size_t k) { return std::string_view(unit[k].id); },
        [&](std::size_t k) { return std::string_view(unit[k].fingerprint); },
        [&](std::size_t k) { return std::string_view(unit[k].token); }, unit.front().leaseMs, options.staleKeep.count());
    std::vector<std::size_t> ends = {call.size()};
    const std::string key = recordKey(unit.front().id);
    auto handler = [shared = shared_from_this(), unit = std::move(unit)](std::vector<ReplyPtr> replies,
                                                                         std::exception_ptr error) mutable {
        // the unit is counted back before its callers hear: one that calls again at once (or holds)
        // finds it gone, not still on its way
        auto next = shared->acquires.unitDone(shared->unitsLimit(), shared->idsPerUnit(), sameLease);
        shared->readAcquires(unit, replies, std::move(error));
        for (auto& u : next)
            shared->sendAcquires(std::move(u));
    };
    runScriptRoutedAsync(*pool, key, s, std::move(call), std::move(ends), waitTrailer, std::move(handler));
}

void AsyncStore::Shared::readAcquires(std::vector<PendingAcquire>& unit, std::vector<ReplyPtr>& replies,
                                      std::exception_ptr error) const
{
    const std::size_t n = unit.size();
    if (crossSlot(n, replies, error)) // each id on its own, routed to its slot's node
        return eachAlone(unit, acquires, [this](auto one) { sendAcquires(std::move(one)); });
    std::vector<AcquireResult> out(n);
    std::vector<std::exception_ptr> errors(n, error);
    if (error)
        releaseUnanswered(unit, error);
    if (!error) {
        try {
            const redisReply* r = replies.front().get();
            if (n == 1)
                storecalls::parseAcquireOne(out[0], r, unit[0].id, unit[0].token, unit[0].leaseMs);
            else
                storecalls::readAcquireLines(r, n, [&](std::size_t k, acquireanswer::LineReader& in, std::int64_t nowMs) {
                    acquireanswer::parseAcquireLine(out[k], in, unit[k].id, unit[k].token, unit[k].leaseMs);
                    out[k].serverNowMs = nowMs;
                });
            const std::int64_t acks = replicasAcked(replies, !waitTrailer.empty()); // short: the retry goes to the new primary
            if (!waitTrailer.empty() && acks < options.minReplicas) {
                // a lock no replica holds can vanish in a failover and the work run twice: give
                // it back (its lease runs out anyway if this fails) and run nothing
                const auto notReplicated = std::make_exception_ptr(NotReplicatedError(
                    "acquire acknowledged by " + std::to_string(std::max<std::int64_t>(0, acks)) + " of the " +
                    std::to_string(options.minReplicas) + " replica(s) asked within " +
                    std::to_string(options.replicaTimeout.count()) + " ms; the lock is released, the work is not run"));
                for (std::size_t k = 0; k < n; ++k) {
                    if (out[k].status == AcquireStatus::Acquired)
                        fail(out[k].ticket, FailPolicy::Release, "not replicated", [](OwnerResult, std::exception_ptr) {},
                             false);
                    errors[k] = notReplicated;
                }
            }
        } catch (const Error&) {
            std::fill(errors.begin(), errors.end(), std::current_exception());
        }
    }
    handOut(unit, out, errors);
}

void AsyncStore::Shared::releaseUnanswered(const std::vector<PendingAcquire>& unit, const std::exception_ptr& error) const
{
    // A unit written to a server that has not answered (a timeout, a connection lost under it) may
    // still run when the server thaws: each id would then hold a lease its caller, told "failed",
    // never uses, and every retry would be refused as in progress until the lease ran out. A
    // release of each id's proposed token follows it; fail.lua does nothing to a record another
    // token holds, or to none. On a pool of one connection per node (idem-gateway's) the release
    // goes behind the acquire on its socket and runs after it; on a larger pool it may take
    // another connection and come first, and then the lease runs out on its own, as before.
    try {
        std::rethrow_exception(error);
    } catch (const NotReplicatedError&) {
        return; // answered (and given back above)
    } catch (const IoError&) {
    } catch (...) {
        return; // answered with an error, or never sent
    }
    // EVAL, not EVALSHA: a NOSCRIPT answer would need another round trip, and the connection may
    // be gone by then (the unit's bytes still run when the server thaws)
    const Script& s = scripts::fail();
    const std::string retentionMs = std::to_string(options.failureRetention.count());
    for (const PendingAcquire& p : unit) {
        const std::string key = recordKey(p.id);
        std::string call;
        resp::Writer w(call);
        const std::string_view eval[] = {"EVAL", s.source, "1", key, p.token, nameOf(FailPolicy::Release),
                                         "the acquire's answer did not come", retentionMs};
        w.command(eval);
        try {
            pool->routed(
                key,
                [call = std::move(call)](AsyncConnection& c, bool asking, RepliesHandler done) {
                    c.send(asking ? "*1\r\n$6\r\nASKING\r\n" + call : call, asking ? 2 : 1, std::move(done));
                },
                [](std::vector<ReplyPtr>, std::exception_ptr) {}); // else the lease runs out on its own
        } catch (...) { // a pool closing
        }
    }
}

void AsyncStore::Shared::complete(PendingCompletion p) const
{
    if (auto now = completions.offer(std::move(p), unitsLimit(), !pool->isCluster()))
        sendCompletions(unitOf(std::move(*now)));
}

void AsyncStore::Shared::sendCompletions(std::vector<PendingCompletion> unit) const
{
    const Script& s = scripts::complete();
    std::string call;
    resp::Writer w(call);
    resp::evalshaHead(w, s, unit.size(), 3 * unit.size());
    for (const auto& p : unit)
        w.bulkConcat(options.keyNamespace, storecalls::kTagOpen, p.id, storecalls::kTagClose);
    for (const auto& p : unit) {
        w.bulk(p.token);
        w.bulk(p.response);
        w.bulk(p.retentionMs);
    }
    std::vector<std::size_t> ends = {call.size()};
    const std::string key = recordKey(unit.front().id);
    auto handler = [shared = shared_from_this(), unit = std::move(unit)](std::vector<ReplyPtr> replies,
                                                                         std::exception_ptr error) mutable {
        auto next = shared->completions.unitDone(shared->unitsLimit(), shared->idsPerUnit(), anyTwo);
        shared->readCompletions(unit, replies, std::move(error));
        for (auto& u : next)
            shared->sendCompletions(std::move(u));
    };
    runScriptRoutedAsync(*pool, key, s, std::move(call), std::move(ends), waitTrailer, std::move(handler));
}

void AsyncStore::Shared::readCompletions(std::vector<PendingCompletion>& unit, std::vector<ReplyPtr>& replies,
                                         std::exception_ptr error) const
{
    const std::size_t n = unit.size();
    if (crossSlot(n, replies, error))
        return eachAlone(unit, completions, [this](auto one) { sendCompletions(std::move(one)); });
    std::vector<OwnerResult> out(n);
    std::vector<std::exception_ptr> errors(n, error);
    if (!error) {
        try {
            const Script& s = scripts::complete();
            const redisReply* r = replies.front().get();
            const bool waits = !waitTrailer.empty();
            const std::int64_t acks = replicasAcked(replies, waits);
            if (n > 1 && !reply::isError(r) && reply::arraySize(r) != n)
                throw ProtoError("complete script answered for the wrong number of ids");
            for (std::size_t k = 0; k < n; ++k) {
                try { // one id's refusal from a node no replica follows is that id's error
                    out[k] = storecalls::parseOwnerReply(s, n == 1 || reply::isError(r) ? r : reply::element(r, k),
                                                         options, waits, acks);
                } catch (const NotReplicatedError&) {
                    errors[k] = std::current_exception();
                }
            }
        } catch (const Error&) {
            std::fill(errors.begin(), errors.end(), std::current_exception());
        }
    }
    handOut(unit, out, errors);
}

} // namespace idem
