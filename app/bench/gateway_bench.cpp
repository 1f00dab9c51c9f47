// idem-gateway-bench: requests per second and latency through idem-gateway against the same
// upstream straight, measured in one run.
//
// It starts its own private redis-server, its own upstream (a tiny HTTP server on a thread of this
// process that answers every request 201 with a fixed JSON body) and the idem-gateway binary next
// to this one (a process of its own, as it runs in production). The load is closed-loop: C
// keep-alive connections, each sending its next POST when the last answer is in, with
// Idempotency-Key:
//   direct      straight to the upstream (the reference);
//   fresh       through the gateway, a new key each request (acquire + upstream + complete);
//   duplicates  through the gateway, the keys of "fresh" again (every request a replay).
// Printed: requests/s, p50 and p99 per case, and the ratios against "direct" at the same C.
// With --nginx it runs wrk against nginx instead (gateway_nginx.cpp): #16's goals.
#include "gateway_nginx.h"
#include "idem/errors.h"
#include "idem/gateway/httprequest.h"
#include "idem/gateway/httpresponse.h"
#include "idem/gateway/responseparser.h"
#include "idem/redis/localserver.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QProcess>
#include <QTcpServer>
#include <QTcpSocket>
#include <QThread>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

using namespace Qt::StringLiterals;
using namespace idem;

namespace {

// The upstream: 201 and a fixed body for every request, keep-alive.
class Upstream : public QObject {
  public:
    Upstream()
        : m_server(this) // a child: it moves to the upstream's thread with this
    {
        QObject::connect(&m_server, &QTcpServer::newConnection, this, [this] {
            while (QTcpSocket* s = m_server.nextPendingConnection()) {
                s->setParent(this);
                s->setSocketOption(QAbstractSocket::LowDelayOption, 1);
                auto parser = std::make_shared<http::RequestParser>();
                QObject::connect(s, &QTcpSocket::readyRead, s, [s, parser] {
                    const QByteArray b = s->readAll();
                    parser->feed(
                        std::string_view(b.constData(), static_cast<std::size_t>(b.size())));
                    while (auto r = parser->take()) {
                        http::Response resp;
                        resp.status = 201;
                        resp.set("Content-Type", "application/json");
                        resp.set("Location", "/orders/1");
                        resp.body = R"({"id":1,"status":"created","amount":10})";
                        const std::string out = http::serialize(resp, false, r->keepAlive,
                                                                "Mon, 01 Jan 2024 00:00:00 GMT");
                        s->write(out.data(), static_cast<qint64>(out.size()));
                    }
                });
                QObject::connect(s, &QTcpSocket::disconnected, s, &QObject::deleteLater);
            }
        });
    }
    bool listen() { return m_server.listen(QHostAddress::LocalHost, 0); }
    quint16 port() const { return m_server.serverPort(); }

  private:
    QTcpServer m_server;
};

struct Result {
    double rps = 0;
    double p50 = 0, p99 = 0; // ms
    int errors = 0;          // answers other than 201
    int replayed = 0;
};

// C connections, closed loop, `total` requests; request i carries key `prefix`-i.
Result load(quint16 port, int connections, int total, const std::string& prefix) {
    struct Conn {
        QTcpSocket socket;
        std::unique_ptr<http::ResponseParser> parser;
        qint64 sentNs = 0;
    };
    std::vector<std::unique_ptr<Conn>> conns;
    std::vector<double> latencies;
    latencies.reserve(static_cast<std::size_t>(total));
    int next = 0, done = 0;
    Result res;
    QElapsedTimer clock;
    QEventLoop loop;
    const auto send = [&](Conn& c) {
        if (next >= total)
            return;
        const std::string body = R"({"amount":10})";
        const std::string req =
            "POST /orders HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
            "Idempotency-Key: \"" +
            prefix + "-" + std::to_string(next++) +
            "\"\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
        c.parser = std::make_unique<http::ResponseParser>(false, 1 << 20);
        c.sentNs = clock.nsecsElapsed();
        c.socket.write(req.data(), static_cast<qint64>(req.size()));
    };
    clock.start();
    for (int i = 0; i < connections; ++i) {
        auto c = std::make_unique<Conn>();
        Conn* raw = c.get();
        c->socket.setSocketOption(QAbstractSocket::LowDelayOption, 1);
        QObject::connect(&c->socket, &QTcpSocket::readyRead, &loop, [&, raw] {
            const QByteArray b = raw->socket.readAll();
            raw->parser->feed(std::string_view(b.constData(), static_cast<std::size_t>(b.size())));
            if (!raw->parser->done())
                return;
            latencies.push_back(static_cast<double>(clock.nsecsElapsed() - raw->sentNs) / 1e6);
            const http::Response& r = raw->parser->response();
            if (r.status != 201)
                ++res.errors;
            if (const std::string* h = r.header("Idempotent-Replayed"); h && *h == "true")
                ++res.replayed;
            if (++done == total)
                return loop.quit();
            send(*raw);
        });
        QObject::connect(&c->socket, &QTcpSocket::disconnected, &loop, [&] {
            std::fprintf(stderr, "idem-gateway-bench: a connection closed\n");
            loop.quit();
        });
        c->socket.connectToHost(QHostAddress::LocalHost, port);
        c->socket.waitForConnected(5000);
        conns.push_back(std::move(c));
    }
    clock.restart();
    for (auto& c : conns)
        send(*c);
    loop.exec();
    const double seconds = static_cast<double>(clock.nsecsElapsed()) / 1e9;
    res.rps = done / seconds;
    std::sort(latencies.begin(), latencies.end());
    if (!latencies.empty()) {
        res.p50 = latencies[latencies.size() / 2];
        res.p99 = latencies[std::min(latencies.size() - 1, latencies.size() * 99 / 100)];
    }
    return res;
}

void row(const char* what, int c, const Result& r, const Result* ref) {
    std::printf("%-11s c=%-3d %9.0f req/s  p50 %6.2f ms  p99 %6.2f ms", what, c, r.rps, r.p50,
                r.p99);
    if (ref)
        std::printf("   ratio %.2f  p99 +%.2f ms", r.rps / ref->rps, r.p99 - ref->p99);
    if (r.errors)
        std::printf("   (%d answers not 201)", r.errors);
    std::printf("\n");
}

} // namespace

int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    int requests = 20000;
    std::vector<int> concurrency = {16, 64};
    const QStringList args = QCoreApplication::arguments();
    if (args.size() == 3 && args[1] == u"--qt-relay"_s) // the reference row of --nginx (a child of it)
        return qtRelay(static_cast<quint16>(args[2].toUInt()));
    if (args.contains(u"--nginx"_s))
        return nginxBench(args);
    for (qsizetype i = 1; i < args.size(); ++i) {
        if (args[i] == u"--requests"_s && i + 1 < args.size())
            requests = args[++i].toInt();
        else if (args[i] == u"--connections"_s && i + 1 < args.size()) {
            concurrency.clear();
            for (const QString& c : args[++i].split(u','))
                concurrency.push_back(c.toInt());
        } else {
            std::fprintf(stderr,
                         "usage: idem-gateway-bench [--requests N] [--connections 16,64]\n"
                         "       idem-gateway-bench --nginx [--seconds 5] [--connections 16,64]\n");
            return 64;
        }
    }

    std::unique_ptr<LocalServer> redis;
    try {
        redis = std::make_unique<LocalServer>();
    } catch (const Error& e) {
        std::fprintf(stderr, "idem-gateway-bench: cannot start redis-server: %s\n", e.what());
        return 69;
    }
    // the upstream on a thread of its own, so that it does not share the client's event loop
    QThread upstreamThread;
    upstreamThread.setObjectName(u"upstream"_s);
    auto* upstream = new Upstream;
    upstream->moveToThread(&upstreamThread);
    upstreamThread.start();
    bool listening = false;
    QMetaObject::invokeMethod(
        upstream, [&] { listening = upstream->listen(); }, Qt::BlockingQueuedConnection);
    if (!listening)
        return 69;
    const quint16 upstreamPort = upstream->port();

    QProcess gateway;
    const quint16 gatewayPort = startGateway(gateway, upstreamPort, redis->url(), u"bench"_s);
    if (gatewayPort == 0)
        return 69;
    std::printf("idem-gateway-bench: %d requests per case, POST with Idempotency-Key, closed loop; "
                "redis-server %s\n",
                requests, redis->url().c_str());
    int run = 0;
    for (const int c : concurrency) {
        const std::string tag = "r" + std::to_string(++run);
        load(upstreamPort, c, requests / 10, tag + "-warm-direct");
        load(gatewayPort, c, requests / 10, tag + "-warm");
        const Result direct = load(upstreamPort, c, requests, tag + "-direct");
        const Result fresh = load(gatewayPort, c, requests, tag);
        const Result dup = load(gatewayPort, c, requests, tag);
        row("direct", c, direct, nullptr);
        row("fresh", c, fresh, &direct);
        row("duplicates", c, dup, &direct);
        if (dup.replayed != requests)
            std::printf("  (only %d of %d duplicates were replays)\n", dup.replayed, requests);
        std::fflush(stdout);
    }
    gateway.terminate();
    gateway.waitForFinished(5000);
    upstreamThread.quit();
    upstreamThread.wait();
    delete upstream;
    return 0;
}
