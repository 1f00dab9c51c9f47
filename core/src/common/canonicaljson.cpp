#include "common/canonicaljson.h"

#include "idem/utf8.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <vector>

namespace idem {

namespace {

constexpr int kMaxDepth = 64;

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// One pass over the text, writing the library's form as it goes. Any shape the library would
// write differently from what is read (floats, \u escapes, repeated keys, ...) makes it give up.
class Canonicalizer {
public:
    struct Member {
        std::string_view key;
        std::size_t begin; // the member's text ("key":value) in out_
        std::size_t end;
    };
    // What the objects being read hold, kept from one call to the next (capture calls this for
    // every entry: no allocation per entry beyond its output)
    struct Scratch {
        std::vector<Member> members; // a stack: each open object's members after its parent's
        std::string written;
    };

    Canonicalizer(std::string_view text, std::string& out, Scratch& scratch)
        : p_(text.data()), end_(text.data() + text.size()), out_(out), s_(scratch)
    {
        s_.members.clear();
    }

    bool run()
    {
        skipSpace();
        if (!value(0))
            return false;
        skipSpace();
        return p_ == end_;
    }

private:
    void skipSpace()
    {
        while (p_ < end_ && isSpace(*p_))
            ++p_;
    }

    bool literal(std::string_view word)
    {
        if (static_cast<std::size_t>(end_ - p_) < word.size() || std::string_view(p_, word.size()) != word)
            return false;
        out_.append(word);
        p_ += word.size();
        return true;
    }

    bool value(int depth)
    {
        if (p_ == end_)
            return false;
        switch (*p_) {
        case '{':
            return depth < kMaxDepth && object(depth + 1);
        case '[':
            return depth < kMaxDepth && array(depth + 1);
        case '"':
            return string(nullptr);
        case 't':
            return literal("true");
        case 'f':
            return literal("false");
        case 'n':
            return literal("null");
        default:
            return number();
        }
    }

    // An integer the library keeps as one (int64 or uint64) and writes back as read.
    bool number()
    {
        const char* start = p_;
        if (p_ < end_ && *p_ == '-')
            ++p_;
        const char* digits = p_;
        while (p_ < end_ && *p_ >= '0' && *p_ <= '9')
            ++p_;
        const std::size_t n = static_cast<std::size_t>(p_ - digits);
        if (n == 0 || (n > 1 && *digits == '0'))
            return false;
        if (p_ < end_ && (*p_ == '.' || *p_ == 'e' || *p_ == 'E'))
            return false; // a float: the library writes its own digits
        if (*start == '-') {
            if (n == 1 && *digits == '0')
                return false; // -0 is written 0
            std::int64_t v = 0;
            auto [q, e] = std::from_chars(start, p_, v);
            if (e != std::errc() || q != p_)
                return false; // below int64: a double
        } else {
            std::uint64_t v = 0;
            auto [q, e] = std::from_chars(start, p_, v);
            if (e != std::errc() || q != p_)
                return false; // past uint64: a double
        }
        out_.append(start, p_);
        return true;
    }

    // A string copied as it is: well-formed UTF-8, no control byte, only the escapes the library
    // writes itself. `key`: a member name, which must hold no escape at all (so keys compare as
    // read); its bytes are returned there.
    bool string(std::string_view* key)
    {
        const char* start = p_++;
        for (;;) {
            if (p_ == end_)
                return false;
            const auto c = static_cast<unsigned char>(*p_);
            if (c == '"')
                break;
            if (c < 0x20)
                return false;
            if (c == '\\') {
                if (key || end_ - p_ < 2)
                    return false;
                const char e = p_[1];
                if (e != '"' && e != '\\' && e != 'b' && e != 'f' && e != 'n' && e != 'r' && e != 't')
                    return false;
                p_ += 2;
                continue;
            }
            if (c < 0x80) {
                ++p_;
                continue;
            }
            const int n = utf8Tail(static_cast<unsigned char>(c), end_ - p_ > 1 ? static_cast<unsigned char>(p_[1]) : 0);
            if (n == 0 || end_ - p_ <= n)
                return false;
            for (int k = 2; k <= n; ++k)
                if ((static_cast<unsigned char>(p_[k]) & 0xC0) != 0x80)
                    return false;
            p_ += n + 1;
        }
        ++p_;
        if (key)
            *key = std::string_view(start + 1, static_cast<std::size_t>(p_ - start - 2));
        out_.append(start, p_);
        return true;
    }

    bool array(int depth)
    {
        ++p_;
        out_ += '[';
        skipSpace();
        if (p_ < end_ && *p_ == ']') {
            ++p_;
            out_ += ']';
            return true;
        }
        for (;;) {
            skipSpace();
            if (!value(depth))
                return false;
            skipSpace();
            if (p_ == end_)
                return false;
            if (*p_ == ']') {
                ++p_;
                out_ += ']';
                return true;
            }
            if (*p_ != ',')
                return false;
            ++p_;
            out_ += ',';
        }
    }

    bool object(int depth)
    {
        ++p_;
        const std::size_t open = out_.size();
        out_ += '{';
        skipSpace();
        if (p_ < end_ && *p_ == '}') {
            ++p_;
            out_ += '}';
            return true;
        }
        const std::size_t base = s_.members.size();
        bool sorted = true;
        for (;;) {
            skipSpace();
            if (p_ == end_ || *p_ != '"')
                return false;
            Member m{{}, out_.size(), 0};
            if (!string(&m.key))
                return false;
            skipSpace();
            if (p_ == end_ || *p_ != ':')
                return false;
            ++p_;
            out_ += ':';
            skipSpace();
            if (!value(depth))
                return false;
            m.end = out_.size();
            if (s_.members.size() > base) {
                const Member& last = s_.members.back();
                if (last.key == m.key)
                    return false; // repeated: the library keeps the last
                sorted = sorted && last.key < m.key;
            }
            s_.members.push_back(m);
            skipSpace();
            if (p_ == end_)
                return false;
            if (*p_ == '}') {
                ++p_;
                break;
            }
            if (*p_ != ',')
                return false;
            ++p_;
            out_ += ',';
        }
        const auto first = s_.members.begin() + static_cast<std::ptrdiff_t>(base);
        if (!sorted) { // the library's objects are maps: members in the order of their keys
            std::sort(first, s_.members.end(), [](const Member& a, const Member& b) { return a.key < b.key; });
            if (std::adjacent_find(first, s_.members.end(), [](const Member& a, const Member& b) {
                    return a.key == b.key;
                }) != s_.members.end())
                return false;
            s_.written.assign(out_, open + 1);
            out_.resize(open + 1);
            // keys point into the input, not into out_: they stay valid while out_ is rewritten
            for (auto m = first; m != s_.members.end(); ++m) {
                if (m != first)
                    out_ += ',';
                out_.append(s_.written, m->begin - open - 1, m->end - m->begin);
            }
        }
        s_.members.erase(first, s_.members.end()); // the parent's members are what is left
        out_ += '}';
        return true;
    }

    const char* p_;
    const char* end_;
    std::string& out_;
    Scratch& s_;
};

} // namespace

bool appendCanonicalJson(std::string_view text, std::string& out)
{
    const std::size_t size = out.size();
    thread_local Canonicalizer::Scratch scratch;
    if (Canonicalizer(text, out, scratch).run())
        return true;
    out.resize(size);
    return false;
}

} // namespace idem
