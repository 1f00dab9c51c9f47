#pragma once

#include "idem/redis/asyncconnection.h"
#include "idem/redis/connection.h"

#include <string>
#include <string_view>
#include <vector>

namespace idem {

// One of the Lua scripts from lua/, embedded at build time.
struct Script {
    std::string_view name;
    std::string_view source;
    std::string sha1; // what SCRIPT LOAD returns, computed locally
};

// A script from its source (the lab embeds its own); `source` must outlive it.
Script makeScript(std::string_view name, std::string_view source);

namespace scripts {
const Script& acquire();
const Script& complete();
const Script& fail();
const Script& renew();
const Script& forceFail();
const Script& purge();
} // namespace scripts

inline constexpr std::size_t kMaxScriptKeys = 256;

bool isNoScript(const redisReply* r);
// Runs the script with EVALSHA. A NOSCRIPT reply (after a restart, failover or SCRIPT FLUSH)
// loads it with SCRIPT LOAD and runs it again, transparently.
ReplyPtr runScript(Connection& c, const Script& s, const std::vector<std::string_view>& keys,
                   const std::vector<std::string_view>& args);
// The same, but an error reply (other than NOSCRIPT) is returned, not thrown.
ReplyPtr runScriptReply(Connection& c, const Script& s, const std::vector<std::string_view>& keys,
                        const std::vector<std::string_view>& args);
void loadScript(Connection& c, const Script& s);
// Many calls of one script in one round trip, encoded as RESP back to back in `resp`; call i ends
// at ends[i]. Calls answered NOSCRIPT did not run: the script is loaded and just those are sent
// again. Error replies are returned as they are. `trailer`, when not empty, is one more command
// (formatted) sent after the calls in the same round trip (WAIT), and again after a retry; its
// latest reply comes last.
std::vector<ReplyPtr> runScriptPipelined(Connection& c, const Script& s, std::string_view resp,
                                         const std::vector<std::size_t>& ends, std::string_view trailer = {});
// The same on an AsyncConnection: the calls (and the trailer) go out as one unit; when some come
// back NOSCRIPT, one more unit - SCRIPT LOAD, then just those calls again in their order, then the
// trailer - follows. `done` gets a reply per call (and the trailer's latest last), or the error.
void runScriptPipelinedAsync(AsyncConnection& c, const Script& s, std::string resp, std::vector<std::size_t> ends,
                             std::string_view trailer, RepliesHandler done, Millis timeout = Millis(-1));
// The same on the connection of `pool` that serves `key` (AsyncPool::routed: on a Redis Cluster,
// the node serving its slot, redirects followed). After an ASK the unit sent is SCRIPT LOAD, ASKING,
// the calls, the trailer (the node importing the slot may not have the script yet).
void runScriptRoutedAsync(AsyncPool& pool, std::string_view key, const Script& s, std::string resp,
                          std::vector<std::size_t> ends, std::string_view trailer, RepliesHandler done);
// "WAIT <replicas> <timeout ms>", formatted: the trailer that makes writes wait for replicas.
std::string waitCommand(int replicas, Millis timeout);

} // namespace idem
