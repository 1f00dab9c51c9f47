#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace idem {

// Standard base64 with padding (RFC 4648 §4, what QByteArray::toBase64 writes): the way bytes that
// are not UTF-8 travel in JSON (a stored answer's body, idemctl's stdout and keys).
std::string toBase64(std::string_view bytes);
// The bytes, or nullopt for anything but that form (no whitespace, no missing padding).
std::optional<std::string> fromBase64(std::string_view s);

} // namespace idem
