#pragma once
// The benchmarks' store at scale: N keys in the mix a shared production store holds - idem's
// records in every state (60 % completed), other libraries' JSON strings, bare status strings,
// a malformed value, a key of another type, one key in a hundred without a TTL.

#include "idem/redis/connection.h"

#include <functional>
#include <string_view>

namespace idembench {

// The keys are scale:{order-<i>}; `connectionFor(key)` says where each goes (one server: always
// the same connection; a cluster: the node serving its slot). Pipelined 10,000 commands at a time.
void loadScaleData(int n, const std::function<idem::Connection&(std::string_view key)>& connectionFor);

} // namespace idembench
