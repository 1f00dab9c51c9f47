#pragma once

#include "idem/redis/pool.h"
#include "redis/slotmap.h"

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

namespace idem {

// Where a key's commands go: the pool given (standalone), or on a Redis Cluster the node serving
// the key's hash slot. Which node serves each slot is learned from CLUSTER SLOTS when a caller
// finds the server in cluster mode or a reply redirects (MOVED: the slot moved; ASK: it is moving,
// ask the other node once). Pools to the other nodes are made on first use, with the options of
// the pool given (its host and port replaced). Thread-safe.
class ClusterRouter {
public:
    explicit ClusterRouter(ConnectionPool& seed);

    ConnectionPool& seed() { return m_seed; }
    // Whether the server runs in cluster mode, asked once (INFO cluster); known() says whether
    // it has been asked or learned from a redirect.
    bool clusterMode(Connection& c);
    bool knownCluster() const { return m_mode.load() == 1; }
    bool mapped() const;
    void refresh(Connection& c); // CLUSTER SLOTS; a refusal leaves the map as it was
    // The map asked again of any node but `failed` (which did not answer), e.g. after a failover.
    void refreshAvoiding(const std::string& failed);
    void refreshAvoiding(const ConnectionPool& failed); // its node
    bool modeKnown() const { return m_mode.load() >= 0; }

    ConnectionPool& poolAt(const std::string& address);
    ConnectionPool& poolForSlot(std::uint16_t slot);

    // Runs `run` on the node serving `key`'s slot, following up to a few redirects (and waiting
    // out TRYAGAIN while a slot moves); returns the last reply (a redirect still, if they did not
    // end). `run` is called with a connection; it is not kept.
    template <typename Run> ReplyPtr routed(std::string_view key, Run&& run)
    {
        return routedImpl(key, &run, [](void* f, Connection& c) { return (*static_cast<Run*>(f))(c); });
    }

private:
    ReplyPtr routedImpl(std::string_view key, void* run, ReplyPtr (*call)(void*, Connection&));

    ConnectionPool& m_seed;
    std::atomic<int> m_mode{-1}; // -1 not asked yet, 0 standalone, 1 cluster_enabled
    SlotMap m_map;
    mutable std::shared_mutex m_mutex; // m_pools
    std::map<std::string, std::unique_ptr<ConnectionPool>, std::less<>> m_pools; // never erased
};

// TRYAGAIN: the slot is being moved and not all of a script's keys are on one side yet.
bool isTryAgain(const redisReply* r);

} // namespace idem
