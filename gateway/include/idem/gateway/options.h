#pragma once

#include "idem/duration.h"
#include "idem/gateway/keyrules.h"
#include "idem/gateway/routepolicy.h"
#include "idem/redis/options.h"

#include <QHostAddress>
#include <QSslConfiguration>
#include <QString>
#include <QStringList>
#include <QUrl>

#include <optional>
#include <set>
#include <string>

namespace idem::gateway {

// Everything idem-gateway is told on its command line. A value type with defaults.
struct GatewayOptions {
    QUrl upstream;                              // http:// or https://, an optional base path
    QHostAddress listenHost = QHostAddress::LocalHost;
    quint16 listenPort = 8080;                  // 0: any free port (printed)
    std::optional<QSslConfiguration> listenTls; // --listen-cert/--listen-key: the listener speaks TLS
    bool admin = false;                         // --admin-listen given
    QHostAddress adminHost = QHostAddress::LocalHost;
    quint16 adminPort = 0;
    bool urlGiven = false;                      // else: an embedded private redis-server
    ConnectionOptions connection;
    std::string keyNamespace = "idempotency";
    std::set<std::string> methods = {"POST", "PATCH"};
    bool requireKey = false;
    Millis lease{30'000};
    Millis retention{24LL * 3'600'000};
    std::size_t maxBody = 1 << 20;
    std::size_t maxResponse = 8 << 20;          // larger answers are passed on, not stored
    KeyScope scope;
    bool store5xx = false;
    std::vector<std::string> fingerprintHeaders; // --fingerprint-headers, as fingerprintHeaders() orders them
    bool failOpen = false;
    int minReplicas = 0;          // a lock and an answer count once this many replicas have them (WAIT)
    Millis replicaTimeout{1000};  // how long each WAIT waits
    Millis upstreamTimeout{30'000};
    Millis idleTimeout{60'000};
    Millis headerTimeout{10'000}; // from a request's first byte to the end of its head; then 408
    Millis bodyTimeout{60'000};   // from the end of the head to the end of the body; then 408
    std::size_t maxConnections = 0; // clients at once, beyond which accepting pauses; 0: from RLIMIT_NOFILE
    Millis drainTimeout{20'000}; // SIGTERM: how long requests under way may take to end (below a 30 s kill)
    Millis waitInProgress{0}; // a duplicate in flight waits this long for the first's answer; 0: 409 at once
    QString policyLink; // the Link rel="describedby" of a 400; empty: the admin listener's /policy to
                        // a client on this machine, the draft to others
    std::vector<RoutePolicy> routes; // --config: routes whose policy differs from the flags' (the default)
};

// The policy of the flags, for every route that --config does not name.
RoutePolicy defaultPolicy(const GatewayOptions& o);

// Reads the command line (arguments()[0] is the program). Returns -1 and fills `options` to go
// on, or the exit code after printing help, the version, or one line saying what is wrong
// (exit 64; 69 when --listen-cert is given and Qt has no TLS backend).
int parseCommandLine(const QStringList& arguments, GatewayOptions& options);

} // namespace idem::gateway
