// What a server idem is pointed at answers: RESP bytes through hiredis' reader (as a Connection
// reads them: resp::makeReader, which bounds the arrays a server can announce), then through what
// the store, the monitor and the sentinel client do with a reply - idem::reply's helpers, Redis
// Cluster redirects (reply::redirect, parseNodeAddress), acquire.lua's answers (acquireanswer), a
// SCAN page, TIME (reply::timeMs), SENTINEL get-master-addr-by-name (reply::sentinelPrimary).
//
// Input: [feed step][lease ms byte] the bytes the server sent (fed step bytes at a time, as they
// may arrive).
#include "fuzzcheck.h"

#include "engine/acquireanswer.h"
#include "idem/errors.h"
#include "idem/redis/connection.h"
#include "idem/redis/reply.h"
#include "redis/reader.h"

#include <hiredis/hiredis.h>

#include <charconv>
#include <memory>
#include <optional>
#include <string>

using namespace idem;
using fuzzsupport::Input;

namespace {

// What a helper did with a reply: its value, or which of idem's errors it threw.
enum class Threw { None, Reply, Proto };

template <typename F>
Threw attempt(F&& f)
{
    try {
        f();
        return Threw::None;
    } catch (const ReplyError&) {
        return Threw::Reply;
    } catch (const ProtoError&) {
        return Threw::Proto;
    }
}

// An address Redis names ("host:port"): accepted only with a port 1..65535 written in digits after
// the last colon, and a host of no spaces or control bytes.
void checkAddress(std::string_view text)
{
    const auto node = parseNodeAddress(text);
    const auto colon = text.rfind(':');
    if (!node) {
        if (colon != std::string_view::npos)
            if (const auto port = parsePort(text.substr(colon + 1))) {
                std::string_view host = text.substr(0, colon);
                if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
                    host = host.substr(1, host.size() - 2);
                bool plain = true;
                for (const char c : host)
                    plain = plain && static_cast<unsigned char>(c) > 0x20 && c != 0x7f;
                FUZZ_CHECK(!plain, std::string(text.substr(0, 200)));
            }
        return;
    }
    FUZZ_CHECK(colon != std::string_view::npos && node->port >= 1 && node->port <= 65535);
    const std::string_view digits = text.substr(colon + 1);
    FUZZ_CHECK(!digits.empty() && digits.size() <= 5 && digits.find_first_not_of("0123456789") == std::string_view::npos);
    FUZZ_CHECK(std::stoi(std::string(digits)) == node->port);
    FUZZ_CHECK(text.substr(0, colon) == node->host || text.substr(0, colon) == "[" + node->host + "]");
    for (const char c : node->host)
        FUZZ_CHECK(static_cast<unsigned char>(c) > 0x20 && c != 0x7f);
}

void checkHelpers(const redisReply* r)
{
    const bool string = r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS;
    FUZZ_CHECK(reply::isNil(r) == (r->type == REDIS_REPLY_NIL));
    FUZZ_CHECK(reply::isError(r) == (r->type == REDIS_REPLY_ERROR));
    FUZZ_CHECK(reply::isInteger(r) == (r->type == REDIS_REPLY_INTEGER));
    FUZZ_CHECK(reply::isString(r) == string);
    const std::string_view error = reply::errorText(r);
    FUZZ_CHECK(reply::isError(r) ? error == std::string_view(r->str, r->len) : error.empty());

    // a redirect is one when it says so, to a slot that exists written in digits alone, and an
    // address with a port
    if (const auto to = reply::redirect(r)) {
        FUZZ_CHECK(error.starts_with(to->ask ? "ASK " : "MOVED "), std::string(error));
        FUZZ_CHECK(to->slot <= 16383);
        FUZZ_CHECK(error.ends_with(" " + to->address), std::string(error));
        const std::string_view digits = error.substr(error.find(' ') + 1, error.size() - to->address.size() -
                                                                              error.find(' ') - 2);
        FUZZ_CHECK(!digits.empty() && digits.find_first_not_of("0123456789") == std::string_view::npos,
                   std::string(error));
        const auto node = parseNodeAddress(to->address);
        FUZZ_CHECK(node && node->host == to->node.host && node->port == to->node.port, std::string(error));
    } else if (error.starts_with("MOVED ") || error.starts_with("ASK ")) {
        // not a redirect: then it cannot be read as one ("MOVED <slot> <address>")
        const std::string_view rest = error.substr(error.find(' ') + 1);
        const auto space = rest.find(' ');
        int slot = -1;
        const bool slotOk = space != std::string_view::npos && space > 0 && space <= 5 &&
                            rest.substr(0, space).find_first_not_of("0123456789") == std::string_view::npos &&
                            std::from_chars(rest.data(), rest.data() + space, slot).ec == std::errc() &&
                            slot <= 16383;
        FUZZ_CHECK(!slotOk || !parseNodeAddress(rest.substr(space + 1)), std::string(error));
    }
    if (string)
        checkAddress(std::string_view(r->str, r->len));
    if (reply::isError(r))
        FUZZ_CHECK(reply::errorMessage(r).starts_with(error));

    // each helper answers its kind of reply, and refuses every other with idem's error
    std::string s;
    const Threw strThrew = attempt([&] { s = reply::str(r); });
    if (string)
        FUZZ_CHECK(strThrew == Threw::None && s == std::string_view(r->str, r->len));
    else if (r->type == REDIS_REPLY_INTEGER)
        FUZZ_CHECK(strThrew == Threw::None && s == std::to_string(r->integer));
    else
        FUZZ_CHECK(strThrew == (reply::isError(r) ? Threw::Reply : Threw::Proto));
    std::string_view v;
    const Threw viewThrew = attempt([&] { v = reply::view(r); });
    FUZZ_CHECK(string ? viewThrew == Threw::None && v == s : viewThrew != Threw::None);
    std::int64_t n = 0;
    const Threw intThrew = attempt([&] { n = reply::integer(r); });
    if (r->type == REDIS_REPLY_INTEGER) {
        FUZZ_CHECK(intThrew == Threw::None && n == r->integer);
    } else if (string) {
        std::int64_t want = 0;
        const auto [p, ec] = std::from_chars(r->str, r->str + r->len, want);
        const bool whole = ec == std::errc() && p == r->str + r->len;
        FUZZ_CHECK(whole ? intThrew == Threw::None && n == want : intThrew == Threw::Proto);
    } else {
        FUZZ_CHECK(intThrew != Threw::None);
    }
    std::size_t size = 0;
    const Threw sizeThrew = attempt([&] { size = reply::arraySize(r); });
    FUZZ_CHECK((sizeThrew == Threw::None) == (r->type == REDIS_REPLY_ARRAY));
    if (r->type != REDIS_REPLY_ARRAY)
        return;
    FUZZ_CHECK(size == r->elements);
    FUZZ_CHECK(static_cast<long long>(size) <= resp::kMaxPendingElements);
    FUZZ_CHECK(attempt([&] { reply::element(r, size); }) == Threw::Proto);
    for (std::size_t i = 0; i < size; ++i) {
        const redisReply* e = reply::element(r, i);
        FUZZ_CHECK(e != nullptr);
        checkHelpers(e);
    }
}

// acquire.lua's answer as Store::acquireBatch reads it: "<now µs>[ <line>]" for one id; an array
// of lines and the time for several.
void checkAcquireLine(const AcquireResult& a, std::string_view line)
{
    const std::string story(line.substr(0, 200));
    FUZZ_CHECK(a.fence >= 0 && a.attempt >= 0 && a.remainingMs >= 0, story);
    if (a.status == AcquireStatus::Acquired) {
        FUZZ_CHECK(a.fence >= 1 && a.attempt >= 1 && a.ticket.leaseUntilMs >= 0, story);
        FUZZ_CHECK(a.ticket.fence == a.fence && a.ticket.attempt == a.attempt, story);
    }
}

void checkAcquire(const redisReply* r, std::int64_t leaseMs)
{
    using namespace acquireanswer;
    const std::string token(32, 'a');
    const auto one = [&](std::string_view text, bool withTime) {
        AcquireResult out;
        LineReader in(text);
        try {
            if (withTime) {
                const std::int64_t nowUs = in.number();
                if (in.atEnd()) {
                    acquiredFresh(out, nowUs, "id", token, leaseMs);
                    in.finish();
                } else {
                    parseAcquireLine(out, in, "id", token, leaseMs);
                }
            } else {
                parseAcquireLine(out, in, "id", token, leaseMs);
            }
        } catch (const ProtoError&) {
            return;
        }
        checkAcquireLine(out, text);
    };
    if (reply::isString(r)) {
        one(reply::view(r), true);
        one(reply::view(r), false);
    } else if (r->type == REDIS_REPLY_ARRAY && r->elements >= 1) {
        for (std::size_t k = 0; k + 1 < r->elements; ++k)
            if (reply::isString(r->element[k]))
                one(reply::view(r->element[k]), false);
    }
}

// What the monitor reads: a SCAN page (cursor, keys) and TIME (seconds, microseconds); what a
// sentinel answers.
void checkMonitorShapes(const redisReply* r)
{
    try {
        const std::string cursor = reply::str(reply::element(r, 0));
        const redisReply* list = reply::element(r, 1);
        for (std::size_t i = 0; i < reply::arraySize(list); ++i)
            reply::str(reply::element(list, i));
        (void)cursor;
    } catch (const Error&) {
    }
    // a clock is a time from 1970 to year 9999, or an error for the page
    std::int64_t nowMs = -1;
    if (attempt([&] { nowMs = reply::timeMs(r); }) == Threw::None) {
        FUZZ_CHECK(nowMs >= 0 && nowMs <= 253402300799999);
        FUZZ_CHECK(r->type == REDIS_REPLY_ARRAY && r->elements == 2);
        FUZZ_CHECK(nowMs / 1000 == reply::integer(r->element[0]));
        FUZZ_CHECK(nowMs % 1000 == reply::integer(r->element[1]) / 1000);
    }
}

// SENTINEL get-master-addr-by-name: a primary with a host and a port as written, unknown for a
// nil, else idem's error
void checkSentinel(const redisReply* r)
{
    std::optional<NodeAddress> primary;
    const Threw threw = attempt([&] { primary = reply::sentinelPrimary(r); });
    if (threw != Threw::None) {
        FUZZ_CHECK(r->type != REDIS_REPLY_NIL);
        return;
    }
    FUZZ_CHECK(primary.has_value() == (r->type != REDIS_REPLY_NIL));
    if (!primary)
        return;
    FUZZ_CHECK(r->type == REDIS_REPLY_ARRAY && r->elements == 2);
    FUZZ_CHECK(!primary->host.empty() && primary->host == reply::view(r->element[0]));
    const std::string_view port = reply::view(r->element[1]);
    FUZZ_CHECK(parsePort(port) == primary->port && primary->port >= 1 && primary->port <= 65535);
    FUZZ_CHECK(port.find_first_not_of("0123456789") == std::string_view::npos, std::string(port.substr(0, 64)));
}

// Whether the bytes open with array headers ("*<count>\r\n", nested while each count is at least
// 1) that announce more elements at once than a reader takes, before anything else could fail it:
// then the reader must refuse them, and say so.
bool announcesTooMany(std::string_view bytes)
{
    long long pending = 0;
    for (int depth = 0; depth < 8 && bytes.starts_with('*'); ++depth) {
        const auto end = bytes.find("\r\n");
        const std::string_view digits = bytes.substr(1, end == std::string_view::npos ? 0 : end - 1);
        long long count = 0;
        // hiredis reads the count with its string2ll (no sign here, no leading zero) and refuses
        // one over INT_MAX itself
        if (digits.empty() || digits.size() > 10 || digits[0] < '1' || digits[0] > '9' ||
            digits.find_first_not_of("0123456789") != std::string_view::npos)
            return false;
        std::from_chars(digits.data(), digits.data() + digits.size(), count);
        if (count > 2147483647)
            return false;
        if ((pending += count) > resp::kMaxPendingElements)
            return true;
        bytes.remove_prefix(end + 2);
    }
    return false;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    Input f(data, size);
    const std::size_t step = 1 + f.byte() % 64;
    const std::int64_t leaseMs = 1 + std::int64_t(f.byte()) * 1000;
    const std::string_view bytes = f.rest();
    // the connection's reader: a server that announces more elements than it bounds fails it
    const resp::ReaderPtr reader = resp::makeReader();
    const bool tooMany = announcesTooMany(bytes);
    bool refused = false;
    std::size_t fed = 0;
    while (true) {
        void* got = nullptr;
        if (redisReaderGetReply(reader.get(), &got) != REDIS_OK) {
            const std::string why = resp::readerError(reader.get());
            refused = why.find("more than idem reads in one reply") != std::string::npos;
            FUZZ_CHECK(!why.empty());
            break; // a protocol error: the connection is dropped
        }
        if (!got) {
            if (fed >= bytes.size())
                break;
            const std::size_t n = std::min(step, bytes.size() - fed);
            FUZZ_CHECK(redisReaderFeed(reader.get(), bytes.data() + fed, n) == REDIS_OK);
            fed += n;
            continue;
        }
        const ReplyPtr r(static_cast<redisReply*>(got));
        checkHelpers(r.get());
        checkAcquire(r.get(), leaseMs);
        checkMonitorShapes(r.get());
        checkSentinel(r.get());
    }
    if (tooMany)
        FUZZ_CHECK(refused, std::string(bytes.substr(0, 80)));
    return 0;
}
