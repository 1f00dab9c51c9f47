#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace idem::gateway {

// What became of a request (one per request, counted once).
enum class Outcome {
    Executed,   // forwarded under a fresh key; the answer stored
    Replayed,   // answered from the stored answer
    Conflict,   // 409: the key's first request is still in flight (or failed for good)
    Mismatch,   // 422: the key was used with another request
    Released,   // forwarded; the answer (5xx, timeout, reset, too large to store) released the key
    TooLarge,   // 413
    Rejected,   // 400 and the parser's other refusals: never stored
    Bypassed,   // a method not protected, or no key without --require-key: forwarded untouched
    StoreError, // Redis unreachable or refusing: 503 (or forwarded unprotected with --fail-open)
    Takeover,   // forwarded after taking over a key whose lease ran out; the answer stored
};
inline constexpr int kOutcomes = 10;
std::string_view nameOf(Outcome o);

// A Prometheus histogram with fixed buckets (seconds).
class Histogram {
public:
    void observe(double seconds);
    std::string render(std::string_view name, std::string_view help) const;
    std::uint64_t count() const { return m_count; }

private:
    static constexpr std::array<double, 14> kBounds = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                       0.1,    0.25,  0.5,    1,     2.5,   5,    10};
    std::array<std::uint64_t, kBounds.size()> m_buckets{};
    std::uint64_t m_count = 0;
    double m_sum = 0;
};

// The gateway's counters, kept on its thread; /metrics renders them.
struct Metrics {
    std::array<std::uint64_t, kOutcomes> outcomes{};
    std::uint64_t unstored = 0; // an answer that should have been stored was not (lease lost, Redis away)
    Histogram request, upstream;

    void count(Outcome o) { ++outcomes[static_cast<std::size_t>(o)]; }
    std::uint64_t of(Outcome o) const { return outcomes[static_cast<std::size_t>(o)]; }
    std::string render(std::size_t openConnections) const;
};

} // namespace idem::gateway
