#pragma once

#include "idem/redis/asyncconnection.h"
#include "redis/slotmap.h"

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace idem {

// AsyncPool's Redis Cluster routing (see AsyncPool::routed): the slot map, the other nodes' pools.
struct AsyncPool::Routing {
    explicit Routing(AsyncPool& seed) : seed(seed) {}
    ~Routing(); // closes the other nodes' pools first: their failing calls still find this

    struct Call {
        std::string key;
        UnitSender send;
        RepliesHandler done;
        int hops = 0;
    };
    void dispatch(const std::shared_ptr<Call>& call, AsyncConnection& c, bool asking);
    AsyncPool& poolAt(const std::string& address);
    AsyncPool& poolFor(std::string_view key);
    void refreshFrom(AsyncConnection& c);
    // Once, with the first call: whether the seed is a cluster node, and if so the whole map, so
    // that if the seed dies the others (its promoted replica) are known without a redirect first.
    void askWhetherCluster();
    void refreshAvoiding(const std::string& failed);
    void askForMap(std::shared_ptr<const std::vector<std::string>> nodes, std::size_t i); // refreshAvoiding's turns
    void closeAll(); // the other nodes' pools (AsyncPool::close)

    AsyncPool& seed;
    std::atomic<bool> closing{false};
    std::atomic<bool> cluster{false};  // learned from INFO cluster (asked once) or the first redirect
    std::atomic<bool> asked{false};    // INFO cluster sent
    std::atomic<bool> refreshing{false}; // one CLUSTER SLOTS under way at a time
    SlotMap map;
    std::mutex mutex; // pools
    std::map<std::string, std::unique_ptr<AsyncPool>, std::less<>> pools; // never erased
};

} // namespace idem
