#include "idem/monitor/keyspacelistener.h"

#include "idem/errors.h"

#include <hiredis/hiredis.h>

namespace idem {

KeyspaceListener::KeyspaceListener(ConnectionOptions options, std::string pattern, Callback callback)
    : m_options(std::move(options)), m_pattern(std::move(pattern)), m_callback(std::move(callback))
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
    ConnectionOptions o = m_options;
    o.commandTimeout = Millis(0); // block until a notification comes or stop() interrupts
    m_connection = std::make_unique<Connection>(o);
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
    } catch (const Error& e) {
        reason = e.what();
    }
    if (!reason.empty()) {
        m_connection.reset();
        if (why)
            *why = reason;
        return false;
    }
    m_stop = false;
    m_running = true;
    m_thread = std::thread([this] { run(); });
    return true;
}

void KeyspaceListener::stop()
{
    m_stop = true;
    if (m_connection)
        m_connection->interrupt();
    if (m_thread.joinable())
        m_thread.join();
    m_connection.reset();
    m_running = false;
}

std::string KeyspaceListener::endedWhy() const
{
    std::lock_guard lock(m_endedMutex);
    return m_endedWhy;
}

void KeyspaceListener::run()
{
    const std::string prefix = "__keyspace@" + std::to_string(m_options.db) + "__:";
    while (!m_stop) {
        ReplyPtr r;
        try {
            r = m_connection->readReply();
        } catch (const Error& e) {
            if (!m_stop) { // the connection dropped: the owner rescans and may start again
                std::lock_guard lock(m_endedMutex);
                m_endedWhy = e.what();
            }
            break;
        }
        // ["pmessage", pattern, channel, event]
        if (reply::arraySize(r.get()) != 4 || reply::str(reply::element(r.get(), 0)) != "pmessage")
            continue;
        const std::string channel = reply::str(reply::element(r.get(), 2));
        if (!channel.starts_with(prefix))
            continue;
        m_callback(channel.substr(prefix.size()), reply::str(reply::element(r.get(), 3)));
    }
    m_running = false;
}

} // namespace idem
