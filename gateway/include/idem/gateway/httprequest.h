#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// HTTP/1.1 requests read from a byte stream (RFC 9112): a pure unit over bytes, Qt-free, so that
// it is fuzzed as it is (tests/fuzz/fuzz_http.cpp) and the server only moves bytes to it.
namespace idem::http {

struct Header {
    std::string name;  // as sent
    std::string value; // without the whitespace around it
    bool operator==(const Header&) const = default;
};

// Case-insensitive ASCII comparison (header names, tokens).
bool equalsIgnoreCase(std::string_view a, std::string_view b);

// A method in capitals: the gateway's policy, record ids and fingerprints read "post" as POST,
// as upstreams that fold the case of methods do (Werkzeug); the parser forwards the nine standard
// ones so too.
std::string upperMethod(std::string_view method);
// ASCII letters in lower case (header names, Connection tokens), the rest as it is.
std::string lowerAscii(std::string_view s);

// A request path ("/..."), read as RFC 3986 reads it: escapes of unreserved bytes decoded, other
// escapes in capitals, "." and ".." segments removed. Empty, with *why set, for a path that climbs
// above the root, holds a broken escape or a backslash, or spells a dot segment another way
// ("..;x", "%2F..%2F"), which some servers read as one.
std::string normalizedPath(std::string_view path, const char** why);
// What a route prefix is matched against: a normalized path with runs of '/' made one and
// ";params" dropped from each segment, as many servers route it.
std::string routePath(std::string_view normalizedPath);

struct Request {
    std::string method;
    std::string target;       // origin-form "/path?query" (from an absolute-form one too) or "*" (OPTIONS)
    std::string path;         // before '?', normalized: escapes of unreserved bytes decoded, "//",
                              // "." and ".." segments gone (what the upstream sees)
    std::string route;        // routePath(path), worked out once: what routes and record ids read
    std::string query;        // after '?', without it
    int minorVersion = 1;     // HTTP/1.<minor>
    std::vector<Header> headers; // in order; trailers of a chunked body are not kept
    std::string body;         // de-chunked
    bool keepAlive = true;    // the connection may carry another request after this one
    bool expectContinue = false;
    bool chunked = false;

    // The first header of that name (case-insensitive), or null.
    const std::string* header(std::string_view name) const;
    std::size_t headerCount(std::string_view name) const;
    bool operator==(const Request&) const = default;
};

struct Limits {
    std::size_t maxRequestLine = 8192;  // 414 beyond
    std::size_t maxHeaderBytes = 32768; // 431 beyond: every header line with its CRLF (trailers too)
    std::size_t maxHeaders = 100;       // 431 beyond (trailers too)
    std::size_t maxBody = 1 << 20;      // 413 beyond (Content-Length or the chunks together)
};

// Why the stream cannot be read on: the status to answer (400, 413, 414, 417, 431, 501, 505) and
// a short reason for a problem+json detail. The connection closes after answering it.
struct ParseError {
    int status = 400;
    std::string reason;
    bool operator==(const ParseError&) const = default;
};

// Feed bytes as they come, in pieces of any size; take complete requests in order. Whatever the
// bytes are cut into, the requests and the error are the same (a property fuzz_http checks).
class RequestParser {
public:
    explicit RequestParser(Limits limits = {});
    // The body limit of each request, asked once its headers are in (a route's own limit); at
    // most limits().maxBody is used either way.
    void setBodyLimit(std::function<std::size_t(const Request& head)> limit) { m_bodyLimitOf = std::move(limit); }

    // Takes the next bytes. False once the stream is broken (error()); later bytes are ignored, as
    // are bytes after a request that does not keep the connection alive.
    bool feed(std::string_view bytes);
    // The next complete request, oldest first.
    std::optional<Request> take();
    bool failed() const { return m_state == State::Failed; }
    const ParseError& error() const { return m_error; }
    // True once per request whose headers asked for 100-continue while its body has not all come:
    // the moment to send "100 Continue".
    bool takeContinue();
    // Bytes of a request are in, the request is not complete.
    bool midRequest() const;
    // ... and its head (request line and headers) is not complete either.
    bool midHead() const;
    // A request ended the connection (no keep-alive): nothing more is read.
    bool closed() const { return m_state == State::Closed; }
    const Limits& limits() const { return m_limits; }

private:
    enum class State { RequestLine, Headers, Body, ChunkSize, ChunkData, ChunkEnd, Trailers, Failed, Closed };
    bool fail(int status, std::string reason);
    bool step(); // one line or one piece of body; false when it needs more bytes (or failed)
    std::optional<std::string_view> line(std::size_t limit, std::size_t& length);
    bool requestLine(std::string_view l);
    bool headerLine(std::string_view l, bool trailer);
    bool headersDone();
    bool chunkSize(std::string_view l);
    void complete();

    Limits m_limits;
    State m_state = State::RequestLine;
    ParseError m_error;
    std::string m_buf;
    std::size_t m_pos = 0;
    Request m_current;
    std::size_t m_headerBytes = 0;
    std::size_t m_headerCount = 0;
    std::size_t m_remaining = 0; // of the body or of the chunk
    std::size_t m_bodyLimit = 0; // of the request being read
    std::function<std::size_t(const Request&)> m_bodyLimitOf;
    bool m_continuePending = false;
    std::deque<Request> m_done;
};

} // namespace idem::http
