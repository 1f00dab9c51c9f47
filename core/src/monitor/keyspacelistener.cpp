#include "idem/monitor/keyspacelistener.h"

#include "idem/errors.h"

#include <hiredis/hiredis.h>

#include <chrono>

namespace idem {

KeyspaceListener::KeyspaceListener(ConnectionOptions options, std::string pattern, Callback callback, Ended ended)
    : m_options(std::move(options)), m_pattern(std::move(pattern)), m_callback(std::move(callback)),
      m_ended(std::move(ended))
{
}

KeyspaceListener::~KeyspaceListener() { stop(); }

std::string KeyspaceListener::unavailableReason(Connection& c)
{
    ReplyPtr r = c.command({"CONFIG", "GET", "notify-keyspace-events"});
    if (reply::isError(r.get()))
        return "cannot read notify-keyspace-events: " + std::string(reply::errorText(r.get()));
    if (reply::arraySize(r.get()) < 2)
        return "the server did not report notify-keyspace-events";
    const std::string flags = reply::str(reply::element(r.get(), 1));
    if (flags.find('K') == std::string::npos)
        return "keyspace notifications are off (notify-keyspace-events '" + flags + "' has no K)";
    const bool all = flags.find('A') != std::string::npos;
    for (char needed : {'g', '$', 'h', 'x'})
        if (!all && flags.find(needed) == std::string::npos)
            return std::string("notify-keyspace-events '") + flags + "' lacks '" + needed + "' events";
    return {};
}

bool KeyspaceListener::start(std::string* why)
{
    stop();
    // (the command timeout bounds the subscribing, a node that hangs included; run() then waits
    // for notifications as long as the node answers its PINGs)
    {
        std::lock_guard lock(m_connectionMutex);
        if (m_interrupted) {
            if (why)
                *why = "interrupted";
            return false;
        }
        m_connection = std::make_unique<Connection>(m_options);
        if (m_subscribedBefore)
            m_connection->setAnsweredBefore();
    }
    std::string reason;
    m_unreachable = false;
    {
        std::lock_guard lock(m_endedMutex);
        m_endedWhy.clear();
    }
    try {
        m_connection->connect();
        reason = unavailableReason(*m_connection);
        if (reason.empty()) {
            const std::string channel = "__keyspace@" + std::to_string(m_options.db) + "__:" + m_pattern;
            ReplyPtr r = m_connection->command({"PSUBSCRIBE", channel});
            if (reply::isError(r.get()))
                reason = "PSUBSCRIBE failed: " + std::string(reply::errorText(r.get()));
        }
    } catch (const IoError& e) {
        reason = e.what();
        m_unreachable = true;
    } catch (const ConfigError& e) {
        // a guess from a symptom (a node that hangs up before its first answer: most likely a TLS
        // port, unless it is dying, as when a listener ended with it) is worth trying again
        reason = e.what();
        m_unreachable = !e.certain();
    } catch (const Error& e) {
        reason = e.what();
    }
    if (m_interrupted && reason.empty())
        reason = "interrupted"; // (the subscription answered before the interruption came)
    if (!reason.empty()) {
        std::lock_guard lock(m_connectionMutex);
        m_connection.reset();
        if (why)
            *why = reason;
        return false;
    }
    m_subscribedBefore = true;
    m_stop = false;
    m_running = true;
    m_thread = std::thread([this] { run(); });
    return true;
}

void KeyspaceListener::stop()
{
    m_stop = true;
    {
        std::lock_guard lock(m_connectionMutex);
        if (m_connection)
            m_connection->interrupt();
    }
    if (m_thread.joinable())
        m_thread.join();
    std::lock_guard lock(m_connectionMutex);
    m_connection.reset();
    m_running = false;
}

void KeyspaceListener::interrupt()
{
    std::lock_guard lock(m_connectionMutex);
    m_interrupted = true;
    if (m_connection) // (before its socket exists too: Connection::interrupt() ends the connect)
        m_connection->interrupt();
}

std::string KeyspaceListener::endedWhy() const
{
    std::lock_guard lock(m_endedMutex);
    return m_endedWhy;
}

void KeyspaceListener::run()
{
    using Clock = std::chrono::steady_clock;
    const std::string prefix = "__keyspace@" + std::to_string(m_options.db) + "__:";
    const Millis deadline = m_options.commandTimeout > Millis(0) ? m_options.commandTimeout : kPingDeadline;
    Clock::time_point heard = Clock::now();
    // when a PING not answered yet was sent (a flag beside it, not std::optional: g++ 12 at -O1 takes
    // an engaged optional's value for maybe uninitialized)
    bool pingOut = false;
    Clock::time_point pinged{};
    while (!m_stop) {
        ReplyPtr r;
        try {
            const Clock::time_point now = Clock::now();
            if (pingOut && now - pinged >= deadline)
                throw TimeoutError("Redis at " + m_options.describe() + ": no answer to PING within " +
                                   std::to_string(deadline.count()) + " ms");
            if (!pingOut && now - heard >= kQuietBeforePing) {
                // in subscribe mode too (RESP2 answers ["pong", ""] among the messages)
                m_connection->sendCommand({"PING"});
                pinged = now;
                pingOut = true;
                continue;
            }
            const Clock::time_point until = pingOut ? pinged + deadline : heard + kQuietBeforePing;
            r = m_connection->readReply(std::chrono::duration_cast<Millis>(until - now) + Millis(1));
        } catch (const Error& e) {
            if (!m_stop) { // the connection dropped or hung: the owner rescans and may start again
                std::lock_guard lock(m_endedMutex);
                m_endedWhy = e.what();
            }
            break;
        }
        if (!r)
            continue;
        heard = Clock::now(); // whatever came (a message, the pong): the node answers
        pingOut = false;
        // ["pmessage", pattern, channel, event]
        if (reply::arraySize(r.get()) != 4 || reply::str(reply::element(r.get(), 0)) != "pmessage")
            continue;
        const std::string channel = reply::str(reply::element(r.get(), 2));
        if (!channel.starts_with(prefix))
            continue;
        m_callback(channel.substr(prefix.size()), reply::str(reply::element(r.get(), 3)));
    }
    m_running = false;
    if (!m_stop && m_ended)
        m_ended();
}

} // namespace idem
