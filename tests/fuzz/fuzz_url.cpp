// Connection URLs as operators and environments hand them over (--url, IDEM_URL, the console's
// Connect dialog, remembered connections): ConnectionOptions::fromUrl. Every scheme the parser
// knows goes through the same properties: redis://, rediss://, unix://, and
// redis-sentinel://host1,host2/db#MASTER and rediss-sentinel://, whose master name (after the last
// '#') is %-decoded like the credentials.
//
// Input: the URL.
#include "fuzzcheck.h"

#include "idem/errors.h"
#include "idem/redis/options.h"

using namespace idem;

namespace {

bool same(const ConnectionOptions& a, const ConnectionOptions& b)
{
    if (a.sentinel.nodes.size() != b.sentinel.nodes.size())
        return false;
    for (std::size_t i = 0; i < a.sentinel.nodes.size(); ++i)
        if (a.sentinel.nodes[i].host != b.sentinel.nodes[i].host || a.sentinel.nodes[i].port != b.sentinel.nodes[i].port)
            return false;
    return a.host == b.host && a.port == b.port && a.unixSocket == b.unixSocket && a.db == b.db && a.user == b.user &&
           a.password == b.password && a.tls.enabled == b.tls.enabled && a.sentinel.master == b.sentinel.master;
}

bool sentinelScheme(std::string_view url)
{
    return url.starts_with("redis-sentinel://") || url.starts_with("rediss-sentinel://");
}

// What the parser reads as host, credentials and path: a Sentinel URL without its '#MASTER'.
std::string_view withoutMaster(std::string_view url)
{
    return sentinelScheme(url) ? url.substr(0, url.rfind('#')) : url;
}

std::string encoded(std::string_view s)
{
    static const char* hex = "0123456789ABCDEF";
    std::string out;
    for (const char c : s) {
        const auto u = static_cast<unsigned char>(c);
        if ((u >= '0' && u <= '9') || (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || c == '-' || c == '.' ||
            c == '_' || c == '~') {
            out.push_back(c);
        } else {
            out.push_back('%');
            out.push_back(hex[u >> 4]);
            out.push_back(hex[u & 15]);
        }
    }
    return out;
}

// The URL again from what was parsed: describe() is the URL without the password; the password
// goes back in (percent-encoded) after the user.
std::string rebuilt(const ConnectionOptions& o)
{
    std::string d = o.describe();
    if (o.password.empty())
        return d;
    const auto scheme = d.find("://") + 3;
    const std::string user = encoded(o.user);
    // describe() writes the user as it is read back (encoded where it must be), then '@'
    const auto at = o.user.empty() ? std::string::npos : d.find('@', scheme);
    if (at == std::string::npos)
        return d.substr(0, scheme) + ":" + encoded(o.password) + "@" + d.substr(scheme);
    return d.substr(0, at) + ":" + encoded(o.password) + d.substr(at);
}

// The password as the parser would take it: between the first ':' of the credentials and the
// last '@' before the path (of a Sentinel URL, before '#MASTER').
std::string_view passwordIn(std::string_view url)
{
    url = withoutMaster(url);
    const auto scheme = url.find("://");
    if (scheme == std::string_view::npos)
        return {};
    std::string_view rest = url.substr(scheme + 3);
    const auto at = rest.rfind('@', rest.find('/'));
    if (at == std::string_view::npos)
        return {};
    const std::string_view cred = rest.substr(0, at);
    const auto colon = cred.find(':');
    return colon == std::string_view::npos ? std::string_view() : cred.substr(colon + 1);
}

// What the parser's messages say besides the URL (a password may be one of these words).
constexpr const char* kMessages =
    "bad URL '': truncated %-escape, invalid %-escape, is not a number from 0 to 65535 1048576, expected redis://, "
    "rediss://, unix://, redis-sentinel:// or rediss-sentinel://, unix:// needs an absolute socket path, only ?db=N "
    "is understood, database, port, unclosed '[' in host, junk after ']', no host, the host has a character no host "
    "name has, a Sentinel URL ends with #MASTER, the name the sentinels know the primary by, '#MASTER' belongs to "
    "redis-sentinel:// URLs, several hosts belong to redis-sentinel:// URLs";

bool hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string_view url(reinterpret_cast<const char*>(data), size);
    ConnectionOptions o;
    try {
        o = ConnectionOptions::fromUrl(url);
    } catch (const UsageError& e) {
        // a refused URL is never echoed with its password
        const std::string_view pw = passwordIn(url);
        // (a password the message could spell otherwise - a word of its own, the *** it writes
        // instead, its quotes - proves nothing)
        if (pw.size() >= 6 && url.find(pw) == url.rfind(pw) && std::string_view(kMessages).find(pw) == std::string_view::npos &&
            pw.find_first_of("*'") == std::string_view::npos)
            FUZZ_CHECK(std::string_view(e.what()).find(pw) == std::string_view::npos, e.what());
        return 0;
    }
    // what was accepted is usable: a socket, a host and port, or sentinels to ask and a master to ask for
    FUZZ_CHECK(o.tls.enabled == (url.starts_with("rediss://") || url.starts_with("rediss-sentinel://")));
    FUZZ_CHECK(o.viaSentinel() == sentinelScheme(url));
    if (!o.unixSocket.empty()) {
        FUZZ_CHECK(url.starts_with("unix://") && o.unixSocket.front() == '/');
    } else if (o.viaSentinel()) {
        FUZZ_CHECK(!o.sentinel.master.empty());
        for (const auto& n : o.sentinel.nodes)
            FUZZ_CHECK(!n.host.empty() && n.port >= 1 && n.port <= 65535);
        FUZZ_CHECK(o.host == o.sentinel.nodes.front().host); // until a sentinel names the primary
    } else {
        FUZZ_CHECK(!o.host.empty() && o.port >= 1 && o.port <= 65535);
    }
    FUZZ_CHECK(o.db >= 0);
    // a '%' in what the parser decodes (the credentials, a Sentinel URL's master) is an escape of
    // two hex digits
    const std::string_view body = withoutMaster(url);
    const auto scheme = body.find("://");
    const std::string_view rest = body.substr(scheme + 3);
    const auto at = rest.starts_with('/') ? std::string_view::npos : rest.rfind('@', rest.find('/'));
    if (at != std::string_view::npos)
        for (std::size_t i = 0; i < at; ++i)
            if (rest[i] == '%')
                FUZZ_CHECK(i + 2 < at && hex(rest[i + 1]) && hex(rest[i + 2]), "a '%' that is no escape was accepted");
    if (o.viaSentinel()) {
        const std::string_view master = url.substr(body.size() + 1);
        for (std::size_t i = 0; i < master.size(); ++i)
            if (master[i] == '%')
                FUZZ_CHECK(i + 2 < master.size() && hex(master[i + 1]) && hex(master[i + 2]),
                           "a '%' in the master's name that is no escape was accepted");
    }

    const std::string shown = o.describe();
    // the description never shows the password: it is the same whatever the password
    ConnectionOptions other = o;
    other.password = o.password.empty() ? "x" : std::string();
    FUZZ_CHECK(other.describe() == shown, shown);

    // it prints back to a URL that parses to the same options
    const std::string again = rebuilt(o);
    ConnectionOptions back;
    try {
        back = ConnectionOptions::fromUrl(again);
    } catch (const UsageError& e) {
        FUZZ_CHECK(false, std::string(url) + " -> " + again + ": " + e.what());
    }
    FUZZ_CHECK(same(o, back), std::string(url) + " -> " + again + " -> " + back.describe());
    FUZZ_CHECK(back.describe() == shown, shown + " vs " + back.describe());
    return 0;
}
