#pragma once

#include "idem/redis/options.h"

#include <optional>
#include <string>

namespace idem {

// The connection options a command line takes (idemctl's global options, idem-gateway's): a URL
// and the TLS and Sentinel settings that go with it. One reading for every program, so the same
// flags mean the same and are refused with the same words.
struct ConnectionFlags {
    std::string url;
    std::optional<std::string> tlsCa, tlsCert, tlsKey, tlsServerName, sentinelPassword;
    bool tlsInsecure = false;
};

// The options the flags name. TLS settings need a rediss:// (or rediss-sentinel://) URL and the
// Sentinel password a redis-sentinel:// one; none may be empty. Throws UsageError with one line
// that names the flag at fault (or the URL's own reason).
ConnectionOptions connectionFromFlags(const ConnectionFlags& flags);

} // namespace idem
