#include "idem/engine/store.h"

#include "idem/errors.h"
#include "idem/hash.h"
#include "engine/acquireanswer.h"
#include "engine/guard.h"
#include "engine/storecalls.h"
#include "redis/resp.h"
#include "redis/router.h"

#include <algorithm>
#include <limits>
#include <array>
#include <charconv>
#include <hiredis/hiredis.h>
#include <mutex>
#include <random>

namespace idem {

std::string_view nameOf(FailPolicy p)
{
    switch (p) {
    case FailPolicy::Release: return "release";
    case FailPolicy::Retryable: return "retryable";
    case FailPolicy::Terminal: return "terminal";
    }
    return "release";
}

std::optional<FailPolicy> failPolicyFromString(std::string_view s)
{
    if (s == "release")
        return FailPolicy::Release;
    if (s == "retryable")
        return FailPolicy::Retryable;
    if (s == "terminal")
        return FailPolicy::Terminal;
    return std::nullopt;
}

std::string_view nameOf(AcquireStatus s)
{
    switch (s) {
    case AcquireStatus::Acquired: return "acquired";
    case AcquireStatus::Duplicate: return "duplicate";
    case AcquireStatus::InProgress: return "in_progress";
    case AcquireStatus::FailedTerminal: return "failed_terminal";
    case AcquireStatus::Mismatch: return "payload_mismatch";
    case AcquireStatus::Unusable: break;
    }
    return "unusable";
}

namespace {
// 128 random bits as 32 hex digits, written into `out`
void writeToken(char* out)
{
    thread_local std::mt19937_64 rng = [] {
        std::random_device rd;
        std::seed_seq seq{rd(), rd(), rd(), rd(), rd(), rd()};
        return std::mt19937_64(seq);
    }();
    static constexpr char kHex[] = "0123456789abcdef";
    for (int half = 0; half < 2; ++half) {
        std::uint64_t v = rng();
        for (int i = 0; i < 16; ++i, v >>= 4)
            *out++ = kHex[v & 0xf];
    }
}
constexpr std::size_t kTokenChars = 32;

// What goes behind acquire calls that may get no answer (Connection::FollowUp): a release of each
// id's proposed token, so that a server that thaws and runs the acquire late leaves no lease that
// nobody holds (every retry would be refused as in progress until it ran out). fail.lua leaves a
// record another token holds, and a missing one, alone. SCRIPT LOAD first: the EVALSHAs behind it
// on the same socket find the script, and no answer is read (a NOSCRIPT could not be recovered).
// On a cluster each goes with ASKING (needed after an ASK; on the slot's owner it changes nothing).
template <typename IdAt, typename TokenAt>
std::string releasesBehind(std::string_view ns, std::size_t count, IdAt idAt, TokenAt tokenAt, bool cluster,
                           Millis retention)
{
    const Script& s = scripts::fail();
    const std::string retentionMs = std::to_string(retention.count());
    std::string out;
    resp::Writer w(out);
    const std::string_view load[] = {"SCRIPT", "LOAD", s.source};
    w.command(load);
    for (std::size_t k = 0; k < count; ++k) {
        if (cluster) {
            const std::string_view asking[] = {"ASKING"};
            w.command(asking);
        }
        resp::evalshaHead(w, s, 1, 4);
        w.bulkConcat(ns, storecalls::kTagOpen, idAt(k), storecalls::kTagClose);
        w.bulk(tokenAt(k));
        w.bulk(nameOf(FailPolicy::Release));
        w.bulk("the acquire's answer did not come");
        w.bulk(retentionMs);
    }
    return out;
}
} // namespace

std::string newToken()
{
    std::string t(kTokenChars, '0');
    writeToken(t.data());
    return t;
}

Store::Store(ConnectionPool& pool, StoreOptions options)
    : m_pool(pool), m_options(std::move(options)), m_router(std::make_unique<ClusterRouter>(pool))
{
    storecalls::checkOptions(m_options);
}

Store::~Store() = default;
ReplyPtr Store::routedScript(const Script& s, std::string_view id, const std::vector<std::string_view>& args,
                             Keys keys)
{
    const std::string rk = recordKey(id), mk = keys == Keys::RecordAndMeta ? metaKey(id) : std::string();
    std::vector<std::string_view> scriptKeys = {rk};
    if (keys == Keys::RecordAndMeta)
        scriptKeys.push_back(mk);
    ReplyPtr r = m_router->routed(rk, [&](Connection& c) { return runScriptReply(c, s, scriptKeys, args); });
    if (reply::isError(r.get()))
        throw ReplyError("script " + std::string(s.name) + ": " + reply::errorMessage(r.get()));
    return r;
}

using storecalls::kMetaSuffix;
using storecalls::kTagClose;
using storecalls::kTagOpen;

std::string Store::recordKey(std::string_view id) const
{
    std::string k;
    k.reserve(m_options.keyNamespace.size() + id.size() + kTagOpen.size() + kTagClose.size());
    k.append(m_options.keyNamespace).append(kTagOpen).append(id).append(kTagClose);
    return k;
}

LeaseSettings Store::leaseSettings() const
{
    return storecalls::leaseSettings(m_options, m_pool.options());
}

OwnerResult LeaseStore::checkpoint(const Ticket&, std::string_view, std::string_view)
{
    throw UsageError("recovery points (checkpoint) need the PostgreSQL store");
}

std::string Store::metaKey(std::string_view id) const { return recordKey(id).append(kMetaSuffix); }

void Store::checkId(std::string_view id) const { storecalls::checkId(m_options, id); }

AcquireResult Store::acquire(std::string_view id, std::string_view fingerprint, std::optional<Millis> lease)
{
    return std::move(acquireBatch({AcquireRequest{std::string(id), std::string(fingerprint)}}, lease).front());
}

std::vector<AcquireResult> Store::acquireBatch(const std::vector<AcquireRequest>& requests,
                                               std::optional<Millis> lease)
{
    using namespace acquireanswer;
    if (requests.empty())
        return {};
    for (const auto& rq : requests)
        checkId(rq.id);
    if (lease && lease->count() <= 0)
        throw UsageError("lease must be positive");
    const Script& s = scripts::acquire();
    const std::string_view ns = m_options.keyNamespace;
    const auto leaseMs = lease.value_or(m_options.lease).count();
    std::optional<ConnectionPool::Handle> conn(m_pool.acquire());

    // acquire.lua takes many ids per call (sparing EVALSHA's per-command cost); the calls go out
    // pipelined, so a batch is one round trip whatever its size. On a Redis Cluster every call
    // holds ids of one hash slot (a script's keys must share it); elsewhere ids go in order.
    constexpr std::size_t kIdsPerCall = 64;
    thread_local std::vector<std::size_t> order; // request indexes, call after call
    thread_local std::vector<std::size_t> callEnds; // where each call's ids end in `order`
    order.resize(requests.size());
    for (std::size_t i = 0; i < requests.size(); ++i)
        order[i] = i;
    callEnds.clear();
    // Whether this is a cluster is asked once, on the first call (INFO): a cluster's map is then
    // learned, so that calls find the promoted replica when the node given dies, and a batch's
    // ids are grouped by slot (a single id needs no grouping: its two keys share its hash tag).
    const bool cluster = m_router->clusterMode(**conn);
    if (cluster) {
        for (const auto& rq : requests)
            if (rq.id.front() == '}')
                throw UsageError("on a Redis Cluster an idempotency id cannot start with '}' (its keys "
                                 "would have no hash tag and land in different slots)");
        std::vector<std::uint16_t> slot(requests.size());
        for (std::size_t i = 0; i < requests.size(); ++i)
            slot[i] = hashSlot(recordKey(requests[i].id));
        std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return slot[a] < slot[b]; });
        for (std::size_t i = 0, first = 0; i < order.size(); ++i)
            if (i + 1 == order.size() || slot[order[i + 1]] != slot[order[first]] || i + 1 - first == kIdsPerCall) {
                callEnds.push_back(i + 1);
                first = i + 1;
            }
    } else {
        for (std::size_t end = kIdsPerCall; end < requests.size(); end += kIdsPerCall)
            callEnds.push_back(end);
        callEnds.push_back(requests.size());
    }

    // The calls are encoded straight into one RESP buffer: keys, tokens and arguments are written
    // where they go, not built as strings first (a batch is the consumers' hot path). Per-thread
    // buffers keep their capacity from batch to batch.
    thread_local std::string tokens, buf;
    thread_local std::vector<std::size_t> ends;
    tokens.assign(requests.size() * kTokenChars, '0');
    buf.clear();
    ends.clear();
    resp::Writer w(buf);
    for (std::size_t c = 0, first = 0; c < callEnds.size(); first = callEnds[c++]) {
        const auto request = [&](std::size_t k) -> const AcquireRequest& { return requests[order[first + k]]; };
        storecalls::writeAcquireCall(
            w, s, ns, callEnds[c] - first, [&](std::size_t k) { return std::string_view(request(k).id); },
            [&](std::size_t k) { return std::string_view(request(k).fingerprint); },
            [&](std::size_t k) {
                char* token = tokens.data() + order[first + k] * kTokenChars;
                writeToken(token);
                return std::string_view(token, kTokenChars);
            },
            leaseMs, m_options.staleKeep.count());
        ends.push_back(buf.size());
    }

    // With minReplicas, every pipeline ends with WAIT: its answer says how many replicas have the
    // acquires (the same round trip). Fewer than asked: the locks are released and nothing runs.
    const std::string trailer = m_options.minReplicas > 0 ? waitCommand(m_options.minReplicas, m_options.replicaTimeout)
                                                          : std::string();
    std::int64_t fewestAcks = std::numeric_limits<std::int64_t>::max();
    const auto takeAck = [&](std::vector<ReplyPtr>& rs, Connection& c) {
        if (!trailer.empty()) {
            const redisReply* w = rs.back().get();
            const std::int64_t acks = storecalls::replicasAcked(w);
            fewestAcks = std::min(fewestAcks, acks);
            rs.pop_back();
            if (acks < m_options.minReplicas)
                c.checkPrimary(); // a replaced primary without its replicas: go to the new one
        }
    };
    // Where each call goes: on a cluster, the node serving its slot (calls to one node pipelined
    // together, one round trip per node); elsewhere, all of them down the connection in hand.
    const std::size_t calls = callEnds.size();
    const auto callText = [&](std::size_t c) { return resp::callAt(buf, ends, c); };
    const auto callKey = [&](std::size_t c) { return recordKey(requests[order[c == 0 ? 0 : callEnds[c - 1]]].id); };
    // The releases of these calls' ids (null: of every call), written behind them if no answer
    // comes; the FollowUps below capture no more than fits in std::function without allocating
    const auto releasesOf = [&](const std::vector<std::size_t>* which) {
        std::vector<std::size_t> ids; // request indexes
        for (std::size_t k = 0, n = which ? which->size() : calls; k < n; ++k) {
            const std::size_t c = which ? (*which)[k] : k;
            for (std::size_t i = c == 0 ? 0 : callEnds[c - 1]; i < callEnds[c]; ++i)
                ids.push_back(order[i]);
        }
        return releasesBehind(
            ns, ids.size(), [&](std::size_t k) { return std::string_view(requests[ids[k]].id); },
            [&](std::size_t k) { return std::string_view(tokens).substr(ids[k] * kTokenChars, kTokenChars); },
            cluster, m_options.failureRetention);
    };
    std::vector<ReplyPtr> replies;
    const ConnectionPool* failing = nullptr; // the node a cluster's calls went to last
    if (!cluster) {
        {
            const Connection::FollowUp release(**conn, [&releasesOf] { return releasesOf(nullptr); });
            replies = runScriptPipelined(**conn, s, buf, ends, trailer);
        } // before the connection goes back to the pool
        takeAck(replies, **conn);
        conn.reset(); // back to the pool before parsing
    } else try {
        if (!m_router->mapped())
            m_router->refresh(**conn);
        conn.reset(); // before taking others: the pool may hold one connection only
        // the calls of each node (a cluster has few: a linear search per call is enough)
        std::vector<std::pair<ConnectionPool*, std::vector<std::size_t>>> byNode;
        for (std::size_t c = 0; c < calls; ++c) {
            ConnectionPool* pool = &m_router->poolForSlot(hashSlot(callKey(c)));
            auto at = std::find_if(byNode.begin(), byNode.end(), [&](const auto& n) { return n.first == pool; });
            if (at == byNode.end())
                at = byNode.insert(byNode.end(), {pool, {}});
            at->second.push_back(c);
        }
        replies.resize(calls);
        std::string nodeCalls;
        std::vector<std::size_t> nodeEnds;
        for (const auto& [pool, nodeIndex] : byNode) {
            nodeCalls.clear();
            nodeEnds.clear();
            for (const std::size_t c : nodeIndex) {
                nodeCalls.append(callText(c));
                nodeEnds.push_back(nodeCalls.size());
            }
            failing = pool;
            auto nodeConn = pool->acquire();
            const Connection::FollowUp release(*nodeConn, [&releasesOf, &nodeIndex] { return releasesOf(&nodeIndex); });
            auto nodeReplies = runScriptPipelined(*nodeConn, s, nodeCalls, nodeEnds, trailer);
            takeAck(nodeReplies, *nodeConn);
            for (std::size_t k = 0; k < nodeIndex.size(); ++k)
                replies[nodeIndex[k]] = std::move(nodeReplies[k]);
        }
    } catch (const IoError&) {
        // a node that does not answer may be failing over: these calls fail closed, and the map is
        // asked again of the other nodes, so that later calls find the promoted replica
        m_router->refreshAvoiding(failing ? *failing : m_pool);
        throw;
    }
    // calls answered with a redirect (a slot moved or moving, or a cluster not known to be one)
    // or TRYAGAIN go again, each on its own, where they were sent
    for (std::size_t c = 0; c < calls; ++c)
        if (reply::redirect(replies[c].get()) || isTryAgain(replies[c].get())) {
            const std::string_view text = callText(c);
            const std::vector<std::size_t> one = {text.size()};
            const std::vector<std::size_t> just = {c};
            replies[c] = m_router->routed(callKey(c), [&](Connection& cc) {
                const Connection::FollowUp release(cc, [&releasesOf, &just] { return releasesOf(&just); });
                auto rs = runScriptPipelined(cc, s, text, one, trailer);
                if (!reply::redirect(rs.front().get()))
                    takeAck(rs, cc);
                return std::move(rs.front());
            });
        }

    std::vector<AcquireResult> out(requests.size());
    for (std::size_t c = 0, first = 0; c < replies.size(); first = callEnds[c++]) {
        const redisReply* r = replies[c].get();
        if (reply::isError(r))
            throw ReplyError("acquire: " + reply::errorMessage(r));
        const std::size_t count = callEnds[c] - first;
        const auto tokenOf = [&](std::size_t i) { return std::string_view(tokens).substr(i * kTokenChars, kTokenChars); };
        if (count == 1) {
            const std::size_t i = order[first];
            storecalls::parseAcquireOne(out[i], r, requests[i].id, tokenOf(i), leaseMs);
            continue;
        }
        storecalls::readAcquireLines(r, count, [&](std::size_t k, LineReader& in, std::int64_t serverNowMs) {
            const std::size_t i = order[first + k];
            parseAcquireLine(out[i], in, requests[i].id, tokenOf(i), leaseMs);
            out[i].serverNowMs = serverNowMs;
        });
    }
    if (!trailer.empty() && fewestAcks < m_options.minReplicas) {
        // a lock no replica holds can vanish in a failover and the work run twice: give back every
        // lock this batch took, and run nothing
        std::size_t released = 0;
        for (const AcquireResult& a : out)
            if (a.status == AcquireStatus::Acquired) {
                try {
                    // not waiting for replicas again: they have just been waited for
                    const std::string retMs = std::to_string(m_options.failureRetention.count());
                    ownerCall(scripts::fail(), a.ticket,
                              {a.ticket.token, nameOf(FailPolicy::Release), "not replicated", retMs}, false);
                    ++released;
                } catch (const Error&) {
                    // its lease runs out by itself
                }
            }
        throw NotReplicatedError("acquire acknowledged by " + std::to_string(std::max<std::int64_t>(0, fewestAcks)) +
                                 " of the " + std::to_string(m_options.minReplicas) + " replica(s) asked within " +
                                 std::to_string(m_options.replicaTimeout.count()) + " ms; " +
                                 std::to_string(released) + " lock(s) released, the work is not run");
    }
    // a thread that once sent a huge batch does not keep its buffers for ever
    constexpr std::size_t kKeepBytes = 256 * 1024;
    if (buf.capacity() > kKeepBytes || tokens.capacity() > kKeepBytes) {
        buf = std::string();
        tokens = std::string();
        ends = std::vector<std::size_t>();
        order = std::vector<std::size_t>();
    }
    return out;
}

OwnerResult Store::ownerCall(const Script& s, const Ticket& t, const std::vector<std::string_view>& args,
                             bool waitForReplicas)
{
    checkId(t.id);
    std::int64_t acks = -1;
    ReplyPtr r;
    if (waitForReplicas && m_options.minReplicas > 0) {
        // the script and WAIT in one round trip
        const std::string rk = recordKey(t.id);
        const std::string_view key = rk;
        std::string call;
        resp::Writer w(call);
        resp::evalsha(w, s, {&key, 1}, args);
        const std::vector<std::size_t> one = {call.size()};
        const std::string trailer = waitCommand(m_options.minReplicas, m_options.replicaTimeout);
        r = m_router->routed(rk, [&](Connection& c) {
            auto rs = runScriptPipelined(c, s, call, one, trailer);
            acks = storecalls::replicasAcked(rs.back().get());
            if (acks < m_options.minReplicas)
                c.checkPrimary(); // a replaced primary without its replicas: the retry goes to the new one
            return std::move(rs.front());
        });
        if (reply::isError(r.get()))
            throw ReplyError("script " + std::string(s.name) + ": " + reply::errorMessage(r.get()));
    } else {
        r = routedScript(s, t.id, args, Keys::Record);
    }
    return storecalls::parseOwnerReply(s, r.get(), m_options, waitForReplicas, acks);
}

OwnerResult Store::complete(const Ticket& t, std::string_view response, std::optional<Millis> retention)
{
    const auto ret = storecalls::checkCompletion(m_options, response, retention);
    const std::string retMs = std::to_string(ret.count());
    return ownerCall(scripts::complete(), t, {t.token, response, retMs}, true);
}

OwnerResult Store::fail(const Ticket& t, FailPolicy policy, std::string_view error)
{
    const std::string retMs = std::to_string(m_options.failureRetention.count());
    // with minReplicas, waited for as a completion is: a refusal from a node no replica follows
    // is not believed (parseOwnerReply)
    return ownerCall(scripts::fail(), t, {t.token, nameOf(policy), error, retMs}, true);
}

OwnerResult Store::renew(const Ticket& t, std::optional<Millis> lease)
{
    const Millis leaseFor = lease.value_or(m_options.lease);
    const std::string leaseMs = std::to_string(leaseFor.count());
    const std::string keepMs = std::to_string(m_options.staleKeep.count());
    OwnerResult out = ownerCall(scripts::renew(), t, {t.token, leaseMs, keepMs}, true);
    if (out.status != OwnerStatus::LeaseLost)
        out.leaseUntilMs = out.serverNowMs + leaseFor.count(); // what the script wrote
    return out;
}

namespace {
AdminResult parseAdmin(const redisReply* r)
{
    using namespace reply;
    AdminResult out;
    const std::string status = str(element(r, 0));
    if (status == "OK") {
        out.status = AdminStatus::Ok;
        out.previousState = str(element(r, 1));
    } else if (status == "NOT_FOUND") {
        out.status = AdminStatus::NotFound;
    } else if (status == "REFUSED") {
        out.status = AdminStatus::Refused;
        out.reason = str(element(r, 1));
    } else if (status == "CHANGED") { // a guarded purge: not what was read any more
        out.status = AdminStatus::Refused;
        out.reason = "it changed since it was read (now " + str(element(r, 1)) + ")";
    } else {
        throw ProtoError("operator script answered '" + status + "'");
    }
    return out;
}
} // namespace

bool Store::auditInScript()
{
    // the audit stream shares the record's node on a single server; on a Redis Cluster it has a
    // slot of its own, and a script may not touch keys of two slots
    auto c = m_pool.acquire();
    return !m_router->clusterMode(*c);
}

void Store::appendAudit(std::string_view action, std::string_view key, std::string_view who, std::string_view why,
                        std::string_view was)
{
    const std::string stream = guard::auditKey(m_options.keyNamespace);
    const std::string entry = guard::auditEntry(stream, action, key, guard::Actor{std::string(who), std::string(why)}, was);
    const ReplyPtr r = m_router->routed(stream, [&](Connection& c) {
        auto replies = c.pipelineFormatted(entry, guard::kAuditCommands);
        return std::move(reply::isError(replies.front().get()) ? replies.front() : replies.back());
    });
    if (reply::isError(r.get()))
        throw ReplyError("audit: " + reply::errorMessage(r.get()));
}

AdminResult Store::forceFail(std::string_view id, std::string_view reason, bool terminal,
                             std::string_view who)
{
    checkId(id);
    const std::string retMs = std::to_string(m_options.failureRetention.count());
    const bool inScript = auditInScript();
    const std::string rk = recordKey(id), mk = metaKey(id), stream = guard::auditKey(m_options.keyNamespace),
                      from = guard::via(), maxLen = inScript ? std::to_string(guard::kAuditMaxLen) : "0",
                      ttl = std::to_string(guard::kAuditTtlMs);
    std::vector<std::string_view> keys = {rk, mk};
    if (inScript)
        keys.push_back(stream);
    const std::vector<std::string_view> args = {reason, terminal ? "terminal" : "retryable", who, retMs, from, maxLen, ttl};
    const ReplyPtr r = m_router->routed(rk, [&](Connection& c) { return runScriptReply(c, scripts::forceFail(), keys, args); });
    if (reply::isError(r.get()))
        throw ReplyError("script force_fail: " + reply::errorMessage(r.get()));
    AdminResult out = parseAdmin(r.get());
    if (out.status == AdminStatus::Ok && !inScript)
        appendAudit(terminal ? "force-fail terminal" : "force-fail retryable", rk, who, reason, out.previousState);
    return out;
}

AdminResult Store::purge(std::string_view id, std::string_view who, std::string_view reason, const Record* seen)
{
    checkId(id);
    // the fencing counter must outlive any lease that could still be held
    const std::int64_t keepMs = std::max(m_options.retention, m_options.lease + m_options.staleKeep).count();
    const bool inScript = auditInScript();
    const std::string rk = recordKey(id), mk = metaKey(id), stream = guard::auditKey(m_options.keyNamespace);
    std::string call;
    resp::Writer w(call);
    guard::writePurge(w, rk, mk, inScript ? std::string_view(stream) : std::string_view(), seen,
                      guard::Actor{std::string(who), std::string(reason)}, keepMs);
    const ReplyPtr r = m_router->routed(rk, [&](Connection& c) {
        return std::move(runScriptPipelined(c, scripts::purge(), call, {call.size()}).front());
    });
    if (reply::isError(r.get()))
        throw ReplyError("script purge: " + reply::errorMessage(r.get()));
    AdminResult out = parseAdmin(r.get());
    if (out.status == AdminStatus::Ok && !inScript)
        appendAudit("purge", rk, who, reason, out.previousState);
    return out;
}

std::vector<AuditEntry> Store::audit(std::size_t count)
{
    const std::string stream = guard::auditKey(m_options.keyNamespace), n = std::to_string(std::max<std::size_t>(1, count));
    const ReplyPtr r = m_router->routed(stream, [&](Connection& c) { return c.command({"XREVRANGE", stream, "+", "-", "COUNT", n}); });
    if (reply::isError(r.get()))
        throw ReplyError("audit: " + reply::errorMessage(r.get()));
    std::vector<AuditEntry> out;
    for (std::size_t i = 0; i < reply::arraySize(r.get()); ++i) {
        const redisReply* e = reply::element(r.get(), i);
        AuditEntry a;
        a.id = reply::str(reply::element(e, 0));
        std::int64_t ms = 0;
        std::from_chars(a.id.data(), a.id.data() + a.id.size(), ms);
        a.atMs = ms;
        const redisReply* f = reply::element(e, 1);
        for (std::size_t k = 0; k + 1 < reply::arraySize(f); k += 2) {
            const std::string name = reply::str(reply::element(f, k)), value = reply::str(reply::element(f, k + 1));
            if (name == "action") a.action = value;
            else if (name == "key") a.key = value;
            else if (name == "by") a.by = value;
            else if (name == "why") a.why = value;
            else if (name == "via") a.via = value;
            else if (name == "was") a.was = value;
        }
        out.push_back(std::move(a));
    }
    return out;
}

std::optional<Record> Store::inspect(std::string_view id)
{
    checkId(id);
    return inspectKey(recordKey(id));
}

std::optional<Record> Store::inspectKey(std::string_view key)
{
    DecodeOptions o;
    o.keyNamespace = m_options.keyNamespace;
    return inspectKey(key, o);
}

std::optional<Record> Store::inspectKey(std::string_view key, const DecodeOptions& options)
{
    const std::string rk(key);
    std::optional<KeyRead> read;
    DecodeOptions o = options;
    std::int64_t serverNowMs = 0;
    const ReplyPtr redirect = m_router->routed(rk, [&](Connection& c) {
        ReplyPtr to;
        read = readKey(c, rk, serverNowMs, to);
        return to;
    });
    if (o.nowMs == 0)
        o.nowMs = serverNowMs;
    if (redirect)
        throw ReplyError("TYPE " + rk + ": " + reply::errorMessage(redirect.get()));
    if (!read)
        return std::nullopt;
    if (const std::string companion = companionKey(rk); !companion.empty()) {
        const ReplyPtr e = m_router->routed(companion, [&](Connection& c) { return c.command({"EXISTS", companion}); });
        read->companionExists = reply::integer(e.get()) == 1;
    }
    return decode(*read, o);
}

// A key as inspect reads it, on one node: the whole hash, the whole string up to kInspectBytes
// (a larger one's first and last bytes). A redirect answering its first command is handed back.
std::optional<KeyRead> Store::readKey(Connection& c, const std::string& rk, std::int64_t& nowMs, ReplyPtr& redirect)
{
    constexpr std::int64_t kInspectBytes = 4 * 1024 * 1024, kTailBytes = 64 * 1024;
    auto head = c.pipeline({{"TYPE", rk}, {"PTTL", rk}, {"TIME"}, {"STRLEN", rk}});
    if (reply::redirect(head[0].get())) {
        redirect = std::move(head[0]);
        return std::nullopt;
    }
    KeyRead in;
    in.key = rk;
    in.type = reply::str(head[0].get());
    if (in.type == "none")
        return std::nullopt;
    nowMs = reply::timeMs(head[2].get());
    in.ttlMs = reply::integer(head[1].get());
    if (in.type == "hash") {
        ReplyPtr all = c.checked({"HGETALL", rk});
        for (std::size_t i = 0; i + 1 < reply::arraySize(all.get()); i += 2)
            in.fields.emplace_back(reply::str(reply::element(all.get(), i)), reply::str(reply::element(all.get(), i + 1)));
    } else if (in.type == "string") {
        in.valueBytes = reply::integer(head[3].get());
        if (in.valueBytes <= kInspectBytes) {
            ReplyPtr v = c.checked({"GET", rk});
            in.value = reply::str(v.get());
            in.valueBytes = static_cast<std::int64_t>(in.value.size());
        } else {
            auto parts = c.pipeline({{"GETRANGE", rk, "0", std::to_string(kInspectBytes - 1)},
                                     {"GETRANGE", rk, std::to_string(-kTailBytes), "-1"}});
            in.value = reply::str(parts[0].get());
            in.tail = reply::str(parts[1].get());
        }
    }
    return in;
}

std::vector<std::pair<std::string, std::string>> Store::meta(std::string_view id)
{
    checkId(id);
    return hashFields(metaKey(id));
}

std::vector<std::pair<std::string, std::string>> Store::hashFields(std::string_view key)
{
    const ReplyPtr all = m_router->routed(key, [&](Connection& c) { return c.command({"HGETALL", key}); });
    if (reply::isError(all.get()))
        throw ReplyError("HGETALL: " + reply::errorMessage(all.get()));
    std::vector<std::pair<std::string, std::string>> fields;
    for (std::size_t i = 0; i + 1 < reply::arraySize(all.get()); i += 2)
        fields.emplace_back(reply::str(reply::element(all.get(), i)),
                            reply::str(reply::element(all.get(), i + 1)));
    return fields;
}

} // namespace idem
