#include "idem/engine/fingerprint.h"

#include "common/canonicaljson.h"

#include "idem/errors.h"
#include "idem/hash.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace idem {

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
        } else if (auto j = nlohmann::json::parse(payload, nullptr, /*allow_exceptions=*/false); !j.is_discarded()) {
            canonical = j.dump();
            bytes = canonical;
        }
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
