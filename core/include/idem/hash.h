#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace idem {

std::array<std::uint8_t, 20> sha1(std::string_view data);
std::array<std::uint8_t, 32> sha256(std::string_view data);
std::string toHex(const std::uint8_t* data, std::size_t size);
template <std::size_t N> std::string toHex(const std::array<std::uint8_t, N>& a)
{
    return toHex(a.data(), N);
}

} // namespace idem
