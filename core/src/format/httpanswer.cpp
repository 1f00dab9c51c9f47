#include "idem/format/httpanswer.h"

#include "idem/base64.h"
#include "idem/format/jsonscan.h"
#include "idem/utf8.h"

#include <array>
#include <charconv>

namespace idem {

namespace {

bool equalsIgnoreCase(std::string_view a, std::string_view b)
{
    if (a.size() != b.size())
        return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
        if (lower(a[i]) != lower(b[i]))
            return false;
    }
    return true;
}

bool containsIgnoreCase(std::string_view hay, std::string_view needle)
{
    for (std::size_t i = 0; i + needle.size() <= hay.size(); ++i)
        if (equalsIgnoreCase(hay.substr(i, needle.size()), needle))
            return true;
    return false;
}

// The length of `s`'s longest prefix of at most `max` bytes that ends on a character boundary.
std::size_t utf8Cut(std::string_view s, std::size_t max)
{
    if (s.size() <= max)
        return s.size();
    std::size_t n = max;
    while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80)
        --n;
    return n;
}

std::string hexDump(std::string_view body, std::size_t maxBytes)
{
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    const std::size_t n = std::min(body.size(), maxBytes);
    for (std::size_t line = 0; line < n; line += 16) {
        std::array<char, 8> offset{};
        const auto [end, ec] = std::to_chars(offset.data(), offset.data() + offset.size(), line, 16);
        (void)ec;
        out.append(static_cast<std::size_t>(8 - (end - offset.data())), '0');
        out.append(offset.data(), end);
        out.append("  ");
        std::string ascii;
        for (std::size_t i = line; i < line + 16; ++i) {
            if (i < n) {
                const auto c = static_cast<unsigned char>(body[i]);
                out.push_back(kHex[c >> 4]);
                out.push_back(kHex[c & 0xF]);
                ascii.push_back(c >= 0x20 && c < 0x7F ? static_cast<char>(c) : '.');
            } else {
                out.append("  ");
            }
            out.push_back(' ');
            if (i % 16 == 7)
                out.push_back(' ');
        }
        out.append(" |" + ascii + "|\n");
    }
    return out;
}

} // namespace

const std::string* HttpAnswer::header(std::string_view name) const
{
    for (const auto& [n, v] : headers)
        if (equalsIgnoreCase(n, name))
            return &v;
    return nullptr;
}

std::optional<HttpAnswer> decodeHttpAnswer(std::string_view stored)
{
    const json::Object o = json::scanObject(stored, false);
    if (!o.complete)
        return std::nullopt;
    const json::Member* gateway = o.find("gateway");
    const json::Member* status = o.find("status");
    if (!gateway || gateway->kind != json::Kind::Number || gateway->text != "1" || !status ||
        status->kind != json::Kind::Number)
        return std::nullopt;
    HttpAnswer a;
    const auto [p, ec] = std::from_chars(status->text.data(), status->text.data() + status->text.size(), a.status);
    if (ec != std::errc() || p != status->text.data() + status->text.size() || a.status < 100 || a.status > 599)
        return std::nullopt;
    if (const std::string* m = o.string("method"))
        a.method = *m;
    if (const std::string* r = o.string("route"))
        a.route = *r;
    if (const json::Member* h = o.find("headers"); h && h->kind == json::Kind::Array) {
        const auto items = json::arrayElements(stored.substr(h->begin, h->end - h->begin));
        if (!items)
            return std::nullopt;
        for (const std::string_view item : *items)
            if (const auto nv = json::stringArray(item); nv && nv->size() == 2) {
                a.headers.emplace_back((*nv)[0], (*nv)[1]);
            } else if (nv && nv->size() == 3 && (*nv)[2] == "base64") { // a value that is not UTF-8
                auto bytes = fromBase64((*nv)[1]);
                if (!bytes)
                    return std::nullopt;
                a.headers.emplace_back((*nv)[0], std::move(*bytes));
            }
    }
    if (o.has("body_base64")) {
        const std::string* b64 = o.string("body_base64");
        auto bytes = b64 ? fromBase64(*b64) : std::nullopt;
        if (!bytes)
            return std::nullopt;
        a.body = std::move(*bytes);
        a.bodyBase64 = true;
    } else if (const std::string* body = o.string("body")) {
        a.body = *body;
    }
    return a;
}

bool isUtf8(std::string_view s) { return validUtf8(s); }

std::string_view nameOf(BodyKind k)
{
    switch (k) {
    case BodyKind::Empty: return "empty";
    case BodyKind::Json: return "JSON";
    case BodyKind::Text: return "text";
    case BodyKind::Binary: break;
    }
    return "binary";
}

BodyView viewBody(std::string_view body, std::string_view contentType, std::size_t maxText, std::size_t hexBytes)
{
    BodyView v;
    v.bytes = body.size();
    if (body.empty())
        return v;
    const bool plainText = containsIgnoreCase(contentType, "text/plain");
    if (!plainText && body.size() <= 4 * maxText) {
        if (auto p = json::pretty(body)) {
            v.kind = BodyKind::Json;
            v.cut = p->size() > maxText;
            v.text = p->substr(0, utf8Cut(*p, maxText));
            return v;
        }
    }
    bool text = isUtf8(body);
    for (std::size_t i = 0; text && i < body.size(); ++i) {
        const auto c = static_cast<unsigned char>(body[i]);
        text = c >= 0x20 || c == '\t' || c == '\n' || c == '\r';
    }
    if (text) {
        v.kind = BodyKind::Text;
        v.cut = body.size() > maxText;
        v.text = std::string(body.substr(0, utf8Cut(body, maxText)));
        return v;
    }
    v.kind = BodyKind::Binary;
    v.cut = body.size() > hexBytes;
    v.text = hexDump(body, hexBytes);
    return v;
}

} // namespace idem
