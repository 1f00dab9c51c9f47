#include "idem/engine/fingerprint.h"

#include "common/canonicaljson.h"

#include "idem/errors.h"
#include "idem/hash.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

namespace idem {

namespace {

// A number's decimal value as (sign, significant digits, exponent of the last digit): "0.10",
// "1e-1" and "00.1" all give (+, "1", -1). Empty digits: zero.
struct Decimal {
    bool negative = false;
    std::string digits;
    long exponent = 0;
    bool operator==(const Decimal&) const = default;
};

Decimal decimalOf(std::string_view text)
{
    Decimal d;
    std::size_t i = 0;
    if (i < text.size() && (text[i] == '-' || text[i] == '+'))
        d.negative = text[i++] == '-';
    long fractionDigits = 0;
    bool fraction = false;
    for (; i < text.size() && text[i] != 'e' && text[i] != 'E'; ++i) {
        if (text[i] == '.') {
            fraction = true;
            continue;
        }
        if (text[i] == '0' && d.digits.empty()) { // leading zeros say nothing
            fractionDigits += fraction;
            continue;
        }
        d.digits += text[i];
        fractionDigits += fraction;
    }
    long exponent = 0;
    if (i < text.size()) {
        const char* from = text.data() + i + 1;
        if (from < text.data() + text.size() && *from == '+')
            ++from;
        const auto [end, ec] = std::from_chars(from, text.data() + text.size(), exponent);
        // an exponent no double comes near (its own is within ±400): no decimal a double says
        if (ec != std::errc() || end != text.data() + text.size() || exponent > 100'000 || exponent < -100'000) {
            d.digits = "x";
            return d;
        }
    }
    while (!d.digits.empty() && d.digits.back() == '0') {
        d.digits.pop_back();
        --fractionDigits;
    }
    d.exponent = exponent - fractionDigits;
    if (d.digits.empty())
        d = Decimal{}; // zero is zero, whatever its sign
    return d;
}

// Whether nlohmann::json's text of a document says everything the document says: no object names
// a member twice (the library keeps the last), and every number it reads as a double is that
// double's shortest text (0.1000000000000000055511151231257827, 1e400 or an integer past 64 bits
// would come back as another, rounded number). When it does not, two payloads that differ would
// share a fingerprint, so the caller fingerprints the bytes instead.
class FaithfulCheck : public nlohmann::json::json_sax_t {
public:
    bool null() override { return true; }
    bool boolean(bool) override { return true; }
    bool number_integer(number_integer_t) override { return true; }
    bool number_unsigned(number_unsigned_t) override { return true; }
    bool number_float(number_float_t value, const string_t& text) override
    {
        char buf[64];
        const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
        if (ec != std::errc() || !std::isfinite(value))
            return faithful = false;
        if (!(decimalOf(text) == decimalOf(std::string_view(buf, static_cast<std::size_t>(end - buf)))))
            faithful = false;
        return faithful;
    }
    bool string(string_t&) override { return true; }
    bool binary(binary_t&) override { return true; }
    bool start_object(std::size_t) override
    {
        names.emplace_back();
        return deeper();
    }
    bool key(string_t& name) override
    {
        if (!names.back().insert(name).second)
            faithful = false;
        return faithful;
    }
    bool end_object() override
    {
        names.pop_back();
        --depth;
        return true;
    }
    bool start_array(std::size_t) override { return deeper(); }
    bool end_array() override
    {
        --depth;
        return true;
    }
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override
    {
        return faithful = false;
    }

    bool faithful = true;

private:
    // the JSON library builds and writes a tree by recursion: a document nested deeper than this
    // (a body of 40 000 '[') would overflow the stack; it is fingerprinted by its bytes
    bool deeper()
    {
        if (++depth > 512)
            faithful = false;
        return faithful;
    }

    std::vector<std::set<std::string>> names;
    int depth = 0;
};

} // namespace

std::string canonicalJson(std::string_view json)
{
    try {
        // nlohmann::json keeps objects in a std::map: dump() writes keys sorted
        return nlohmann::json::parse(json).dump();
    } catch (const nlohmann::json::exception& e) {
        throw UsageError(std::string("payload is not JSON: ") + e.what());
    }
}

std::string fingerprint(std::string_view payload)
{
    if (payload.empty())
        return {};
    std::string_view bytes = payload;
    std::string canonical;
    const auto first = payload.find_first_not_of(" \t\r\n");
    if (first != std::string_view::npos && (payload[first] == '{' || payload[first] == '[')) {
        // the common shapes without a tree (the library's text exactly); the rest through it
        if (appendCanonicalJson(payload, canonical)) {
            bytes = canonical;
        } else if (FaithfulCheck check; nlohmann::json::sax_parse(payload, &check) && check.faithful) {
            canonical = nlohmann::json::parse(payload).dump();
            bytes = canonical;
        } // else not JSON, or JSON whose canonical text would say less than it: its bytes

    }
    return "sha256:" + toHex(sha256(bytes));
}

std::string uuidV5(const std::string& nsBytes, std::string_view name)
{
    std::string input = nsBytes;
    input.append(name);
    auto h = sha1(input);
    h[6] = static_cast<std::uint8_t>((h[6] & 0x0f) | 0x50);
    h[8] = static_cast<std::uint8_t>((h[8] & 0x3f) | 0x80);
    const std::string hex = toHex(h.data(), 16);
    return hex.substr(0, 8) + "-" + hex.substr(8, 4) + "-" + hex.substr(12, 4) + "-" +
           hex.substr(16, 4) + "-" + hex.substr(20, 12);
}

namespace {
std::string uuidBytes(const std::string& text)
{
    std::string out;
    for (std::size_t i = 0; i + 1 < text.size(); ++i) {
        if (text[i] == '-')
            continue;
        out.push_back(static_cast<char>(std::stoi(text.substr(i, 2), nullptr, 16)));
        ++i;
    }
    return out;
}
} // namespace

std::string deriveId(std::string_view keyNamespace,
                     std::vector<std::pair<std::string, std::string>> fields, IdScheme scheme)
{
    std::sort(fields.begin(), fields.end());
    // length-prefixed "klen:key vlen:value;" pairs, sorted by name: unambiguous and binary-safe
    std::string canonical;
    for (std::size_t i = 0; i < fields.size(); ++i) {
        if (i > 0 && fields[i].first == fields[i - 1].first)
            throw UsageError("field '" + fields[i].first + "' given twice");
        const auto& [k, v] = fields[i];
        canonical.append(std::to_string(k.size())).append(":").append(k);
        canonical.append(" ").append(std::to_string(v.size())).append(":").append(v).append(";");
    }
    if (scheme == IdScheme::Sha256)
        return "sha256:" + toHex(sha256(std::string(keyNamespace) + '\n' + canonical));
    static const std::string dns = uuidBytes("6ba7b810-9dad-11d1-80b4-00c04fd430c8");
    const std::string ns = uuidBytes(uuidV5(dns, "idem:" + std::string(keyNamespace)));
    return uuidV5(ns, canonical);
}

} // namespace idem
