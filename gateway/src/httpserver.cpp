#include "idem/gateway/httpserver.h"

#include "httpconnection.h"

#include <QLoggingCategory>
#include <QSslServer>
#include <QSslSocket>
#include <QTcpServer>
#include <QTcpSocket>

Q_LOGGING_CATEGORY(lcHttp, "idem.http")

namespace idem::http {

Responder::Responder(HttpConnection* c, quint64 seq, QHostAddress peer) : m_conn(c), m_seq(seq), m_peer(std::move(peer))
{
}

bool Responder::connected() const { return !m_conn.isNull(); }

void Responder::send(Response r) const
{
    if (m_conn)
        m_conn->respond(m_seq, std::move(r));
}

HttpServer::HttpServer(ServerOptions options, Handler handler, QObject* parent)
    : QObject(parent), m_options(std::move(options)), m_handler(std::move(handler))
{
    if (m_options.tls) {
        auto* tls = new QSslServer(this);
        tls->setSslConfiguration(*m_options.tls);
        // a failed handshake is the client's business; its socket goes (a handshake that never
        // ends is cut by the server's handshake timeout, 5 s)
        connect(tls, &QSslServer::errorOccurred, this, [](QSslSocket* s, QAbstractSocket::SocketError) {
            qCDebug(lcHttp) << "TLS handshake failed:" << s->errorString();
            if (!s->isEncrypted())
                s->deleteLater();
        });
        m_server = tls;
    } else {
        m_server = new QTcpServer(this);
    }
    // emitted once a connection is ready: at once over TCP, after the handshake over TLS
    connect(m_server, &QTcpServer::pendingConnectionAvailable, this, &HttpServer::accept);
}

HttpServer::~HttpServer()
{
    // the connections go first, while this is still a whole HttpServer they can tell
    closed = nullptr;
    for (HttpConnection* c : findChildren<HttpConnection*>(Qt::FindDirectChildrenOnly))
        delete c;
}

bool HttpServer::listen(const QHostAddress& host, quint16 port) { return m_server->listen(host, port); }
quint16 HttpServer::port() const { return m_server->serverPort(); }
QString HttpServer::errorString() const { return m_server->errorString(); }

// At --max-connections, accepting pauses: new clients wait in the kernel's listen queue (each a
// descriptor and a connection's memory otherwise), and go on when one of the open ones closes.
void HttpServer::accept()
{
    while (m_open < m_options.maxConnections) {
        QTcpSocket* s = m_server->nextPendingConnection();
        if (!s)
            break;
        auto* c = new HttpConnection(s, this);
        if (m_draining) // a TLS handshake that ended after the listener closed
            c->drain();
    }
    if (m_open >= m_options.maxConnections && !m_paused) {
        m_paused = true;
        m_server->pauseAccepting();
        qCWarning(lcHttp) << "at" << m_open << "client connections (--max-connections): new ones wait";
    }
}

void HttpServer::drain()
{
    m_draining = true;
    m_server->close();
    for (HttpConnection* c : findChildren<HttpConnection*>(Qt::FindDirectChildrenOnly))
        c->drain();
}

void HttpServer::gone()
{
    --m_open;
    if (m_paused && m_open < m_options.maxConnections) {
        m_paused = false;
        if (m_server->isListening())
            m_server->resumeAccepting();
        if (m_server->hasPendingConnections()) // (taken while paused, TLS handshakes that ended)
            QMetaObject::invokeMethod(this, &HttpServer::accept, Qt::QueuedConnection);
    }
    if (closed)
        closed();
}

} // namespace idem::http
