#include "idem/lab/capture.h"

#include "idem/errors.h"
#include "idem/redis/connection.h"
#include "idem/redis/reply.h"
#include "common/canonicaljson.h"
#include "idem/utf8.h"
#include "lab/labredis.h"

#include <algorithm>
#include <charconv>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <unordered_map>
#include <nlohmann/json.hpp>
#include <thread>

namespace idem {

namespace {

// parseEventLog takes lines nested up to 128 levels; a payload sits one level inside its line
constexpr int kMaxDepth = 127;
constexpr std::int64_t kMaxAtMs = 253'402'300'799'999; // 9999-12-31T23:59:59.999Z
constexpr std::size_t kMaxId = 1024;

// JSON nested at most kMaxDepth levels, or nothing.
bool parseBounded(std::string_view text, nlohmann::json& out)
{
    bool tooDeep = false;
    out = nlohmann::json::parse(
        text.begin(), text.end(),
        [&](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
            if (depth > kMaxDepth)
                tooDeep = true;
            return depth <= kMaxDepth;
        },
        false);
    return !tooDeep && !out.is_discarded();
}


std::string base64(std::string_view bytes)
{
    static constexpr char k[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    out.reserve((bytes.size() + 2) / 3 * 4);
    std::size_t i = 0;
    for (; i + 2 < bytes.size(); i += 3) {
        const unsigned v = (static_cast<unsigned char>(bytes[i]) << 16) |
                           (static_cast<unsigned char>(bytes[i + 1]) << 8) | static_cast<unsigned char>(bytes[i + 2]);
        out += {k[v >> 18], k[(v >> 12) & 63], k[(v >> 6) & 63], k[v & 63]};
    }
    if (i + 1 == bytes.size()) {
        const unsigned v = static_cast<unsigned char>(bytes[i]) << 16;
        out += {k[v >> 18], k[(v >> 12) & 63], '=', '='};
    } else if (i + 2 == bytes.size()) {
        const unsigned v = (static_cast<unsigned char>(bytes[i]) << 16) | (static_cast<unsigned char>(bytes[i + 1]) << 8);
        out += {k[v >> 18], k[(v >> 12) & 63], k[(v >> 6) & 63], '='};
    }
    return out;
}

// A field's bytes as the payload's JSON text.
std::string payloadJson(std::string_view value)
{
    // always through the library's parse and dump: the text replay reads back from the log
    // (keys in order, numbers and escapes as the library writes them) - the payload's fingerprint
    // must not depend on whether the log went through a file. Most payloads take the scanner's
    // path, which writes that same text without building a tree (capture's cost is this line).
    std::string fast;
    fast.reserve(value.size());
    if (appendCanonicalJson(value, fast))
        return fast;
    nlohmann::json j;
    try {
        if (parseBounded(value, j))
            return j.dump();
    } catch (const nlohmann::json::exception&) {
    }
    if (validUtf8(value))
        return nlohmann::json(std::string(value)).dump();
    return nlohmann::json{{"base64", base64(value)}}.dump();
}

// "ms-seq" of a stream entry id; false for anything else.
bool parseEntryId(std::string_view id, std::uint64_t& ms, std::uint64_t& seq)
{
    const auto dash = id.find('-');
    if (dash == std::string_view::npos || dash == 0 || dash + 1 == id.size())
        return false;
    auto [p1, e1] = std::from_chars(id.data(), id.data() + dash, ms);
    auto [p2, e2] = std::from_chars(id.data() + dash + 1, id.data() + id.size(), seq);
    return e1 == std::errc() && p1 == id.data() + dash && e2 == std::errc() && p2 == id.data() + id.size();
}

// The entry id right after `id` (the next page starts there: XRANGE's exclusive "(" needs Redis 6.2).
std::string nextEntryId(std::uint64_t ms, std::uint64_t seq)
{
    if (seq == UINT64_MAX)
        return std::to_string(ms + 1) + "-0";
    return std::to_string(ms) + "-" + std::to_string(seq + 1);
}

// A stream range bound as XRANGE takes it: "-", "+", "ms" or "ms-seq".
bool validBound(const std::string& b)
{
    if (b == "-" || b == "+")
        return true;
    std::uint64_t ms = 0, seq = 0;
    if (parseEntryId(b, ms, seq))
        return true;
    auto [p, e] = std::from_chars(b.data(), b.data() + b.size(), ms);
    return !b.empty() && e == std::errc() && p == b.data() + b.size();
}

const nlohmann::json* at(const nlohmann::json& j, const std::string& path)
{
    if (path.empty() || path == ".")
        return &j;
    const nlohmann::json* cur = &j;
    std::size_t start = 0;
    while (true) {
        const auto dot = path.find('.', start);
        const std::string name = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
        if (!cur->is_object())
            return nullptr;
        const auto it = cur->find(name);
        if (it == cur->end())
            return nullptr;
        cur = &*it;
        if (dot == std::string::npos)
            return cur;
        start = dot + 1;
    }
}

void report(const CaptureCallbacks& cb, CaptureResult& r, std::string where, std::string why)
{
    ++r.skipped;
    if (cb.problem)
        cb.problem(CaptureProblem{std::move(where), std::move(why)});
}

} // namespace

bool eventFromEntry(const std::string& entryId, const std::vector<std::pair<std::string, std::string>>& fields,
                    const CaptureOptions& options, ReplayEvent& out, std::string& why)
{
    std::vector<std::pair<std::string_view, std::string_view>> views(fields.begin(), fields.end());
    return eventFromEntry(entryId, views, options, out, why);
}

bool eventFromEntry(std::string_view entryId, std::span<const std::pair<std::string_view, std::string_view>> fields,
                    const CaptureOptions& options, ReplayEvent& out, std::string& why)
{
    std::uint64_t ms = 0, seq = 0;
    if (!parseEntryId(entryId, ms, seq) || ms > static_cast<std::uint64_t>(kMaxAtMs)) {
        why = "the entry id is not a time (ms-seq up to year 9999)";
        return false;
    }
    const std::string_view* id = nullptr;
    const std::string_view* payload = nullptr;
    for (const auto& [name, value] : fields) { // the first of a repeated field, as XRANGE lists them
        if (!id && name == options.idField)
            id = &value;
        else if (!payload && name == options.payloadField)
            payload = &value;
    }
    if (!id) {
        why = "no field \"" + options.idField + "\"";
        return false;
    }
    if (id->empty() || id->size() > kMaxId) {
        why = "\"" + options.idField + "\" must be 1 to 1024 bytes";
        return false;
    }
    if (!validUtf8(*id)) {
        why = "\"" + options.idField + "\" is not UTF-8 text";
        return false;
    }
    if (!payload) {
        why = "no field \"" + options.payloadField + "\"";
        return false;
    }
    out.id = std::string(*id);
    out.payload = payloadJson(*payload);
    out.atMs = static_cast<std::int64_t>(ms);
    return true;
}

CaptureResult captureStream(const ConnectionOptions& connection, const CaptureOptions& o,
                            const CaptureCallbacks& callbacks)
{
    if (o.stream.empty())
        throw UsageError("capture: give the stream's key");
    if (!validBound(o.from) || !validBound(o.to))
        throw UsageError("capture: --from and --to take a stream id (ms or ms-seq), '-' or '+'");
    if (o.idField.empty() || o.payloadField.empty())
        throw UsageError("capture: the id and payload fields need names");
    if (o.pageSize < 1 || o.pageSize > 100'000)
        throw UsageError("capture: a page holds 1 to 100000 entries");
    LabRedis redis(connection, LabTopology::read(connection)); // on a cluster: the node of the key
    Connection& c = redis.at(o.stream);
    const std::string type = reply::str(c.checked({"TYPE", o.stream}).get());
    if (type == "none")
        throw UsageError("capture: no key '" + o.stream + "' on " + connection.describe());
    if (type != "stream")
        throw UsageError("capture: '" + o.stream + "' is a " + type + ", not a stream");
    // a whole stream: room for all of it at once, not a million events moved as the vector grows
    std::size_t expected = 0;
    if (o.from == "-" && o.to == "+") {
        const auto len = reply::integer(c.checked({"XLEN", o.stream}).get());
        expected = static_cast<std::size_t>(std::clamp<std::int64_t>(len, 0, 10'000'000));
        if (o.count > 0)
            expected = std::min(expected, o.count);
    }

    // A reader thread fetches the next pages while this one decodes, so the server's time and
    // ours overlap; it reads at most kAhead pages ahead (read-only: reading ahead changes nothing).
    constexpr std::size_t kAhead = 2;
    std::mutex m;
    std::condition_variable cv;
    std::deque<ReplyPtr> pages;
    std::vector<ReplyPtr> used; // decoded pages, freed by the reader: a reply's memory goes back
                                // to the thread (and malloc arena) that made it, as the bare loop's does
    bool fetched = false, stop = false;
    std::exception_ptr fetchError;
    std::thread fetcher([&] {
        try {
            std::string from = o.from;
            const std::string page = std::to_string(o.pageSize);
            std::size_t read = 0;
            while (o.count == 0 || read < o.count) {
                const std::size_t want = o.count == 0 ? o.pageSize : std::min(o.pageSize, o.count - read);
                const std::string n = want == o.pageSize ? page : std::to_string(want);
                {
                    std::vector<ReplyPtr> drop;
                    {
                        std::lock_guard lock(m);
                        drop.swap(used);
                    }
                } // freed here, outside the lock
                auto reply = c.checked({"XRANGE", o.stream, from, o.to, "COUNT", n});
                const std::size_t got = reply::arraySize(reply.get());
                read += got;
                const std::string last = got ? reply::str(reply::element(reply::element(reply.get(), got - 1), 0)) : "";
                {
                    std::unique_lock lock(m);
                    cv.wait(lock, [&] { return pages.size() < kAhead || stop; });
                    if (stop)
                        break;
                    pages.push_back(std::move(reply));
                }
                cv.notify_all();
                if (got < want || last.empty())
                    break; // the end of the range (entries trimmed meanwhile are simply not there)
                std::uint64_t ms = 0, seq = 0;
                if (!parseEntryId(last, ms, seq))
                    throw ProtoError("XRANGE answered an entry id that is none: '" + last.substr(0, 64) + "'");
                if (ms == UINT64_MAX && seq == UINT64_MAX)
                    break;
                from = nextEntryId(ms, seq);
            }
        } catch (...) {
            std::lock_guard lock(m);
            fetchError = std::current_exception();
        }
        {
            std::lock_guard lock(m);
            fetched = true;
        }
        cv.notify_all();
    });
    struct Join { // whatever happens here, the reader stops and is joined
        std::mutex& m;
        std::condition_variable& cv;
        bool& stop;
        std::thread& t;
        ~Join()
        {
            {
                std::lock_guard lock(m);
                stop = true;
            }
            cv.notify_all();
            t.join();
        }
    } join{m, cv, stop, fetcher};

    CaptureResult r;
    r.events.reserve(expected);
    std::vector<std::pair<std::string_view, std::string_view>> fields;
    for (;;) {
        ReplyPtr reply;
        {
            std::unique_lock lock(m);
            cv.wait(lock, [&] { return !pages.empty() || fetched; });
            if (pages.empty())
                break;
            reply = std::move(pages.front());
            pages.pop_front();
        }
        cv.notify_all();
        const std::size_t got = reply::arraySize(reply.get());
        for (std::size_t k = 0; k < got; ++k) {
            const redisReply* entry = reply::element(reply.get(), k);
            const std::string_view entryId = reply::view(reply::element(entry, 0));
            const redisReply* f = reply::element(entry, 1);
            fields.clear();
            for (std::size_t i = 0; i + 1 < reply::arraySize(f); i += 2)
                fields.emplace_back(reply::view(reply::element(f, i)), reply::view(reply::element(f, i + 1)));
            ++r.read;
            ReplayEvent ev;
            std::string why;
            if (eventFromEntry(entryId, fields, o, ev, why))
                r.events.push_back(std::move(ev));
            else
                report(callbacks, r, std::string(entryId), why);
        }
        {
            std::lock_guard lock(m);
            used.push_back(std::move(reply));
        }
        if (callbacks.page && !callbacks.page(r))
            break;
    }
    std::lock_guard lock(m);
    if (fetchError)
        std::rethrow_exception(fetchError);
    return r;
}

CaptureResult captureJsonl(std::istream& in, const JsonlMapping& m, const CaptureCallbacks& callbacks)
{
    if (m.idField.empty() || m.idField == ".")
        throw UsageError("capture: the id field needs a name");
    CaptureResult r;
    std::string line;
    for (std::size_t n = 1; std::getline(in, line); ++n) {
        if (line.find_first_not_of(" \t\r") == std::string::npos)
            continue;
        ++r.read;
        const std::string where = "line " + std::to_string(n);
        nlohmann::json j;
        bool ok = false;
        try {
            ok = parseBounded(line, j);
        } catch (const nlohmann::json::exception&) {
        }
        if (!ok || !j.is_object()) {
            report(callbacks, r, where, "not a JSON object (nested up to 255 levels)");
            continue;
        }
        const nlohmann::json* id = at(j, m.idField);
        if (!id || id->is_null() || id->is_object() || id->is_array()) {
            report(callbacks, r, where, "no \"" + m.idField + "\" (a string or a number)");
            continue;
        }
        ReplayEvent ev;
        ev.id = id->is_string() ? id->get<std::string>() : id->dump();
        if (ev.id.empty() || ev.id.size() > kMaxId) {
            report(callbacks, r, where, "\"" + m.idField + "\" must be 1 to 1024 bytes");
            continue;
        }
        const nlohmann::json* payload = at(j, m.payloadField);
        if (!payload) {
            report(callbacks, r, where, "no \"" + m.payloadField + "\"");
            continue;
        }
        ev.payload = payload->dump();
        if (!m.timeField.empty()) {
            const nlohmann::json* t = at(j, m.timeField);
            std::int64_t ms = -1;
            if (t && t->is_number()) {
                const double d = t->get<double>();
                if (d >= 0 && d <= static_cast<double>(kMaxAtMs))
                    ms = static_cast<std::int64_t>(d);
            } else if (t && t->is_string()) {
                const auto& s = t->get_ref<const std::string&>();
                std::int64_t v = -1;
                auto [p, e] = std::from_chars(s.data(), s.data() + s.size(), v);
                if (e == std::errc() && p == s.data() + s.size() && v >= 0 && v <= kMaxAtMs)
                    ms = v;
            }
            if (ms < 0) {
                report(callbacks, r, where, "\"" + m.timeField + "\" is not a time in ms (0 to year 9999)");
                continue;
            }
            ev.atMs = ms;
        }
        r.events.push_back(std::move(ev));
    }
    return r;
}

void writeEventLog(std::ostream& out, const std::vector<ReplayEvent>& events)
{
    // written in chunks of about a megabyte, not line by line through the stream
    constexpr std::size_t kChunk = 1 << 20;
    std::string buf;
    buf.reserve(kChunk + 4096);
    for (const ReplayEvent& e : events) {
        buf += "{\"id\":";
        // an id of plain text as it is; anything to escape (or not UTF-8) through the library
        const bool plain = validUtf8(e.id) && std::none_of(e.id.begin(), e.id.end(), [](char c) {
                               return static_cast<unsigned char>(c) < 0x20 || c == '"' || c == '\\';
                           });
        if (plain) {
            buf += '"';
            buf += e.id;
            buf += '"';
        } else {
            buf += nlohmann::json(e.id).dump();
        }
        // the payload is JSON text already: written as it is
        buf += ",\"payload\":";
        buf += e.payload.empty() ? std::string_view("null") : std::string_view(e.payload);
        buf += ",\"at_ms\":";
        char num[24];
        buf.append(num, std::to_chars(num, num + sizeof num, e.atMs).ptr);
        buf += "}\n";
        if (buf.size() >= kChunk) {
            out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
            buf.clear();
        }
    }
    out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
}

std::vector<ReplayEvent> eventsFromHistory(const std::vector<Transition>& transitions, const std::string& keyNamespace)
{
    std::vector<ReplayEvent> out;
    std::unordered_map<std::string, std::string> owners; // key -> the owner last seen starting it
    for (const Transition& t : transitions) {
        if (t.gone() || t.state != RecordState::Started) {
            if (t.gone())
                owners.erase(t.key);
            continue;
        }
        auto [at, added] = owners.try_emplace(t.key, t.owner);
        if (!added && at->second == t.owner)
            continue; // the same start seen again (a lease renewed)
        at->second = t.owner;
        std::string id = idFromKey(t.key, keyNamespace);
        if (id.empty())
            id = t.key;
        const nlohmann::json payload = {{"key", t.key}, {"owner", t.owner}, {"attempt", t.attempt}};
        constexpr auto replace = nlohmann::json::error_handler_t::replace; // keys are bytes
        // an id that is not UTF-8 (keys are bytes) with its invalid bytes replaced: the log is JSON
        out.push_back({nlohmann::json::parse(nlohmann::json(id).dump(-1, ' ', false, replace)).get<std::string>(),
                       payload.dump(-1, ' ', false, replace), t.atMs});
    }
    return out;
}

std::vector<StreamInfo> listStreams(const ConnectionOptions& connection, std::size_t limit)
{
    std::vector<StreamInfo> out;
    const auto topology = LabTopology::read(connection);
    std::vector<ConnectionOptions> nodes;
    if (!topology) {
        nodes.push_back(connection);
    } else {
        for (const std::string& address : topology->nodes) {
            const auto node = parseNodeAddress(address);
            if (!node)
                continue;
            ConnectionOptions o = connection;
            o.unixSocket.clear();
            o.host = node->host;
            o.port = node->port;
            o.namedByServer = true;
            nodes.push_back(o);
        }
    }
    for (const ConnectionOptions& o : nodes) {
        Connection c(o);
        std::string cursor = "0";
        do {
            auto page = c.checked({"SCAN", cursor, "COUNT", "1000", "TYPE", "stream"});
            cursor = reply::str(reply::element(page.get(), 0));
            const redisReply* keys = reply::element(page.get(), 1);
            for (std::size_t k = 0; k < reply::arraySize(keys) && out.size() < limit; ++k)
                out.push_back(StreamInfo{reply::str(reply::element(keys, k)), 0});
        } while (cursor != "0" && out.size() < limit);
        if (out.size() >= limit)
            break;
    }
    std::sort(out.begin(), out.end(), [](const StreamInfo& a, const StreamInfo& b) { return a.key < b.key; });
    LabRedis redis(connection, topology);
    for (StreamInfo& s : out) {
        auto len = redis.at(s.key).command({"XLEN", s.key});
        s.length = reply::isError(len.get()) ? -1 : reply::integer(len.get()); // -1: gone or no longer a stream
    }
    return out;
}

} // namespace idem
