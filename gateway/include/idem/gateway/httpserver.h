#pragma once

#include "idem/duration.h"
#include "idem/gateway/httprequest.h"
#include "idem/gateway/httpresponse.h"

#include <QHostAddress>
#include <QObject>
#include <QPointer>
#include <QSslConfiguration>

#include <functional>
#include <optional>

class QTcpServer;

namespace idem::http {

class HttpConnection;

// Where the answer to one request goes. Copyable; answering a request whose client has gone does
// nothing (the connection is gone, the handle knows it), so a late upstream or Redis answer never
// writes to a dangling socket. Use it on the server's thread.
class Responder {
public:
    Responder() = default;
    Responder(HttpConnection* c, quint64 seq, QHostAddress peer);
    void send(Response r) const;
    bool connected() const;
    const QHostAddress& peer() const { return m_peer; }

private:
    QPointer<HttpConnection> m_conn;
    quint64 m_seq = 0;
    QHostAddress m_peer;
};

using Handler = std::function<void(Request, Responder)>;

struct ServerOptions {
    Limits limits;
    Millis idleTimeout{60'000};
    // a client that trickles its request: the head must be in this long after its first byte, the
    // body this long after the head (408 and the connection closed), whatever bytes keep coming
    Millis headerTimeout{10'000};
    Millis bodyTimeout{60'000};
    std::size_t maxConnections = 10'000; // accepting pauses while this many are open
    std::size_t maxPipelined = 64; // requests of one connection read and not answered; reading pauses beyond
    // of those, handed over at once (safe ones only; nginx takes one at a time): what a client that
    // never reads its answers makes the gateway hold is this many answers plus maxUnwritten
    std::size_t maxConcurrent = 8;
    // a connection's answers not yet taken by its client: beyond this, no further pipelined
    // request is handed over until the client reads (one that never reads holds no more)
    qint64 maxUnwritten = 2 << 20;
    std::optional<QSslConfiguration> tls; // HTTPS: a QSslServer that hands over connections once encrypted
    std::function<std::size_t(const Request& head)> bodyLimit; // per request (a route's), within limits.maxBody
};

// HTTP/1.1 on a QTcpServer (a QSslServer with `tls`): keep-alive, pipelined requests answered in the order they came,
// 100-continue, idle timeouts. Malformed requests are answered (problem+json) and the connection
// closed; `parseFailed` is told their status.
class HttpServer : public QObject {
    Q_OBJECT
public:
    HttpServer(ServerOptions options, Handler handler, QObject* parent = nullptr);
    ~HttpServer() override;
    bool listen(const QHostAddress& host, quint16 port);
    quint16 port() const;
    QString errorString() const;
    std::size_t connections() const { return m_open; }
    std::function<void(const ParseError&)> parseFailed;
    // Stops listening; idle connections close now, the others after the answer to the last
    // request they have sent (which says Connection: close). `closed` is told whenever a
    // connection goes.
    void drain();
    bool draining() const { return m_draining; }
    std::function<void()> closed;

private:
    void accept();
    void opened() { ++m_open; }
    void gone();
    friend class HttpConnection;
    ServerOptions m_options;
    Handler m_handler;
    QTcpServer* m_server;
    std::size_t m_open = 0;
    bool m_draining = false;
    bool m_paused = false; // at maxConnections
};

} // namespace idem::http
