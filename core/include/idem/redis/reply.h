#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

struct redisReply;

namespace idem {

struct ReplyDeleter {
    void operator()(redisReply* r) const noexcept;
};
// Owns one hiredis reply tree.
using ReplyPtr = std::unique_ptr<redisReply, ReplyDeleter>;

// A node's address as Redis writes it in MOVED and ASK redirects: "host:port", the host before the
// last colon (Redis writes an IPv6 address without brackets: "::1:7000"; "[::1]:7000" is read too),
// the port 1..65535 in digits alone. The host may be empty: Redis 7's unknown endpoint
// ("MOVED 3999 :6380", cluster-preferred-endpoint-type unknown-endpoint) means the host the
// request went to. A host with spaces or control bytes is no address. nullopt for anything else.
struct NodeAddress {
    std::string host;
    int port = 0;
};
std::optional<NodeAddress> parseNodeAddress(std::string_view address);
// A TCP port written in digits alone (no sign, no space, nothing after), 1..65535.
std::optional<int> parsePort(std::string_view digits);

namespace reply {
bool isNil(const redisReply* r);
bool isError(const redisReply* r);
bool isInteger(const redisReply* r);
bool isString(const redisReply* r); // bulk or status
std::string_view errorText(const redisReply* r);
// A Redis Cluster redirect error: "MOVED <slot> <host:port>" or "ASK <slot> <host:port>", the
// slot 0..16383 in digits alone, the address as parseNodeAddress() reads it.
struct Redirect {
    bool ask = false;
    std::uint16_t slot = 0;
    std::string address; // as written ("host:port")
    NodeAddress node;     // its host (empty: the node the request went to) and port
};
std::optional<Redirect> redirect(const redisReply* r); // nullopt for anything else, malformed included
// The error text for a message: a Redis Cluster redirect that reaches a caller (the Store follows
// them; a Connection does not) says which node serves the slot.
std::string errorMessage(const redisReply* r);
// A bulk/status string; throws ProtoError otherwise.
std::string str(const redisReply* r);
// A bulk/status string without copying (valid while the reply lives); throws ProtoError otherwise.
std::string_view view(const redisReply* r);
// An integer reply, or a string holding an integer; throws ProtoError otherwise.
std::int64_t integer(const redisReply* r);
std::size_t arraySize(const redisReply* r);
const redisReply* element(const redisReply* r, std::size_t i);
// TIME's answer (seconds, microseconds) in milliseconds since the epoch. A clock that is not a time
// (seconds past year 9999 or negative, microseconds outside 0..999999, not numbers) is a
// ProtoError, never a wrapped number.
std::int64_t timeMs(const redisReply* r);
// A sentinel's answer to SENTINEL get-master-addr-by-name: the primary's host (not empty) and port,
// nullopt when the sentinel knows no primary by that name (a nil). Anything else is a ProtoError;
// an error reply a ReplyError.
std::optional<NodeAddress> sentinelPrimary(const redisReply* r);
} // namespace reply

} // namespace idem
