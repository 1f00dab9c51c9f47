#pragma once

#include "idem/redis/options.h"

#include <QObject>
#include <QThread>

#include <memory>
#include <string>

class QNetworkAccessManager;
class QTimer;

namespace idem::gateway {

class Gateway;

// HTTP traffic for the console's demo: a small upstream (orders that take a while, a payment the
// card declines, refunds that fail with 500, a receipt as text, a label as PNG bytes), an
// idem-gateway in front of it, both on 127.0.0.1 ephemeral ports, and a client that sends POSTs
// with Idempotency-Keys through the gateway: new keys, retries of finished ones (replays),
// duplicates while the first is in flight (409), a key reused with another body (422). The
// records land in `keyNamespace` of `redis` like any of the gateway's. Lab code: the console
// starts it only on its own embedded server, never where an operator watches.
// Lives on one thread with an event loop (HttpDemoThread gives it one).
class HttpDemo : public QObject {
    Q_OBJECT
public:
    struct Options {
        ConnectionOptions redis;
        std::string keyNamespace = "idempotency";
        int tickMs = 900;              // one scenario step each tick
        int upstreamDelayMs = 700;     // how long an order takes (a duplicate sent meanwhile gets 409)
        Millis retention{10 * 60'000}; // as DemoTraffic's records: the store stays small
    };
    struct Counts {
        int sent = 0, created = 0, replayed = 0, conflicts = 0, mismatches = 0, clientErrors = 0,
            serverErrors = 0, other = 0;
    };

    explicit HttpDemo(Options options, QObject* parent = nullptr);
    ~HttpDemo() override;

    // Listens (upstream, then gateway) and starts the client. False with `error` set if not.
    bool start(QString* error);
    quint16 gatewayPort() const;
    quint16 upstreamPort() const;
    Counts counts() const { return m_counts; }

Q_SIGNALS:
    // one answer the client got: its status, and whether the gateway replayed it
    void answered(int status, bool replayed);

private:
    void step();
    void post(const QString& path, const QByteArray& key, const QByteArray& body, const QByteArray& tenant);

    Options m_options;
    Counts m_counts;
    QObject* m_upstream = nullptr; // an http::HttpServer
    Gateway* m_gateway = nullptr;
    QNetworkAccessManager* m_client = nullptr;
    QTimer* m_timer = nullptr;
    int m_step = 0;
    int m_order = 0;
};

// An HttpDemo on a thread of its own, so that its gateway (and its Redis calls) never run on the
// console's GUI thread. Stops and joins in the destructor.
class HttpDemoThread {
public:
    explicit HttpDemoThread(HttpDemo::Options options);
    ~HttpDemoThread();
    HttpDemoThread(const HttpDemoThread&) = delete;
    HttpDemoThread& operator=(const HttpDemoThread&) = delete;
    // Starts it; false with `error` set when it could not listen.
    bool start(QString* error);

private:
    QThread m_thread;
    HttpDemo* m_demo = nullptr;
};

} // namespace idem::gateway
