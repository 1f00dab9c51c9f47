#include "idem/gateway/keyrules.h"

#include "idem/engine/fingerprint.h"
#include "idem/hash.h"

#include <algorithm>
#include <array>
#include <utility>

namespace idem::gateway {

namespace {

bool alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// RFC 8941 sf-token characters after the first: tchar, ':' and '/'
bool tokenChar(char c)
{
    return alpha(c) || (c >= '0' && c <= '9') || std::string_view("!#$%&'*+-.^_`|~:/").find(c) != std::string_view::npos;
}

std::string digest(std::string_view s, std::size_t bytes)
{
    const auto d = sha256(s);
    return toHex(d.data(), std::min(bytes, d.size()));
}

} // namespace

std::optional<std::string> parseKey(std::string_view v, std::string* why)
{
    const auto refuse = [&](const char* reason) -> std::optional<std::string> {
        if (why)
            *why = reason;
        return std::nullopt;
    };
    std::string key;
    if (!v.empty() && v.front() == '"') {
        std::size_t i = 1;
        for (; i < v.size() && v[i] != '"'; ++i) {
            char c = v[i];
            if (c == '\\') {
                if (++i >= v.size() || (v[i] != '"' && v[i] != '\\'))
                    return refuse("the key is not a valid sf-string: only \\\" and \\\\ are escapes");
                c = v[i];
            } else if (c < 0x20 || c > 0x7e) {
                return refuse("the key has a character that is not printable ASCII");
            }
            key.push_back(c);
        }
        if (i >= v.size())
            return refuse("the key's sf-string is not closed");
        if (i + 1 != v.size())
            return refuse("the key is followed by something (one key, no parameters)");
    } else {
        // A bare key: an sf-token, or what clients send unquoted (a UUID that starts with a digit,
        // base64 with '=' and '+'), so any run of printable ASCII that cannot be read as something
        // else: no space, no quote, no ',' (a list of keys), no ';' (parameters)
        if (v.empty())
            return refuse("the key is empty");
        for (const char c : v) {
            if (c == ',')
                return refuse("one key, not a list of them");
            if (c == ';')
                return refuse("the key is followed by parameters (one key, no parameters)");
            if (c < 0x21 || c > 0x7e || c == '"')
                return refuse("an unquoted key is printable ASCII without spaces or quotes: quote it as an sf-string "
                              "(\"...\")");
        }
        key = v;
    }
    if (key.empty())
        return refuse("the key is empty");
    if (key.size() > kMaxKeyLength)
        return refuse("the key is longer than 255 characters");
    return key;
}

std::optional<KeyScope> parseKeyScope(std::string_view text)
{
    KeyScope s;
    if (text == "none") {
        s.kind = KeyScope::Kind::None;
    } else if (text == "authorization") {
        s.kind = KeyScope::Kind::Authorization;
    } else if (text.starts_with("header:") && text.size() > 7) {
        s.kind = KeyScope::Kind::Header;
        s.header = text.substr(7);
        for (const char c : s.header)
            if (!tokenChar(c) || c == ':' || c == '/')
                return std::nullopt;
    } else {
        return std::nullopt;
    }
    return s;
}

std::string recordId(const http::Request& r, const KeyScope& scope, std::string_view key)
{
    std::string credential = "anonymous";
    const std::string name = scope.kind == KeyScope::Kind::Header ? scope.header : std::string("Authorization");
    if (scope.kind != KeyScope::Kind::None)
        if (const std::string* v = r.header(name))
            credential = "c" + digest(http::lowerAscii(name) + '\n' + *v, 16);
    // the path as routes read it ("//orders" and "/orders;v=1" are /orders), and without a last
    // "/" (Express routes "/orders/" to /orders): a retry that spells the path another way finds
    // this record (and, its fingerprint differing, gets 422), never a record of its own and a
    // second execution upstream
    std::string routed = r.route;
    if (routed.size() > 1 && routed.back() == '/')
        routed.pop_back();
    const std::string path = routed.size() > 512 ? "sha256:" + digest(routed, 32) : routed;
    std::string id = credential;
    // "post" with a key POST used is that key's duplicate, not a record of its own
    id.append(" ").append(http::upperMethod(r.method).substr(0, 32)).append(" ").append(path).append(" ").append(key);
    return id;
}

std::optional<std::string> ambiguousScope(const http::Request& r, const KeyScope& scope)
{
    const std::string name = scope.kind == KeyScope::Kind::Header ? scope.header : std::string("Authorization");
    if (scope.kind != KeyScope::Kind::None && r.headerCount(name) > 1)
        return "one " + name + " header, not several: the key's record is scoped by it";
    for (const auto& h : r.headers) {
        if (!http::equalsIgnoreCase(h.name, "Connection"))
            continue;
        std::string_view list = h.value;
        while (!list.empty()) {
            const auto comma = list.find(',');
            std::string_view t = list.substr(0, comma);
            while (!t.empty() && (t.front() == ' ' || t.front() == '\t'))
                t.remove_prefix(1);
            while (!t.empty() && (t.back() == ' ' || t.back() == '\t'))
                t.remove_suffix(1);
            if (http::equalsIgnoreCase(t, "Idempotency-Key") ||
                (scope.kind != KeyScope::Kind::None && http::equalsIgnoreCase(t, name)))
                return "the Connection header names " + std::string(t) +
                       ", which the record is scoped by: it would not reach the upstream";
            list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
        }
    }
    return std::nullopt;
}

// The parameters keep their order: an upstream may read a reordered query another way (PHP maps
// '.' in a name to '_' and the last value wins, so "amount_usd=1000&amount.usd=1" is not
// "amount.usd=1&amount_usd=1000"), and a retry sends the same query anyway. Only empty parameters
// ("a=1&&b=2&") go, which no upstream reads as anything.
std::string canonicalQuery(std::string_view query)
{
    std::string out;
    while (!query.empty()) {
        const auto amp = query.find('&');
        const std::string_view p = query.substr(0, amp);
        if (!p.empty())
            out.append(out.empty() ? "" : "&").append(p);
        query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    }
    return out;
}

std::string requestFingerprint(const http::Request& r, std::span<const std::string> headers)
{
    std::string s = http::upperMethod(r.method);
    s.append("\n").append(r.path).append("\n").append(canonicalQuery(r.query)).append("\n").append(fingerprint(r.body));
    for (const std::string& name : headers) { // "\n<name>:-" when not sent, "\n<name>:<length>:<values>" when sent
        s.append("\n").append(http::lowerAscii(name)).append(":");
        std::string values;
        bool sent = false;
        for (const http::Header& h : r.headers)
            if (http::equalsIgnoreCase(h.name, name))
                values.append(std::exchange(sent, true) ? ", " : "").append(h.value);
        if (sent)
            s.append(std::to_string(values.size())).append(":").append(values);
        else
            s.append("-");
    }
    return "sha256:" + digest(s, 32);
}

std::optional<std::vector<std::string>> fingerprintHeaders(std::vector<std::string> names, std::string* why)
{
    for (const std::string& n : names) {
        const bool token = !n.empty() && std::all_of(n.begin(), n.end(), [](char c) {
            return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                   std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
        });
        if (!token)
            *why = "'" + n + "' is not a header name";
        else if (hopByHop(n))
            *why = n + " belongs to one connection (hop-by-hop), not to the request: a retry may differ in it";
        else if (http::equalsIgnoreCase(n, "Idempotency-Key"))
            *why = "Idempotency-Key is the record's id already";
        else
            continue;
        return std::nullopt;
    }
    std::sort(names.begin(), names.end(),
              [](const std::string& a, const std::string& b) { return http::lowerAscii(a) < http::lowerAscii(b); });
    names.erase(std::unique(names.begin(), names.end(),
                            [](const std::string& a, const std::string& b) { return http::equalsIgnoreCase(a, b); }),
                names.end());
    return names;
}

bool hopByHop(std::string_view name)
{
    static constexpr std::array<std::string_view, 12> kNames = {
        "Connection", "Keep-Alive", "Proxy-Connection", "TE",   "Trailer", "Transfer-Encoding",
        "Upgrade",    "Host",       "Content-Length",   "Expect", "Proxy-Authorization", "Idempotency-Fence"};
    return std::any_of(kNames.begin(), kNames.end(), [&](std::string_view n) { return http::equalsIgnoreCase(n, name); });
}

bool replayedHeader(std::string_view name)
{
    return std::any_of(kReplayedHeaders.begin(), kReplayedHeaders.end(), [&](std::string_view n) { return http::equalsIgnoreCase(n, name); });
}

} // namespace idem::gateway
