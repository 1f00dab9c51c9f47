// SHA-1 (for UUIDv5 and Redis script ids) and SHA-256 (fingerprints, scoped ids), per FIPS 180-4,
// through OpenSSL's libcrypto (core links it for TLS): its SHA extensions and vector code instead
// of a portable loop, which the gateway's profile showed at a few per cent of a replay.
#include "idem/hash.h"

#include "idem/errors.h"

#include <openssl/evp.h>

#include <memory>

namespace idem {

namespace {

// One context per thread, reused; the algorithm fetched once per process
template <std::size_t N> std::array<std::uint8_t, N> digestOf(const char* algorithm, std::string_view data)
{
    static EVP_MD* const md = EVP_MD_fetch(nullptr, algorithm, nullptr);
    thread_local const std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(),
                                                                                    &EVP_MD_CTX_free);
    std::array<std::uint8_t, N> out{};
    unsigned int size = 0;
    if (!md || !ctx || EVP_DigestInit_ex2(ctx.get(), md, nullptr) != 1 ||
        EVP_DigestUpdate(ctx.get(), data.data(), data.size()) != 1 ||
        EVP_DigestFinal_ex(ctx.get(), out.data(), &size) != 1 || size != N)
        throw Error(std::string("OpenSSL cannot compute ") + algorithm);
    return out;
}

} // namespace

std::array<std::uint8_t, 20> sha1(std::string_view data) { return digestOf<20>("SHA1", data); }

std::array<std::uint8_t, 32> sha256(std::string_view data) { return digestOf<32>("SHA256", data); }

std::string toHex(const std::uint8_t* data, std::size_t size)
{
    static constexpr char digits[] = "0123456789abcdef";
    std::string out(size * 2, '0');
    for (std::size_t i = 0; i < size; ++i) {
        out[2 * i] = digits[data[i] >> 4];
        out[2 * i + 1] = digits[data[i] & 0xf];
    }
    return out;
}

} // namespace idem
