#pragma once

// What the gateway tests share (tst_gateway*.cpp): an upstream HTTP server of their own on real
// sockets, raw TCP/TLS clients, and a gateway started on the fixture's Redis (in the test, or the
// idem-gateway binary).
#include "idem/gateway/gateway.h"
#include "idem/gateway/httprequest.h"
#include "idem/gateway/httpresponse.h"
#include "testsupport.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QPointer>
#include <QProcess>
#include <QRegularExpression>
#include <QSslSocket>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTimer>
#include <QtTest>

#include <sys/socket.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>

namespace gwtest {

using namespace idem;
using namespace Qt::StringLiterals;

// ---- the upstream: a tiny HTTP server on this thread ------------------------------------------
// Paths: /slow/<ms>/... answers after <ms> (/slowfirst/<ms>/...: the first call only); a path
// with a /failfirst segment answers its first call 503; /status/<code>/... answers <code>;
// /reset/... closes the connection without an answer; /raw/<name>/... answers as raw() says (an
// answer cut by a reset, two lengths, stray bytes after a 204, a second answer unasked, a header that is
// not UTF-8); /echo/... answers the request body as it came; /big/<n>/... answers n bytes; anything else
// 201 with JSON naming the path, the call number and the fence it got. Every answer carries Set-Cookie,
// an ETag and a Location.
class TestUpstream : public QObject {
public:
    TestUpstream()
    {
        m_server.setListenBacklogSize(256); // (Qt's 50 would hold back a gateway's 64 connections)
        QVERIFY(m_server.listen(QHostAddress::LocalHost, 0));
        connect(&m_server, &QTcpServer::newConnection, this, [this] {
            while (QTcpSocket* s = m_server.nextPendingConnection()) {
                s->setParent(this);
                ++m_open;
                ++m_accepted;
                connect(s, &QTcpSocket::disconnected, this, [this] { --m_open; });
                auto parser = std::make_shared<http::RequestParser>(http::Limits{1 << 16, 1 << 20, 1000, 64 << 20});
                connect(s, &QTcpSocket::readyRead, this, [this, s, parser] {
                    const QByteArray b = s->readAll();
                    parser->feed(std::string_view(b.constData(), static_cast<std::size_t>(b.size())));
                    while (auto r = parser->take())
                        handle(s, std::move(*r));
                });
                connect(s, &QTcpSocket::disconnected, s, &QObject::deleteLater);
            }
        });
    }
    quint16 port() const { return m_server.serverPort(); }
    QUrl url() const { return QUrl(u"http://127.0.0.1:%1"_s.arg(port())); }
    int calls(const std::string& path) const { return m_calls.count(path) ? m_calls.at(path) : 0; }
    const http::Request& last(const std::string& path) const { return m_last.at(path); }
    int openConnections() const { return m_open; }
    int acceptedConnections() const { return m_accepted; }

private:
    void handle(QTcpSocket* s, http::Request r)
    {
        const int n = ++m_calls[r.path];
        m_last[r.path] = r;
        const QStringList parts = QString::fromStdString(r.path).split(u'/', Qt::SkipEmptyParts);
        http::Response resp;
        resp.status = 201;
        resp.headers = {{"Set-Cookie", "session=s" + std::to_string(n)}, {"ETag", "\"e" + std::to_string(n) + "\""},
                        {"Location", "/made/" + std::to_string(n)}, {"X-Upstream", "yes"}};
        int delay = 0;
        if (!parts.isEmpty() && parts[0] == u"reset"_s) {
            s->abort();
            return;
        }
        if (parts.size() > 1 && parts[0] == u"raw"_s)
            return raw(s, parts[1]);
        if (parts.size() > 1 && (parts[0] == u"slow"_s || (parts[0] == u"slowfirst"_s && n == 1)))
            delay = parts[1].toInt();
        if (s->property("answerLate").toBool()) // after /raw/204-with-body: its stray bytes come first
            delay = 400;
        if (parts.size() > 1 && parts[0] == u"status"_s)
            resp.status = parts[1].toInt();
        if (parts.contains(u"failfirst"_s) && n == 1)
            resp.status = 503;
        if (parts.size() > 1 && parts[0] == u"big"_s) {
            resp.set("Content-Type", "application/octet-stream");
            resp.body.assign(static_cast<std::size_t>(parts[1].toInt()), 'x');
        } else if (!parts.isEmpty() && parts[0] == u"echo"_s) {
            resp.set("Content-Type", "application/octet-stream");
            resp.body = r.body;
        } else {
            const std::string* fence = r.header("Idempotency-Fence");
            resp.set("Content-Type", "application/json");
            resp.body = "{\"path\":\"" + r.path + "\",\"call\":" + std::to_string(n) + ",\"fence\":\"" +
                        (fence ? *fence : std::string()) + "\",\"bytes\":" + std::to_string(r.body.size()) + "}";
        }
        const std::string bytes = http::serialize(resp, r.method == "HEAD", r.keepAlive, "Mon, 01 Jan 2024 00:00:00 GMT");
        QPointer<QTcpSocket> guard(s);
        QTimer::singleShot(delay, this, [guard, bytes] {
            if (guard)
                guard->write(bytes.data(), static_cast<qint64>(bytes.size()));
        });
    }

    // /raw/<name>: answers an upstream should not give, byte for byte
    void raw(QTcpSocket* s, const QString& name)
    {
        const auto send = [s](const QByteArray& b) {
            s->write(b);
            s->flush();
        };
        if (name == u"close-fin"_s || name == u"close-reset"_s) { // a body that ends when the connection does
            send("HTTP/1.1 201 Created\r\nContent-Type: text/plain\r\n\r\nbody up to the close");
            if (name == u"close-reset"_s) { // ... cut by a reset: the answer may be incomplete
                const linger l{1, 0};
                ::setsockopt(static_cast<int>(s->socketDescriptor()), SOL_SOCKET, SO_LINGER, &l, sizeof l);
                s->abort();
            } else {
                s->disconnectFromHost();
            }
        } else if (name == u"two-lengths"_s) {
            send("HTTP/1.1 201 Created\r\nContent-Length: 3\r\nContent-Length: 5\r\n\r\nhello");
        } else if (name == u"gzip-chunked"_s) {
            send("HTTP/1.1 201 Created\r\nTransfer-Encoding: gzip, chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n");
        } else if (name == u"replayed"_s) {
            send("HTTP/1.1 201 Created\r\nIdempotent-Replayed: true\r\nContent-Length: 2\r\n\r\nok");
        } else if (name == u"latin1"_s) { // a header value that is not UTF-8 (0xE9: 'é' in Latin-1)
            send("HTTP/1.1 201 Created\r\nContent-Disposition: attachment; filename=\"caf\xe9.txt\"\r\n"
                 "Content-Length: 2\r\n\r\nok");
        } else if (name == u"twice"_s) { // a second answer, unasked, at the next request's first byte
            send("HTTP/1.1 201 Created\r\nContent-Length: 5\r\n\r\nfirst");
            disconnect(s, &QTcpSocket::readyRead, this, nullptr);
            s->setReadBufferSize(1); // nothing more is read: a large request cannot be written whole
            // (and the kernel holds little of it: its receive buffer would grow to tcp_rmem's 32 MiB)
            s->setSocketOption(QAbstractSocket::ReceiveBufferSizeSocketOption, 16384);
            connect(s, &QTcpSocket::readyRead, s, [s] {
                if (!s->property("strayed").toBool())
                    s->write("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nEVIL");
                s->setProperty("strayed", true);
            });
        } else if (name == u"204-with-body"_s) { // the body a 204 cannot have, sent late
            send("HTTP/1.1 204 No Content\r\nContent-Length: 28\r\n\r\n");
            s->setProperty("answerLate", true);
            QTimer::singleShot(200, s, [s] { s->write("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nEVIL"); });
        }
    }

    QTcpServer m_server;
    std::map<std::string, int> m_calls;
    std::map<std::string, http::Request> m_last;
    int m_open = 0, m_accepted = 0;
};

// ---- clients: raw TCP (or TLS), so that they can pipeline, trickle, disconnect -----------------
struct Reply {
    int status = 0;
    QByteArray statusLine; // "HTTP/1.1 201 Created"
    QList<QPair<QByteArray, QByteArray>> headers;
    QByteArray body;
    QByteArray header(const QByteArray& name) const
    {
        for (const auto& [n, v] : headers)
            if (n.compare(name, Qt::CaseInsensitive) == 0)
                return v;
        return {};
    }
    bool has(const QByteArray& name) const
    {
        return std::any_of(headers.begin(), headers.end(),
                           [&](const auto& h) { return h.first.compare(name, Qt::CaseInsensitive) == 0; });
    }
    bool replayed() const { return header("Idempotent-Replayed") == "true"; }
    QJsonObject json() const { return QJsonDocument::fromJson(body).object(); }
};

class Client : public QObject {
public:
    // tls: over TLS to "localhost", the server's certificate verified against the tests' CA; else
    // plain TCP to `host`
    explicit Client(quint16 port, bool tls = false, const QHostAddress& host = QHostAddress(QHostAddress::LocalHost))
    {
        connect(&m_socket, &QTcpSocket::readyRead, this, [this] {
            m_buf += m_socket.readAll();
            parse();
        });
        connect(&m_socket, &QTcpSocket::disconnected, this, [this] { closed = true; });
        if (tls) {
            QSslConfiguration c = QSslConfiguration::defaultConfiguration();
            c.setCaCertificates(QSslCertificate::fromPath(QString::fromStdString(idemtest::TestCerts::get().path("ca.pem"))));
            m_socket.setSslConfiguration(c);
            m_socket.connectToHostEncrypted(u"localhost"_s, port);
            // the gateway is on this thread: wait with the event loop running, not waitForEncrypted()
            bool failed = false;
            connect(&m_socket, &QAbstractSocket::errorOccurred, this, [&failed] { failed = true; });
            encrypted = QTest::qWaitFor([&] { return m_socket.isEncrypted() || failed; }, 10000) && !failed;
            m_socket.disconnect(this);
            connect(&m_socket, &QTcpSocket::readyRead, this, [this] {
                m_buf += m_socket.readAll();
                parse();
            });
            connect(&m_socket, &QTcpSocket::disconnected, this, [this] { closed = true; });
        } else {
            m_socket.connectToHost(host, port);
            m_socket.waitForConnected(5000);
        }
    }
    bool encrypted = false;
    QString error() const { return m_socket.errorString(); }
    void send(const QByteArray& b) { m_socket.write(b); }
    bool wait(std::size_t n, int ms = 15000)
    {
        return QTest::qWaitFor([&] { return replies.size() >= n; }, ms);
    }
    void close() { m_socket.abort(); }

    std::vector<Reply> replies;
    int interim = 0; // 1xx answers
    bool closed = false;

private:
    void parse()
    {
        for (;;) {
            const qsizetype end = m_buf.indexOf("\r\n\r\n");
            if (end < 0)
                return;
            const QList<QByteArray> lines = m_buf.left(end).split('\n');
            Reply r;
            r.status = lines[0].split(' ').value(1).toInt();
            r.statusLine = lines[0].trimmed();
            qsizetype length = 0;
            for (qsizetype i = 1; i < lines.size(); ++i) {
                const qsizetype colon = lines[i].indexOf(':');
                const QByteArray name = lines[i].left(colon).trimmed(), value = lines[i].mid(colon + 1).trimmed();
                r.headers.append({name, value});
                if (name.compare("Content-Length", Qt::CaseInsensitive) == 0)
                    length = value.toLongLong();
            }
            if (r.status >= 100 && r.status < 200) {
                ++interim;
                m_buf.remove(0, end + 4);
                continue;
            }
            if (m_buf.size() < end + 4 + length)
                return;
            r.body = m_buf.mid(end + 4, length);
            m_buf.remove(0, end + 4 + length);
            replies.push_back(std::move(r));
        }
    }

    QSslSocket m_socket; // plain TCP unless asked for TLS
    QByteArray m_buf;
};

inline QByteArray request(const QByteArray& method, const QByteArray& path, const QByteArray& key = {},
                   const QByteArray& body = {}, const QList<QByteArray>& extra = {})
{
    QByteArray r = method + ' ' + path + " HTTP/1.1\r\nHost: gateway.test\r\n";
    if (!key.isNull())
        r += "Idempotency-Key: " + key + "\r\n";
    for (const auto& h : extra)
        r += h + "\r\n";
    if (!body.isNull() || method == "POST")
        r += "Content-Length: " + QByteArray::number(body.size()) + "\r\n";
    return r + "\r\n" + body;
}

inline Reply call(quint16 port, const QByteArray& bytes, int ms = 15000)
{
    Client c(port);
    c.send(bytes);
    if (!c.wait(1, ms))
        return {};
    return c.replies.front();
}

inline QByteArray metricsOf(quint16 adminPort) { return call(adminPort, request("GET", "/metrics")).body; }

inline std::uint64_t outcome(const gateway::Gateway& g, gateway::Outcome o) { return g.metrics().of(o); }


// A gateway on a free port in front of `up`, on the fixture's Redis (or `redis`) in a namespace of
// its own; null (with a warning) if it did not start
inline std::unique_ptr<gateway::Gateway> startGateway(const TestUpstream& up,
                                                      const std::function<void(gateway::GatewayOptions&)>& tweak = {},
                                                      std::optional<ConnectionOptions> redis = {})
{
    gateway::GatewayOptions o;
    o.upstream = up.url();
    o.listenPort = 0;
    o.admin = true;
    o.adminPort = 0;
    o.connection = idemtest::quick(redis ? *redis : idemtest::sharedRedis());
    o.keyNamespace = idemtest::uniqueNamespace("gw");
    o.upstreamTimeout = Millis(10'000);
    if (tweak)
        tweak(o);
    auto g = std::make_unique<gateway::Gateway>(o);
    QString error;
    if (!g->start(&error)) {
        qWarning("%s", qPrintable(error));
        return nullptr;
    }
    return g;
}

// The idem-gateway binary (ctest's IDEM_GATEWAY) in front of `up`, with `args` after --upstream
// and --listen 127.0.0.1:0
inline void startGatewayBinary(QProcess& p, const TestUpstream& up, const QStringList& args)
{
    const QString binary = qEnvironmentVariable("IDEM_GATEWAY");
    QVERIFY2(!binary.isEmpty(), "IDEM_GATEWAY is not set: run the tests through ctest");
    p.start(binary, QStringList{u"--upstream"_s, up.url().toString(), u"--listen"_s, u"127.0.0.1:0"_s} + args);
    QVERIFY(p.waitForStarted());
}

// Its listening port, from stdout (0: it never said)
inline quint16 gatewayBinaryPort(QProcess& p)
{
    QByteArray out;
    quint16 port = 0;
    (void)QTest::qWaitFor( // the port says whether it did
        [&] {
            out += p.readAllStandardOutput();
            const auto m = QRegularExpression(u"listening: http://127.0.0.1:(\\d+)"_s).match(QString::fromUtf8(out));
            port = m.hasMatch() ? static_cast<quint16>(m.captured(1).toUInt()) : 0;
            return port != 0 || p.state() == QProcess::NotRunning;
        },
        10000);
    return port;
}

// What each gateway suite holds: an upstream (made anew by its init()), and gateways in front of it
class GatewaySuite : public QObject {
protected:
    std::unique_ptr<TestUpstream> up;

    std::unique_ptr<gateway::Gateway> start(const std::function<void(gateway::GatewayOptions&)>& tweak = {},
                                            std::optional<ConnectionOptions> redis = {})
    {
        return startGateway(*up, tweak, std::move(redis));
    }
};

} // namespace gwtest
