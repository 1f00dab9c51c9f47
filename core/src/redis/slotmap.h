#pragma once

#include "idem/redis/cluster.h"
#include "idem/redis/reply.h"

#include <array>
#include <cstdint>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

struct redisReply;

namespace idem {

// A CLUSTER SLOTS reply as shards (grouped by primary, by first slot). A node named with an empty
// host or "?" is the one that answered, known as `answeringHost`. Throws ProtoError for a reply no
// cluster sends (more ranges than slots, more than kMaxClusterNodes primaries), ReplyError for a
// refusal.
std::vector<ClusterShard> parseClusterSlots(const redisReply* r, const std::string& answeringHost);
inline constexpr std::size_t kMaxClusterNodes = 1000; // Redis' own advice caps a cluster at 1000 nodes

// Which primary serves each hash slot: what the routers (blocking and asynchronous) share.
// Thread-safe.
class SlotMap {
public:
    SlotMap() { m_node.fill(-1); }
    void update(const std::vector<ClusterShard>& shards); // the whole map, as CLUSTER SLOTS told it
    void pin(std::uint16_t slot, const std::string& address); // MOVED: this slot, at least, is there
    std::optional<std::string> addressFor(std::uint16_t slot) const; // nullopt: not known
    bool empty() const;
    // Every node the cluster named, primaries and replicas, and the nodes MOVED named: whom to ask
    // for the map when the nodes asked so far do not answer (a primary that died: its replica)
    std::vector<std::string> nodes() const;
    // Whom to ask for the map when `failed` does not answer: `talkedTo` in order (the seed first),
    // then every node the map named; each once, `failed` left out.
    std::vector<std::string> nodesToAsk(const std::vector<std::string>& talkedTo, const std::string& failed) const;

private:
    std::int16_t indexLocked(const std::string& address);

    mutable std::shared_mutex m_mutex;
    std::array<std::int16_t, 16384> m_node;
    std::vector<std::string> m_addresses; // at most kMaxClusterNodes
    std::vector<std::string> m_nodes;     // m_addresses and the replicas, at most kMaxClusterNodes
};

} // namespace idem
