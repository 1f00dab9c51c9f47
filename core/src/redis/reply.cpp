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

namespace {

bool allDigits(std::string_view s)
{
    return !s.empty() && s.find_first_not_of("0123456789") == std::string_view::npos;
}

// no spaces or control bytes: what a host name or address never holds
bool plainHost(std::string_view host)
{
    for (const char c : host)
        if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f)
            return false;
    return true;
}

} // namespace

std::optional<int> parsePort(std::string_view digits)
{
    int port = 0;
    if (!allDigits(digits) || digits.size() > 5 ||
        std::from_chars(digits.data(), digits.data() + digits.size(), port).ec != std::errc() || port < 1 ||
        port > 65535)
        return std::nullopt;
    return port;
}

std::optional<NodeAddress> parseNodeAddress(std::string_view address)
{
    const auto colon = address.rfind(':');
    if (colon == std::string_view::npos)
        return std::nullopt;
    const auto port = parsePort(address.substr(colon + 1));
    std::string_view host = address.substr(0, colon);
    if (!port)
        return std::nullopt;
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
        host = host.substr(1, host.size() - 2);
    if (!plainHost(host))
        return std::nullopt;
    return NodeAddress{std::string(host), *port};
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
    if (space == std::string_view::npos)
        return std::nullopt;
    const std::string_view digits = rest.substr(0, space);
    int slot = -1;
    if (!allDigits(digits) || digits.size() > 5 ||
        std::from_chars(digits.data(), digits.data() + digits.size(), slot).ec != std::errc() || slot > 16383)
        return std::nullopt;
    auto node = parseNodeAddress(rest.substr(space + 1));
    if (!node)
        return std::nullopt;
    to.slot = static_cast<std::uint16_t>(slot);
    to.address = std::string(rest.substr(space + 1));
    to.node = std::move(*node);
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

std::int64_t timeMs(const redisReply* r)
{
    // year 9999's last second: every time idem shows or compares stays a time
    constexpr std::int64_t kMaxSeconds = 253402300799;
    if (arraySize(r) != 2)
        throw ProtoError("TIME answered " + std::to_string(arraySize(r)) + " elements (wanted seconds and microseconds)");
    const std::int64_t seconds = integer(element(r, 0)), micros = integer(element(r, 1));
    if (seconds < 0 || seconds > kMaxSeconds || micros < 0 || micros > 999'999)
        throw ProtoError("TIME answered a clock that is no time: " + std::to_string(seconds) + " s and " +
                         std::to_string(micros) + " microseconds");
    return seconds * 1000 + micros / 1000;
}

std::optional<NodeAddress> sentinelPrimary(const redisReply* r)
{
    if (isNil(r))
        return std::nullopt;
    if (arraySize(r) != 2)
        throw ProtoError("the sentinel named the primary with " + std::to_string(arraySize(r)) +
                         " elements (wanted a host and a port)");
    const std::string_view host = view(element(r, 0)), port = view(element(r, 1));
    const auto shown = [](std::string_view s) { return std::string(s.substr(0, 64)); };
    const auto p = parsePort(port);
    if (host.empty() || !plainHost(host) || !p)
        throw ProtoError("the sentinel named the primary '" + shown(host) + ":" + shown(port) +
                         "' (wanted a host and a port 1..65535)");
    return NodeAddress{std::string(host), *p};
}

} // namespace reply
} // namespace idem
