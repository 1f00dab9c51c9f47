#include "idem/gateway/httpresponse.h"

#include <algorithm>

namespace idem::http {

void Response::set(std::string_view name, std::string_view value)
{
    std::erase_if(headers, [&](const Header& h) { return equalsIgnoreCase(h.name, name); });
    headers.push_back({std::string(name), std::string(value)});
}

const std::string* Response::header(std::string_view name) const
{
    for (const auto& h : headers)
        if (equalsIgnoreCase(h.name, name))
            return &h.value;
    return nullptr;
}

std::string_view reasonPhrase(int status)
{
    // every code of the IANA registry (RFC 9110 and the RFCs it names), so that an upstream's answer
    // goes back with its phrase; an unregistered code goes with none, which RFC 9112 allows
    switch (status) {
    case 100: return "Continue";
    case 101: return "Switching Protocols";
    case 102: return "Processing";
    case 103: return "Early Hints";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 203: return "Non-Authoritative Information";
    case 204: return "No Content";
    case 205: return "Reset Content";
    case 206: return "Partial Content";
    case 207: return "Multi-Status";
    case 208: return "Already Reported";
    case 226: return "IM Used";
    case 300: return "Multiple Choices";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 303: return "See Other";
    case 304: return "Not Modified";
    case 305: return "Use Proxy";
    case 307: return "Temporary Redirect";
    case 308: return "Permanent Redirect";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 402: return "Payment Required";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 406: return "Not Acceptable";
    case 407: return "Proxy Authentication Required";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 411: return "Length Required";
    case 412: return "Precondition Failed";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 416: return "Range Not Satisfiable";
    case 417: return "Expectation Failed";
    case 421: return "Misdirected Request";
    case 422: return "Unprocessable Content";
    case 423: return "Locked";
    case 424: return "Failed Dependency";
    case 425: return "Too Early";
    case 426: return "Upgrade Required";
    case 428: return "Precondition Required";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 451: return "Unavailable For Legal Reasons";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
    case 506: return "Variant Also Negotiates";
    case 507: return "Insufficient Storage";
    case 508: return "Loop Detected";
    case 510: return "Not Extended";
    case 511: return "Network Authentication Required";
    default: return "";
    }
}

std::string serialize(const Response& r, bool headRequest, bool keepAlive, std::string_view date)
{
    const bool noBody = (r.status >= 100 && r.status < 200) || r.status == 204 || r.status == 304;
    std::string out;
    std::size_t size = 160 + r.body.size();
    for (const auto& h : r.headers)
        size += h.name.size() + h.value.size() + 4;
    out.reserve(size);
    out.append("HTTP/1.1 ").append(std::to_string(r.status)).append(" ").append(reasonPhrase(r.status)).append("\r\n");
    for (const auto& h : r.headers) {
        if (equalsIgnoreCase(h.name, "Content-Length") || equalsIgnoreCase(h.name, "Connection") ||
            equalsIgnoreCase(h.name, "Date"))
            continue;
        out.append(h.name).append(": ").append(h.value).append("\r\n");
    }
    if (!date.empty())
        out.append("Date: ").append(date).append("\r\n");
    if (!noBody && !headRequest) {
        out.append("Content-Length: ").append(std::to_string(r.body.size())).append("\r\n");
    } else if (!noBody) {
        // a HEAD answer says the length a GET would have had when the upstream said it (a number),
        // else none (RFC 9110 §8.6)
        const std::string* length = r.header("Content-Length");
        if (length && !length->empty() && length->size() <= 19 &&
            std::all_of(length->begin(), length->end(), [](char c) { return c >= '0' && c <= '9'; }))
            out.append("Content-Length: ").append(*length).append("\r\n");
    }
    if (!keepAlive)
        out.append("Connection: close\r\n");
    out.append("\r\n");
    if (!noBody && !headRequest)
        out.append(r.body);
    return out;
}

std::string jsonString(std::string_view s)
{
    static const char* hex = "0123456789abcdef";
    std::string out = "\"";
    for (std::size_t i = 0; i < s.size(); ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c == '"' || c == '\\') {
            out.push_back('\\');
            out.push_back(static_cast<char>(c));
        } else if (c < 0x20 || c == 0x7f || c >= 0x80) {
            // valid UTF-8 sequences pass as they are; anything else is escaped byte by byte
            const std::size_t n = c >= 0xf0 ? (c < 0xf5 ? 4 : 0) : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
            bool ok = c >= 0x80 && n > 0 && i + n <= s.size();
            for (std::size_t k = 1; ok && k < n; ++k)
                ok = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
            if (ok) {
                out.append(s.substr(i, n));
                i += n - 1;
            } else {
                out.append("\\u00").push_back(hex[c >> 4]);
                out.push_back(hex[c & 15]);
            }
        } else {
            out.push_back(static_cast<char>(c));
        }
    }
    out.push_back('"');
    return out;
}

Response problem(int status, std::string_view title, std::string_view detail, std::string_view type)
{
    Response r;
    r.status = status;
    r.headers.push_back({"Content-Type", "application/problem+json"});
    r.body = "{\"type\":" + jsonString(type) + ",\"title\":" + jsonString(title) +
             ",\"status\":" + std::to_string(status) + ",\"detail\":" + jsonString(detail) + "}";
    return r;
}

} // namespace idem::http
