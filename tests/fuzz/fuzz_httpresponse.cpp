// Answers from the upstream: the gateway's HTTP/1.1 response parser (idem::http::ResponseParser,
// gateway/src/responseparser.cpp). An upstream is trusted more than a client, but what it sends is
// passed on to clients and stored for replay, so it must be read the same whatever the cut and
// never yield a header that would split the answer written from it.
//
// Input: one byte of flags (bit 0: the request was HEAD; bit 1: a small body limit, 64 bytes;
// bit 2: the connection closes after the bytes; bits 3-7: where to cut), then the bytes.
#include "fuzzcheck.h"

#include "idem/gateway/httpresponse.h"
#include "idem/gateway/responseparser.h"

#include <vector>

using namespace idem::http;

namespace {

struct Read {
    bool done = false;
    bool failed = false;
    std::string error;
    Response response; // compared when done
    bool keepAlive = false;
    bool operator==(const Read& o) const {
        if (done != o.done || failed != o.failed || error != o.error)
            return false;
        return !done ||
               (response.status == o.response.status && response.headers == o.response.headers &&
                response.body == o.response.body && keepAlive == o.keepAlive);
    }
};

Read finish(ResponseParser& p, bool close) {
    if (close)
        p.closed();
    Read r;
    r.done = p.done();
    r.failed = p.failed();
    r.error = p.error();
    if (r.done) {
        r.response = p.response();
        r.keepAlive = p.keepAlive();
    }
    return r;
}

Read pieces(std::string_view s, std::size_t step, bool head, std::size_t maxBody, bool close) {
    ResponseParser p(head, maxBody);
    for (std::size_t i = 0; i < s.size(); i += step)
        p.feed(s.substr(i, step));
    return finish(p, close);
}

std::string describe(const Read& a, const Read& b) {
    return "done " + std::to_string(a.done) + " vs " + std::to_string(b.done) + ", error '" +
           a.error + "' vs '" + b.error + "', status " + std::to_string(a.response.status) +
           " vs " + std::to_string(b.response.status) + ", body " +
           std::to_string(a.response.body.size()) + " vs " + std::to_string(b.response.body.size());
}

bool tokenChar(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    fuzzsupport::Input in(data, size);
    const std::uint8_t flags = in.byte();
    const std::string_view stream = in.rest();
    const bool head = flags & 1;
    const std::size_t maxBody = (flags & 2) ? 64 : 1 << 20;
    const bool close = flags & 4;

    ResponseParser whole(head, maxBody);
    whole.feed(stream);
    const Read all = finish(whole, close);

    // the same whatever the cut: at one fuzzed point, in pieces, byte by byte
    const std::size_t cut = stream.empty() ? 0 : (flags >> 3) * 41u % (stream.size() + 1);
    {
        ResponseParser p(head, maxBody);
        p.feed(stream.substr(0, cut));
        p.feed(stream.substr(cut));
        const Read two = finish(p, close);
        FUZZ_CHECK(two == all, "cut at " + std::to_string(cut) + ": " + describe(two, all));
    }
    const Read small = pieces(stream, 1 + (flags >> 3) % 7, head, maxBody, close);
    FUZZ_CHECK(small == all, describe(small, all));
    if (stream.size() <= 4096) {
        const Read bytes = pieces(stream, 1, head, maxBody, close);
        FUZZ_CHECK(bytes == all, "byte by byte: " + describe(bytes, all));
    }

    FUZZ_CHECK(!(all.done && all.failed));
    if (all.failed)
        FUZZ_CHECK(!all.error.empty());
    if (close)
        FUZZ_CHECK(all.done || all.failed,
                   "the connection closed and the answer is neither read nor refused");
    if (!all.done)
        return 0;
    const Response& r = all.response;
    FUZZ_CHECK(r.status >= 200 && r.status <= 599, std::to_string(r.status));
    FUZZ_CHECK(r.body.size() <= maxBody);
    if (head || r.status == 204 || r.status == 304)
        FUZZ_CHECK(r.body.empty());
    // what is passed on can be written again without splitting the answer
    for (const Header& h : r.headers) {
        FUZZ_CHECK(!h.name.empty() && std::all_of(h.name.begin(), h.name.end(), tokenChar),
                   "header name '" + h.name + "'");
        FUZZ_CHECK(h.value.find_first_of(std::string_view("\r\n\0", 3)) == std::string::npos,
                   "header value of " + h.name);
    }
    // written again as the gateway writes an answer (its own Content-Length, no transfer coding),
    // it reads back as the same answer
    Response out = r;
    std::erase_if(out.headers, [](const Header& h) {
        return equalsIgnoreCase(h.name, "Transfer-Encoding") ||
               equalsIgnoreCase(h.name, "Content-Length") ||
               equalsIgnoreCase(h.name, "Connection") || equalsIgnoreCase(h.name, "Date");
    });
    const std::string bytes = serialize(out, false, true, "");
    ResponseParser again(false, 1 << 20);
    again.feed(bytes);
    FUZZ_CHECK(again.done() && !again.failed(),
               again.error() + " reading back: " + bytes.substr(0, 200));
    FUZZ_CHECK(again.response().status == r.status && again.response().body == r.body,
               bytes.substr(0, 200));
    std::vector<Header> back = again.response().headers;
    std::erase_if(back, [](const Header& h) { return equalsIgnoreCase(h.name, "Content-Length"); });
    FUZZ_CHECK(back == out.headers, bytes.substr(0, 200));
    return 0;
}
