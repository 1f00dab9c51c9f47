#pragma once

#include "idem/redis/options.h"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

struct ssl_st;

namespace idem {

// One connected byte stream to a server: TCP or a unix socket, with TLS on top when the options
// ask for it, so plaintext and TLS share every line above this one (hiredis only parses replies).
// Blocking with timeouts (SO_RCVTIMEO / SO_SNDTIMEO); close-on-exec; interrupt() from any thread
// ends a call blocked in it. Throws TimeoutError, ClosedError, IoError, or ConfigError for what
// retrying cannot fix (a certificate refused, a key file unreadable, TLS spoken to a plaintext
// port). Internal to idem::core.
class Stream {
public:
    Stream();
    ~Stream();
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;

    // Connects to host:port (or o.unixSocket) within o.connectTimeout and, with o.tls, handshakes.
    void open(const ConnectionOptions& o, const std::string& host, int port);
    void close();
    bool isOpen() const { return m_fd >= 0; }
    bool tls() const { return m_ssl != nullptr; }

    void setTimeout(Millis timeout); // for each read and write; 0: wait for ever
    void write(std::string_view data);
    // The same, all of it by `deadline` (TimeoutError after it, some of it perhaps written)
    void writeBy(std::string_view data, std::chrono::steady_clock::time_point deadline);
    // What is there now, at least one byte: waits up to the timeout for it.
    std::size_t read(char* buffer, std::size_t capacity);
    // Whether read() has something to return now (bytes, or the end of the stream), waiting up to
    // `wait` for it; false: nothing came, and the stream is as it was.
    bool waitReadable(Millis wait);
    // Ends a blocked read or write (thread-safe); during open(), or before a fresh stream's first
    // one, that open() (it throws ClosedError "interrupted while connecting").
    void interrupt();

    // Non-blocking use (AsyncConnection, which polls fd()): after open(), calls no longer wait,
    // they move what they can now. `want` tells what a call that moved nothing waits for (TLS may
    // need to read to write, or the reverse). Errors throw as above.
    enum class Want { Read, Write };
    void setNonBlocking();
    int fd() const { return m_fd; }
    std::size_t writeSome(std::string_view data, Want& want); // 0: nothing could be written now
    std::size_t readSome(char* buffer, std::size_t capacity, Want& want); // 0: nothing there now

    const std::string& peer() const { return m_peer; } // endpointText(host, port) or the socket path

private:
    [[noreturn]] void failIo(const char* what, int err);
    [[noreturn]] void failTls(const char* what, int sslError);
    std::size_t writeSome(std::string_view data, std::size_t tlsMax);

    int m_fd = -1;
    std::atomic<int> m_interruptFd{-1};
    std::atomic<bool> m_interruptPending{false}; // interrupt() found no socket to shut down yet
    // an open() under way; whether one has ever run (a fresh stream's first open() obeys an
    // interrupt() that came before it; a stream that was open and closed reconnects as usual)
    std::atomic<bool> m_opening{false}, m_everOpened{false};
    ssl_st* m_ssl = nullptr;
    std::shared_ptr<void> m_context; // the SSL_CTX the session came from
    std::string m_peer;
    std::string m_serverName; // the name a TLS session verified
    Millis m_timeout{0};
};

// "host:port", an IPv6 host in brackets ("[::1]:6379"): how a TCP peer is named and compared.
std::string endpointText(const std::string& host, int port);

// Why a TLS handshake or session failed, in words, with the setting to change (empty if the cause
// may pass: a reset, a timeout). From the thread's OpenSSL error queue and the verify result.
struct TlsFailure {
    std::string why;
    std::string field;
};
TlsFailure describeTlsFailure(ssl_st* ssl, int sslError, const std::string& serverName);

} // namespace idem
