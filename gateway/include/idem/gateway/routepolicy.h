#pragma once

#include "idem/duration.h"

#include <QByteArray>
#include <QString>

#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace idem::gateway {

// What the gateway does with the requests of one route. The command line gives the default
// policy (every route); `--config FILE` adds routes, each taking what it does not name from it.
struct RoutePolicy {
    std::string route;        // as written: "POST,PUT /payments", "/payments"; "" for the default
    std::set<std::string> on; // the methods the route is for; empty: every method
    std::string prefix = "/"; // the path prefix, whole segments ("/pay" is not "/payments")
    std::set<std::string> methods; // the protected methods; the others pass through
    bool requireKey = false;
    Millis lease{30'000};
    Millis retention{24LL * 3'600'000};
    std::vector<std::string> stored;   // statuses stored: "2xx" (a class) or "409" (one)
    std::vector<std::string> replayed; // headers stored with an answer and replayed (allow-list)
    std::vector<std::string> fingerprinted; // request headers the fingerprint reads (fingerprintHeaders())
    std::size_t maxBody = 1 << 20;

    bool stores(int status) const;
    bool replays(std::string_view header) const;
    bool matches(std::string_view method, std::string_view path) const;
};

// The stored statuses of the command line: 2xx 3xx 4xx, and 5xx with --store-5xx.
std::vector<std::string> defaultStored(bool store5xx);
// The headers replayed unless a route says otherwise: Content-Type, Location, ETag, ...
std::vector<std::string> defaultReplayed();

// The default and the routes of --config: the route for a request is the one with the longest
// matching prefix, at equal prefixes the one naming the request's method; none: the default.
struct Policy {
    RoutePolicy defaults;
    std::vector<RoutePolicy> routes;

    // route: the request's path as routes read it (http::Request::route, http::routePath)
    const RoutePolicy& of(std::string_view method, std::string_view route) const;
    Millis longestLease() const;
    std::size_t largestBody() const;
};

// Reads the JSON of --config:
//   {"routes": [{"route": "POST /payments", "methods": ["POST"], "key_required": true,
//                "retention": "7d", "lease": "10s", "store": ["2xx", "409"],
//                "replay_headers": ["Content-Type", "Location"], "max_body": "64KiB",
//                "fingerprint_headers": ["X-Api-Version"]}, ...]}
// Every field but "route" is optional (taken from `defaults`); unknown fields are refused. False
// with one line in `error` naming the route and the field.
bool parseRoutes(const QByteArray& json, const RoutePolicy& defaults,
                 std::vector<RoutePolicy>& routes, QString* error);

} // namespace idem::gateway
