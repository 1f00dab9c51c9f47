#include "lab/labredis.h"

#include "idem/engine/scripts.h"
#include "idem/errors.h"
#include "idem/lab/racelab.h"
#include "idem/redis/cluster.h"
#include "idem/redis/reply.h"
#include "redis/slotmap.h"

#include <hiredis/hiredis.h>

#include <algorithm>

namespace idem {

namespace lua {
extern const std::string_view sink; // lua/sink.lua, embedded in the lab alone
}

std::shared_ptr<const LabTopology> LabTopology::read(const ConnectionOptions& o)
{
    if (o.viaSentinel())
        return nullptr;
    Connection c(o);
    if (!clusterEnabled(c))
        return nullptr;
    auto t = std::make_shared<LabTopology>();
    t->node.fill(-1);
    for (const ClusterShard& s : clusterShards(c)) {
        if (t->nodes.size() >= 1024)
            throw ProtoError("Redis Cluster: CLUSTER SLOTS names more than 1024 primaries");
        t->nodes.push_back(s.primary);
        for (const auto& [first, last] : s.ranges)
            std::fill(t->node.begin() + first, t->node.begin() + last + 1, static_cast<std::int16_t>(t->nodes.size() - 1));
    }
    return t;
}

LabRedis::LabRedis(ConnectionOptions options, std::shared_ptr<const LabTopology> topology)
    : m_options(std::move(options)), m_topology(std::move(topology))
{
}

Connection& LabRedis::at(std::string_view key)
{
    const std::int16_t n = m_topology ? m_topology->node[hashSlot(key)] : std::int16_t(-1);
    auto& c = m_connections[n];
    if (!c) {
        ConnectionOptions o = m_options;
        if (n >= 0) {
            const std::string& address = m_topology->nodes[static_cast<std::size_t>(n)];
            const auto node = parseNodeAddress(address); // clusterShards checked it
            if (!node)
                throw ProtoError("Redis Cluster named a node idem cannot read: '" + address + "'");
            o.unixSocket.clear();
            o.host = node->host;
            o.port = node->port;
            o.namedByServer = true;
        }
        c = std::make_unique<Connection>(o);
    }
    return *c;
}

namespace {
const Script& sinkScript() // the lab's fenced side effect
{
    static const Script s = makeScript("sink", lua::sink);
    return s;
}
std::string ledgerKey(std::string_view ns, std::string_view id)
{
    return std::string(ns).append(":executions:{").append(id).append("}");
}
} // namespace

bool labEffect(LabRedis& redis, std::string_view ns, std::string_view id, std::int64_t fence, std::string_view worker)
{
    const std::string n(ns), i(id);
    const std::string sink = n + ":sink:{" + i + "}", ledger = ledgerKey(ns, id), record = n + ":{" + i + "}";
    const std::string f = std::to_string(fence), ttl = std::to_string(kLabTtlMs);
    ReplyPtr r = runScript(redis.at(record), sinkScript(), {sink, ledger, record}, {id, f, worker, ttl});
    return reply::integer(r.get()) == 1;
}

std::vector<std::pair<std::string, int>> labLedger(LabRedis& redis, std::string_view ns,
                                                   const std::vector<std::string>& ids)
{
    // LLEN of each event's ledger, pipelined per node in bounded batches
    std::map<Connection*, std::vector<std::size_t>> byNode;
    std::vector<std::string> keys;
    keys.reserve(ids.size());
    for (std::size_t i = 0; i < ids.size(); ++i) {
        keys.push_back(ledgerKey(ns, ids[i]));
        byNode[&redis.at(keys.back())].push_back(i);
    }
    std::vector<int> count(ids.size(), 0);
    constexpr std::size_t kBatch = 1000;
    for (auto& [conn, which] : byNode)
        for (std::size_t from = 0; from < which.size(); from += kBatch) {
            std::vector<std::vector<std::string_view>> commands;
            for (std::size_t k = from; k < std::min(which.size(), from + kBatch); ++k)
                commands.push_back({"LLEN", keys[which[k]]});
            const auto replies = conn->pipeline(commands);
            for (std::size_t k = 0; k < replies.size(); ++k) {
                if (reply::isError(replies[k].get()))
                    throw ReplyError("lab ledger: " + std::string(reply::errorText(replies[k].get())));
                count[which[from + k]] = static_cast<int>(reply::integer(replies[k].get()));
            }
        }
    std::vector<std::pair<std::string, int>> out;
    for (std::size_t i = 0; i < ids.size(); ++i)
        if (count[i] > 0)
            out.emplace_back(ids[i], count[i]);
    return out;
}

} // namespace idem
