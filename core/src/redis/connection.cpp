#include "idem/redis/connection.h"

#include "idem/errors.h"
#include "resp.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <hiredis/sds.h>
#include <mutex>
#include <sys/socket.h>

namespace idem {

namespace {

timeval toTimeval(std::chrono::milliseconds ms)
{
    timeval tv{};
    tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
    tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
    return tv;
}

// hiredis writes with write(2): a peer that went away would raise SIGPIPE and kill the process.
// Ignore it once, unless the application installed its own handler.
void ignoreSigpipeOnce()
{
    static std::once_flag once;
    std::call_once(once, [] {
        struct sigaction current{};
        if (sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL)
            std::signal(SIGPIPE, SIG_IGN);
    });
}

} // namespace

void ContextDeleter::operator()(redisContext* c) const noexcept
{
    if (c)
        redisFree(c);
}

Connection::Connection(ConnectionOptions options) : m_options(std::move(options))
{
    ignoreSigpipeOnce();
}

Connection::~Connection() = default;

void Connection::disconnect() { dropContext(); }

void Connection::dropContext()
{
    m_fd = -1;
    m_ctx.reset();
}

void Connection::interrupt()
{
    const int fd = m_fd.load();
    if (fd >= 0)
        ::shutdown(fd, SHUT_RDWR);
}

ReplyPtr Connection::readReply()
{
    if (!m_ctx)
        throw ClosedError("Redis at " + m_options.describe() + ": not connected");
    void* raw = nullptr;
    if (redisGetReply(m_ctx.get(), &raw) != REDIS_OK || !raw)
        fail("read failed");
    return ReplyPtr(static_cast<redisReply*>(raw));
}

void Connection::connect()
{
    dropContext();
    const timeval ctv = toTimeval(m_options.connectTimeout);
    redisContext* raw = m_options.unixSocket.empty()
                            ? redisConnectWithTimeout(m_options.host.c_str(), m_options.port, ctv)
                            : redisConnectUnixWithTimeout(m_options.unixSocket.c_str(), ctv);
    std::unique_ptr<redisContext, ContextDeleter> ctx(raw);
    if (!ctx)
        throw IoError("cannot allocate a Redis context");
    const std::string where = m_options.describe();
    if (ctx->err) {
        const std::string why = ctx->errstr;
        if (why.find("timed out") != std::string::npos || why.find("temporarily") != std::string::npos)
            throw TimeoutError("Redis at " + where + " unreachable: connect timed out");
        throw IoError("Redis at " + where + " unreachable: " + why);
    }
    // hiredis 0.14 opens its socket without SOCK_CLOEXEC: a process this one starts (idemctl run's
    // CMD) would inherit the connection. (A fork from another thread between socket() and here
    // still could; hiredis offers no way to pass the flag at creation.)
    if (const int flags = ::fcntl(ctx->fd, F_GETFD); flags >= 0)
        ::fcntl(ctx->fd, F_SETFD, flags | FD_CLOEXEC);
    if (m_options.commandTimeout.count() > 0)
        redisSetTimeout(ctx.get(), toTimeval(m_options.commandTimeout));
    if (m_options.unixSocket.empty())
        redisEnableKeepAlive(ctx.get());
    m_ctx = std::move(ctx);
    m_fd = m_ctx->fd;

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
    };
    if (!m_options.password.empty()) {
        if (m_options.user.empty())
            handshake({"AUTH", m_options.password}, "authentication");
        else
            handshake({"AUTH", m_options.user, m_options.password}, "authentication");
    }
    if (m_options.db != 0) {
        const std::string db = std::to_string(m_options.db);
        handshake({"SELECT", db}, "selecting the database");
    }
}

void Connection::ensureConnected()
{
    if (m_ctx)
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

void Connection::fail(const char* what)
{
    const int err = m_ctx ? m_ctx->err : 0;
    const std::string text = m_ctx ? std::string(m_ctx->errstr) : std::string("no connection");
    dropContext(); // a hiredis context is unusable after an I/O or protocol error
    const std::string msg = "Redis at " + m_options.describe() + ": " + what + ": " + text;
    if (err == REDIS_ERR_IO && (text.find("temporarily unavailable") != std::string::npos ||
                                text.find("timed out") != std::string::npos))
        throw TimeoutError("Redis at " + m_options.describe() + ": no reply within " +
                           std::to_string(m_options.commandTimeout.count()) + " ms");
    if (err == REDIS_ERR_EOF)
        throw ClosedError(msg);
    if (err == REDIS_ERR_PROTOCOL)
        throw ProtoError(msg);
    throw IoError(msg);
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

// Puts a formatted request on the wire. hiredis would copy it into its output buffer first, and
// free that buffer and make a new one after every write (a sixth of a request's client
// instructions); when that buffer is empty - always, the way a Connection uses hiredis - the
// request goes to the socket as it is, with the timeout and the errors hiredis would have given.
void Connection::send(std::string_view resp, const char* what)
{
    redisContext* c = m_ctx.get();
    if (sdslen(c->obuf) > 0) {
        if (redisAppendFormattedCommand(c, resp.data(), resp.size()) != REDIS_OK)
            fail(what);
        return;
    }
    while (!resp.empty()) {
        const ssize_t n = ::send(c->fd, resp.data(), resp.size(), MSG_NOSIGNAL);
        if (n > 0) {
            resp.remove_prefix(static_cast<std::size_t>(n));
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else {
            // as hiredis reports a failed write (SO_SNDTIMEO ran out: "Resource temporarily unavailable")
            c->err = REDIS_ERR_IO;
            std::snprintf(c->errstr, sizeof(c->errstr), "%s", n < 0 ? std::strerror(errno) : "short write");
            fail(what);
        }
    }
}

ReplyPtr Connection::commandFormatted(std::string_view resp)
{
    ensureConnected();
    send(resp, "command failed");
    void* raw = nullptr;
    if (redisGetReply(m_ctx.get(), &raw) != REDIS_OK || !raw)
        fail("command failed");
    return ReplyPtr(static_cast<redisReply*>(raw));
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
    for (std::size_t i = 0; i < count; ++i) {
        void* raw = nullptr;
        if (redisGetReply(m_ctx.get(), &raw) != REDIS_OK || !raw)
            fail("pipeline read failed");
        replies.emplace_back(static_cast<redisReply*>(raw));
    }
    return replies;
}

} // namespace idem
