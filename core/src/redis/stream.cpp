#include "redis/stream.h"

#include "idem/errors.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <cstdint>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <mutex>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <tuple>
#include <unistd.h>

namespace idem {

namespace {

using Clock = std::chrono::steady_clock;

timeval toTimeval(Millis ms)
{
    timeval tv{};
    tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
    tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
    return tv;
}

void setTimeouts(int fd, Millis ms)
{
    const timeval tv = toTimeval(ms);
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

bool isIpAddress(const std::string& host)
{
    in6_addr buf{};
    return ::inet_pton(AF_INET, host.c_str(), &buf) == 1 || ::inet_pton(AF_INET6, host.c_str(), &buf) == 1;
}

std::string opensslReason(unsigned long e)
{
    if (e == 0)
        return {};
    const char* reason = ERR_reason_error_string(e);
    return reason ? reason : "error " + std::to_string(e);
}

// One SSL_CTX per set of files, made once and shared: loading a CA bundle takes milliseconds, and
// a pool of connections (or a console reconnecting) would load it again for each.
std::shared_ptr<SSL_CTX> tlsContext(const TlsOptions& t)
{
    static std::mutex mutex;
    static std::map<std::tuple<std::string, std::string, std::string, bool>, std::shared_ptr<SSL_CTX>> cache;
    const auto key = std::make_tuple(t.caFile, t.certFile, t.keyFile, t.insecure);
    std::lock_guard lock(mutex);
    if (const auto it = cache.find(key); it != cache.end())
        return it->second;
    ERR_clear_error();
    std::shared_ptr<SSL_CTX> ctx(SSL_CTX_new(TLS_client_method()), SSL_CTX_free);
    if (!ctx)
        throw IoError("TLS: cannot make a context: " + opensslReason(ERR_get_error()));
    SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
    const auto unreadable = [](const std::string& file, const char* what, const char* field) {
        if (::access(file.c_str(), R_OK) != 0)
            throw ConfigError("TLS: cannot read the " + std::string(what) + " " + file + ": " + std::strerror(errno),
                              field);
    };
    if (!t.caFile.empty()) {
        unreadable(t.caFile, "CA bundle", "tls-ca");
        if (SSL_CTX_load_verify_locations(ctx.get(), t.caFile.c_str(), nullptr) != 1)
            throw ConfigError("TLS: " + t.caFile + " is not a CA bundle idem can use: " +
                                  opensslReason(ERR_get_error()),
                              "tls-ca");
    } else if (SSL_CTX_set_default_verify_paths(ctx.get()) != 1) {
        throw ConfigError("TLS: the system's CA certificates cannot be loaded: " + opensslReason(ERR_get_error()),
                          "tls-ca");
    }
    if (t.certFile.empty() != t.keyFile.empty())
        throw ConfigError("TLS: a client certificate needs its key, and a key its certificate (--tls-cert and --tls-key)",
                          t.certFile.empty() ? "tls-cert" : "tls-key");
    if (!t.certFile.empty()) {
        unreadable(t.certFile, "client certificate", "tls-cert");
        unreadable(t.keyFile, "client key", "tls-key");
        if (SSL_CTX_use_certificate_chain_file(ctx.get(), t.certFile.c_str()) != 1)
            throw ConfigError("TLS: " + t.certFile + " is not a certificate idem can use: " +
                                  opensslReason(ERR_get_error()),
                              "tls-cert");
        if (SSL_CTX_use_PrivateKey_file(ctx.get(), t.keyFile.c_str(), SSL_FILETYPE_PEM) != 1)
            throw ConfigError("TLS: " + t.keyFile + " is not a private key idem can use: " +
                                  opensslReason(ERR_get_error()),
                              "tls-key");
        if (SSL_CTX_check_private_key(ctx.get()) != 1)
            throw ConfigError("TLS: the key " + t.keyFile + " does not belong to the certificate " + t.certFile,
                              "tls-key");
    }
    SSL_CTX_set_verify(ctx.get(), t.insecure ? SSL_VERIFY_NONE : SSL_VERIFY_PEER, nullptr);
    cache.emplace(key, ctx);
    return ctx;
}

// OpenSSL's socket BIO writes with write(2): a peer that went away raises SIGPIPE, and an
// application (or a test framework) with its own SIGPIPE handler would see it. This one sends
// with MSG_NOSIGNAL, as plaintext writes do, and maps a timeout (EAGAIN under SO_RCVTIMEO /
// SO_SNDTIMEO) to a retry, which SSL_read/SSL_write report as WANT_READ/WANT_WRITE.
BIO_METHOD* socketMethod()
{
    static BIO_METHOD* method = [] {
        BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK | BIO_TYPE_DESCRIPTOR, "idem socket");
        BIO_meth_set_write(m, [](BIO* b, const char* data, int len) -> int {
            BIO_clear_retry_flags(b);
            const ssize_t n =
                ::send(static_cast<int>(reinterpret_cast<std::intptr_t>(BIO_get_data(b))), data, static_cast<std::size_t>(len), MSG_NOSIGNAL);
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
                BIO_set_retry_write(b);
            return static_cast<int>(n);
        });
        BIO_meth_set_read(m, [](BIO* b, char* data, int len) -> int {
            BIO_clear_retry_flags(b);
            const ssize_t n =
                ::recv(static_cast<int>(reinterpret_cast<std::intptr_t>(BIO_get_data(b))), data, static_cast<std::size_t>(len), 0);
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
                BIO_set_retry_read(b);
            return static_cast<int>(n);
        });
        BIO_meth_set_ctrl(m, [](BIO*, int cmd, long, void*) -> long { return cmd == BIO_CTRL_FLUSH ? 1 : 0; });
        BIO_meth_set_create(m, [](BIO* b) -> int {
            BIO_set_init(b, 1);
            return 1;
        });
        return m;
    }();
    return method;
}

} // namespace

TlsFailure describeTlsFailure(SSL* ssl, int sslError, const std::string& serverName)
{
    const long verify = ssl ? SSL_get_verify_result(ssl) : X509_V_OK;
    if (verify != X509_V_OK) {
        const std::string text = X509_verify_cert_error_string(verify);
        switch (verify) {
        case X509_V_ERR_HOSTNAME_MISMATCH:
        case X509_V_ERR_IP_ADDRESS_MISMATCH:
            return {"the server's certificate is not for '" + serverName +
                        "' (host name mismatch; --tls-server-name names the one to verify)",
                    "tls-server-name"};
        case X509_V_ERR_CERT_HAS_EXPIRED:
            return {"the server's certificate has expired", "server-certificate"};
        case X509_V_ERR_CERT_NOT_YET_VALID:
            return {"the server's certificate is not valid yet (check the clocks)", "server-certificate"};
        case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
        case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
        case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
        case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
        case X509_V_ERR_CERT_UNTRUSTED:
            return {"the server's certificate is signed by a CA this client does not trust (" + text +
                        "; --tls-ca names the CA bundle)",
                    "tls-ca"};
        default: return {"the server's certificate was refused: " + text, "tls-ca"};
        }
    }
    const unsigned long e = ERR_peek_last_error();
    const int reason = ERR_GET_REASON(e);
    const std::string text = opensslReason(e);
    if (reason == SSL_R_WRONG_VERSION_NUMBER || reason == SSL_R_PACKET_LENGTH_TOO_LONG ||
        reason == SSL_R_UNKNOWN_PROTOCOL)
        return {"the server does not speak TLS (" + text + "): a plaintext port? use redis://", "url"};
    if (reason == SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED || reason == SSL_R_SSLV3_ALERT_HANDSHAKE_FAILURE ||
        reason == SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE)
        return {"the server requires a client certificate this client did not give or it refused (" + text +
                    "; --tls-cert and --tls-key)",
                "tls-cert"};
    if (reason == SSL_R_SSLV3_ALERT_BAD_CERTIFICATE || reason == SSL_R_TLSV1_ALERT_UNKNOWN_CA ||
        reason == SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN)
        return {"the server refused this client's certificate (" + text + ")", "tls-cert"};
    if (sslError == SSL_ERROR_SYSCALL && e == 0)
        return {"the connection ended during the TLS handshake", ""};
    return {text.empty() ? "TLS handshake failed" : "TLS handshake failed: " + text, ""};
}

std::string endpointText(const std::string& host, int port)
{
    return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Stream::Stream() = default;

Stream::~Stream() { close(); }

void Stream::close()
{
    m_interruptFd = -1;
    if (m_ssl) {
        SSL_free(m_ssl); // no close_notify: the socket goes at once, as a dropped connection does
        m_ssl = nullptr;
    }
    m_context.reset();
    if (m_fd >= 0) {
        ::close(m_fd);
        m_fd = -1;
    }
}

void Stream::interrupt()
{
    // Kept for open() when one is under way (its socket is not there yet: the connect ends as
    // soon as it is) or has never run (a fresh connection interrupted before it connects, as a
    // keyspace listener's may be). A stream that was open and is closed is not poisoned: its next
    // use reconnects, as ConnectionPool::interruptAll promises. (Flag first, socket second, as
    // open() does the other way round: one of the two sees the other.)
    if (m_opening || !m_everOpened)
        m_interruptPending = true;
    const int fd = m_interruptFd.load();
    if (fd >= 0) {
        ::shutdown(fd, SHUT_RDWR);
        m_interruptPending = false;
    }
}

void Stream::open(const ConnectionOptions& o, const std::string& host, int port)
{
    close();
    if (m_everOpened)
        m_interruptPending = false; // (one that came after the last open() ended is not this one's)
    m_opening = true;
    struct Opened {
        Stream& s;
        ~Opened()
        {
            s.m_everOpened = true;
            s.m_opening = false;
        }
    } opened{*this};
    const auto deadline = Clock::now() + o.connectTimeout;
    const auto remainingMs = [&] {
        return static_cast<int>(std::max<long long>(
            0, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count()));
    };
    // a non-blocking connect that waits in poll() for the time left; then blocking with timeouts
    const auto connectTo = [&](int family, const sockaddr* addr, socklen_t len) -> int {
        const int fd = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
            return -errno;
        int rc = ::connect(fd, addr, len);
        if (rc != 0 && errno == EINPROGRESS) {
            pollfd p{fd, POLLOUT, 0};
            int n = 0;
            do
                n = ::poll(&p, 1, remainingMs());
            while (n < 0 && errno == EINTR);
            if (n == 0) {
                ::close(fd);
                return -ETIMEDOUT;
            }
            int err = 0;
            socklen_t errLen = sizeof err;
            ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &errLen);
            rc = err == 0 ? 0 : -1;
            errno = err;
        }
        if (rc != 0) {
            const int err = errno;
            ::close(fd);
            return -err;
        }
        ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
        return fd;
    };

    int fd = -ECONNREFUSED;
    sockaddr_storage connectedAddr{};
    socklen_t connectedLen = 0;
    int connectedFamily = AF_UNSPEC;
    if (!o.unixSocket.empty()) {
        m_peer = o.unixSocket;
        sockaddr_un sa{};
        sa.sun_family = AF_UNIX;
        if (o.unixSocket.size() >= sizeof sa.sun_path)
            throw ConfigError("the unix socket path " + o.unixSocket + " is too long", "url");
        std::memcpy(sa.sun_path, o.unixSocket.c_str(), o.unixSocket.size() + 1);
        fd = connectTo(AF_UNIX, reinterpret_cast<const sockaddr*>(&sa), sizeof sa);
    } else {
        m_peer = endpointText(host, port);
        addrinfo hints{};
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        addrinfo* found = nullptr;
        const std::string service = std::to_string(port);
        if (const int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0)
            throw IoError("cannot resolve " + host + ": " + ::gai_strerror(rc));
        for (addrinfo* a = found; a && fd < 0 && remainingMs() > 0; a = a->ai_next) {
            fd = connectTo(a->ai_family, a->ai_addr, a->ai_addrlen);
            if (fd >= 0) {
                std::memcpy(&connectedAddr, a->ai_addr, a->ai_addrlen);
                connectedLen = a->ai_addrlen;
                connectedFamily = a->ai_family;
            }
        }
        ::freeaddrinfo(found);
        if (fd >= 0) {
            const int one = 1;
            ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
        }
    }
    if (fd == -ETIMEDOUT || (fd < 0 && remainingMs() == 0))
        throw TimeoutError("connect timed out");
    if (fd < 0)
        throw IoError(std::strerror(-fd));
    m_fd = fd;
    m_interruptFd = fd;
    if (m_interruptPending.exchange(false)) { // interrupt() came before the socket was there
        close();
        throw ClosedError("interrupted while connecting");
    }
    if (!o.tls.enabled)
        return;

    // TLS on top, within what is left of the connect timeout
    setTimeouts(m_fd, Millis(std::max(1, remainingMs())));
    const auto ctx = tlsContext(o.tls);
    m_context = ctx;
    ERR_clear_error();
    m_ssl = SSL_new(ctx.get());
    if (!m_ssl)
        throw IoError("TLS: cannot make a session: " + opensslReason(ERR_get_error()));
    BIO* bio = BIO_new(socketMethod());
    if (!bio)
        throw IoError("TLS: cannot make a BIO: " + opensslReason(ERR_get_error()));
    BIO_set_data(bio, reinterpret_cast<void*>(static_cast<std::intptr_t>(m_fd)));
    SSL_set_bio(m_ssl, bio, bio); // the session owns it now
    const std::string name = o.tls.serverName.empty() ? host : o.tls.serverName;
    m_serverName = name;
    if (!isIpAddress(name))
        SSL_set_tlsext_host_name(m_ssl, name.c_str());
    if (!o.tls.insecure) {
        X509_VERIFY_PARAM* param = SSL_get0_param(m_ssl);
        if (isIpAddress(name))
            X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str());
        else
            X509_VERIFY_PARAM_set1_host(param, name.c_str(), 0);
    }
    const int rc = SSL_connect(m_ssl);
    if (rc != 1) {
        const int err = SSL_get_error(m_ssl, rc);
        const int sysErr = errno;
        if ((err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE ||
             (err == SSL_ERROR_SYSCALL && (sysErr == EAGAIN || sysErr == EWOULDBLOCK))) &&
            ERR_peek_last_error() == 0) {
            close();
            // a plaintext Redis waits for the end of a line that a ClientHello may never have:
            // ask it plainly on a connection of its own, so the error says what is wrong
            if (connectedLen > 0) {
                const int probe = connectTo(connectedFamily, reinterpret_cast<const sockaddr*>(&connectedAddr),
                                            connectedLen);
                if (probe >= 0) {
                    setTimeouts(probe, Millis(300));
                    char answer[1] = {0};
                    const bool plain = ::send(probe, "PING\r\n", 6, MSG_NOSIGNAL) == 6 &&
                                       ::recv(probe, answer, 1, 0) == 1 && (answer[0] == '+' || answer[0] == '-');
                    ::close(probe);
                    if (plain)
                        throw ConfigError("the server does not speak TLS (it answered a plaintext PING): a "
                                          "plaintext port? use redis://",
                                          "url");
                }
            }
            throw TimeoutError("TLS handshake timed out");
        }
        const TlsFailure f = describeTlsFailure(m_ssl, err, name);
        close();
        if (!f.field.empty())
            throw ConfigError(f.why, f.field);
        throw IoError(f.why);
    }
}

void Stream::setTimeout(Millis timeout)
{
    m_timeout = timeout;
    if (m_fd >= 0)
        setTimeouts(m_fd, timeout);
}

void Stream::failIo(const char* what, int err)
{
    if (err == EAGAIN || err == EWOULDBLOCK)
        throw TimeoutError(std::string(what) + " timed out");
    if (err == 0 || err == ECONNRESET || err == EPIPE)
        throw ClosedError(std::string(what) + ": connection " + (err == 0 ? "closed by the server" : std::strerror(err)));
    throw IoError(std::string(what) + ": " + std::strerror(err));
}

void Stream::failTls(const char* what, int sslError)
{
    const int sysErr = errno;
    switch (sslError) {
    case SSL_ERROR_ZERO_RETURN: throw ClosedError(std::string(what) + ": connection closed by the server");
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE: throw TimeoutError(std::string(what) + " timed out");
    case SSL_ERROR_SYSCALL:
        if (ERR_peek_last_error() == 0)
            failIo(what, sysErr);
        break;
    default: break;
    }
    // the server refusing this client (TLS 1.3 says so after the handshake), or worse
    const TlsFailure f = describeTlsFailure(m_ssl, sslError, m_serverName);
    if (!f.field.empty())
        throw ConfigError(f.why, f.field);
    throw IoError(std::string(what) + ": TLS: " + opensslReason(ERR_get_error()));
}

// One SSL_write (of at most `tlsMax` bytes: a blocking one returns only when all of it is written)
// or one send(): how much went out (0 when a signal interrupted it).
std::size_t Stream::writeSome(std::string_view data, std::size_t tlsMax)
{
    if (m_fd < 0)
        throw ClosedError("not connected");
    if (m_ssl) {
        ERR_clear_error();
        const int n = SSL_write(m_ssl, data.data(), static_cast<int>(std::min(data.size(), tlsMax)));
        if (n <= 0)
            failTls("write", SSL_get_error(m_ssl, n));
        return static_cast<std::size_t>(n);
    }
    const ssize_t n = ::send(m_fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n > 0)
        return static_cast<std::size_t>(n);
    if (n < 0 && errno == EINTR)
        return 0;
    failIo("write", n < 0 ? errno : EPIPE);
}

void Stream::write(std::string_view data)
{
    if (m_fd < 0)
        throw ClosedError("not connected");
    while (!data.empty())
        data.remove_prefix(writeSome(data, std::size_t(1) << 30));
}

void Stream::writeBy(std::string_view data, std::chrono::steady_clock::time_point deadline)
{
    // each send (each TLS record) waits only for the time left: write()'s timeout is per call
    const Millis was = m_timeout;
    struct Restore {
        Stream& s;
        Millis timeout;
        ~Restore() { s.setTimeout(timeout); }
    } restore{*this, was};
    while (!data.empty()) {
        const auto left = std::chrono::duration_cast<Millis>(deadline - Clock::now());
        if (left.count() <= 0)
            throw TimeoutError("write: out of time");
        setTimeout(left);
        data.remove_prefix(writeSome(data, 16 * 1024));
    }
}

std::size_t Stream::read(char* buffer, std::size_t capacity)
{
    if (m_fd < 0)
        throw ClosedError("not connected");
    if (m_ssl) {
        ERR_clear_error();
        const int n = SSL_read(m_ssl, buffer, static_cast<int>(std::min<std::size_t>(capacity, 1 << 30)));
        if (n <= 0)
            failTls("read", SSL_get_error(m_ssl, n));
        return static_cast<std::size_t>(n);
    }
    while (true) {
        const ssize_t n = ::recv(m_fd, buffer, capacity, 0);
        if (n > 0)
            return static_cast<std::size_t>(n);
        if (n < 0 && errno == EINTR)
            continue;
        failIo("read", n == 0 ? 0 : errno);
    }
}

bool Stream::waitReadable(Millis wait)
{
    if (m_fd < 0)
        throw ClosedError("not connected");
    if (m_ssl && SSL_has_pending(m_ssl)) // a record read already: poll() would not see it
        return true;
    const auto until = Clock::now() + wait;
    while (true) {
        const auto left = std::chrono::duration_cast<Millis>(until - Clock::now()).count();
        pollfd p{m_fd, POLLIN, 0};
        const int n = ::poll(&p, 1, static_cast<int>(std::clamp<long long>(left, 0, 1 << 30)));
        if (n > 0) // bytes, a hang-up or an error: read() says which
            return true;
        if (n == 0)
            return false;
        if (errno != EINTR)
            failIo("poll", errno);
    }
}

void Stream::setNonBlocking()
{
    if (m_fd < 0)
        throw ClosedError("not connected");
    ::fcntl(m_fd, F_SETFL, ::fcntl(m_fd, F_GETFL) | O_NONBLOCK);
    if (m_ssl) // a write cut short goes on later from a buffer that may have grown (and moved)
        SSL_set_mode(m_ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
}

std::size_t Stream::writeSome(std::string_view data, Want& want)
{
    if (m_fd < 0)
        throw ClosedError("not connected");
    want = Want::Write;
    if (m_ssl) {
        ERR_clear_error();
        const int n = SSL_write(m_ssl, data.data(), static_cast<int>(std::min<std::size_t>(data.size(), 1 << 30)));
        if (n > 0)
            return static_cast<std::size_t>(n);
        const int err = SSL_get_error(m_ssl, n);
        if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
            want = err == SSL_ERROR_WANT_READ ? Want::Read : Want::Write;
            return 0;
        }
        failTls("write", err);
    }
    while (true) {
        const ssize_t n = ::send(m_fd, data.data(), data.size(), MSG_NOSIGNAL);
        if (n >= 0)
            return static_cast<std::size_t>(n);
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return 0;
        failIo("write", errno);
    }
}

std::size_t Stream::readSome(char* buffer, std::size_t capacity, Want& want)
{
    if (m_fd < 0)
        throw ClosedError("not connected");
    want = Want::Read;
    if (m_ssl) {
        ERR_clear_error();
        const int n = SSL_read(m_ssl, buffer, static_cast<int>(std::min<std::size_t>(capacity, 1 << 30)));
        if (n > 0)
            return static_cast<std::size_t>(n);
        const int err = SSL_get_error(m_ssl, n);
        if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
            want = err == SSL_ERROR_WANT_READ ? Want::Read : Want::Write;
            return 0;
        }
        failTls("read", err);
    }
    while (true) {
        const ssize_t n = ::recv(m_fd, buffer, capacity, 0);
        if (n > 0)
            return static_cast<std::size_t>(n);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        failIo("read", n == 0 ? 0 : errno);
    }
}

} // namespace idem
