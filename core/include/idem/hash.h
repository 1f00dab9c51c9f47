#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace idem {

std::array<std::uint8_t, 20> sha1(std::string_view data);
std::array<std::uint8_t, 32> sha256(std::string_view data);
std::string toHex(const std::uint8_t* data, std::size_t size);
// A hex digit's value, either case; -1 for anything else.
constexpr int hexDigit(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}
template <std::size_t N> std::string toHex(const std::array<std::uint8_t, N>& a)
{
    return toHex(a.data(), N);
}

} // namespace idem
