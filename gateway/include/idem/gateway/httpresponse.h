#pragma once

#include "idem/gateway/httprequest.h"

#include <string>
#include <string_view>
#include <vector>

namespace idem::http {

struct Response {
    int status = 200;
    std::vector<Header> headers; // Content-Length, Connection and Date are written by serialize()
    std::string body;

    void set(std::string_view name, std::string_view value); // replaces every header of that name
    const std::string* header(std::string_view name) const;
};

// "OK", "Conflict", ...; "" for a status without a phrase of its own.
std::string_view reasonPhrase(int status);

// The bytes on the wire: status line, headers, Content-Length (unless the status has no body),
// "Connection: close" when the connection ends after it, and the body (none for HEAD, 1xx, 204,
// 304). `date` is the Date header's value ("" for none).
std::string serialize(const Response& r, bool headRequest, bool keepAlive, std::string_view date);

// An RFC 9457 problem+json answer: {"type", "title", "status", "detail"}.
Response problem(int status, std::string_view title, std::string_view detail, std::string_view type = "about:blank");

// JSON string literal of any bytes (invalid UTF-8 and control bytes escaped as \u00XX).
std::string jsonString(std::string_view s);

} // namespace idem::http
