#include "idem/format/jsonscan.h"

#include "idem/hash.h"

namespace idem::json {

namespace {

constexpr int kMaxDepth = 128; // deeper nesting is refused (no record nests like that)

enum class R { Ok, Cut, Bad };

class Scanner {
public:
    Scanner(std::string_view s, bool prefix) : m_s(s), m_prefix(prefix) {}

    std::size_t pos() const { return m_p; }
    const std::string& error() const { return m_error; }
    bool atEnd()
    {
        ws();
        return m_p >= m_s.size();
    }
    char peek() const { return m_p < m_s.size() ? m_s[m_p] : '\0'; }
    void advance() { ++m_p; }

    void ws()
    {
        while (m_p < m_s.size() && (m_s[m_p] == ' ' || m_s[m_p] == '\t' || m_s[m_p] == '\n' || m_s[m_p] == '\r'))
            ++m_p;
    }

    // The input ran out: a cut when it is a prefix, an error otherwise.
    R ranOut()
    {
        if (m_prefix)
            return R::Cut;
        return bad("unexpected end of JSON");
    }
    R bad(std::string why)
    {
        if (m_error.empty())
            m_error = std::move(why) + " at byte " + std::to_string(m_p);
        return R::Bad;
    }

    R expect(char c, const char* what)
    {
        ws();
        if (m_p >= m_s.size())
            return ranOut();
        if (m_s[m_p] != c)
            return bad(std::string("expected ") + what);
        ++m_p;
        return R::Ok;
    }

    // A string at '"'; decoded into *out when out is given.
    R string(std::string* out)
    {
        ++m_p; // the quote
        while (true) {
            if (m_p >= m_s.size())
                return ranOut();
            const auto c = static_cast<unsigned char>(m_s[m_p]);
            if (c == '"') {
                ++m_p;
                return R::Ok;
            }
            if (c < 0x20)
                return bad("control character in a string");
            if (c != '\\') {
                if (out)
                    out->push_back(static_cast<char>(c));
                ++m_p;
                continue;
            }
            if (m_p + 1 >= m_s.size())
                return ranOut();
            const char e = m_s[m_p + 1];
            m_p += 2;
            char plain = 0;
            switch (e) {
            case '"': plain = '"'; break;
            case '\\': plain = '\\'; break;
            case '/': plain = '/'; break;
            case 'b': plain = '\b'; break;
            case 'f': plain = '\f'; break;
            case 'n': plain = '\n'; break;
            case 'r': plain = '\r'; break;
            case 't': plain = '\t'; break;
            case 'u': {
                std::uint32_t cp = 0;
                if (R r = hex4(cp); r != R::Ok)
                    return r;
                if (cp >= 0xD800 && cp <= 0xDBFF) { // a high surrogate: its low half follows
                    if (m_p + 2 > m_s.size())
                        return ranOut();
                    if (m_s[m_p] != '\\' || m_s[m_p + 1] != 'u')
                        return bad("unpaired surrogate");
                    m_p += 2;
                    std::uint32_t low = 0;
                    if (R r = hex4(low); r != R::Ok)
                        return r;
                    if (low < 0xDC00 || low > 0xDFFF)
                        return bad("unpaired surrogate");
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                    return bad("unpaired surrogate");
                }
                if (out)
                    appendUtf8(*out, cp);
                continue;
            }
            default: return bad("bad escape in a string");
            }
            if (out)
                out->push_back(plain);
        }
    }

    R number(std::string* out)
    {
        const std::size_t start = m_p;
        auto digits = [&]() -> std::size_t {
            const std::size_t from = m_p;
            while (m_p < m_s.size() && m_s[m_p] >= '0' && m_s[m_p] <= '9')
                ++m_p;
            return m_p - from;
        };
        if (peek() == '-')
            ++m_p;
        if (m_p >= m_s.size())
            return ranOut();
        if (m_s[m_p] == '0') {
            ++m_p;
        } else if (digits() == 0) {
            return bad("bad number");
        }
        if (m_p < m_s.size() && m_s[m_p] == '.') {
            ++m_p;
            if (digits() == 0)
                return m_p >= m_s.size() ? ranOut() : bad("bad number");
        }
        if (m_p < m_s.size() && (m_s[m_p] == 'e' || m_s[m_p] == 'E')) {
            ++m_p;
            if (m_p < m_s.size() && (m_s[m_p] == '+' || m_s[m_p] == '-'))
                ++m_p;
            if (digits() == 0)
                return m_p >= m_s.size() ? ranOut() : bad("bad number");
        }
        if (m_p >= m_s.size() && m_prefix)
            return R::Cut; // more digits may follow
        if (out)
            out->assign(m_s.substr(start, m_p - start));
        return R::Ok;
    }

    R literal(std::string_view word)
    {
        for (const char c : word) {
            if (m_p >= m_s.size())
                return ranOut();
            if (m_s[m_p] != c)
                return bad("bad literal");
            ++m_p;
        }
        return R::Ok;
    }

    // Any value; scalars decoded into *text when given.
    R value(Kind* kind, std::string* text, int depth)
    {
        ws();
        if (m_p >= m_s.size())
            return ranOut();
        switch (m_s[m_p]) {
        case '"': setKind(kind, Kind::String); return string(text);
        case '{': setKind(kind, Kind::Object); return container('}', depth);
        case '[': setKind(kind, Kind::Array); return container(']', depth);
        case 't': setKind(kind, Kind::True); return literal("true");
        case 'f': setKind(kind, Kind::False); return literal("false");
        case 'n': setKind(kind, Kind::Null); return literal("null");
        default:
            if (m_s[m_p] == '-' || (m_s[m_p] >= '0' && m_s[m_p] <= '9')) {
                setKind(kind, Kind::Number);
                return number(text);
            }
            return bad("unexpected character");
        }
    }

private:
    static void setKind(Kind* k, Kind v)
    {
        if (k)
            *k = v;
    }

    R hex4(std::uint32_t& cp)
    {
        for (int i = 0; i < 4; ++i, ++m_p) {
            if (m_p >= m_s.size())
                return ranOut();
            const char h = m_s[m_p];
            const int v = hexDigit(h);
            if (v < 0)
                return bad("bad \\u escape");
            cp = cp * 16 + static_cast<std::uint32_t>(v);
        }
        return R::Ok;
    }

    static void appendUtf8(std::string& out, std::uint32_t cp)
    {
        if (cp < 0x80) {
            out.push_back(static_cast<char>(cp));
        } else if (cp < 0x800) {
            out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
            out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
        } else if (cp < 0x10000) {
            out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
            out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
            out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
        } else {
            out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
            out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
            out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
            out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
        }
    }

    // An object or array at its opening bracket, skipped (validated, not kept).
    R container(char close, int depth)
    {
        if (depth >= kMaxDepth)
            return bad("JSON nested too deeply");
        ++m_p;
        ws();
        if (m_p >= m_s.size())
            return ranOut();
        if (m_s[m_p] == close) {
            ++m_p;
            return R::Ok;
        }
        while (true) {
            if (close == '}') {
                ws();
                if (m_p >= m_s.size())
                    return ranOut();
                if (m_s[m_p] != '"')
                    return bad("expected a member name");
                if (R r = string(nullptr); r != R::Ok)
                    return r;
                if (R r = expect(':', "':'"); r != R::Ok)
                    return r;
            }
            if (R r = value(nullptr, nullptr, depth + 1); r != R::Ok)
                return r;
            ws();
            if (m_p >= m_s.size())
                return ranOut();
            if (m_s[m_p] == close) {
                ++m_p;
                return R::Ok;
            }
            if (m_s[m_p] != ',')
                return bad(close == '}' ? "expected ',' or '}'" : "expected ',' or ']'");
            ++m_p;
        }
    }

    std::string_view m_s;
    bool m_prefix;
    std::size_t m_p = 0;
    std::string m_error;
};

} // namespace

const Member* Object::find(std::string_view key) const
{
    for (auto it = members.rbegin(); it != members.rend(); ++it)
        if (it->key == key)
            return &*it;
    return nullptr;
}

const std::string* Object::string(std::string_view key) const
{
    const Member* m = find(key);
    return m && m->kind == Kind::String && !m->cut ? &m->text : nullptr;
}

Object scanObject(std::string_view text, bool isPrefix)
{
    Object out;
    Scanner s(text, isPrefix);
    s.ws();
    if (s.atEnd()) {
        out.error = isPrefix ? std::string() : "empty value";
        out.cut = isPrefix;
        return out;
    }
    if (s.peek() != '{') {
        // say whether it is JSON of another kind or not JSON at all
        Kind k{};
        const R r = s.value(&k, nullptr, 0);
        if (r == R::Bad)
            out.error = "invalid JSON: " + s.error();
        else if (r == R::Ok && !s.atEnd())
            out.error = "invalid JSON: text after the value at byte " + std::to_string(s.pos());
        else
            out.error = "JSON value is not an object";
        return out;
    }
    out.isObject = true;
    s.advance();
    auto finish = [&](R r) {
        if (r == R::Cut)
            out.cut = true;
        else
            out.error = "invalid JSON: " + s.error();
        return out;
    };
    s.ws();
    if (s.atEnd())
        return finish(s.ranOut());
    if (s.peek() == '}') {
        s.advance();
    } else {
        while (true) {
            s.ws();
            if (s.atEnd())
                return finish(s.ranOut());
            if (s.peek() != '"')
                return finish(s.bad("expected a member name"));
            Member m;
            if (R r = s.string(&m.key); r != R::Ok)
                return finish(r);
            if (R r = s.expect(':', "':'"); r != R::Ok)
                return finish(r);
            s.ws();
            m.begin = s.pos();
            const R r = s.value(&m.kind, &m.text, 1);
            m.end = s.pos();
            if (r == R::Bad)
                return finish(r);
            if (r == R::Cut) {
                m.cut = true;
                m.end = text.size();
                if (m.kind == Kind::String || m.kind == Kind::Number)
                    m.text.clear(); // only part of it
                out.members.push_back(std::move(m));
                return finish(r);
            }
            out.members.push_back(std::move(m));
            s.ws();
            if (s.atEnd())
                return finish(s.ranOut());
            if (s.peek() == '}') {
                s.advance();
                break;
            }
            if (s.peek() != ',')
                return finish(s.bad("expected ',' or '}'"));
            s.advance();
        }
    }
    if (!s.atEnd()) {
        out.error = "invalid JSON: text after the object at byte " + std::to_string(s.pos());
        return out;
    }
    out.complete = true;
    return out;
}

std::vector<Member> scanTail(std::string_view tail)
{
    // candidates from the front of the tail: the first that parses to the end is the longest run
    for (std::size_t i = 0; i < tail.size(); ++i) {
        if (tail[i] != '"')
            continue;
        std::size_t b = i;
        while (b > 0 && (tail[b - 1] == ' ' || tail[b - 1] == '\t' || tail[b - 1] == '\n' || tail[b - 1] == '\r'))
            --b;
        if (b == 0 || (tail[b - 1] != ',' && tail[b - 1] != '{'))
            continue;
        Scanner s(tail.substr(i), false);
        std::vector<Member> members;
        bool ok = false;
        while (true) {
            s.ws();
            if (s.peek() != '"')
                break;
            Member m;
            if (s.string(&m.key) != R::Ok || s.expect(':', "':'") != R::Ok)
                break;
            s.ws();
            m.begin = i + s.pos();
            if (s.value(&m.kind, &m.text, 1) != R::Ok)
                break;
            m.end = i + s.pos();
            m.fromTail = true;
            members.push_back(std::move(m));
            s.ws();
            if (s.peek() == ',') {
                s.advance();
                continue;
            }
            if (s.peek() == '}') {
                s.advance();
                ok = s.atEnd();
            }
            break;
        }
        if (ok)
            return members;
    }
    return {};
}

std::optional<std::vector<std::string>> stringArray(std::string_view text)
{
    Scanner s(text, false);
    if (s.expect('[', "'['") != R::Ok)
        return std::nullopt;
    std::vector<std::string> out;
    s.ws();
    if (s.peek() == ']') {
        s.advance();
        return s.atEnd() ? std::optional(out) : std::nullopt;
    }
    while (true) {
        s.ws();
        if (s.peek() != '"')
            return std::nullopt;
        std::string item;
        if (s.string(&item) != R::Ok)
            return std::nullopt;
        out.push_back(std::move(item));
        s.ws();
        if (s.peek() == ']') {
            s.advance();
            return s.atEnd() ? std::optional(out) : std::nullopt;
        }
        if (s.peek() != ',')
            return std::nullopt;
        s.advance();
    }
}

std::optional<std::vector<std::string_view>> arrayElements(std::string_view text)
{
    Scanner s(text, false);
    if (s.expect('[', "'['") != R::Ok)
        return std::nullopt;
    std::vector<std::string_view> out;
    s.ws();
    if (s.peek() == ']') {
        s.advance();
        return s.atEnd() ? std::optional(out) : std::nullopt;
    }
    while (true) {
        s.ws();
        const std::size_t begin = s.pos();
        if (s.value(nullptr, nullptr, 1) != R::Ok)
            return std::nullopt;
        out.push_back(text.substr(begin, s.pos() - begin));
        s.ws();
        if (s.peek() == ']') {
            s.advance();
            return s.atEnd() ? std::optional(out) : std::nullopt;
        }
        if (s.peek() != ',')
            return std::nullopt;
        s.advance();
    }
}

std::optional<std::string> pretty(std::string_view text)
{
    if (!valid(text))
        return std::nullopt;
    // valid JSON: outside strings only structure, literals, numbers and whitespace remain
    std::string out;
    out.reserve(text.size() + text.size() / 4);
    int depth = 0;
    const auto newline = [&] {
        out.push_back('\n');
        out.append(static_cast<std::size_t>(depth) * 2, ' ');
    };
    const auto isWs = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '"') { // copy the string whole, escapes and all
            const std::size_t from = i++;
            while (text[i] != '"')
                i += text[i] == '\\' ? 2 : 1;
            out.append(text.substr(from, i - from + 1));
        } else if (c == '{' || c == '[') {
            std::size_t j = i + 1;
            while (isWs(text[j]))
                ++j;
            if (text[j] == '}' || text[j] == ']') { // empty: {} or []
                out.push_back(c);
                out.push_back(text[j]);
                i = j;
                continue;
            }
            out.push_back(c);
            ++depth;
            newline();
        } else if (c == '}' || c == ']') {
            --depth;
            newline();
            out.push_back(c);
        } else if (c == ',') {
            out.push_back(',');
            newline();
        } else if (c == ':') {
            out.append(": ");
        } else if (!isWs(c)) {
            out.push_back(c);
        }
    }
    return out;
}

bool valid(std::string_view text, std::string* why)
{
    Scanner s(text, false);
    const R r = s.value(nullptr, nullptr, 0);
    if (r == R::Ok && s.atEnd())
        return true;
    if (why)
        *why = r == R::Ok ? "text after the value at byte " + std::to_string(s.pos()) : s.error();
    return false;
}

} // namespace idem::json
