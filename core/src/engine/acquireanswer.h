#pragma once

#include "idem/engine/store.h"
#include "idem/errors.h"

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

// acquire.lua's answers: a line per id, words and numbers separated by one space, and a tail
// (a stored response or error) taken as it is. Internal to the engine.
namespace idem::acquireanswer {

// Reads acquire.lua's lines: words and numbers separated by one space, and a tail taken as it is.
class LineReader {
public:
    explicit LineReader(std::string_view line) : m_line(line), m_p(line.data()), m_end(line.data() + line.size()) {}
    std::string_view word()
    {
        const char* start = m_p;
        while (m_p < m_end && *m_p != ' ')
            ++m_p;
        const std::string_view w(start, static_cast<std::size_t>(m_p - start));
        separator();
        return w;
    }
    // a number the script wrote: digits only (none of its numbers is negative)
    std::int64_t number()
    {
        std::int64_t v = 0;
        const auto [next, ec] = std::from_chars(m_p, m_end, v);
        m_ok = m_ok && ec == std::errc() && next != m_p && *m_p != '-';
        m_p = next;
        separator();
        return v;
    }
    bool atEnd() const { return m_p == m_end; }
    bool atDigit() const { return m_p < m_end && *m_p >= '0' && *m_p <= '9'; }
    std::string_view rest()
    {
        const std::string_view r(m_p, static_cast<std::size_t>(m_end - m_p));
        m_p = m_end;
        m_trailingSeparator = false; // the space before an empty tail belongs to it
        return r;
    }
    // every field read, nothing left over (a line ends after its last field: no separator)
    void finish() const
    {
        if (!m_ok || m_p != m_end || m_trailingSeparator)
            fail();
    }
    [[noreturn]] void fail() const
    {
        throw ProtoError("acquire script answered '" + std::string(m_line.substr(0, 120)) + "'");
    }

private:
    void separator()
    {
        m_trailingSeparator = m_p < m_end && *m_p == ' ';
        if (m_trailingSeparator)
            ++m_p;
        else
            m_ok = m_ok && m_p == m_end; // a field runs to the next space or the end, nothing else
    }
    std::string_view m_line;
    const char* m_p;
    const char* m_end;
    bool m_ok = true;
    bool m_trailingSeparator = false;
};

// An id acquired fresh: the script answered its fence alone, which is the server's clock (µs), and
// wrote the lease as running from that millisecond. A fence below 1 is no answer of the script's
// (ProtoError): an owner never gets a fence the sink could not tell from "none".
void acquiredFresh(AcquireResult& out, std::int64_t fence, std::string_view id, std::string_view token,
                   std::int64_t leaseMs);
// One id's answer: the rest of the line `in` reads (for one id, after the server time).
void parseAcquireLine(AcquireResult& out, LineReader& in, std::string_view id, std::string_view token,
                      std::int64_t leaseMs);

} // namespace idem::acquireanswer
