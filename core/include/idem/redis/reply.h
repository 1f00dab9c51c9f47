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

namespace reply {
bool isNil(const redisReply* r);
bool isError(const redisReply* r);
bool isInteger(const redisReply* r);
bool isString(const redisReply* r); // bulk or status
std::string_view errorText(const redisReply* r);
// A Redis Cluster redirect error: "MOVED <slot> <host:port>" or "ASK <slot> <host:port>".
struct Redirect {
    bool ask = false;
    std::uint16_t slot = 0;
    std::string address;
};
std::optional<Redirect> redirect(const redisReply* r); // nullopt for anything else
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
} // namespace reply

} // namespace idem
