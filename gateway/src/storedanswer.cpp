#include "idem/gateway/storedanswer.h"

#include "idem/format/httpanswer.h"
#include "idem/gateway/keyrules.h"
#include "idem/utf8.h"

#include "idem/gateway/httpresponse.h"

#include <QByteArray>

#include <algorithm>

namespace idem::gateway {

// Written by hand, not through QJsonObject: this runs for every answer the gateway stores, and
// the JSON tree, its UTF-16 strings and their allocations were a noticeable part of a request.
std::string encodeAnswer(const http::Response& r, std::string_view method, std::string_view route,
                         const std::vector<std::string>* replayed)
{
    const auto keep = [&](std::string_view name) {
        if (!replayed)
            return replayedHeader(name);
        return std::any_of(replayed->begin(), replayed->end(),
                           [&](const std::string& h) { return http::equalsIgnoreCase(h, name); });
    };
    const bool text = r.body.find('\0') == std::string::npos && validUtf8(r.body);
    std::string out;
    out.reserve(128 + r.body.size() * (text ? 1 : 2));
    out.append(text ? "{\"body\":" : "{\"body_base64\":");
    if (text) {
        out.append(http::jsonString(r.body));
    } else {
        const QByteArray b64 = QByteArray(r.body.data(), static_cast<qsizetype>(r.body.size())).toBase64();
        out.append("\"").append(b64.constData(), static_cast<std::size_t>(b64.size())).append("\"");
    }
    out.append(",\"gateway\":1,\"headers\":[");
    bool first = true;
    for (const auto& h : r.headers) {
        if (!keep(h.name))
            continue;
        out.append(first ? "[" : ",[").append(http::jsonString(h.name)).append(",");
        if (validUtf8(h.value)) {
            out.append(http::jsonString(h.value)).append("]");
        } else { // (a JSON string holds text: 0xE9 would come back as UTF-8's 0xC3 0xA9)
            const QByteArray b64 = QByteArray(h.value.data(), static_cast<qsizetype>(h.value.size())).toBase64();
            out.append("\"").append(b64.constData(), static_cast<std::size_t>(b64.size())).append("\",\"base64\"]");
        }
        first = false;
    }
    out.append("],\"method\":").append(http::jsonString(method));
    out.append(",\"route\":").append(http::jsonString(route));
    out.append(",\"status\":").append(std::to_string(r.status)).append("}");
    return out;
}

std::optional<http::Response> decodeAnswer(std::string_view stored)
{
    auto a = decodeHttpAnswer(stored); // core's decoder: the one the console and idemctl use
    if (!a)
        return std::nullopt;
    http::Response r;
    r.status = a->status;
    for (auto& [name, value] : a->headers)
        r.headers.push_back({std::move(name), std::move(value)});
    r.body = std::move(a->body);
    return r;
}

} // namespace idem::gateway
