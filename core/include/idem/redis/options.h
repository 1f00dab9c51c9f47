#pragma once

#include "idem/duration.h"

#include <chrono>
#include <string>
#include <string_view>

namespace idem {

// How to reach Redis. A value type with defaults, like redis-plus-plus' ConnectionOptions.
struct ConnectionOptions {
    std::string host = "127.0.0.1";
    int port = 6379;
    std::string unixSocket; // when set, host/port are ignored
    int db = 0;
    std::string user;       // ACL user; empty = "default"
    std::string password;   // empty = no AUTH
    Millis connectTimeout{1000};
    Millis commandTimeout{2000};
    // Reconnect backoff: after a failed connect, calls fail fast until the backoff has passed;
    // each further failure doubles it up to the maximum.
    Millis reconnectMin{50};
    Millis reconnectMax{2000};

    // redis://[user[:password]@]host[:port][/db] (password only: redis://:password@host)
    // or unix://[user[:password]@]/path/to.sock[?db=N]
    // Throws UsageError with a one-line reason on anything else.
    static ConnectionOptions fromUrl(std::string_view url);
    // The URL without the password, for messages, titles and remembered connections.
    std::string describe() const;

private:
    static ConnectionOptions parseUrl(std::string_view input, std::string_view shownInErrors);
};

} // namespace idem
