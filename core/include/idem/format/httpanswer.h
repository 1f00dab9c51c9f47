#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace idem {

// An HTTP answer as idem-gateway stores it in a record's `response` (docs/gateway.md):
//   {"gateway":1,"method":"POST","route":"/orders","status":201,
//    "headers":[["Content-Type","application/json"]],"body":"..."}
// with "body_base64" instead of "body" when the body is not UTF-8 text, and a header whose value is
// not UTF-8 stored as ["Name","<base64>","base64"] (its bytes, which a JSON string would change;
// readers before it skip such a header). The one decoder of that
// format: the gateway replays from it, idemctl and the console show it.
struct HttpAnswer {
    std::string method;
    std::string route;
    int status = 0;
    std::vector<std::pair<std::string, std::string>> headers; // as stored, in order
    std::string body;                                        // the bytes
    bool bodyBase64 = false;                                 // stored as base64 (not UTF-8 text)

    // The first header of that name (case-insensitive), or nullptr.
    const std::string* header(std::string_view name) const;
};

// nullopt when `stored` is not a gateway's answer (any other response, or a broken one).
std::optional<HttpAnswer> decodeHttpAnswer(std::string_view stored);

// How a body reads: JSON pretty-printed, UTF-8 text as it is, anything else as a hex dump.
enum class BodyKind : std::uint8_t { Empty, Json, Text, Binary };
struct BodyView {
    BodyKind kind = BodyKind::Empty;
    std::string text;      // what to show
    std::size_t bytes = 0; // the body's size
    bool cut = false;      // `text` shows only the first part
};
// JSON when it parses as JSON (whatever `contentType` says: a JSON-looking text body is shown
// pretty too, unless the type says text/plain); text when it is UTF-8 without control characters
// other than tab and line breaks; otherwise the first `hexBytes` bytes as `offset  hex  |ascii|`
// lines. Text and JSON longer than `maxText` bytes are cut (on a character boundary).
BodyView viewBody(std::string_view body, std::string_view contentType = {}, std::size_t maxText = 64 * 1024,
                  std::size_t hexBytes = 256);
std::string_view nameOf(BodyKind k); // "empty", "JSON", "text", "binary"

// Whether `s` is well-formed UTF-8 (no overlongs, no surrogates, nothing above U+10FFFF).
bool isUtf8(std::string_view s);

} // namespace idem
