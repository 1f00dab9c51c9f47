#pragma once

#include "idem/duration.h"
#include "idem/gateway/httpresponse.h"

#include <QObject>
#include <QUrl>

#include <functional>

class QNetworkAccessManager;

namespace idem::gateway {

struct UpstreamResult {
    enum class Kind { Answered, TimedOut, Failed } kind = Kind::Failed;
    http::Response response; // Answered: status, headers (hop-by-hop ones removed), body
    std::string error;       // TimedOut, Failed
    double seconds = 0;
};

// The client to the upstream: QNetworkAccessManager on the gateway's thread. It follows no
// redirect, keeps no cookie, caches nothing, decompresses nothing, and opens at most six
// connections to the upstream (Qt 6.4's limit per host: more requests wait in its queue).
class Upstream : public QObject {
    Q_OBJECT
public:
    Upstream(QUrl base, Millis timeout, std::size_t maxResponse, QObject* parent = nullptr);
    // Forwards the request (method, target, headers minus hop-by-hop ones, body) with `extra`
    // headers set; `done` runs on this object's thread, unless this object is gone.
    void forward(const http::Request& r, const QByteArray& clientAddress, const std::vector<http::Header>& extra,
                 std::function<void(UpstreamResult)> done);

private:
    QUrl m_base;
    Millis m_timeout;
    std::size_t m_maxResponse;
    QNetworkAccessManager* m_nam;
};

} // namespace idem::gateway
