#include "idem/gateway/httprequest.h"

#include "idem/hash.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <utility>

namespace idem::http {

namespace {

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool tchar(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool token(std::string_view s) { return !s.empty() && std::all_of(s.begin(), s.end(), tchar); }

// field-value characters: visible ASCII, space, tab and obs-text; no other control byte
bool fieldChar(char c)
{
    const auto u = static_cast<unsigned char>(c);
    return u == '\t' || (u >= 0x20 && u != 0x7f);
}

std::string_view trimmed(std::string_view s)
{
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
        s.remove_suffix(1);
    return s;
}

// The comma-separated elements of every header of that name, trimmed, empty ones dropped.
std::vector<std::string_view> listOf(const Request& r, std::string_view name)
{
    std::vector<std::string_view> out;
    for (const auto& h : r.headers) {
        if (!equalsIgnoreCase(h.name, name))
            continue;
        std::string_view v = h.value;
        while (!v.empty()) {
            const auto comma = v.find(',');
            const std::string_view e = trimmed(v.substr(0, comma));
            if (!e.empty())
                out.push_back(e);
            v = comma == std::string_view::npos ? std::string_view() : v.substr(comma + 1);
        }
    }
    return out;
}

constexpr std::size_t kChunkLineLimit = 4096;

} // namespace

bool equalsIgnoreCase(std::string_view a, std::string_view b)
{
    return a.size() == b.size() &&
           std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return lower(x) == lower(y); });
}

std::string lowerAscii(std::string_view s)
{
    std::string out(s);
    for (char& c : out)
        c = lower(c);
    return out;
}

std::string upperMethod(std::string_view method)
{
    std::string out(method);
    for (char& c : out)
        if (c >= 'a' && c <= 'z')
            c = static_cast<char>(c - 'a' + 'A');
    return out;
}

const std::string* Request::header(std::string_view name) const
{
    for (const auto& h : headers)
        if (equalsIgnoreCase(h.name, name))
            return &h.value;
    return nullptr;
}

std::size_t Request::headerCount(std::string_view name) const
{
    return static_cast<std::size_t>(
        std::count_if(headers.begin(), headers.end(), [&](const Header& h) { return equalsIgnoreCase(h.name, name); }));
}

RequestParser::RequestParser(Limits limits) : m_limits(limits) {}

bool RequestParser::fail(int status, std::string reason)
{
    m_state = State::Failed;
    m_error = {status, std::move(reason)};
    m_buf.clear();
    m_pos = 0;
    return false;
}

bool RequestParser::feed(std::string_view bytes)
{
    if (m_state == State::Failed || m_state == State::Closed)
        return m_state != State::Failed;
    m_buf.append(bytes);
    while (step()) {
    }
    if (m_state == State::Failed)
        return false;
    m_buf.erase(0, m_pos);
    m_pos = 0;
    return true;
}

std::optional<Request> RequestParser::take()
{
    if (m_done.empty())
        return std::nullopt;
    Request r = std::move(m_done.front());
    m_done.pop_front();
    return r;
}

bool RequestParser::takeContinue() { return std::exchange(m_continuePending, false); }

bool RequestParser::midRequest() const
{
    return (m_state != State::RequestLine && m_state != State::Failed && m_state != State::Closed) ||
           (m_state == State::RequestLine && m_pos < m_buf.size());
}

bool RequestParser::midHead() const
{
    return m_state == State::Headers || (m_state == State::RequestLine && m_pos < m_buf.size());
}

// The next line without its LF (and the CR before it), when `limit` bytes or fewer came before
// the LF. Sets `length` to the bytes the line takes (terminator included); nullopt with length 0:
// more bytes are needed; nullopt with length 1: the line is longer than the limit (decided as soon
// as it is certain, so that the error does not depend on how the bytes were cut).
std::optional<std::string_view> RequestParser::line(std::size_t limit, std::size_t& length)
{
    const std::string_view rest = std::string_view(m_buf).substr(m_pos);
    const auto lf = rest.find('\n');
    length = 0;
    if (lf == std::string_view::npos) {
        if (rest.size() > limit)
            length = 1;
        return std::nullopt;
    }
    if (lf > limit) {
        length = 1;
        return std::nullopt;
    }
    length = lf + 1;
    std::string_view l = rest.substr(0, lf);
    if (!l.empty() && l.back() == '\r')
        l.remove_suffix(1);
    return l;
}

bool RequestParser::step()
{
    std::size_t length = 0;
    switch (m_state) {
    case State::RequestLine: {
        const auto l = line(m_limits.maxRequestLine + 1, length);
        if (!l) {
            if (length)
                return fail(414, "the request line is longer than " + std::to_string(m_limits.maxRequestLine) + " bytes");
            return false;
        }
        m_pos += length;
        if (l->empty())
            return true; // an empty line before a request is ignored (RFC 9112 2.2)
        if (l->size() > m_limits.maxRequestLine)
            return fail(414, "the request line is longer than " + std::to_string(m_limits.maxRequestLine) + " bytes");
        return requestLine(*l);
    }
    case State::Headers:
    case State::Trailers: {
        const bool trailer = m_state == State::Trailers;
        const std::size_t budget =
            m_headerBytes >= m_limits.maxHeaderBytes ? 0 : m_limits.maxHeaderBytes - m_headerBytes - 1;
        const auto l = m_headerBytes >= m_limits.maxHeaderBytes ? std::nullopt : line(budget, length);
        if (!l) {
            if (length || m_headerBytes >= m_limits.maxHeaderBytes)
                return fail(431, "the header section is larger than " + std::to_string(m_limits.maxHeaderBytes) +
                                     " bytes");
            return false;
        }
        m_pos += length;
        m_headerBytes += length;
        if (!l->empty())
            return headerLine(*l, trailer);
        if (trailer) {
            complete();
            return true;
        }
        return headersDone();
    }
    case State::Body:
    case State::ChunkData: {
        const std::size_t n = std::min(m_remaining, m_buf.size() - m_pos);
        if (n == 0 && m_remaining > 0)
            return false;
        m_current.body.append(m_buf, m_pos, n);
        m_pos += n;
        m_remaining -= n;
        if (m_remaining > 0)
            return false;
        if (m_state == State::ChunkData)
            m_state = State::ChunkEnd;
        else
            complete();
        return true;
    }
    case State::ChunkSize: {
        const auto l = line(kChunkLineLimit, length);
        if (!l) {
            if (length)
                return fail(400, "a chunk-size line is longer than " + std::to_string(kChunkLineLimit) + " bytes");
            return false;
        }
        m_pos += length;
        return chunkSize(*l);
    }
    case State::ChunkEnd: {
        const auto l = line(1, length);
        if (!l && !length)
            return false;
        if (!l || !l->empty())
            return fail(400, "chunk data is not followed by CRLF");
        m_pos += length;
        m_state = State::ChunkSize;
        return true;
    }
    case State::Failed:
    case State::Closed:
        return false;
    }
    return false;
}

namespace {

bool unreserved(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
           c == '_' || c == '~';
}


} // namespace

// The path as RFC 3986 reads it (§6.2.2, §5.2.4): percent-encoded unreserved bytes decoded and
// other escapes in capitals, "." and ".." segments removed. So a route's policy cannot be stepped
// around with "/webhooks/../payments" or "/%70ayments", and the record id and the upstream see the
// same path. Spellings that some upstreams read as a dot segment and RFC 3986 does not ("..;x",
// "%2F..%2F", a backslash) are refused rather than guessed. Empty (with *why) when refused.

std::string normalizedPath(std::string_view in, const char** why)
{
    if (in.find('\\') != std::string_view::npos) {
        *why = "the request target has a backslash, which no URI path has";
        return {};
    }
    std::string decoded;
    decoded.reserve(in.size());
    bool encodedSlash = false;
    for (std::size_t i = 0; i < in.size(); ++i) {
        if (in[i] != '%') {
            decoded += in[i];
            continue;
        }
        const int hi = i + 2 < in.size() ? hexDigit(in[i + 1]) : -1, lo = hi >= 0 ? hexDigit(in[i + 2]) : -1;
        if (lo < 0) {
            *why = "the request target has a '%' not followed by two hex digits";
            return {};
        }
        const char c = static_cast<char>(hi * 16 + lo);
        if (unreserved(c)) {
            decoded += c;
        } else {
            static const char* digits = "0123456789ABCDEF";
            decoded += '%';
            decoded += digits[hi];
            decoded += digits[lo];
            encodedSlash = encodedSlash || c == '/' || c == '\\';
        }
        i += 2;
    }
    // a segment that is a dot segment to a reader that drops ";params" or decodes "%2F"
    const auto dotLike = [](std::string_view s) {
        s = s.substr(0, s.find(';'));
        return s == "." || s == "..";
    };
    const auto segmentsOf = [](std::string_view p, auto&& each) {
        for (std::size_t from = 1; from <= p.size();) { // (after the leading '/')
            const auto slash = std::min(p.find('/', from), p.size());
            each(p.substr(from, slash - from), slash == p.size());
            from = slash + 1;
        }
    };
    bool refused = false;
    segmentsOf(decoded, [&](std::string_view s, bool) {
        refused = refused || (s.find(';') != std::string_view::npos && dotLike(s));
    });
    if (encodedSlash) {
        std::string loose = decoded;
        for (const char* e : {"%2F", "%5C"})
            for (std::size_t at; (at = loose.find(e)) != std::string::npos;)
                loose.replace(at, 3, "/");
        segmentsOf(loose, [&](std::string_view s, bool) { refused = refused || dotLike(s); });
    }
    if (refused) {
        *why = "the request target has a dot segment spelled with ';' or an encoded slash";
        return {};
    }
    std::vector<std::string_view> segments;
    bool trailingSlash = false, above = false;
    segmentsOf(decoded, [&](std::string_view s, bool last) {
        trailingSlash = false;
        if (s == ".") {
            trailingSlash = last;
        } else if (s == "..") {
            above = above || segments.empty();
            if (!segments.empty())
                segments.pop_back();
            trailingSlash = last;
        } else {
            segments.push_back(s);
        }
    });
    if (above) {
        *why = "the request target climbs above the root (\"..\")";
        return {};
    }
    std::string out;
    out.reserve(decoded.size() + 1);
    for (const std::string_view s : segments)
        out.append("/").append(s);
    if (out.empty() || trailingSlash)
        out += '/';
    return out;
}

std::string routePath(std::string_view path)
{
    if (path.find("//") == std::string_view::npos && path.find(';') == std::string_view::npos)
        return std::string(path);
    std::string out;
    out.reserve(path.size());
    for (std::size_t i = 0; i < path.size(); ++i) {
        if (path[i] == ';') { // to the end of the segment
            while (i + 1 < path.size() && path[i + 1] != '/')
                ++i;
            continue;
        }
        if (path[i] == '/' && !out.empty() && out.back() == '/')
            continue;
        out += path[i];
    }
    return out;
}


bool RequestParser::requestLine(std::string_view l)
{
    m_current = Request();
    m_headerBytes = 0;
    m_headerCount = 0;
    const auto sp1 = l.find(' ');
    const auto sp2 = sp1 == std::string_view::npos ? sp1 : l.find(' ', sp1 + 1);
    if (sp2 == std::string_view::npos || l.find(' ', sp2 + 1) != std::string_view::npos)
        return fail(400, "the request line is not METHOD SP TARGET SP HTTP-VERSION");
    const std::string_view asSent = l.substr(0, sp1), target = l.substr(sp1 + 1, sp2 - sp1 - 1),
                           version = l.substr(sp2 + 1);
    if (!token(asSent))
        return fail(400, "the method is not a token");
    // A standard method in another case ("post", "Head") is that method: upstreams that fold case
    // run it as such, so the gateway protects, forwards and frames it as such (the upstream gets
    // "POST"; a HEAD's answer has no body), and one that does not fold never stores a 405 that a
    // corrected retry would get back
    std::string upper = upperMethod(asSent);
    static constexpr std::array<std::string_view, 9> standard = {"GET",    "HEAD",    "POST",  "PUT",    "PATCH",
                                                                 "DELETE", "OPTIONS", "TRACE", "CONNECT"};
    const std::string_view method =
        std::find(standard.begin(), standard.end(), upper) != standard.end() ? std::string_view(upper) : asSent;
    const auto digit = [](char c) { return c >= '0' && c <= '9'; };
    if (version.size() != 8 || !version.starts_with("HTTP/") || !digit(version[5]) || version[6] != '.' ||
        !digit(version[7]))
        return fail(400, "the HTTP version is not HTTP/DIGIT.DIGIT");
    if (version[5] != '1')
        return fail(505, "only HTTP/1.0 and HTTP/1.1 are served");
    if (target.empty() || !std::all_of(target.begin(), target.end(), [](char c) { return c > 0x20 && c < 0x7f; }))
        return fail(400, "the request target has a character no target has");
    if (method == "CONNECT")
        return fail(501, "CONNECT is not served: this is a reverse proxy, not a tunnel");
    if (target.find('#') != std::string_view::npos)
        return fail(400, "the request target holds a fragment ('#'), which is never sent");
    std::string_view origin = target;
    // absolute-form (RFC 9112 §3.2.2, which a server must accept): its path and query
    for (const std::string_view scheme : {std::string_view("http://"), std::string_view("https://")})
        if (origin.size() > scheme.size() && equalsIgnoreCase(origin.substr(0, scheme.size()), scheme)) {
            const auto slash = origin.find('/', scheme.size()), query = origin.find('?', scheme.size());
            // (no path: "/", with the query if there is one)
            origin = slash < query ? origin.substr(slash)
                                   : query == std::string_view::npos ? std::string_view("/") : origin.substr(query);
            break;
        }
    if (origin == "*" ? method != "OPTIONS" : origin.front() != '/' && (origin == target || origin.front() != '?'))
        return fail(400, "the request target is not a path (origin-form) or an http URL (absolute-form)");
    m_current.method = method;
    if (origin == "*") {
        m_current.target = m_current.path = m_current.route = "*";
    } else {
        const auto q = origin.find('?');
        const char* why = nullptr;
        m_current.path = normalizedPath(origin.substr(0, q), &why);
        if (m_current.path.empty())
            return fail(400, why);
        m_current.route = routePath(m_current.path);
        m_current.query = q == std::string_view::npos ? std::string_view() : origin.substr(q + 1);
        m_current.target = m_current.path;
        if (q != std::string_view::npos)
            m_current.target.append("?").append(m_current.query);
    }
    m_current.minorVersion = version[7] == '0' ? 0 : 1; // 1.2 and later are read as 1.1
    m_state = State::Headers;
    return true;
}

bool RequestParser::headerLine(std::string_view l, bool trailer)
{
    if (l.front() == ' ' || l.front() == '\t')
        return fail(400, "obsolete line folding in a header");
    const auto colon = l.find(':');
    if (colon == std::string_view::npos)
        return fail(400, "a header line has no ':'");
    const std::string_view name = l.substr(0, colon), value = trimmed(l.substr(colon + 1));
    if (!token(name))
        return fail(400, "a header name is not a token (or has whitespace before ':')");
    if (!std::all_of(value.begin(), value.end(), fieldChar))
        return fail(400, "a header value has a control character");
    if (++m_headerCount > m_limits.maxHeaders)
        return fail(431, "more than " + std::to_string(m_limits.maxHeaders) + " header fields");
    if (!trailer)
        m_current.headers.push_back({std::string(name), std::string(value)});
    return true;
}

bool RequestParser::headersDone()
{
    Request& r = m_current;
    const std::size_t hosts = r.headerCount("Host");
    if (hosts > 1 || (hosts == 0 && r.minorVersion == 1))
        return fail(400, "an HTTP/1.1 request needs exactly one Host header");
    // host [":" port]: a name, an IPv4 or a bracketed IPv6 address (RFC 9112 §3.2: else 400)
    if (const std::string* host = r.header("Host"))
        if (!std::all_of(host->begin(), host->end(), [](char c) {
                return unreserved(c) || std::string_view("!$&'()*+,;=:[]%").find(c) != std::string_view::npos;
            }))
            return fail(400, "the Host header is not a host name, an address or a port");
    const auto connection = listOf(r, "Connection");
    const auto has = [&](std::string_view t) {
        return std::any_of(connection.begin(), connection.end(), [&](std::string_view c) { return equalsIgnoreCase(c, t); });
    };
    r.keepAlive = r.minorVersion == 1 ? !has("close") : has("keep-alive") && !has("close");
    if (const std::string* expect = r.header("Expect")) {
        if (!equalsIgnoreCase(*expect, "100-continue") || r.headerCount("Expect") > 1)
            return fail(417, "the only expectation served is 100-continue");
        r.expectContinue = r.minorVersion == 1;
    }
    m_bodyLimit = m_bodyLimitOf ? std::min(m_bodyLimitOf(r), m_limits.maxBody) : m_limits.maxBody;
    const auto codings = listOf(r, "Transfer-Encoding");
    if (r.headerCount("Transfer-Encoding") > 0) {
        if (r.minorVersion == 0)
            return fail(400, "Transfer-Encoding in an HTTP/1.0 request");
        if (r.headerCount("Content-Length") > 0)
            return fail(400, "both Transfer-Encoding and Content-Length");
        if (codings.size() != 1 || !equalsIgnoreCase(codings.front(), "chunked"))
            return fail(501, "the only transfer coding served is chunked");
        r.chunked = true;
        m_state = State::ChunkSize;
    } else {
        const auto lengths = listOf(r, "Content-Length");
        if (r.headerCount("Content-Length") > 0 && lengths.empty())
            return fail(400, "Content-Length is empty");
        std::size_t length = 0;
        for (const std::string_view v : lengths) {
            if (!std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; }))
                return fail(400, "Content-Length is not a decimal number");
            if (v != lengths.front())
                return fail(400, "Content-Length given twice, with different values");
        }
        if (!lengths.empty()) {
            const std::string_view v = lengths.front();
            const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), length);
            if (ec != std::errc() || length > m_bodyLimit)
                return fail(413, "the body is larger than " + std::to_string(m_bodyLimit) + " bytes");
            (void)p;
        }
        m_remaining = length;
        m_state = State::Body;
        if (length == 0) {
            complete();
            return true;
        }
    }
    m_continuePending = r.expectContinue;
    return true;
}

bool RequestParser::chunkSize(std::string_view l)
{
    std::size_t digits = 0;
    std::size_t size = 0;
    const std::size_t room = m_bodyLimit - m_current.body.size();
    while (digits < l.size() && hexDigit(l[digits]) >= 0) {
        size = size * 16 + static_cast<std::size_t>(hexDigit(l[digits]));
        ++digits;
        if (size > room)
            return fail(413, "the body is larger than " + std::to_string(m_bodyLimit) + " bytes");
    }
    if (digits == 0)
        return fail(400, "a chunk size is not a hexadecimal number");
    const std::string_view ext = trimmed(l.substr(digits));
    if (!ext.empty() && (ext.front() != ';' || !std::all_of(ext.begin(), ext.end(), fieldChar)))
        return fail(400, "a chunk size is followed by something that is no chunk extension");
    if (size == 0) {
        m_state = State::Trailers;
        return true;
    }
    m_remaining = size;
    m_state = State::ChunkData;
    return true;
}

void RequestParser::complete()
{
    m_continuePending = false;
    const bool keepAlive = m_current.keepAlive;
    m_done.push_back(std::move(m_current));
    m_current = Request();
    m_state = keepAlive ? State::RequestLine : State::Closed;
}

} // namespace idem::http
