#include "idem/base64.h"

#include <cstdint>

namespace idem {

std::string toBase64(std::string_view in)
{
    static constexpr char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    out.reserve((in.size() + 2) / 3 * 4);
    const auto byte = [&](std::size_t i) { return static_cast<std::uint32_t>(static_cast<unsigned char>(in[i])); };
    std::size_t i = 0;
    for (; i + 2 < in.size(); i += 3) {
        const std::uint32_t v = byte(i) << 16 | byte(i + 1) << 8 | byte(i + 2);
        out += {t[v >> 18], t[v >> 12 & 63], t[v >> 6 & 63], t[v & 63]};
    }
    if (i < in.size()) {
        const bool two = i + 1 < in.size();
        const std::uint32_t v = byte(i) << 16 | (two ? byte(i + 1) << 8 : 0);
        out += {t[v >> 18], t[v >> 12 & 63], two ? t[v >> 6 & 63] : '=', '='};
    }
    return out;
}

std::optional<std::string> fromBase64(std::string_view s)
{
    if (s.size() % 4 != 0)
        return std::nullopt;
    const auto value = [](char c) -> int {
        if (c >= 'A' && c <= 'Z')
            return c - 'A';
        if (c >= 'a' && c <= 'z')
            return c - 'a' + 26;
        if (c >= '0' && c <= '9')
            return c - '0' + 52;
        return c == '+' ? 62 : c == '/' ? 63 : -1;
    };
    std::string out;
    out.reserve(s.size() / 4 * 3);
    for (std::size_t i = 0; i < s.size(); i += 4) {
        const bool last = i + 4 == s.size();
        const int pad = last ? (s[i + 3] == '=') + (s[i + 2] == '=') : 0;
        if (pad == 1 && s[i + 2] == '=')
            return std::nullopt; // "x=y=" is no padding
        std::uint32_t n = 0;
        for (int k = 0; k < 4 - pad; ++k) {
            const int v = value(s[i + static_cast<std::size_t>(k)]);
            if (v < 0)
                return std::nullopt;
            n = n << 6 | static_cast<std::uint32_t>(v);
        }
        n <<= 6 * pad;
        out.push_back(static_cast<char>(n >> 16 & 0xFF));
        if (pad < 2)
            out.push_back(static_cast<char>(n >> 8 & 0xFF));
        if (pad < 1)
            out.push_back(static_cast<char>(n & 0xFF));
    }
    return out;
}

} // namespace idem
