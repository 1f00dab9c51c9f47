#include "httpdemo.h"

#include "idem/errors.h"
#include "idem/gateway/gateway.h"
#include "idem/gateway/httpserver.h"

#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QNetworkRequest>
#include <QTimer>
#include <QUuid>

using namespace Qt::StringLiterals;

namespace idem::gateway {

namespace {

// What the demo's upstream answers, by path.
http::Response answer(const http::Request& r, int order)
{
    http::Response out;
    if (r.path == "/orders") {
        out.status = 201;
        out.set("Content-Type", "application/json");
        out.set("Location", "/orders/" + std::to_string(order));
        out.set("Set-Cookie", "session=demo"); // the gateway never stores it
        out.body = R"({"id":)" + std::to_string(order) + R"(,"status":"created","request":)" +
                   (r.body.empty() ? std::string("null") : r.body) + "}";
    } else if (r.path == "/payments") {
        out.status = 402;
        out.set("Content-Type", "application/problem+json");
        out.body = R"({"type":"https://example.com/problems/card-declined","title":"Card declined","status":402})";
    } else if (r.path == "/refunds") {
        out.status = 500; // a 5xx releases the key: the next try runs again
        out.set("Content-Type", "text/plain; charset=utf-8");
        out.body = "ledger unavailable\n";
    } else if (r.path == "/receipts") {
        out.status = 201;
        out.set("Content-Type", "text/plain; charset=utf-8");
        out.body = "Receipt " + std::to_string(order) + "\n  2 × widget     19.90 €\n  1 × gadget      5.00 €\n  total          24.90 €\n";
    } else if (r.path == "/labels") {
        out.status = 201;
        out.set("Content-Type", "image/png");
        out.body = std::string("\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR\0\0\0\x40\0\0\0\x20\x08\x02\0\0\0", 29);
        for (int i = 0; i < 64; ++i)
            out.body.push_back(static_cast<char>((order * 31 + i * 7) & 0xFF));
    } else {
        out.status = 404;
        out.set("Content-Type", "text/plain");
        out.body = "no such route\n";
    }
    return out;
}

} // namespace

HttpDemo::HttpDemo(Options options, QObject* parent) : QObject(parent), m_options(std::move(options)) {}

HttpDemo::~HttpDemo()
{
    // the client's replies and the upstream's pending answers call back into this object: they go
    // first, while its members still live (QObject would delete its children after them)
    delete m_timer;
    delete m_client;
    delete m_gateway;
    delete m_upstream;
}

bool HttpDemo::start(QString* error)
{
    auto* upstream = new http::HttpServer(
        {},
        [this](http::Request r, http::Responder out) {
            const int order = ++m_order;
            const http::Response resp = answer(r, order);
            // orders take a while: a duplicate sent meanwhile finds the key in flight (409)
            const int delay = r.path == "/orders" ? m_options.upstreamDelayMs : 20;
            QTimer::singleShot(delay, m_upstream, [out, resp] { out.send(resp); });
        },
        this);
    m_upstream = upstream;
    if (!upstream->listen(QHostAddress::LocalHost, 0)) {
        *error = u"demo upstream: "_s + upstream->errorString();
        return false;
    }
    GatewayOptions o;
    o.upstream = QUrl(u"http://127.0.0.1:%1"_s.arg(upstream->port()));
    o.listenPort = 0;
    o.urlGiven = true;
    o.connection = m_options.redis;
    o.keyNamespace = m_options.keyNamespace;
    o.retention = m_options.retention;
    o.lease = Millis(10'000);
    o.upstreamTimeout = Millis(10'000);
    try { // a Redis that cannot be reached is said, not thrown across the thread's event loop
        m_gateway = new Gateway(o, this);
    } catch (const Error& e) {
        *error = u"demo gateway: "_s + QString::fromUtf8(e.what());
        return false;
    }
    if (!m_gateway->start(error))
        return false;
    m_client = new QNetworkAccessManager(this);
    m_timer = new QTimer(this);
    connect(m_timer, &QTimer::timeout, this, &HttpDemo::step);
    m_timer->start(m_options.tickMs);
    step();
    return true;
}

quint16 HttpDemo::gatewayPort() const { return m_gateway ? m_gateway->port() : 0; }
quint16 HttpDemo::upstreamPort() const { return m_upstream ? static_cast<http::HttpServer*>(m_upstream)->port() : 0; }

void HttpDemo::step()
{
    // one round: an order (and its duplicate in flight), its retry, the key reused with another
    // body, a declined payment and its retry, a failing refund, a receipt, a label, and another
    // tenant using the same key string (kept apart: keys are scoped by credential)
    static const QByteArray run = QUuid::createUuid().toByteArray(QUuid::Id128).left(6);
    const int round = m_step / 9;
    const QByteArray order = "order-" + run + '-' + QByteArray::number(round);
    const QByteArray body = R"({"sku":"widget","qty":)" + QByteArray::number(round % 5 + 1) + "}";
    const QByteArray alice = "Bearer alice", bob = "Bearer bob";
    switch (m_step++ % 9) {
    case 0:
        post(u"/orders"_s, order, body, alice);
        post(u"/orders"_s, order, body, alice); // while the first is in flight: 409
        break;
    case 1: post(u"/orders"_s, order, body, alice); break;                      // replayed
    case 2: post(u"/orders"_s, order, R"({"sku":"widget","qty":99})", alice); break; // 422
    case 3:
    case 4: post(u"/payments"_s, "pay-" + run + '-' + QByteArray::number(round), body, alice); break; // 402, replayed
    case 5: post(u"/refunds"_s, "refund-" + run + '-' + QByteArray::number(round), body, bob); break;  // 500: released
    case 6: post(u"/receipts"_s, "receipt-" + run + '-' + QByteArray::number(round), body, bob); break;
    case 7: post(u"/labels"_s, "label-" + run + '-' + QByteArray::number(round), body, bob); break;
    case 8: post(u"/orders"_s, order, body, bob); break; // bob's own record for the same key string
    }
}

void HttpDemo::post(const QString& path, const QByteArray& key, const QByteArray& body, const QByteArray& tenant)
{
    QNetworkRequest req(QUrl(u"http://127.0.0.1:%1%2"_s.arg(m_gateway->port()).arg(path)));
    req.setHeader(QNetworkRequest::ContentTypeHeader, u"application/json"_s);
    req.setRawHeader("Idempotency-Key", '"' + key + '"');
    req.setRawHeader("Authorization", tenant);
    req.setTransferTimeout(15'000);
    QNetworkReply* reply = m_client->post(req, body);
    ++m_counts.sent;
    connect(reply, &QNetworkReply::finished, this, [this, reply] {
        reply->deleteLater();
        const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
        const bool replayed = reply->rawHeader("Idempotent-Replayed") == "true";
        if (replayed)
            ++m_counts.replayed;
        else if (status == 201)
            ++m_counts.created;
        else if (status == 409)
            ++m_counts.conflicts;
        else if (status == 422)
            ++m_counts.mismatches;
        else if (status >= 400 && status < 500)
            ++m_counts.clientErrors;
        else if (status >= 500)
            ++m_counts.serverErrors;
        else
            ++m_counts.other;
        Q_EMIT answered(status, replayed);
    });
}

HttpDemoThread::HttpDemoThread(HttpDemo::Options options) : m_demo(new HttpDemo(std::move(options)))
{
    m_thread.setObjectName(u"http-demo"_s);
    m_demo->moveToThread(&m_thread);
    m_thread.start();
}

HttpDemoThread::~HttpDemoThread()
{
    QMetaObject::invokeMethod(m_demo, [demo = m_demo] { delete demo; }, Qt::BlockingQueuedConnection);
    m_thread.quit();
    m_thread.wait();
}

bool HttpDemoThread::start(QString* error)
{
    bool ok = false;
    QMetaObject::invokeMethod(m_demo, [&] { ok = m_demo->start(error); }, Qt::BlockingQueuedConnection);
    return ok;
}

} // namespace idem::gateway
