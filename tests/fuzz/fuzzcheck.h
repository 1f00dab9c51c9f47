#pragma once

// What every fuzz target shares: a property check that stops the run with the input's story
// (libFuzzer keeps the input as a crash artifact; the corpus replay fails its ctest), and a reader
// that cuts one fuzzed input into the values a target feeds.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#define FUZZ_CHECK(cond, ...)                                                                      \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            std::fprintf(stderr, "property failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__);       \
            ::fuzzsupport::explain(__VA_ARGS__);                                                   \
            std::abort();                                                                          \
        }                                                                                          \
    } while (false)

namespace fuzzsupport {

inline void explain() {}
inline void explain(std::string_view what) { std::fprintf(stderr, "  %.*s\n", static_cast<int>(what.size()), what.data()); }

// Takes values off the front of the input; past its end every value is empty or zero, so any
// input is a valid one.
class Input {
public:
    Input(const std::uint8_t* data, std::size_t size) : m_s(reinterpret_cast<const char*>(data), size) {}

    std::uint8_t byte()
    {
        if (m_s.empty())
            return 0;
        const auto b = static_cast<std::uint8_t>(m_s.front());
        m_s.remove_prefix(1);
        return b;
    }
    // eight bytes, little-endian
    std::uint64_t u64()
    {
        std::uint64_t v = 0;
        for (int i = 0; i < 8; ++i)
            v |= static_cast<std::uint64_t>(byte()) << (8 * i);
        return v;
    }
    std::int64_t i64() { return static_cast<std::int64_t>(u64()); }
    // a value in [lo, hi]
    std::int64_t range(std::int64_t lo, std::int64_t hi)
    {
        const auto span = static_cast<std::uint64_t>(hi - lo) + 1;
        return lo + static_cast<std::int64_t>(span == 0 ? u64() : u64() % span);
    }
    // up to the next separator byte (taken off, not returned), or the rest
    std::string_view section(char separator = '\x1f')
    {
        const auto at = m_s.find(separator);
        const std::string_view out = m_s.substr(0, at);
        m_s.remove_prefix(at == std::string_view::npos ? m_s.size() : at + 1);
        return out;
    }
    std::string_view rest()
    {
        const std::string_view out = m_s;
        m_s = {};
        return out;
    }
    bool empty() const { return m_s.empty(); }

private:
    std::string_view m_s;
};

} // namespace fuzzsupport
