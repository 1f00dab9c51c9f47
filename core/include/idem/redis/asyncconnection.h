#pragma once

#include "idem/redis/options.h"
#include "idem/redis/reply.h"

#include <atomic>
#include <cstddef>
#include <exception>
#include <functional>
#include <future>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace idem {

// What a request gets back: its replies in order (error replies included), or, when it got none,
// why (an IoError kind - TimeoutError, ClosedError - or a ConfigError, as Connection throws them).
using RepliesHandler = std::function<void(std::vector<ReplyPtr> replies, std::exception_ptr error)>;
using ReplyHandler = std::function<void(ReplyPtr reply, std::exception_ptr error)>;

// One connection to Redis shared by many callers, with one I/O thread of its own. Automatic
// pipelining: whatever is queued while a write is on its way goes out in the next single write,
// and replies are matched to requests in order (FIFO), like node-redis or ioredis. Thread-safe.
//
// Handlers run on the I/O thread: keep them short, never wait in one for another request of the
// same connection (hand the work to a thread of yours instead), never destroy the connection in
// one. An exception a handler throws is dropped.
//
// The guarantees are Connection's: the same options, URL and handshake (AUTH, SELECT, Sentinel,
// TLS through the same Stream), the same errors (ConfigError for what retrying cannot fix), the same
// reconnect backoff during which requests fail at once with ClosedError. Per request:
//  - a timeout (default: the options' commandTimeout; 0: none) fails that request alone with
//    TimeoutError; its reply, when it comes, is read and dropped, and the requests behind it get
//    theirs;
//  - a reply that has not come one more commandTimeout after its request timed out means the
//    server is hung: the connection is dropped and every pending request fails (fail closed);
//  - a broken connection fails every request written to it or waiting to be (ClosedError/IoError:
//    it may or may not have run); the next request reconnects.
class AsyncConnection {
public:
    explicit AsyncConnection(ConnectionOptions options);
    ~AsyncConnection(); // close()
    AsyncConnection(const AsyncConnection&) = delete;
    AsyncConnection& operator=(const AsyncConnection&) = delete;

    // `count` commands already encoded as RESP back to back in `resp`, as one unit: written
    // together, answered together (all replies, or one error for all).
    void send(std::string resp, std::size_t count, RepliesHandler done, Millis timeout = Millis(-1));
    // One command.
    void command(std::span<const std::string_view> args, ReplyHandler done, Millis timeout = Millis(-1));
    void command(std::initializer_list<std::string_view> args, ReplyHandler done, Millis timeout = Millis(-1));
    // The same with a future: the reply, or the error thrown by get().
    std::future<ReplyPtr> command(std::initializer_list<std::string_view> args, Millis timeout = Millis(-1));
    std::future<std::vector<ReplyPtr>> send(std::string resp, std::size_t count, Millis timeout = Millis(-1));

    // Fails every pending request with ClosedError and drops the connection; the next request
    // reconnects (thread-safe).
    void interrupt();
    // Through Sentinel: asks the sentinels, on the I/O thread and at most once a second, whether
    // the node this connection reached is still the primary, and drops the connection if not
    // (thread-safe, returns at once). Elsewhere nothing.
    void checkPrimarySoon();
    // Fails every pending request and stops the I/O thread; later requests fail with ClosedError.
    void close();

    const ConnectionOptions& options() const;
    bool isConnected() const;
    // Requests written or queued and not answered yet (timed-out ones whose reply is still due
    // included).
    std::size_t pending() const;

private:
    class Io;
    std::unique_ptr<Io> m_io;
};

// What AsyncPool::routed() is given: writes one unit on the connection chosen - after a Redis
// Cluster ASK redirect (`asking`) a unit that begins with ASKING - and hands its replies on.
using UnitSender = std::function<void(AsyncConnection& c, bool asking, RepliesHandler replies)>;

// A few AsyncConnections (default: one per hardware thread), handed out round robin.
//
// routed(): on a Redis Cluster, a key's unit goes to the node serving its hash slot, like the
// blocking Store's (ClusterRouter: the same slot map, the same rules). The pool starts out as a
// single server's; the first MOVED or ASK reply makes it a cluster's: the map is read (CLUSTER
// SLOTS) and kept up to date by later MOVED replies, pools to the other nodes (of this pool's size
// and options) are made on first use, and a redirected unit is sent again where the redirect says
// (up to 5 times). A node that stops answering fails its calls (closed) and the map is asked
// again of another node, so later calls reach the promoted replica. TRYAGAIN (a slot half
// moved) reaches the caller as the error reply it is. routed() does not throw: what stops a unit
// from being sent reaches its handler as the error.
class AsyncPool {
public:
    explicit AsyncPool(ConnectionOptions options, std::size_t size = 0);
    ~AsyncPool();
    AsyncConnection& next();
    AsyncConnection& at(std::size_t i) { return *m_connections.at(i); }
    std::size_t size() const { return m_connections.size(); }
    const ConnectionOptions& options() const { return m_options; }
    void interruptAll();
    void checkPrimariesSoon(); // checkPrimarySoon() on each connection
    // Fails every pending call and stops every I/O thread, the other cluster nodes' pools' too,
    // before anything is destroyed (the destructor does it first): an answer on one thread may
    // still reach for the others. Later calls fail with ClosedError.
    void close();
    void routed(std::string_view key, UnitSender send, RepliesHandler done);
    // Known to be a Redis Cluster's (a redirect has been seen): a unit's keys must share a slot.
    bool isCluster() const;

    struct Routing;

private:
    std::unique_ptr<Routing> m_routing; // first: calls under way reach it until the pool is gone
    ConnectionOptions m_options;
    std::vector<std::unique_ptr<AsyncConnection>> m_connections;
    std::atomic<std::size_t> m_next{0};
};

} // namespace idem
