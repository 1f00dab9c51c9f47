#include "engine/guard.h"

#include "engine/storecalls.h"
#include "idem/engine/scripts.h"
#include "idem/format/record.h"

#include <unistd.h>

#include <array>
#include <mutex>

namespace idem {

namespace {
std::mutex g_toolMutex;
std::string g_tool = "idem";
} // namespace

void setToolName(std::string_view tool)
{
    std::lock_guard lock(g_toolMutex);
    g_tool = std::string(tool);
}

OwnKey ownKey(std::string_view key, std::string_view keyNamespace)
{
    if (key == guard::auditKey(keyNamespace))
        return {OwnKey::Kind::AuditTrail, {}};
    if (!key.ends_with(storecalls::kMetaSuffix))
        return {};
    std::string id = idFromKey(key.substr(0, key.size() - storecalls::kMetaSuffix.size()), keyNamespace);
    if (id.empty())
        return {};
    return {OwnKey::Kind::Meta, std::move(id)};
}

namespace guard {

std::string auditKey(std::string_view keyNamespace) { return std::string(keyNamespace).append(":audit"); }

std::string via()
{
    std::array<char, 256> host{};
    if (gethostname(host.data(), host.size() - 1) != 0)
        host[0] = '\0';
    std::lock_guard lock(g_toolMutex);
    return g_tool + "@" + (host[0] ? host.data() : "unknown-host");
}

std::string metaKeyOf(const Record& r, std::string_view keyNamespace)
{
    if (r.format != RecordFormat::Native || idFromKey(r.key, keyNamespace).empty())
        return {};
    return r.key + std::string(storecalls::kMetaSuffix);
}

void writePurge(resp::Writer& w, std::string_view key, std::string_view meta, std::string_view audit,
                const Record* seen, const Actor& a, std::int64_t keepMetaMs)
{
    // what the key was when the operator saw it: its type; for hashes the state, owner and lease,
    // and the SHA1 of every field the readers read (a lease renewed under any name); for strings
    // the length and the SHA1 of the first (and, read in part, the last) bytes read
    std::string type, expect, token, lease, guardBytes, length, tailBytes, fieldsSha1;
    if (seen) {
        const auto field = [&](std::string_view name) -> std::string {
            for (const auto& [k, v] : seen->fields)
                if (k == name)
                    return v;
            return {};
        };
        type = seen->keyType;
        if (type == "hash") {
            expect = field("state").empty() ? field("status") : field("state");
            if (expect.empty())
                expect = "*"; // no state or status: the token and lease still have to match (both absent)
            token = field("token");
            lease = field("lease_until_ms");
            fieldsSha1 = seen->guardSha1;
        } else if (type == "string" && !seen->guardSha1.empty()) {
            expect = seen->guardSha1;
            guardBytes = std::to_string(seen->guardBytes);
            length = std::to_string(seen->valueBytes);
            tailBytes = std::to_string(seen->guardTailBytes);
        }
    }
    std::vector<std::string_view> keys = {key};
    if (!meta.empty())
        keys.push_back(meta);
    if (!audit.empty())
        keys.push_back(audit);
    const std::string from = via(), keep = std::to_string(keepMetaMs),
                      maxLen = audit.empty() ? "0" : std::to_string(kAuditMaxLen), ttl = std::to_string(kAuditTtlMs);
    std::vector<std::string_view> args = {a.who,      a.why,  from, keep, type, expect, token, lease,
                                          guardBytes, length, meta.empty() ? "0" : "1", maxLen, ttl,
                                          tailBytes,  fieldsSha1};
    // (named from the key and what was read: a row that kept only the digest names the same)
    const std::vector<std::string> names =
        fieldsSha1.empty() ? std::vector<std::string>() : guardFieldNames(key, seen->fields);
    args.insert(args.end(), names.begin(), names.end());
    resp::evalsha(w, scripts::purge(), keys, args);
}

std::string auditEntry(std::string_view audit, std::string_view action, std::string_view key, const Actor& a,
                       std::string_view was)
{
    std::string out;
    resp::Writer w(out);
    const std::string from = via(), maxLen = std::to_string(kAuditMaxLen);
    const std::string_view args[] = {"XADD", audit, "MAXLEN", "~", maxLen, "*", "action", action, "key", key,
                                     "by", a.who, "why", a.why, "via", from, "was", was};
    w.command(args);
    const std::string ttl = std::to_string(kAuditTtlMs);
    const std::string_view expire[] = {"PEXPIRE", audit, ttl};
    w.command(expire);
    return out;
}

} // namespace guard
} // namespace idem
