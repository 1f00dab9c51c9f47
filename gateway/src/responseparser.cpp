#include "idem/gateway/responseparser.h"

#include <algorithm>
#include <charconv>

namespace idem::http {

namespace {
constexpr std::size_t kMaxHeaderBytes = 65536;

std::string_view trimmed(std::string_view s)
{
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
        s.remove_suffix(1);
    return s;
}

bool tokenChar(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

// A control byte other than HTAB: a bare CR in a value would split the answer the gateway writes
// from it (found by fuzz_httpresponse)
bool controlChar(char c) { return (static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f; }

bool hasToken(std::string_view list, std::string_view token)
{
    while (!list.empty()) {
        const auto comma = list.find(',');
        if (equalsIgnoreCase(trimmed(list.substr(0, comma)), token))
            return true;
        list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    }
    return false;
}
} // namespace

ResponseParser::ResponseParser(bool headRequest, std::size_t maxBody) : m_head(headRequest), m_maxBody(maxBody) {}

bool ResponseParser::fail(std::string why)
{
    m_state = State::Failed;
    m_error = std::move(why);
    return false;
}

bool ResponseParser::feed(std::string_view bytes)
{
    if (m_state == State::Done && !bytes.empty())
        m_keepAlive = false; // bytes after the answer belong to no request: never read as the next one's
    if (m_state == State::Failed || m_state == State::Done)
        return m_state == State::Done;
    m_buf.append(bytes);
    while (step()) {
    }
    if (m_state == State::Done && m_pos < m_buf.size())
        m_keepAlive = false; // (as above, whether they came with the answer or after it)
    m_buf.erase(0, m_pos);
    m_pos = 0;
    return m_state != State::Failed;
}

void ResponseParser::closed()
{
    if (m_state == State::UntilClose)
        m_state = State::Done;
    else if (m_state != State::Done && m_state != State::Failed)
        fail("the upstream closed the connection before its answer was complete");
    m_keepAlive = false;
}

bool ResponseParser::line(std::string_view& out)
{
    const auto lf = m_buf.find('\n', m_pos);
    if (lf == std::string::npos)
        return false;
    out = std::string_view(m_buf).substr(m_pos, lf - m_pos);
    if (!out.empty() && out.back() == '\r')
        out.remove_suffix(1);
    m_pos = lf + 1;
    return true;
}

bool ResponseParser::step()
{
    std::string_view l;
    switch (m_state) {
    case State::StatusLine:
    case State::Headers:
    case State::Trailers:
    case State::ChunkSize:
    case State::ChunkEnd: {
        // header lines count together; a chunk's line stands alone
        const bool header = m_state != State::ChunkSize && m_state != State::ChunkEnd;
        const std::size_t before = m_pos, counted = header ? m_headerBytes : 0;
        if (!line(l)) {
            if (m_buf.size() - m_pos + counted > kMaxHeaderBytes)
                return fail("the upstream's header section is larger than 64 KiB");
            return false;
        }
        if (header)
            m_headerBytes += m_pos - before;
        if (counted + (m_pos - before) > kMaxHeaderBytes)
            return fail("the upstream's header section is larger than 64 KiB");
        break;
    }
    case State::Body:
    case State::ChunkData:
    case State::UntilClose: {
        std::size_t n = m_buf.size() - m_pos;
        if (m_state != State::UntilClose)
            n = std::min(n, m_remaining);
        if (n == 0)
            return false;
        if (m_response.body.size() + n > m_maxBody)
            return fail("the upstream's answer is larger than " + std::to_string(m_maxBody) + " bytes");
        m_response.body.append(m_buf, m_pos, n);
        m_pos += n;
        if (m_state == State::UntilClose)
            return false;
        m_remaining -= n;
        if (m_remaining == 0)
            m_state = m_state == State::Body ? State::Done : State::ChunkEnd;
        return m_state != State::Done;
    }
    case State::Done:
    case State::Failed:
        return false;
    }

    switch (m_state) {
    case State::StatusLine: {
        if (l.empty())
            return true;
        // HTTP/1.x SSS [reason]
        if (l.size() < 12 || !l.starts_with("HTTP/1.") || l[8] != ' ' || (l.size() > 12 && l[12] != ' '))
            return fail("the upstream's status line is not HTTP/1.x");
        int status = 0;
        const auto [p, ec] = std::from_chars(l.data() + 9, l.data() + 12, status);
        if (ec != std::errc() || p != l.data() + 12 || status < 100 || status > 599)
            return fail("the upstream's status is not a number from 100 to 599");
        if (status == 101)
            return fail("the upstream switched protocols");
        m_minor = l[7] == '0' ? 0 : 1;
        m_response = Response();
        m_response.status = status;
        m_state = State::Headers;
        return true;
    }
    case State::Headers:
    case State::Trailers: {
        if (!l.empty()) {
            const auto colon = l.find(':');
            if (colon == std::string_view::npos || colon == 0 || !std::all_of(l.begin(), l.begin() + colon, tokenChar))
                return fail("the upstream sent a malformed header line");
            if (std::any_of(l.begin() + colon + 1, l.end(), controlChar))
                return fail("the upstream sent a control character in a header value");
            if (m_state == State::Headers)
                m_response.headers.push_back({std::string(l.substr(0, colon)), std::string(trimmed(l.substr(colon + 1)))});
            return true;
        }
        if (m_state == State::Trailers) {
            m_state = State::Done;
            return false;
        }
        return headersDone();
    }
    case State::ChunkSize: {
        std::size_t size = 0;
        const auto end = l.find_first_of("; \t");
        const std::string_view digits = l.substr(0, end);
        const auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), size, 16);
        if (digits.empty() || ec != std::errc() || p != digits.data() + digits.size())
            return fail("the upstream sent a bad chunk size");
        if (size > m_maxBody)
            return fail("the upstream's answer is larger than " + std::to_string(m_maxBody) + " bytes");
        m_remaining = size;
        m_state = size == 0 ? State::Trailers : State::ChunkData;
        return true;
    }
    case State::ChunkEnd:
        if (!l.empty())
            return fail("the upstream's chunk is not followed by CRLF");
        m_state = State::ChunkSize;
        return true;
    default:
        return false;
    }
}

bool ResponseParser::headersDone()
{
    Response& r = m_response;
    if (r.status < 200) { // interim (100 Continue, 103 Early Hints): the answer follows
        m_state = State::StatusLine;
        return true;
    }
    const std::string* connection = r.header("Connection");
    m_keepAlive = m_minor == 1 ? !(connection && hasToken(*connection, "close"))
                               : connection && hasToken(*connection, "keep-alive");
    // every Transfer-Encoding and Content-Length header, each a list (RFC 9112 §6.1, §6.3)
    int codings = 0;
    bool chunkedLast = false, lengthGiven = false, lengthsDiffer = false, lengthBad = false;
    std::size_t n = 0;
    for (const Header& h : r.headers) {
        const bool te = equalsIgnoreCase(h.name, "Transfer-Encoding");
        if (!te && !equalsIgnoreCase(h.name, "Content-Length"))
            continue;
        std::string_view list = h.value;
        do {
            const auto comma = list.find(',');
            const std::string_view item = trimmed(list.substr(0, comma));
            list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
            if (te) {
                if (item.empty())
                    continue;
                ++codings;
                chunkedLast = equalsIgnoreCase(item, "chunked");
                continue;
            }
            std::size_t v = 0;
            const auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
            if (item.empty() || ec != std::errc() || p != item.data() + item.size())
                lengthBad = true;
            else if (lengthGiven && v != n)
                lengthsDiffer = true;
            n = v;
            lengthGiven = true;
        } while (!list.empty());
    }
    if (m_head || r.status == 204 || r.status == 304) {
        // no body, whatever the headers say; if they announce one, bytes may follow that no request
        // asked for (an upstream that sends a body to HEAD): the connection is not used again.
        // That includes most HEAD answers (their length is a GET's, legitimately): a new
        // connection for the next request is cheap, an answer read as another request's is not.
        if (codings > 0 || (lengthGiven && n != 0) || lengthBad)
            m_keepAlive = false;
        m_state = State::Done;
        return false;
    }
    if (codings > 0) {
        // the gateway decodes chunked alone: a body in another coding it would store without it
        if (codings != 1 || !chunkedLast)
            return fail("the upstream used a transfer coding other than chunked");
        if (lengthGiven)
            m_keepAlive = false; // chunked wins over Content-Length, and the connection ends here
        m_state = State::ChunkSize;
        return true;
    }
    if (lengthGiven) {
        if (lengthBad)
            return fail("the upstream's Content-Length is not a number");
        if (lengthsDiffer)
            return fail("the upstream gave two different Content-Lengths"); // RFC 9112 §6.3: discard, 502
        if (n > m_maxBody)
            return fail("the upstream's answer is larger than " + std::to_string(m_maxBody) + " bytes");
        m_remaining = n;
        m_state = n == 0 ? State::Done : State::Body;
        return m_state != State::Done;
    }
    m_keepAlive = false; // the body ends when the connection does
    m_state = State::UntilClose;
    return true;
}

} // namespace idem::http
