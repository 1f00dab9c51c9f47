#pragma once

#include "idem/redis/connection.h"

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace idem {

// Which node serves each hash slot, read once when a lab run starts (CLUSTER SLOTS); empty on a
// single server or through Sentinel. A lab run is short: a topology change during it is not
// followed (a command then gets MOVED, and the run ends with that error).
struct LabTopology {
    std::vector<std::string> nodes;       // "host:port" of each primary
    std::array<std::int16_t, 16384> node; // index into nodes; -1: no node
    static std::shared_ptr<const LabTopology> read(const ConnectionOptions& o); // nullptr: no cluster
};

// One lab thread's connections: on a cluster one per node, each key's commands on the node that
// serves its slot (every key of one event shares the event's hash tag: one node, one connection).
// Not thread-safe: one per thread.
class LabRedis {
public:
    LabRedis(ConnectionOptions options, std::shared_ptr<const LabTopology> topology);
    Connection& at(std::string_view key);

private:
    ConnectionOptions m_options;
    std::shared_ptr<const LabTopology> m_topology;
    std::map<std::int16_t, std::unique_ptr<Connection>> m_connections; // -1: the one given
};

// The lab's business side effect: appends to the event's ledger <ns>:executions:{id}, unless the
// fencing number is lower than the highest seen for the event or no longer its record's (<ns>:{id})
// owner. fence 0 = no fencing. Returns false when it was refused.
bool labEffect(LabRedis& redis, std::string_view ns, std::string_view id, std::int64_t fence, std::string_view worker);
// Executions per event id in the ledgers of <ns>, for the ids given (those with none left out).
std::vector<std::pair<std::string, int>> labLedger(LabRedis& redis, std::string_view ns,
                                                   const std::vector<std::string>& ids);

} // namespace idem
