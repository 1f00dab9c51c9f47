#pragma once

#include "idem/gateway/httpresponse.h"

#include <string>
#include <string_view>

namespace idem::http {

// One HTTP/1.1 answer read from an upstream connection, fed as it comes: the status line, the
// headers, then the body by Content-Length, chunked, or until the connection closes; 1xx interim
// answers are skipped; a HEAD, 204 or 304 answer has no body. Qt-free.
class ResponseParser {
public:
    ResponseParser(bool headRequest, std::size_t maxBody);
    // False once the answer cannot be read (error()).
    bool feed(std::string_view bytes);
    // The connection closed: ends a body read until close, else the answer is cut short.
    void closed();
    bool done() const { return m_state == State::Done; }
    bool failed() const { return m_state == State::Failed; }
    const std::string& error() const { return m_error; }
    Response& response() { return m_response; }
    // The connection may carry another request after this answer.
    bool keepAlive() const { return m_keepAlive; }
    // The body ends when the connection closes (no length, not chunked).
    bool readsUntilClose() const { return m_state == State::UntilClose; }

private:
    enum class State { StatusLine, Headers, Body, ChunkSize, ChunkData, ChunkEnd, Trailers, UntilClose, Done, Failed };
    bool fail(std::string why);
    bool step();
    bool headersDone();
    bool line(std::string_view& out);

    bool m_head;
    std::size_t m_maxBody;
    State m_state = State::StatusLine;
    std::string m_error;
    std::string m_buf;
    std::size_t m_pos = 0;
    std::size_t m_headerBytes = 0;
    std::size_t m_remaining = 0;
    int m_minor = 1;
    bool m_keepAlive = true;
    Response m_response;
};

} // namespace idem::http
