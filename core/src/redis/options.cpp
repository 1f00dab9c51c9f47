#include "idem/redis/options.h"

#include "idem/errors.h"

#include <cctype>
#include <charconv>
#include <string>

namespace idem {

namespace {

std::string percentDecode(std::string_view s, std::string_view url)
{
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '%') {
            out.push_back(s[i]);
            continue;
        }
        int value = 0;
        if (i + 2 >= s.size())
            throw UsageError("bad URL '" + std::string(url) + "': truncated %-escape");
        // two hex digits (from_chars alone would take "%-1" as -1)
        auto [p, ec] = std::from_chars(s.data() + i + 1, s.data() + i + 3, value, 16);
        if (!std::isxdigit(static_cast<unsigned char>(s[i + 1])) || ec != std::errc() || p != s.data() + i + 3)
            throw UsageError("bad URL '" + std::string(url) + "': invalid %-escape");
        out.push_back(static_cast<char>(value));
        i += 2;
    }
    return out;
}

int parseInt(std::string_view s, int lo, int hi, const char* what, std::string_view url)
{
    int value = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (s.empty() || ec != std::errc() || p != s.data() + s.size() || value < lo || value > hi)
        throw UsageError("bad URL '" + std::string(url) + "': " + what + " '" + std::string(s) +
                         "' is not a number from " + std::to_string(lo) + " to " +
                         std::to_string(hi));
    return value;
}

// The URL as it may appear in a message: the password replaced by ***.
std::string redacted(std::string_view url)
{
    std::string u(url);
    const auto scheme = u.find("://");
    const auto at = u.rfind('@');
    if (scheme == std::string::npos || at == std::string::npos || at < scheme)
        return u;
    const auto colon = u.find(':', scheme + 3);
    if (colon == std::string::npos || colon > at)
        return u;
    return u.substr(0, colon + 1) + "***" + u.substr(at);
}

// A user name or a Sentinel master's name as a URL holds it: what would end the credentials,
// start the path or the master's name, or read as an escape is escaped, so describe() reads back
// as the same user and master.
std::string percentEncode(std::string_view s)
{
    static constexpr char hex[] = "0123456789ABCDEF";
    std::string out;
    for (const char c : s) {
        const auto u = static_cast<unsigned char>(c);
        if (u <= 0x20 || u >= 0x7f || c == '%' || c == ':' || c == '@' || c == '/' || c == '?' || c == '#' ||
            c == '[' || c == ']') {
            out.push_back('%');
            out.push_back(hex[u >> 4]);
            out.push_back(hex[u & 15]);
        } else {
            out.push_back(c);
        }
    }
    return out;
}

} // namespace

ConnectionOptions ConnectionOptions::fromUrl(std::string_view rawUrl)
{
    const std::string shown = redacted(rawUrl); // error messages never show the password
    const std::string_view url = shown;
    return parseUrl(rawUrl, url);
}

namespace {

// host[:port] or [v6]:port, the port defaulting to `defaultPort`
void parseHostPort(std::string_view hostport, std::string& host, int& port, int defaultPort, std::string_view url)
{
    port = defaultPort;
    if (hostport.starts_with("[")) { // [::1]:6379
        const auto close = hostport.find(']');
        if (close == std::string_view::npos)
            throw UsageError("bad URL '" + std::string(url) + "': unclosed '[' in host");
        host = std::string(hostport.substr(1, close - 1));
        hostport = hostport.substr(close + 1);
        if (!hostport.empty()) {
            if (hostport.front() != ':')
                throw UsageError("bad URL '" + std::string(url) + "': junk after ']'");
            port = parseInt(hostport.substr(1), 1, 65535, "port", url);
        }
    } else {
        const auto colon = hostport.rfind(':');
        if (colon != std::string_view::npos) {
            port = parseInt(hostport.substr(colon + 1), 1, 65535, "port", url);
            hostport = hostport.substr(0, colon);
        }
        host = std::string(hostport);
    }
    if (host.empty())
        throw UsageError("bad URL '" + std::string(url) + "': no host");
    // a name or an address: nothing that would end it in a URL, no control bytes or spaces
    for (const char c : host)
        if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f || c == '[' || c == ']' || c == '@' || c == '/' ||
            c == '?' || c == '#' || c == ',')
            throw UsageError("bad URL '" + std::string(url) + "': the host has a character no host name has");
}

} // namespace

ConnectionOptions ConnectionOptions::parseUrl(std::string_view input, std::string_view url)
{
    ConnectionOptions o;
    std::string_view rest;
    bool isUnix = false, isSentinel = false;
    if (input.starts_with("redis://")) {
        rest = input.substr(8);
    } else if (input.starts_with("rediss://")) {
        rest = input.substr(9);
        o.tls.enabled = true;
    } else if (input.starts_with("unix://")) {
        rest = input.substr(7);
        isUnix = true;
    } else if (input.starts_with("redis-sentinel://")) {
        rest = input.substr(17);
        isSentinel = true;
    } else if (input.starts_with("rediss-sentinel://")) {
        rest = input.substr(18);
        isSentinel = true;
        o.tls.enabled = true;
    } else {
        throw UsageError("bad URL '" + std::string(url) +
                         "': expected redis://, rediss://, unix://, redis-sentinel:// or rediss-sentinel://");
    }

    if (isSentinel) { // the master's name is the fragment
        const auto hash = rest.rfind('#');
        if (hash == std::string_view::npos || hash + 1 == rest.size())
            throw UsageError("bad URL '" + std::string(url) + "': a Sentinel URL ends with #MASTER, the name the "
                             "sentinels know the primary by");
        o.sentinel.master = percentDecode(rest.substr(hash + 1), url);
        rest = rest.substr(0, hash);
    } else if (rest.find('#') != std::string_view::npos && !isUnix) {
        throw UsageError("bad URL '" + std::string(url) + "': '#MASTER' belongs to redis-sentinel:// URLs");
    }

    // credentials: everything before the last '@' (a password may hold '/'; a host, a port and a
    // database never hold '@'), on unix:// the last one before the socket's path
    const auto at = isUnix ? (rest.starts_with('/') ? std::string_view::npos : rest.rfind('@', rest.find('/')))
                           : rest.rfind('@');
    if (at != std::string_view::npos) {
        const auto cred = rest.substr(0, at);
        rest = rest.substr(at + 1);
        const auto colon = cred.find(':');
        if (colon == std::string_view::npos) {
            o.user = percentDecode(cred, url); // redis://user@host; password only: redis://:secret@host
        } else {
            o.user = percentDecode(cred.substr(0, colon), url);
            o.password = percentDecode(cred.substr(colon + 1), url);
        }
    }

    if (isUnix) {
        auto q = rest.find('?');
        auto path = rest.substr(0, q);
        if (path.empty() || path.front() != '/')
            throw UsageError("bad URL '" + std::string(url) + "': unix:// needs an absolute socket path");
        o.unixSocket = std::string(path);
        if (q != std::string_view::npos) {
            auto query = rest.substr(q + 1);
            if (!query.starts_with("db="))
                throw UsageError("bad URL '" + std::string(url) + "': only ?db=N is understood");
            o.db = parseInt(query.substr(3), 0, 1 << 20, "database", url);
        }
        return o;
    }

    auto slash = rest.find('/');
    auto hosts = rest.substr(0, slash);
    if (slash != std::string_view::npos) {
        auto db = rest.substr(slash + 1);
        if (!db.empty())
            o.db = parseInt(db, 0, 1 << 20, "database", url);
    }
    if (isSentinel) {
        while (true) {
            const auto comma = hosts.find(',');
            SentinelOptions::Node n;
            parseHostPort(hosts.substr(0, comma), n.host, n.port, 26379, url);
            o.sentinel.nodes.push_back(std::move(n));
            if (comma == std::string_view::npos)
                break;
            hosts = hosts.substr(comma + 1);
        }
        o.host = o.sentinel.nodes.front().host; // until a sentinel names the primary
        o.port = 0;
        return o;
    }
    if (hosts.find(',') != std::string_view::npos)
        throw UsageError("bad URL '" + std::string(url) + "': several hosts belong to redis-sentinel:// URLs");
    parseHostPort(hosts, o.host, o.port, 6379, url);
    return o;
}

std::string ConnectionOptions::describe() const
{
    const std::string who = user.empty() ? std::string() : percentEncode(user) + "@"; // never the password
    if (!unixSocket.empty())
        return "unix://" + who + unixSocket + (db ? "?db=" + std::to_string(db) : std::string());
    const auto hostPort = [](const std::string& h, int p) {
        return (h.find(':') != std::string::npos ? "[" + h + "]" : h) + ":" + std::to_string(p);
    };
    if (viaSentinel()) {
        std::string nodes;
        for (const auto& n : sentinel.nodes)
            nodes += (nodes.empty() ? "" : ",") + hostPort(n.host, n.port);
        return std::string(tls.enabled ? "rediss-sentinel://" : "redis-sentinel://") + who + nodes + "/" +
               std::to_string(db) + "#" + percentEncode(sentinel.master);
    }
    return std::string(tls.enabled ? "rediss://" : "redis://") + who + hostPort(host, port) + "/" + std::to_string(db);
}

} // namespace idem
