#include "idem/redis/connection.h"

#include "idem/errors.h"
#include "redis/reader.h"
#include "redis/resp.h"
#include "redis/stream.h"

#include <algorithm>
#include <csignal>
#include <hiredis/hiredis.h>
#include <mutex>
#include <thread>

namespace idem {

namespace {

// A peer that went away would raise SIGPIPE on a TLS write (plain writes use MSG_NOSIGNAL) and kill
// the process. Ignore it once, unless the application installed its own handler.
void ignoreSigpipeOnce()
{
    static std::once_flag once;
    std::call_once(once, [] {
        struct sigaction current{};
        if (sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL)
            std::signal(SIGPIPE, SIG_IGN);
    });
}

bool startsWith(const redisReply* r, std::string_view prefix)
{
    return reply::isError(r) && reply::errorText(r).starts_with(prefix);
}

} // namespace

Connection::Connection(ConnectionOptions options) : m_options(std::move(options)), m_stream(std::make_unique<Stream>())
{
    ignoreSigpipeOnce();
}

Connection::~Connection() = default;

void Connection::disconnect() { dropContext(); }

void Connection::dropContext()
{
    m_connected = false;
    m_stream->close();
    m_reader.reset();
    m_endpoint.clear();
}

void Connection::interrupt() { m_stream->interrupt(); }

std::unique_ptr<Stream> Connection::handOver()
{
    ensureConnected();
    auto stream = std::exchange(m_stream, std::make_unique<Stream>());
    m_connected = false;
    m_reader.reset();
    m_endpoint.clear();
    return stream;
}

std::string Connection::endpoint() const { return m_endpoint; }

bool Connection::tls() const { return m_stream->tls(); }

bool Connection::checkPrimary()
{
    if (!m_options.viaSentinel() || !m_connected || !m_options.unixSocket.empty())
        return true;
    if (askPrimary(m_stream->peer()) != PrimaryVerdict::Elsewhere)
        return true; // the same node, or the sentinels cannot say: keep what works
    dropContext();   // the next call finds the primary the sentinels name now
    return false;
}

Connection::PrimaryVerdict Connection::askPrimary(const std::string& peer, std::string* named)
{
    try {
        const auto [host, port] = primaryFromSentinels();
        const std::string now = endpointText(host, port);
        if (named)
            *named = now;
        return now == peer ? PrimaryVerdict::Same : PrimaryVerdict::Elsewhere;
    } catch (const Error&) {
        return PrimaryVerdict::Unknown;
    }
}

std::chrono::steady_clock::time_point Connection::nextPrimaryCheck(std::chrono::steady_clock::time_point started,
                                                                   bool answered)
{
    using namespace std::chrono;
    const auto now = steady_clock::now();
    return now + std::max<steady_clock::duration>(seconds(answered ? 1 : 10), (now - started) * 10);
}

// The primary a sentinel names (SENTINEL get-master-addr-by-name), from the first that answers.
std::pair<std::string, int> Connection::primaryFromSentinels()
{
    std::string errors;
    bool unknownEverywhere = true;
    for (const auto& node : m_options.sentinel.nodes) {
        ConnectionOptions so;
        so.host = node.host;
        so.port = node.port;
        so.user = m_options.sentinel.user;
        so.password = m_options.sentinel.password;
        so.connectTimeout = m_options.connectTimeout;
        so.commandTimeout = m_options.commandTimeout;
        Connection sentinel(so);
        try {
            sentinel.connect();
            const ReplyPtr r = sentinel.command({"SENTINEL", "get-master-addr-by-name", m_options.sentinel.master});
            if (reply::isError(r.get())) {
                errors += "; " + so.describe() + ": " + std::string(reply::errorText(r.get()));
                unknownEverywhere = false;
                continue;
            }
            const auto primary = reply::sentinelPrimary(r.get());
            if (!primary)
                continue; // this sentinel does not know the name
            return {primary->host, primary->port};
        } catch (const ConfigError& e) {
            throw ConfigError("sentinel " + so.describe() + ": " + e.what(), "sentinel-password");
        } catch (const ProtoError& e) { // a sentinel that answers nonsense: ask the next one
            errors += "; " + so.describe() + ": " + e.what();
            unknownEverywhere = false;
        } catch (const IoError& e) {
            errors += "; " + so.describe() + ": " + e.what();
            unknownEverywhere = false;
        }
    }
    if (unknownEverywhere)
        throw ConfigError("no sentinel knows a primary named '" + m_options.sentinel.master + "'", "sentinel", false);
    throw IoError("no sentinel answered for '" + m_options.sentinel.master + "'" + errors);
}

ReplyPtr Connection::readReply()
{
    if (!m_connected)
        throw ClosedError("Redis at " + m_options.describe() + ": not connected");
    return receive("read failed");
}

ReplyPtr Connection::readReply(Millis wait)
{
    if (!m_connected)
        throw ClosedError("Redis at " + m_options.describe() + ": not connected");
    return receive("read failed", std::chrono::steady_clock::now() + wait);
}

void Connection::sendCommand(std::initializer_list<std::string_view> args)
{
    ensureConnected();
    m_out.clear();
    resp::Writer(m_out).command(std::span<const std::string_view>(args.begin(), args.size()));
    send(m_out, "command failed");
}

void Connection::connect()
{
    dropContext();
    const FollowUp none(*this, {}); // the handshake's requests are not the caller's
    std::string host = m_options.host;
    int port = m_options.port;
    if (m_options.viaSentinel())
        std::tie(host, port) = primaryFromSentinels();
    const std::string where = m_options.viaSentinel()
                                  ? m_options.describe() + " (primary " + host + ":" + std::to_string(port) + ")"
                                  : m_options.describe();
    try {
        m_stream->open(m_options, host, port);
    } catch (const TimeoutError& e) {
        throw TimeoutError("Redis at " + where + " unreachable: " + e.what());
    } catch (const ConfigError& e) {
        throw ConfigError("Redis at " + where + ": " + e.what(), e.field(), e.certain());
    } catch (const IoError& e) {
        throw IoError("Redis at " + where + " unreachable: " + e.what());
    }
    m_stream->setTimeout(m_options.commandTimeout);
    m_reader = resp::makeReader();
    m_connected = true;
    m_answered = false;
    m_endpoint = m_options.unixSocket.empty() ? host + ":" + std::to_string(port) : m_options.unixSocket;

    auto handshake = [this, &where](std::initializer_list<std::string_view> args, const char* step) {
        ReplyPtr r = command(args);
        if (reply::isError(r.get())) {
            const std::string text(reply::errorText(r.get()));
            dropContext();
            const std::string msg = "Redis at " + where + ": " + step + " failed: " + text;
            // what retrying cannot fix: say which setting to change
            if (text.starts_with("WRONGPASS") || text.starts_with("NOAUTH") || text.find("AUTH") != std::string::npos)
                throw ConfigError(msg, m_options.user.empty() ? "password" : "user");
            if (text.starts_with("NOPERM"))
                throw ConfigError(msg, "user");
            if (text.find("DB index is out of range") != std::string::npos)
                throw ConfigError(msg, "url");
            throw ReplyError(msg);
        }
        return r;
    };
    // a named user authenticates as itself even without a password (a nopass user, or a refusal
    // that says so): never quietly as the default user
    if (!m_options.user.empty())
        handshake({"AUTH", m_options.user, m_options.password}, "authentication");
    else if (!m_options.password.empty())
        handshake({"AUTH", m_options.password}, "authentication");
    if (m_options.db != 0) {
        const std::string db = std::to_string(m_options.db);
        handshake({"SELECT", db}, "selecting the database");
    }
    if (m_options.readOnly)
        handshake({"READONLY"}, "READONLY (reads from a replica)");
    if (m_options.user.empty() && m_options.password.empty() && m_options.db == 0 && !m_options.viaSentinel() &&
        !m_options.readOnly) {
        // one round trip that finds here, with a clear error, what the first command would: a TLS
        // port hangs up on plaintext, and a TLS 1.3 server refuses a client certificate only
        // after the handshake seemed done
        handshake({"PING"}, "the first command");
    }
    m_answered = true; // a server that hangs up from now on is gone, not a TLS port
    m_answeredBefore = true;
    if (m_options.viaSentinel()) {
        // a sentinel can name a node that is still (or already) a replica while a failover runs
        const ReplyPtr role = handshake({"ROLE"}, "asking its role");
        if (reply::str(reply::element(role.get(), 0)) != "master") {
            dropContext();
            throw IoError("Redis at " + where + ": the node the sentinels named is a " +
                          reply::str(reply::element(role.get(), 0)) + " (failing over)");
        }
    }
}

void Connection::checkPrimaryEverySecond()
{
    const auto started = std::chrono::steady_clock::now();
    if (started < m_nextPrimaryCheck || !m_options.unixSocket.empty())
        return;
    const PrimaryVerdict v = askPrimary(m_stream->peer());
    if (v == PrimaryVerdict::Elsewhere)
        dropContext(); // the call connects to the primary they name now
    m_nextPrimaryCheck = nextPrimaryCheck(started, v != PrimaryVerdict::Unknown);
}

void Connection::ensureConnected()
{
    if (m_connected && m_options.viaSentinel())
        checkPrimaryEverySecond();
    if (m_connected)
        return;
    const auto now = std::chrono::steady_clock::now();
    if (now < m_nextAttempt) {
        const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(m_nextAttempt - now);
        if (m_lastPermanent) // the same answer again: it will not change by waiting
            throw ConfigError(m_lastError, m_lastField);
        throw ClosedError(m_lastError + " (next reconnect in " + std::to_string(wait.count()) + " ms)");
    }
    try {
        connect();
        m_nextPrimaryCheck = std::chrono::steady_clock::now() + std::chrono::seconds(1); // connect() asked them
        m_backoff = std::chrono::milliseconds(0);
        m_lastPermanent = false;
    } catch (const Error& e) {
        if (!dynamic_cast<const IoError*>(&e) && !dynamic_cast<const ConfigError*>(&e))
            throw;
        m_lastError = e.what();
        m_lastPermanent = dynamic_cast<const ConfigError*>(&e) != nullptr;
        m_lastField = m_lastPermanent ? static_cast<const ConfigError&>(e).field() : std::string();
        m_backoff = m_backoff.count() == 0 ? m_options.reconnectMin
                                           : std::min(m_backoff * 2, m_options.reconnectMax);
        m_nextAttempt = std::chrono::steady_clock::now() + m_backoff;
        throw;
    }
}

// Called from a catch block: the connection is unusable after an I/O or protocol error. The
// caught error is rethrown as its own kind with where it happened.
void Connection::fail(const char* what)
{
    const std::string where = "Redis at " + (m_endpoint.empty() ? m_options.describe() : m_options.describe() +
                                                 (m_options.viaSentinel() ? " (primary " + m_endpoint + ")" : ""));
    const bool inHandshake = !m_answered;
    const bool tls = m_stream->tls();
    dropContext();
    try {
        throw;
    } catch (const TimeoutError&) {
        throw TimeoutError(where + ": no reply within " + std::to_string(m_options.commandTimeout.count()) + " ms");
    } catch (const ClosedError& e) {
        // the same server answered before, as it was asked now, or a cluster named this node and
        // its seed answered these options: it is going away (dying, restarting)
        if (inHandshake && (m_answeredBefore || m_options.namedByServer))
            throw ClosedError(where + ": the server closed the connection during the handshake");
        // a server that hangs up before its first answer most likely speaks TLS and took the
        // plaintext request for a broken handshake; over TLS, it refused this client's certificate
        // (TLS 1.3 tells after the handshake, and the reset can overtake the alert)
        if (inHandshake && !tls)
            throw ConfigError(where + ": the server closed the connection before its first answer (a TLS port? "
                                      "use rediss://)",
                              "url", false);
        if (inHandshake)
            throw ConfigError(where + ": the server closed the TLS session before its first answer: it requires "
                                      "a client certificate, or refused this one (--tls-cert and --tls-key)",
                              "tls-cert", false);
        throw ClosedError(where + ": " + what + ": " + e.what());
    } catch (const ConfigError& e) { // a TLS alert read after the handshake (a client certificate refused)
        throw ConfigError(where + ": " + e.what(), e.field(), e.certain());
    } catch (const ProtoError& e) {
        throw ProtoError(where + ": " + what + ": " + e.what());
    } catch (const IoError& e) {
        throw IoError(where + ": " + what + ": " + e.what());
    }
}

ReplyPtr Connection::command(std::initializer_list<std::string_view> args)
{
    return command(std::span<const std::string_view>(args.begin(), args.size()));
}

ReplyPtr Connection::command(const std::vector<std::string_view>& args)
{
    return command(std::span<const std::string_view>(args));
}

ReplyPtr Connection::command(std::span<const std::string_view> args)
{
    ensureConnected(); // first: connecting (AUTH, SELECT) encodes its own commands into m_out
    m_out.clear();
    resp::Writer(m_out).command(args);
    return commandFormatted(m_out);
}

void Connection::send(std::string_view resp, const char* what)
{
    try {
        m_stream->write(resp);
    } catch (const Error&) {
        fail(what);
    }
}

// The next reply: what the reader holds already, else what the socket brings (with `until`: null
// when no whole reply came by then).
ReplyPtr Connection::receive(const char* what, std::optional<std::chrono::steady_clock::time_point> until)
{
    void* raw = nullptr;
    try {
        while (true) {
            if (redisReaderGetReply(m_reader.get(), &raw) != REDIS_OK)
                throw ProtoError(resp::readerError(m_reader.get()));
            if (raw)
                break;
            if (until && !m_stream->waitReadable(std::max(Millis(0), std::chrono::duration_cast<Millis>(
                                                                        *until - std::chrono::steady_clock::now()))))
                return nullptr;
            char buffer[16 * 1024];
            const std::size_t n = m_stream->read(buffer, sizeof buffer);
            if (redisReaderFeed(m_reader.get(), buffer, n) != REDIS_OK)
                throw ProtoError(resp::readerError(m_reader.get()));
        }
    } catch (const Error&) {
        followUpUnanswered();
        fail(what);
    }
    return ReplyPtr(static_cast<redisReply*>(raw));
}

Connection::FollowUp::FollowUp(Connection& c, std::function<std::string()> bytes)
    : m_connection(c), m_previous(std::exchange(c.m_followUp, std::move(bytes)))
{
}

Connection::FollowUp::~FollowUp() { m_connection.m_followUp = std::move(m_previous); }

void Connection::followUpUnanswered() noexcept
{
    if (!m_followUp || !m_stream->isOpen())
        return;
    try {
        throw; // the error receive() caught
    } catch (const TimeoutError&) {
        // the request is in the server's socket buffer, the socket still open: what follows it runs after it
    } catch (...) {
        return; // a hang-up, a garbled answer: the socket cannot carry more, or the server answered
    }
    try {
        m_stream->writeBy(m_followUp(), std::chrono::steady_clock::now() + m_options.commandTimeout);
    } catch (...) { // not in time, or the socket went: what the request did stays, as before
    }
}

// A primary demoted to a replica answers writes with -READONLY: through Sentinel, the next call
// asks again who the primary is. (The call that got it fails closed: its write did not happen.)
void Connection::afterReply(const redisReply* r)
{
    if (m_options.viaSentinel() && startsWith(r, "READONLY"))
        dropContext();
}

void Connection::afterReplies(const std::vector<ReplyPtr>& replies)
{
    if (!m_options.viaSentinel())
        return;
    for (const auto& r : replies)
        if (startsWith(r.get(), "READONLY")) {
            dropContext();
            return;
        }
}

ReplyPtr Connection::commandFormatted(std::string_view resp)
{
    ensureConnected();
    send(resp, "command failed");
    ReplyPtr r = receive("command failed");
    afterReply(r.get());
    return r;
}

ReplyPtr Connection::checked(std::initializer_list<std::string_view> args)
{
    ReplyPtr r = command(args);
    if (reply::isError(r.get()))
        throw ReplyError(reply::errorMessage(r.get()));
    return r;
}

std::vector<ReplyPtr> Connection::pipeline(const std::vector<std::vector<std::string_view>>& commands)
{
    ensureConnected(); // first: connecting (AUTH, SELECT) encodes its own commands into m_out
    m_out.clear();
    resp::Writer w(m_out);
    for (const auto& args : commands)
        w.command(args);
    return pipelineFormatted(m_out, commands.size());
}

std::vector<ReplyPtr> Connection::pipelineFormatted(std::string_view resp, std::size_t count)
{
    ensureConnected();
    send(resp, "pipeline write failed");
    std::vector<ReplyPtr> replies;
    replies.reserve(count);
    for (std::size_t i = 0; i < count; ++i)
        replies.push_back(receive("pipeline read failed"));
    afterReplies(replies);
    return replies;
}

} // namespace idem
