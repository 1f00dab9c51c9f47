#pragma once

#include "idem/format/record.h"
#include "redis/resp.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace idem::guard {

// The namespace's audit stream: every operator action's entry (who, why, from where, what the key
// was). Capped (XADD MAXLEN ~ kAuditMaxLen). No braces: no record key can be it.
std::string auditKey(std::string_view keyNamespace);
inline constexpr std::int64_t kAuditMaxLen = 10000;
inline constexpr std::int64_t kAuditTtlMs = 30LL * 24 * 3'600'000; // each entry extends it
// "tool@host": where an action came from (the tool as setToolName() said, this machine's name).
std::string via();

// Who acts and why.
struct Actor {
    std::string who;
    std::string why;
};

// lua/purge.lua's call for `key`: only if it is still what `seen` read (nullptr: whatever it is),
// keeping the fence in `meta` (empty: not an idem record), with the audit entry in the same script
// when `audit` is given (it shares the node), else the caller adds it (auditEntry).
void writePurge(resp::Writer& w, std::string_view key, std::string_view meta, std::string_view audit,
                const Record* seen, const Actor& a, std::int64_t keepMetaMs);
// The XADD (and the stream's PEXPIRE: kAuditCommands commands) for an action whose stream is on
// another node (Redis Cluster), formatted.
inline constexpr std::size_t kAuditCommands = 2;
std::string auditEntry(std::string_view audit, std::string_view action, std::string_view key, const Actor& a,
                       std::string_view was);
// The meta key of a key that is an idem record of `keyNamespace` (<ns>:{<id>}), else "".
std::string metaKeyOf(const Record& r, std::string_view keyNamespace);

} // namespace idem::guard
