#pragma once

#include "idem/redis/localserver.h"

#include <memory>
#include <string>
#include <vector>

namespace idem {

// A Redis Cluster of private redis-servers on loopback (tests, benchmarks, demos): `primaries`
// nodes splitting the 16384 hash slots evenly, then `replicas` more, each replicating one primary
// in turn (cluster-node-timeout 3 s); ready - every node sees cluster_state:ok and all the others -
// when the constructor returns. Throws idem::Error when it does not come up in 15 s.
class LocalCluster {
public:
    explicit LocalCluster(int primaries, int replicas = 0);
    ~LocalCluster();
    int size() const { return static_cast<int>(m_nodes.size()); }
    ConnectionOptions node(int i) const;
    std::string url(int i) const;
    LocalServer& server(int i) { return *m_nodes.at(static_cast<std::size_t>(i)); }
    // Waits until every replica has what its primary has (replication offsets) and every node
    // lists the replicas in CLUSTER SLOTS (only once gossip brought their offsets).
    void waitForReplication(Millis timeout = Millis(15000));

private:
    std::vector<std::unique_ptr<LocalServer>> m_nodes;
};

} // namespace idem
