#pragma once

#include "idem/duration.h"
#include "idem/gateway/httpresponse.h"

#include <QByteArray>
#include <QElapsedTimer>
#include <QObject>
#include <QTimer>
#include <QUrl>

#include <deque>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

class QTcpSocket;

namespace idem::gateway {

class UpstreamCall;

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
//
// What a request costs the event loop is kept small: a connection's signals are connected once,
// when it opens, not per request; one timer serves every request's timeout (they all have the
// same, so they end in the order they began) and one every idle connection's expiry.
class Upstream : public QObject {
    Q_OBJECT
public:
    Upstream(const QUrl& base, Millis timeout, std::size_t maxResponse, QObject* parent = nullptr);
    ~Upstream();
    // Forwards the request (method, target, headers minus hop-by-hop ones, body) with `extra`
    // headers set; `done` runs on this object's thread, unless this object is gone first.
    void forward(const http::Request& r, const QByteArray& clientAddress, const std::vector<http::Header>& extra,
                 std::function<void(UpstreamResult)> done);
    std::size_t idleConnections() const { return m_idle.size(); }

private:
    friend class UpstreamCall;
    struct Link { // a connection of the pool
        std::shared_ptr<UpstreamCall> call; // the request on it now; none while idle
        qint64 idleSince = 0;               // m_clock's ms, while idle
    };
    QTcpSocket* connection();
    void giveBack(QTcpSocket* s);
    void drop(QTcpSocket* s, bool gracefully = false); // (gracefully: after what is written)
    void onSocket(QTcpSocket* s, void (UpstreamCall::*what)());
    void expire(); // requests past their timeout, connections idle too long
    void armFor(qint64 at);

    QString m_host;
    quint16 m_port = 80;
    bool m_tls = false;
    QByteArray m_basePath; // without a trailing '/'
    QByteArray m_hostHeader;
    Millis m_timeout;
    std::size_t m_maxResponse;
    QElapsedTimer m_clock;
    std::unordered_map<QTcpSocket*, Link> m_links;
    std::vector<QTcpSocket*> m_idle; // the most recently used last
    std::deque<std::pair<qint64, std::weak_ptr<UpstreamCall>>> m_deadlines; // in the order they began
    QTimer m_timer; // the first deadline, or the next idle expiry
    qint64 m_armedFor = 0;
};

} // namespace idem::gateway
