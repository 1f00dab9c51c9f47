#include "idem/gateway/httpserver.h"

#include "httpconnection.h"

#include <QTcpServer>
#include <QTcpSocket>

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
    : QObject(parent), m_options(options), m_handler(std::move(handler)), m_server(new QTcpServer(this))
{
    connect(m_server, &QTcpServer::newConnection, this, &HttpServer::accept);
}

HttpServer::~HttpServer() = default;

bool HttpServer::listen(const QHostAddress& host, quint16 port) { return m_server->listen(host, port); }
quint16 HttpServer::port() const { return m_server->serverPort(); }
QString HttpServer::errorString() const { return m_server->errorString(); }

std::size_t HttpServer::connections() const
{
    return static_cast<std::size_t>(findChildren<HttpConnection*>(Qt::FindDirectChildrenOnly).size());
}

void HttpServer::accept()
{
    while (QTcpSocket* s = m_server->nextPendingConnection())
        new HttpConnection(s, this);
}

} // namespace idem::http
