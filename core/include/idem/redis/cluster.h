#pragma once

#include "idem/redis/connection.h"

#include <cstdint>
#include <string_view>

namespace idem {

// The Redis Cluster hash slot of a key (CRC16 of its hash tag, or of the whole key, mod 16384).
std::uint16_t hashSlot(std::string_view key);
// Whether the server runs in cluster mode (INFO cluster); a server whose INFO is refused counts
// as standalone.
bool clusterEnabled(Connection& c);

} // namespace idem
