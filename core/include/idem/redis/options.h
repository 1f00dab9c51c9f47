#pragma once

#include "idem/duration.h"

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

namespace idem {

// TLS to the server (rediss://). Verification of the chain and of the host name is on by default.
struct TlsOptions {
    bool enabled = false;
    std::string caFile;     // CA bundle (PEM); empty: the system's trust store
    std::string certFile;   // client certificate (PEM), for servers with tls-auth-clients yes
    std::string keyFile;    // its private key (PEM)
    std::string serverName; // SNI and the name verified; empty: the host
    bool insecure = false;  // no verification at all (say so wherever it shows)
};

// A Sentinel-managed primary: the sentinels to ask, and the name they know it by.
struct SentinelOptions {
    struct Node {
        std::string host;
        int port = 26379;
    };
    std::vector<Node> nodes; // empty: not through Sentinel
    std::string master;      // the name after '#'
    std::string user;        // the sentinels' own ACL user and password (--sentinel-password)
    std::string password;
};

// How to reach Redis. A value type with defaults, like redis-plus-plus' ConnectionOptions.
struct ConnectionOptions {
    std::string host = "127.0.0.1";
    int port = 6379;
    std::string unixSocket; // when set, host/port are ignored
    int db = 0;
    std::string user;       // ACL user; empty = "default"
    std::string password;   // empty = no AUTH
    TlsOptions tls;
    SentinelOptions sentinel; // when it has nodes, host/port are the primary it last named
    // After connecting, READONLY: a cluster replica then answers reads of its primary's slots
    // instead of redirecting them (what a monitor reading from replicas needs).
    bool readOnly = false;
    // A node a server named (a Redis Cluster's slot map), not one the user gave: the seed it came
    // from answered with these options, so a hang-up before this node's first answer is the node
    // going away (worth another try), not a TLS port or a refused certificate.
    bool namedByServer = false;
    Millis connectTimeout{1000};
    Millis commandTimeout{2000};
    // Reconnect backoff: after a failed connect, calls fail fast until the backoff has passed;
    // each further failure doubles it up to the maximum.
    Millis reconnectMin{50};
    Millis reconnectMax{2000};

    // redis://[user[:password]@]host[:port][/db] (password only: redis://:password@host)
    // rediss://... the same over TLS (port 6379 unless given)
    // unix://[user[:password]@]/path/to.sock[?db=N]
    // redis-sentinel://[user[:password]@]host[:port][,host[:port]...][/db]#MASTER (sentinels on
    //   26379 unless given; the credentials are the data node's); rediss-sentinel:// for TLS to
    //   the data nodes
    // Throws UsageError with a one-line reason on anything else.
    static ConnectionOptions fromUrl(std::string_view url);
    // The URL without the password, for messages, titles and remembered connections; it parses back
    // to the same options (the user and the master's name %-escaped where a URL needs it). fromUrl refuses a host with
    // spaces, control bytes or URL delimiters, and a '%' that is not followed by two hex digits.
    std::string describe() const;
    bool viaSentinel() const { return !sentinel.nodes.empty(); }

private:
    static ConnectionOptions parseUrl(std::string_view input, std::string_view shownInErrors);
};

} // namespace idem
