#pragma once

#include "idem/redis/connection.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace idem {

// The Redis Cluster hash slot of a key (CRC16 of its hash tag, or of the whole key, mod 16384).
std::uint16_t hashSlot(std::string_view key);
// Whether the server runs in cluster mode (INFO cluster); a server whose INFO is refused counts
// as standalone.
bool clusterEnabled(Connection& c);

// A primary and its replicas, serving some hash slots (CLUSTER SLOTS, grouped by primary).
struct ClusterShard {
    int firstSlot = 0; // its lowest slot: what names the shard across a failover
    int slotCount = 0; // how many it serves
    std::vector<std::pair<int, int>> ranges; // first and last slot of each range it serves
    std::string primary;               // "host:port"
    std::vector<std::string> replicas; // "host:port", as the cluster lists them
};
// The shards of a cluster, by first slot. Throws ReplyError when CLUSTER SLOTS is refused.
std::vector<ClusterShard> clusterShards(Connection& c);

// One line of CLUSTER NODES: "id addr flags primary-id ping pong epoch link slot...", slots as
// "a-b" or "a"; "[a->-id]" / "[a-<-id]" are slots being moved (migrating or importing), not held.
struct ClusterNodeLine {
    std::string id, primary; // primary: its primary's id, "-" for a primary
    bool myself = false, isPrimary = false;
    int slotsHeld = 0;      // how many it holds (not "slots": a Qt macro)
    bool moving = false;    // a slot is being moved out of it or into it
};
std::vector<ClusterNodeLine> parseClusterNodes(std::string_view text);

} // namespace idem
