// Requests from any client on the network: the gateway's HTTP/1.1 request parser
// (idem::http::RequestParser, gateway/src/httprequest.cpp).
//
// Input: one byte of flags (bit 0: small limits, so that 413, 414 and 431 are reached; bits 1-7:
// where to cut), then the bytes of the stream.
#include "fuzzcheck.h"

#include "idem/gateway/httprequest.h"

#include <set>
#include <vector>

using namespace idem::http;

namespace {

struct Parsed {
    std::vector<Request> requests;
    bool failed = false;
    ParseError error;
    bool operator==(const Parsed&) const = default;
};

Parsed drain(RequestParser& p, Parsed into)
{
    while (auto r = p.take())
        into.requests.push_back(std::move(*r));
    return into;
}

// The stream cut into pieces of `step` bytes (1: byte by byte), requests taken as they complete.
Parsed pieces(std::string_view s, std::size_t step, const Limits& limits)
{
    RequestParser p(limits);
    Parsed out;
    for (std::size_t i = 0; i < s.size(); i += step) {
        p.feed(s.substr(i, step));
        out = drain(p, std::move(out));
    }
    out.failed = p.failed();
    out.error = p.error();
    return out;
}

std::string describe(const Parsed& a, const Parsed& b)
{
    return "requests " + std::to_string(a.requests.size()) + " vs " + std::to_string(b.requests.size()) + ", error " +
           std::to_string(a.error.status) + " '" + a.error.reason + "' vs " + std::to_string(b.error.status) + " '" +
           b.error.reason + "'";
}

// The request written again, its body with a Content-Length.
std::string rewritten(const Request& r)
{
    std::string out = r.method + " " + r.target + " HTTP/1." + std::to_string(r.minorVersion) + "\r\n";
    for (const auto& h : r.headers)
        if (!equalsIgnoreCase(h.name, "Content-Length") && !equalsIgnoreCase(h.name, "Transfer-Encoding"))
            out += h.name + ": " + h.value + "\r\n";
    out += "Content-Length: " + std::to_string(r.body.size()) + "\r\n\r\n" + r.body;
    return out;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    fuzzsupport::Input in(data, size);
    const std::uint8_t flags = in.byte();
    const std::string_view stream = in.rest();
    Limits limits;
    if (flags & 1)
        limits = {64, 256, 8, 100};

    RequestParser whole(limits);
    whole.feed(stream);
    Parsed all = drain(whole, {});
    all.failed = whole.failed();
    all.error = whole.error();

    // the same whatever the cut: at one fuzzed point, in pieces, byte by byte
    const std::size_t cut = stream.empty() ? 0 : (flags >> 1) * 37u % (stream.size() + 1);
    {
        RequestParser p(limits);
        p.feed(stream.substr(0, cut));
        Parsed two = drain(p, {});
        p.feed(stream.substr(cut));
        two = drain(p, std::move(two));
        two.failed = p.failed();
        two.error = p.error();
        FUZZ_CHECK(two == all, "cut at " + std::to_string(cut) + ": " + describe(two, all));
    }
    const Parsed small = pieces(stream, 1 + (flags >> 1) % 7, limits);
    FUZZ_CHECK(small == all, describe(small, all));
    if (stream.size() <= 4096) {
        const Parsed bytes = pieces(stream, 1, limits);
        FUZZ_CHECK(bytes == all, "byte by byte: " + describe(bytes, all));
    }

    static const std::set<int> kStatuses = {400, 413, 414, 417, 431, 501, 505};
    if (all.failed)
        FUZZ_CHECK(kStatuses.count(all.error.status) && !all.error.reason.empty(), all.error.reason);
    for (std::size_t i = 0; i < all.requests.size(); ++i) {
        const Request& r = all.requests[i];
        FUZZ_CHECK(!r.method.empty() && !r.target.empty());
        FUZZ_CHECK(r.target.front() == '/' || (r.target == "*" && r.method == "OPTIONS"), r.target);
        FUZZ_CHECK(r.path + (r.target.find('?') == std::string::npos ? "" : "?" + r.query) == r.target, r.target);
        FUZZ_CHECK(r.route == routePath(r.path), r.path);
        FUZZ_CHECK(r.body.size() <= limits.maxBody);
        FUZZ_CHECK(r.headers.size() <= limits.maxHeaders);
        FUZZ_CHECK(r.minorVersion == 0 || r.minorVersion == 1);
        FUZZ_CHECK(r.minorVersion == 1 || !r.chunked);
        FUZZ_CHECK(r.minorVersion == 1 ? r.headerCount("Host") == 1 : r.headerCount("Host") <= 1);
        FUZZ_CHECK(i + 1 == all.requests.size() || r.keepAlive, "a request after one that closed the connection");
        for (const auto& h : r.headers)
            FUZZ_CHECK(h.value.find_first_of("\r\n") == std::string::npos && !h.name.empty(), h.name);
        // written again with a Content-Length, it reads back as the same request
        RequestParser again(Limits{1 << 16, 1 << 20, 1000, 1 << 24});
        again.feed(rewritten(r));
        auto back = again.take();
        FUZZ_CHECK(back.has_value() && !again.failed(), again.error().reason);
        FUZZ_CHECK(back->method == r.method && back->target == r.target && back->route == r.route &&
                       back->body == r.body && back->keepAlive == r.keepAlive && back->expectContinue == r.expectContinue,
                   rewritten(r));
    }
    return 0;
}
