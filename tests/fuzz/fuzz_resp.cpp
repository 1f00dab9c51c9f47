// What a server idem is pointed at answers: RESP bytes through hiredis' reader (as a Connection
// reads them), then through what the store and the monitor do with a reply - idem::reply's
// helpers, Redis Cluster redirects (reply::redirect), acquire.lua's answers (acquireanswer), a SCAN
// page, TIME.
//
// Input: [feed step][lease ms byte] the bytes the server sent (fed step bytes at a time, as they
// may arrive).
#include "fuzzcheck.h"

#include "engine/acquireanswer.h"
#include "idem/errors.h"
#include "idem/redis/connection.h"
#include "idem/redis/reply.h"

#include <hiredis/hiredis.h>

#include <charconv>
#include <memory>

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

void checkHelpers(const redisReply* r)
{
    const bool string = r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS;
    FUZZ_CHECK(reply::isNil(r) == (r->type == REDIS_REPLY_NIL));
    FUZZ_CHECK(reply::isError(r) == (r->type == REDIS_REPLY_ERROR));
    FUZZ_CHECK(reply::isInteger(r) == (r->type == REDIS_REPLY_INTEGER));
    FUZZ_CHECK(reply::isString(r) == string);
    const std::string_view error = reply::errorText(r);
    FUZZ_CHECK(reply::isError(r) ? error == std::string_view(r->str, r->len) : error.empty());

    // a redirect is one when it says so, to a slot that exists
    if (const auto to = reply::redirect(r)) {
        FUZZ_CHECK(error.starts_with(to->ask ? "ASK " : "MOVED "), std::string(error));
        FUZZ_CHECK(to->slot <= 16383);
        FUZZ_CHECK(error.ends_with(" " + to->address), std::string(error));
    }
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

// What the monitor reads: a SCAN page (cursor, keys) and TIME (seconds, microseconds).
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
    try {
        const std::int64_t s = reply::integer(reply::element(r, 0));
        const std::int64_t us = reply::integer(reply::element(r, 1));
        (void)s;
        (void)us;
    } catch (const Error&) {
    }
}

// hiredis 0.14 allocates an array's element pointers as soon as it reads "*<count>", before any
// element arrives: a server naming a count of hundreds of millions makes the client allocate
// gigabytes (docs/fuzzing.md, left to the connection layer). Such inputs are left out here.
bool namesHugeArray(std::string_view bytes)
{
    for (std::size_t at = bytes.find('*'); at != std::string_view::npos; at = bytes.find('*', at + 1)) {
        std::size_t digits = at + 1, n = 0;
        while (digits < bytes.size() && bytes[digits] >= '0' && bytes[digits] <= '9' && n <= 1'000'000)
            n = n * 10 + static_cast<std::size_t>(bytes[digits++] - '0');
        if (n > 1'000'000)
            return true;
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
    if (namesHugeArray(bytes))
        return 0;
    const std::unique_ptr<redisReader, idem::ReaderDeleter> reader(redisReaderCreate()); // the connection's
    std::size_t fed = 0;
    while (true) {
        void* got = nullptr;
        if (redisReaderGetReply(reader.get(), &got) != REDIS_OK)
            break; // a protocol error: the connection is dropped
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
    }
    return 0;
}
