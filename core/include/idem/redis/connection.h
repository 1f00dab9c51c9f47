#pragma once

#include "idem/redis/options.h"
#include "idem/redis/reply.h"

#include <atomic>
#include <utility>
#include <chrono>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

struct redisReader;

namespace idem {

class Stream;

struct ReaderDeleter {
    void operator()(redisReader* r) const noexcept;
};

// One blocking connection to Redis: a socket (TLS when the options ask) of idem's own, hiredis'
// reader for the replies. Not thread-safe: use one per thread, or borrow from a ConnectionPool. A
// broken connection reconnects on the next call, with backoff; while backing off, calls fail fast
// with ClosedError instead of waiting (fail closed). Through Sentinel, every connect asks the
// sentinels for the primary and checks it with ROLE; a -READONLY reply (the node was demoted)
// drops the connection, so the next call finds the new primary.
class Connection {
public:
    explicit Connection(ConnectionOptions options);
    ~Connection();
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    // One command. Error replies are returned, not thrown; I/O problems throw IoError.
    ReplyPtr command(const std::vector<std::string_view>& args);
    ReplyPtr command(std::initializer_list<std::string_view> args);
    ReplyPtr command(std::span<const std::string_view> args);
    // Like command(), but an error reply throws ReplyError.
    ReplyPtr checked(std::initializer_list<std::string_view> args);
    // Many commands in one round trip; replies in order.
    std::vector<ReplyPtr> pipeline(const std::vector<std::vector<std::string_view>>& commands);
    // The same for commands already encoded as RESP (`count` of them back to back in `resp`).
    ReplyPtr commandFormatted(std::string_view resp);
    std::vector<ReplyPtr> pipelineFormatted(std::string_view resp, std::size_t count);

    // The next reply without sending anything (subscriptions). Blocks up to the command timeout
    // (0 = forever; interrupt() from another thread ends the wait).
    ReplyPtr readReply();
    // The same, waiting up to `wait` only: null when no whole reply came by then, and the
    // connection stays usable (a subscription that is quiet is not broken; part of a reply already
    // here is kept for the next call). I/O problems throw IoError, as elsewhere.
    ReplyPtr readReply(Millis wait);
    // Sends one command and returns without its reply, which readReply() reads later (in subscribe
    // mode, a PING whose answer comes among the messages).
    void sendCommand(std::initializer_list<std::string_view> args);
    // Shuts the socket down so that a blocked readReply() returns (thread-safe).
    void interrupt();

    // The server answered before (a reconnect of this connection knows it by itself; a caller that
    // makes a new connection to a server it has talked to, a subscription started again, says so):
    // one that hangs up before its first answer is then going away, a ClosedError to retry, not a
    // TLS port or a client certificate refused (ConfigError, for a first connection).
    void setAnsweredBefore() { m_answeredBefore = true; }
    bool isConnected() const { return m_connected; }
    void connect();    // throws IoError/ConfigError/ReplyError; no backoff
    void disconnect(); // drop the socket; the next call reconnects
    const ConnectionOptions& options() const { return m_options; }
    // Where the connection goes now: "host:port" (through Sentinel, the primary it found), or
    // the socket path; empty when not connected.
    std::string endpoint() const;
    bool tls() const;
    // Through Sentinel: asks the sentinels whether this connection's node is still the primary
    // and drops the connection when it is not (a primary the sentinels replaced keeps answering
    // until it is demoted; writes to it are lost). Returns whether it still is. Elsewhere: true.
    bool checkPrimary();

    // While one lives, a call on this connection whose request went out whole but whose answer
    // did not come within the command timeout has `bytes()` written behind it before the socket
    // closes. A frozen server (SIGSTOP, a stalled node) still holds that request and runs it when
    // it thaws, whatever became of the connection; a server runs one socket's commands in the
    // order they came, so the follow-up runs right after it (an acquire's release: no lease is
    // left that nobody holds). Written within one more command timeout, else dropped; not after a
    // hang-up (the socket is gone) or for a request that could not be written whole. bytes() is
    // called only then. Not for calls made while connecting (their request is not the caller's).
    class FollowUp {
    public:
        FollowUp(Connection& c, std::function<std::string()> bytes);
        ~FollowUp();
        FollowUp(const FollowUp&) = delete;
        FollowUp& operator=(const FollowUp&) = delete;

    private:
        Connection& m_connection;
        std::function<std::string()> m_previous;
    };

private:
    // Through Sentinel, before a call: checkPrimary() at most once a second (after a slow or failed
    // answer, once ten times that long has passed: nextPrimaryCheck). A primary a planned failover
    // replaced keeps taking writes until the sentinels demote it, seconds later; each is lost.
    void checkPrimaryEverySecond();
    // Whether `peer` is the primary the sentinels name now (named: the one they name), or Unknown
    // when none of them can say (keep what works).
    enum class PrimaryVerdict { Same, Elsewhere, Unknown };
    PrimaryVerdict askPrimary(const std::string& peer, std::string* named = nullptr);
    static std::chrono::steady_clock::time_point nextPrimaryCheck(std::chrono::steady_clock::time_point started,
                                                                  bool answered);
    friend class AsyncConnection;
    // Connects as a call would (with backoff, failing fast while it lasts, the same errors) and
    // hands the connected stream over: AsyncConnection's handshake is this class's.
    std::unique_ptr<Stream> handOver();

    void ensureConnected();
    void dropContext();
    [[noreturn]] void fail(const char* what);
    // From receive()'s catch block: a timeout there writes m_followUp behind the unanswered request
    void followUpUnanswered() noexcept;
    void send(std::string_view resp, const char* what);
    ReplyPtr receive(const char* what, std::optional<std::chrono::steady_clock::time_point> until = {});
    void afterReplies(const std::vector<ReplyPtr>& replies);
    void afterReply(const redisReply* r);
    std::pair<std::string, int> primaryFromSentinels();

    ConnectionOptions m_options;
    std::unique_ptr<Stream> m_stream;
    std::unique_ptr<redisReader, ReaderDeleter> m_reader;
    bool m_connected = false;
    bool m_answered = false; // the handshake is over (a hang-up before it means a TLS port)
    bool m_answeredBefore = false; // ... unless the server answered before: then it is going away
    std::string m_endpoint;
    std::chrono::steady_clock::time_point m_nextAttempt{};
    std::chrono::steady_clock::time_point m_nextPrimaryCheck{};
    std::chrono::milliseconds m_backoff{0};
    std::string m_lastError;
    bool m_lastPermanent = false; // the last connect failed with a ConfigError (m_lastField)
    std::string m_lastField;
    std::string m_out;         // the request being encoded (reused: no allocation per command)
    std::function<std::string()> m_followUp; // FollowUp's
};

} // namespace idem
