#include "idem/gateway/metrics.h"

#include <cstdio>

namespace idem::gateway {

std::string_view nameOf(Outcome o)
{
    switch (o) {
    case Outcome::Executed: return "executed";
    case Outcome::Replayed: return "replayed";
    case Outcome::Conflict: return "conflict";
    case Outcome::Mismatch: return "mismatch";
    case Outcome::Released: return "released";
    case Outcome::TooLarge: return "too_large";
    case Outcome::Rejected: return "rejected";
    case Outcome::Bypassed: return "bypassed";
    case Outcome::StoreError: return "store_error";
    case Outcome::Takeover: return "takeover";
    }
    return "unknown";
}

namespace {
std::string number(double v)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}
} // namespace

void Histogram::observe(double seconds)
{
    for (std::size_t i = 0; i < kBounds.size(); ++i)
        if (seconds <= kBounds[i])
            ++m_buckets[i];
    ++m_count;
    m_sum += seconds;
}

std::string Histogram::render(std::string_view name, std::string_view help) const
{
    const std::string n(name);
    std::string out = "# HELP " + n + " " + std::string(help) + "\n# TYPE " + n + " histogram\n";
    for (std::size_t i = 0; i < kBounds.size(); ++i)
        out += n + "_bucket{le=\"" + number(kBounds[i]) + "\"} " + std::to_string(m_buckets[i]) + "\n";
    out += n + "_bucket{le=\"+Inf\"} " + std::to_string(m_count) + "\n";
    out += n + "_sum " + number(m_sum) + "\n" + n + "_count " + std::to_string(m_count) + "\n";
    return out;
}

std::string Metrics::render(std::size_t openConnections) const
{
    std::string out = "# HELP idem_gateway_requests_total Requests by what became of them.\n"
                      "# TYPE idem_gateway_requests_total counter\n";
    for (int i = 0; i < kOutcomes; ++i)
        out += "idem_gateway_requests_total{outcome=\"" + std::string(nameOf(static_cast<Outcome>(i))) + "\"} " +
               std::to_string(outcomes[static_cast<std::size_t>(i)]) + "\n";
    out += "# HELP idem_gateway_unstored_total Answers that should have been stored and were not (lease lost, Redis "
           "away).\n# TYPE idem_gateway_unstored_total counter\nidem_gateway_unstored_total " +
           std::to_string(unstored) + "\n";
    out += "# HELP idem_gateway_open_connections Client connections open now.\n"
           "# TYPE idem_gateway_open_connections gauge\nidem_gateway_open_connections " +
           std::to_string(openConnections) + "\n";
    out += request.render("idem_gateway_request_duration_seconds", "Time from a request's last byte to its answer.");
    out += upstream.render("idem_gateway_upstream_duration_seconds", "Time the upstream took to answer.");
    return out;
}

} // namespace idem::gateway
