#include "idem/monitor/monitor.h"

#include "idem/redis/cluster.h"

#include <algorithm>

namespace idem {

std::string ScanCoverage::warning() const
{
    if (complete())
        return {};
    if (!unknown.empty())
        return "Redis Cluster: which hash slots this node holds is unknown (" + unknown +
               "); keys held by other nodes are not listed";
    if (primaries <= 1) // slots no primary serves: the cluster is not whole
        return "Redis Cluster: this node holds " + std::to_string(slotsHere) + " of " + std::to_string(kSlots) +
               " hash slots, and no other primary serves the rest";
    return "Redis Cluster: this node holds " + std::to_string(slotsHere) + " of " + std::to_string(kSlots) +
           " hash slots (" + std::to_string(primaries) + " primaries); keys on the other primaries are not listed";
}

ScanCoverage scanCoverage(Connection& c)
{
    ScanCoverage cov;
    if (!clusterEnabled(c))
        return cov;
    cov.cluster = true;
    const ReplyPtr nodes = c.command({"CLUSTER", "NODES"});
    if (reply::isError(nodes.get())) {
        cov.unknown = "CLUSTER NODES: " + std::string(reply::errorText(nodes.get()));
        return cov;
    }
    const std::vector<ClusterNodeLine> all = parseClusterNodes(reply::str(nodes.get()));
    cov.primaries = 0;
    for (const ClusterNodeLine& n : all)
        cov.primaries += n.isPrimary && n.slotsHeld > 0 ? 1 : 0;
    const auto me = std::find_if(all.begin(), all.end(), [](const ClusterNodeLine& n) { return n.myself; });
    if (me == all.end()) {
        cov.unknown = "CLUSTER NODES names no node as myself";
        return cov;
    }
    cov.slotsHere = me->slotsHeld;
    if (!me->isPrimary) { // a replica lists its primary's keys
        const auto primary = std::find_if(all.begin(), all.end(), [&](const ClusterNodeLine& n) { return n.id == me->primary; });
        cov.slotsHere = primary == all.end() ? 0 : primary->slotsHeld;
    }
    return cov;
}

} // namespace idem
