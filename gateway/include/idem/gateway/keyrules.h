#pragma once

#include "idem/gateway/httprequest.h"

#include <array>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

// The Idempotency-Key rules of the gateway (draft-ietf-httpapi-idempotency-key-header-07):
// the key's syntax, whose record a request is, and what makes two requests the same. Qt-free.
namespace idem::gateway {

inline constexpr std::size_t kMaxKeyLength = 255;

// The key an Idempotency-Key field value names: an sf-string ("..." with \" and \\ escapes) or a
// bare key (an sf-token, or any printable ASCII without space, quote, ',' or ';', as clients send
// UUIDs and base64 unquoted), 1 to 255 characters once unquoted. nullopt with `why` set otherwise.
std::optional<std::string> parseKey(std::string_view fieldValue, std::string* why = nullptr);

// Whose key it is: none (every client shares the key space), the Authorization header (the
// default), or another header (an API key, a tenant id).
struct KeyScope {
    enum class Kind { None, Authorization, Header } kind = Kind::Authorization;
    std::string header; // Kind::Header
};
// "none", "authorization", "header:NAME". nullopt otherwise.
std::optional<KeyScope> parseKeyScope(std::string_view text);

// The record's id: a digest of the credential (never the credential itself), the method, the
// route and the key - never the raw key alone, so one client cannot replay another's answer.
// "<credential digest | anonymous> <METHOD> <path> <key>"; a path over 512 bytes is replaced by
// its digest, so that the id stays within a record id's 1024 bytes. The path is r.route.
std::string recordId(const http::Request& r, const KeyScope& scope, std::string_view key);

// Why a request's record cannot be told (nullopt: it can): the scope header given more than once
// (the upstream gets them all, comma-joined, while one would scope the record: "Bearer A" with
// "Bearer B" and "Bearer A" with "Bearer C" would share it), or a Connection header naming the
// scope header or Idempotency-Key (the gateway would then strip what the record is scoped by).
std::optional<std::string> ambiguousScope(const http::Request& r, const KeyScope& scope);

// The query as the fingerprint reads it: its parameters in the order sent ("b=2&a=1" and
// "a=1&b=2" are two queries: an upstream may read them differently), empty parameters dropped.
std::string canonicalQuery(std::string_view query);

// What makes a retry the same request: the method, the path, the canonical query, the body (a
// JSON body canonically, see idem::fingerprint) and the values of `headers` (a route's
// fingerprint headers, as fingerprintHeaders() orders them: a header sent is not one left out, and
// several fields of one name are their values in the order sent, as one joined by ", "). Without
// headers the digest is what it was before routes could name any. "sha256:<hex>".
std::string requestFingerprint(const http::Request& r, std::span<const std::string> headers = {});

// The header names a fingerprint reads, in its order (sorted case-insensitively, each once), or
// nullopt with `why` said: a name that is not a token, a header of one connection (hop-by-hop:
// Host, Content-Length, Transfer-Encoding, ...; a retry on another connection may differ in it)
// or Idempotency-Key (the key is the record's id already).
std::optional<std::vector<std::string>> fingerprintHeaders(std::vector<std::string> names, std::string* why);

// Headers that belong to one connection, not to the message (RFC 9110 7.6.1), and the ones the
// gateway sets itself for the upstream: never forwarded.
bool hopByHop(std::string_view name);
// Headers stored with an answer and replayed unless a route of --config names others; Set-Cookie,
// Date and the rest never are.
inline constexpr std::array<std::string_view, 11> kReplayedHeaders = {
    "Content-Type", "Content-Language", "Content-Location", "Content-Disposition", "Content-Encoding", "Location",
    "ETag",         "Last-Modified",    "Link",             "Cache-Control",       "Vary"};
bool replayedHeader(std::string_view name);

} // namespace idem::gateway
