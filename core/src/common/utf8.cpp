#include "idem/utf8.h"

namespace idem {

int utf8Tail(unsigned char lead, unsigned char next)
{
    if (lead >= 0xC2 && lead <= 0xDF)
        return (next & 0xC0) == 0x80 ? 1 : 0;
    unsigned char lo = 0x80, hi = 0xBF;
    int n = 0;
    if (lead >= 0xE0 && lead <= 0xEF) {
        n = 2;
        lo = lead == 0xE0 ? 0xA0 : 0x80;
        hi = lead == 0xED ? 0x9F : 0xBF;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
        n = 3;
        lo = lead == 0xF0 ? 0x90 : 0x80;
        hi = lead == 0xF4 ? 0x8F : 0xBF;
    }
    return n && next >= lo && next <= hi ? n : 0;
}

bool validUtf8(std::string_view s)
{
    for (std::size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c < 0x80) {
            ++i;
            continue;
        }
        const int n = i + 1 < s.size() ? utf8Tail(c, static_cast<unsigned char>(s[i + 1])) : 0;
        if (n == 0 || i + 1 + static_cast<std::size_t>(n) > s.size())
            return false;
        for (int k = 2; k <= n; ++k)
            if ((static_cast<unsigned char>(s[i + static_cast<std::size_t>(k)]) & 0xC0) != 0x80)
                return false;
        i += 1 + static_cast<std::size_t>(n);
    }
    return true;
}

bool bidiControl(char32_t c)
{
    return c == 0x061C || c == 0x200E || c == 0x200F || (c >= 0x202A && c <= 0x202E) || (c >= 0x2066 && c <= 0x2069);
}

} // namespace idem
