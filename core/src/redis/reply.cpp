#include "idem/redis/reply.h"

#include "idem/errors.h"

#include <charconv>
#include <hiredis/hiredis.h>

namespace idem {

void ReplyDeleter::operator()(redisReply* r) const noexcept
{
    if (r)
        freeReplyObject(r);
}

namespace reply {

bool isNil(const redisReply* r) { return !r || r->type == REDIS_REPLY_NIL; }
bool isError(const redisReply* r) { return r && r->type == REDIS_REPLY_ERROR; }
bool isInteger(const redisReply* r) { return r && r->type == REDIS_REPLY_INTEGER; }
bool isString(const redisReply* r) { return r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS); }

std::string_view errorText(const redisReply* r)
{
    return isError(r) ? std::string_view(r->str, r->len) : std::string_view();
}

std::optional<Redirect> redirect(const redisReply* r)
{
    if (!isError(r))
        return std::nullopt;
    const std::string_view text = errorText(r);
    Redirect to;
    std::string_view rest;
    if (text.starts_with("MOVED "))
        rest = text.substr(6);
    else if (text.starts_with("ASK "))
        to.ask = true, rest = text.substr(4);
    else
        return std::nullopt;
    const auto space = rest.find(' ');
    int slot = -1;
    if (space == std::string_view::npos ||
        std::from_chars(rest.data(), rest.data() + space, slot).ec != std::errc() || slot < 0 || slot > 16383)
        return std::nullopt;
    to.slot = static_cast<std::uint16_t>(slot);
    to.address = std::string(rest.substr(space + 1));
    return to;
}

std::string errorMessage(const redisReply* r)
{
    std::string text(errorText(r));
    if (const auto to = redirect(r))
        text += " (Redis Cluster: hash slot " + std::to_string(to->slot) + " is served by " + to->address + ")";
    return text;
}

std::string str(const redisReply* r)
{
    if (r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS))
        return std::string(r->str, r->len);
    if (r && r->type == REDIS_REPLY_INTEGER)
        return std::to_string(r->integer);
    if (isError(r))
        throw ReplyError(errorMessage(r));
    throw ProtoError("unexpected reply type (wanted a string)");
}

std::string_view view(const redisReply* r)
{
    if (r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS))
        return {r->str, r->len};
    if (isError(r))
        throw ReplyError(errorMessage(r));
    throw ProtoError("unexpected reply type (wanted a string)");
}

std::int64_t integer(const redisReply* r)
{
    if (r && r->type == REDIS_REPLY_INTEGER)
        return r->integer;
    if (r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS)) {
        std::int64_t v = 0;
        auto [p, ec] = std::from_chars(r->str, r->str + r->len, v);
        if (ec == std::errc() && p == r->str + r->len)
            return v;
    }
    if (isError(r))
        throw ReplyError(errorMessage(r));
    throw ProtoError("unexpected reply type (wanted an integer)");
}

std::size_t arraySize(const redisReply* r)
{
    if (r && r->type == REDIS_REPLY_ARRAY)
        return r->elements;
    if (isError(r))
        throw ReplyError(errorMessage(r));
    throw ProtoError("unexpected reply type (wanted an array)");
}

const redisReply* element(const redisReply* r, std::size_t i)
{
    if (i >= arraySize(r))
        throw ProtoError("reply array too short");
    return r->element[i];
}

} // namespace reply
} // namespace idem
