#pragma once

#include "idem/duration.h"
#include "idem/gateway/httpresponse.h"

#include <QByteArray>
#include <QObject>
#include <QPointer>
#include <QUrl>

#include <functional>
#include <vector>

class QTcpSocket;

namespace idem::gateway {

struct UpstreamResult {
    enum class Kind { Answered, TimedOut, Failed } kind = Kind::Failed;
    http::Response response; // Answered: status, headers (hop-by-hop ones removed), body
    std::string error;       // TimedOut, Failed
    double seconds = 0;
};

// The client to the upstream: HTTP/1.1 over a pool of keep-alive connections (as many as there
// are requests in flight; idle ones kept a few seconds), on the gateway's thread. It never sends
// a request twice: a connection that closes before the answer fails that request (the key is then
// released and the client's retry runs it), where QNetworkAccessManager would silently resend a
// POST. It follows no redirect and keeps no cookie.
class Upstream : public QObject {
    Q_OBJECT
public:
    Upstream(const QUrl& base, Millis timeout, std::size_t maxResponse, QObject* parent = nullptr);
    // Forwards the request (method, target, headers minus hop-by-hop ones, body) with `extra`
    // headers set; `done` runs on this object's thread, unless this object is gone first.
    void forward(const http::Request& r, const QByteArray& clientAddress, const std::vector<http::Header>& extra,
                 std::function<void(UpstreamResult)> done);
    std::size_t idleConnections() const { return m_idle.size(); }

private:
    friend class UpstreamCall;
    QTcpSocket* connection();
    void giveBack(QTcpSocket* s);

    QString m_host;
    quint16 m_port = 80;
    bool m_tls = false;
    QByteArray m_basePath; // without a trailing '/'
    QByteArray m_hostHeader;
    Millis m_timeout;
    std::size_t m_maxResponse;
    std::vector<QPointer<QTcpSocket>> m_idle;
};

} // namespace idem::gateway
