#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace idem {

// "sha256:<hex>" of the payload. A payload that parses as JSON is fingerprinted in canonical form
// (object keys sorted, no whitespace), so field order and formatting do not change it; anything
// else is fingerprinted byte for byte, and so is JSON whose canonical form would lose something it
// says (a member named twice; a number a double cannot hold, such as 0.1000000000000000055511 or an
// integer past 64 bits): two payloads that differ never share a fingerprint. An empty payload has
// no fingerprint ("": not checked).
std::string fingerprint(std::string_view payload);

// Canonical JSON text (sorted keys, compact); throws UsageError if the text is not JSON.
std::string canonicalJson(std::string_view json);

enum class IdScheme {
    UuidV5, // RFC 4122 name-based UUID (SHA-1), namespace = UUIDv5(DNS, "idem:" + ns)
    Sha256, // "sha256:<hex>" of ns + canonical fields
};

// A deterministic idempotency id from a namespace and named fields (e.g. "order", "line"),
// independent of the order the fields are given in. Throws UsageError on a repeated field name.
std::string deriveId(std::string_view keyNamespace,
                     std::vector<std::pair<std::string, std::string>> fields,
                     IdScheme scheme = IdScheme::UuidV5);

// RFC 4122 version 5 UUID of `name` in the namespace UUID `ns` (16 raw bytes).
std::string uuidV5(const std::string& nsBytes, std::string_view name);

} // namespace idem
