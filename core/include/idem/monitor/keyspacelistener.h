#pragma once

#include "idem/redis/connection.h"

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace idem {

// Follows keyspace notifications (PSUBSCRIBE __keyspace@<db>__:<pattern>) on a connection of its
// own, on a thread of its own, and hands each changed key to the callback. It never changes the
// server's configuration: if notify-keyspace-events does not include keyspace events for every
// type, it does not start and says why (the caller then rescans on an interval). A node that stops
// answering without closing the connection (a network cut, a stopped process) would leave it
// waiting for ever, the changes lost unseen: a subscription quiet for kQuietBeforePing is sent
// PING, and one whose answer does not come within the options' command timeout (kPingDeadline
// when that is 0) has ended, as a dropped one has.
class KeyspaceListener {
public:
    using Callback = std::function<void(const std::string& key, const std::string& event)>;
    // On the listener's thread, once, when it stopped following by itself (endedWhy() says why)
    using Ended = std::function<void()>;
    static constexpr Millis kQuietBeforePing{1000};
    static constexpr Millis kPingDeadline{5000};

    KeyspaceListener(ConnectionOptions options, std::string pattern, Callback callback, Ended ended = {});
    ~KeyspaceListener();
    KeyspaceListener(const KeyspaceListener&) = delete;
    KeyspaceListener& operator=(const KeyspaceListener&) = delete;

    // Empty when the server sends what we need; otherwise a one-line reason.
    static std::string unavailableReason(Connection& c);
    // Starts following; false (and `why`) when notifications are unavailable or Redis is away.
    bool start(std::string* why = nullptr);
    void stop();
    // Its node was subscribed to before (the owner starts a listener again after one ended; a
    // start() after one that succeeded knows it by itself): a node that hangs up while it is
    // subscribed to is going away, unreachable for now, and never called a TLS port.
    void setSubscribedBefore() { m_subscribedBefore = true; }
    // Thread-safe: a start() under way gives up at once, and so does any later one (the connect, the
    // CONFIG GET and the PSUBSCRIBE each wait up to the options' timeouts on a node that hangs): for
    // an owner that closes while it subscribes.
    void interrupt();
    // False once stopped, or once the connection dropped (the node died, the server closed it) or
    // hung (PING unanswered): nothing is followed any more; the owner reads the keys again and may
    // start it again.
    bool running() const { return m_running; }
    // Why it stopped following by itself (the connection's error); empty while running or after stop().
    std::string endedWhy() const;
    // The last start() failed because the server could not be reached, or hung up before its first
    // answer (worth trying again later), not because of its configuration (notifications off, a
    // setting to change).
    bool unreachable() const { return m_unreachable; }

private:
    void run();

    ConnectionOptions m_options;
    std::string m_pattern;
    Callback m_callback;
    Ended m_ended;
    std::mutex m_connectionMutex; // m_connection's creation and end, for interrupt()
    std::unique_ptr<Connection> m_connection;
    std::atomic<bool> m_interrupted{false};
    std::atomic<bool> m_stop{false};
    std::atomic<bool> m_running{false};
    bool m_unreachable = false;
    bool m_subscribedBefore = false;
    mutable std::mutex m_endedMutex;
    std::string m_endedWhy;
    std::thread m_thread;
};

} // namespace idem
