#include "idem/monitor/monitor.h"

#include "idem/redis/cluster.h"

#include <algorithm>
#include <cstdlib>

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
    // one line per node: id addr flags primary-id ping pong epoch link slot...
    // (slots as "a-b" or "a"; "[a->-id]" / "[a-<-id]" are slots migrating, not held)
    struct Node {
        std::string id, primary;
        bool myself = false, isPrimary = false;
        int slots = 0;
    };
    std::vector<Node> all;
    const std::string text = reply::str(nodes.get());
    std::size_t pos = 0;
    while (pos < text.size()) {
        const std::size_t eol = std::min(text.find('\n', pos), text.size());
        std::vector<std::string_view> f;
        for (std::size_t p = pos; p < eol;) {
            const std::size_t sp = std::min(text.find(' ', p), eol);
            if (sp > p)
                f.push_back(std::string_view(text).substr(p, sp - p));
            p = sp + 1;
        }
        pos = eol + 1;
        if (f.size() < 8)
            continue;
        Node n;
        n.id = f[0];
        const std::string flags = "," + std::string(f[2]) + ",";
        n.myself = flags.find(",myself,") != std::string::npos;
        n.isPrimary = flags.find(",master,") != std::string::npos;
        n.primary = f[3];
        for (std::size_t i = 8; i < f.size(); ++i) {
            if (f[i].starts_with("["))
                continue;
            const auto dash = f[i].find('-');
            const int a = std::atoi(std::string(f[i].substr(0, dash)).c_str());
            const int b = dash == std::string_view::npos ? a : std::atoi(std::string(f[i].substr(dash + 1)).c_str());
            n.slots += b >= a ? b - a + 1 : 0;
        }
        all.push_back(std::move(n));
    }
    cov.primaries = 0;
    for (const Node& n : all)
        cov.primaries += n.isPrimary && n.slots > 0 ? 1 : 0;
    const auto me = std::find_if(all.begin(), all.end(), [](const Node& n) { return n.myself; });
    if (me == all.end()) {
        cov.unknown = "CLUSTER NODES names no node as myself";
        return cov;
    }
    cov.slotsHere = me->slots;
    if (!me->isPrimary) { // a replica lists its primary's keys
        const auto primary = std::find_if(all.begin(), all.end(), [&](const Node& n) { return n.id == me->primary; });
        cov.slotsHere = primary == all.end() ? 0 : primary->slots;
    }
    return cov;
}

} // namespace idem
