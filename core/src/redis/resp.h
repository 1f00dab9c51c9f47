#pragma once

// RESP2 request encoding, written straight into one buffer: what hiredis' redisFormatCommandArgv
// produces, without its per-argument sds growth (a hot-path cost for batches of many keys).
// Internal to idem::core.

#include <charconv>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>

namespace idem {
struct Script;
}

namespace idem::resp {

class Writer {
public:
    explicit Writer(std::string& out) : m_out(out) {}

    // "*<n>\r\n": the command that follows has n arguments
    void array(std::size_t n) { header('*', n); }

    void bulk(std::string_view s)
    {
        header('$', s.size());
        m_out.append(s).append("\r\n");
    }

    // a whole command: "*<n>" and its n arguments
    void command(std::span<const std::string_view> args)
    {
        array(args.size());
        for (auto a : args)
            bulk(a);
    }

    // one argument made of several pieces, e.g. a key "<ns>:{" id "}"
    template <typename... Parts>
    void bulkConcat(const Parts&... parts)
    {
        header('$', (std::string_view(parts).size() + ...));
        (m_out.append(std::string_view(parts)), ...);
        m_out.append("\r\n");
    }

    void bulk(long long v)
    {
        char digits[24];
        const auto end = std::to_chars(digits, digits + sizeof digits, v).ptr;
        bulk(std::string_view(digits, static_cast<std::size_t>(end - digits)));
    }

private:
    void header(char kind, std::size_t n)
    {
        char digits[24];
        const auto end = std::to_chars(digits, digits + sizeof digits, n).ptr;
        m_out.push_back(kind);
        m_out.append(digits, end).append("\r\n");
    }

    std::string& m_out;
};

// Call i of several encoded back to back in `resp`, call i ending at ends[i]
inline std::string_view callAt(std::string_view resp, std::span<const std::size_t> ends, std::size_t i)
{
    const std::size_t from = i == 0 ? 0 : ends[i - 1];
    return resp.substr(from, ends[i] - from);
}

// "EVALSHA <sha1> <keys>" heading a call with `keys` keys and `args` arguments (written next;
// at most kMaxScriptKeys keys)
void evalshaHead(Writer& w, const Script& s, std::size_t keys, std::size_t args);
// A whole call: the head, then the keys and the arguments
void evalsha(Writer& w, const Script& s, std::span<const std::string_view> keys,
             std::span<const std::string_view> args);

} // namespace idem::resp
