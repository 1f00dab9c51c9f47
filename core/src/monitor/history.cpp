#include "idem/monitor/history.h"

#include "idem/errors.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <fcntl.h>
#include <unistd.h>

namespace idem {
namespace {
namespace fs = std::filesystem;
constexpr char kMagic[] = "idem-history 1\n"; // 15 bytes, then records
constexpr std::size_t kMagicSize = sizeof(kMagic) - 1;
constexpr std::uint32_t kMaxRecord = 1u << 20;

std::uint32_t crc32(const char* data, std::size_t n)
{
    static const auto table = [] {
        std::array<std::uint32_t, 256> t{};
        for (std::uint32_t i = 0; i < 256; ++i) {
            std::uint32_t c = i;
            for (int k = 0; k < 8; ++k)
                c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
            t[i] = c;
        }
        return t;
    }();
    std::uint32_t c = 0xFFFFFFFFu;
    for (std::size_t i = 0; i < n; ++i)
        c = table[(c ^ static_cast<unsigned char>(data[i])) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

template <typename T> void put(std::string& out, T v)
{
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T)); // the machine's byte order: a history stays on the machine that wrote it
    out.append(b, sizeof(T));
}

void putString(std::string& out, const std::string& s)
{
    const auto n = static_cast<std::uint16_t>(std::min<std::size_t>(s.size(), 0xFFFF));
    put(out, n);
    out.append(s.data(), n);
}

struct Reader {
    const char* p;
    const char* end;
    template <typename T> bool get(T& v)
    {
        if (end - p < static_cast<std::ptrdiff_t>(sizeof(T)))
            return false;
        std::memcpy(&v, p, sizeof(T));
        p += sizeof(T);
        return true;
    }
    bool getString(std::string& s)
    {
        std::uint16_t n = 0;
        if (!get(n) || end - p < n)
            return false;
        s.assign(p, n);
        p += n;
        return true;
    }
};

void encode(std::string& out, const Transition& t)
{
    std::string payload;
    payload.reserve(64 + t.key.size() + t.owner.size());
    put(payload, t.atMs);
    put(payload, static_cast<std::uint8_t>(t.state));
    put(payload, static_cast<std::uint8_t>(t.format));
    put(payload, t.flags);
    put(payload, t.source);
    put(payload, t.keyType);
    put(payload, t.attempt);
    put(payload, t.createdMs);
    put(payload, t.fence);
    put(payload, t.leaseUntilMs);
    put(payload, t.expiresAtMs);
    putString(payload, t.key);
    putString(payload, t.owner);
    putString(payload, t.actor);
    putString(payload, t.op);
    put(out, static_cast<std::uint32_t>(payload.size()));
    put(out, crc32(payload.data(), payload.size()));
    out += payload;
}

bool decode(Reader& r, Transition& t)
{
    std::uint8_t state = 0, format = 0;
    if (!(r.get(t.atMs) && r.get(state) && r.get(format) && r.get(t.flags) && r.get(t.source) && r.get(t.keyType) && r.get(t.attempt) && r.get(t.createdMs) &&
          r.get(t.fence) && r.get(t.leaseUntilMs) && r.get(t.expiresAtMs) && r.getString(t.key) &&
          r.getString(t.owner) && r.getString(t.actor) && r.getString(t.op)))
        return false;
    t.state = static_cast<RecordState>(state);
    t.format = static_cast<RecordFormat>(format);
    return r.p == r.end;
}

[[noreturn]] void fail(const std::string& what, const std::string& path)
{
    throw Error("history: " + what + " " + path + ": " + std::strerror(errno));
}

std::string segmentName(std::uint64_t first)
{
    char name[40];
    std::snprintf(name, sizeof name, "seg-%016llu.idh", static_cast<unsigned long long>(first));
    return name;
}
} // namespace

bool differs(const Transition& a, const Transition& b, std::int64_t ttlSlackMs)
{
    if (a.gone() != b.gone())
        return true;
    if (a.gone())
        return false;
    const bool ttlMoved = (a.expiresAtMs == -1) != (b.expiresAtMs == -1) ||
                          (a.expiresAtMs != -1 && std::llabs(a.expiresAtMs - b.expiresAtMs) > ttlSlackMs);
    return a.state != b.state || a.owner != b.owner || a.attempt != b.attempt || a.fence != b.fence ||
           a.leaseUntilMs != b.leaseUntilMs || (a.flags & Transition::Terminal) != (b.flags & Transition::Terminal) ||
           a.format != b.format || ttlMoved;
}

HistoryLog::HistoryLog(std::string directory, HistoryLimits limits) : m_dir(std::move(directory)), m_limits(limits) {}

HistoryLog::~HistoryLog() { closeFd(); }

void HistoryLog::closeFd()
{
    if (m_fd >= 0)
        ::close(m_fd);
    m_fd = -1;
}

std::vector<Transition> HistoryLog::readSegment(const std::string& path)
{
    std::vector<Transition> out;
    std::ifstream in(path, std::ios::binary);
    const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (data.compare(0, kMagicSize, kMagic) != 0)
        return out;
    Reader r{data.data() + kMagicSize, data.data() + data.size()};
    while (true) {
        std::uint32_t length = 0, crc = 0;
        if (!r.get(length) || !r.get(crc) || length > kMaxRecord || r.end - r.p < length)
            break; // the end, or a record cut short
        if (crc32(r.p, length) != crc)
            break;
        Reader one{r.p, r.p + length};
        Transition t;
        if (!decode(one, t))
            break;
        out.push_back(std::move(t));
        r.p += length;
    }
    return out;
}

namespace {
std::vector<std::pair<std::uint64_t, std::string>> segmentFiles(const std::string& dir)
{
    std::error_code ec;
    std::vector<std::pair<std::uint64_t, std::string>> found;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
        const std::string name = e.path().filename().string();
        if (name.size() == 24 && name.starts_with("seg-") && name.ends_with(".idh") &&
            name.find_first_not_of("0123456789", 4) == 20)
            found.emplace_back(std::stoull(name.substr(4, 16)), e.path().string());
    }
    if (ec)
        throw Error("history: cannot read " + dir + ": " + ec.message());
    std::sort(found.begin(), found.end());
    return found;
}
} // namespace

std::vector<Transition> HistoryLog::readDirectory(const std::string& directory, std::size_t* segments)
{
    std::vector<Transition> all;
    const auto found = segmentFiles(directory);
    for (const auto& [first, path] : found) {
        std::vector<Transition> part = readSegment(path);
        std::move(part.begin(), part.end(), std::back_inserter(all));
    }
    if (segments)
        *segments = found.size();
    return all;
}

std::vector<Transition> HistoryLog::open()
{
    closeFd();
    m_segments.clear();
    std::error_code ec;
    fs::create_directories(m_dir, ec);
    if (ec)
        throw Error("history: cannot make " + m_dir + ": " + ec.message());
    std::vector<Transition> all;
    m_next = 0;
    for (const auto& [first, path] : segmentFiles(m_dir)) {
        std::vector<Transition> part = readSegment(path);
        Segment s{path, std::max(first, m_next), part.size(), part.empty() ? 0 : part.back().atMs};
        m_next = s.first + s.count;
        m_segments.push_back(s);
        std::move(part.begin(), part.end(), std::back_inserter(all));
    }
    roll(); // never append after a tail that may be torn
    return all;
}

void HistoryLog::roll()
{
    closeFd();
    Segment s{(fs::path(m_dir) / segmentName(m_next)).string(), m_next, 0, 0};
    m_fd = ::open(s.path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
    if (m_fd < 0)
        fail("cannot create", s.path);
    if (::write(m_fd, kMagic, kMagicSize) != static_cast<ssize_t>(kMagicSize))
        fail("cannot write", s.path);
    m_segments.push_back(s);
}

void HistoryLog::append(const std::vector<Transition>& batch)
{
    std::size_t i = 0;
    while (i < batch.size()) {
        if (m_fd < 0 || m_segments.back().count >= m_limits.segmentTransitions)
            roll();
        Segment& s = m_segments.back();
        const std::size_t n = std::min(batch.size() - i, m_limits.segmentTransitions - s.count);
        std::string out;
        for (std::size_t k = i; k < i + n; ++k)
            encode(out, batch[k]);
        std::size_t written = 0;
        while (written < out.size()) { // one write() for a batch that fits the kernel's buffer
            const ssize_t w = ::write(m_fd, out.data() + written, out.size() - written);
            if (w < 0 && errno == EINTR)
                continue;
            if (w < 0)
                fail("cannot write", s.path);
            written += static_cast<std::size_t>(w);
        }
        s.count += n;
        s.lastMs = batch[i + n - 1].atMs;
        m_next += n;
        i += n;
    }
}

void HistoryLog::sync()
{
    if (m_fd >= 0 && ::fdatasync(m_fd) != 0)
        fail("cannot sync", m_segments.back().path);
}

void HistoryLog::trim(std::int64_t newestMs)
{
    // the open segment is never deleted; an older one goes when all its records are out of bounds
    while (m_segments.size() > 1) {
        const Segment& s = m_segments.front();
        const bool tooOld = s.count == 0 || s.lastMs < newestMs - m_limits.maxAgeMs;
        const bool tooMany = m_next - (s.first + s.count) >= m_limits.maxTransitions;
        if (!tooOld && !tooMany)
            break;
        std::error_code ec;
        fs::remove(s.path, ec);
        m_segments.erase(m_segments.begin());
    }
}

} // namespace idem
