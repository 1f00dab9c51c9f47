#include "upstream.h"

#include "idem/gateway/keyrules.h"
#include "idem/gateway/responseparser.h"

#include <QElapsedTimer>
#include <QSslSocket>
#include <QTimer>

#include <map>
#include <set>

using namespace Qt::StringLiterals;

namespace idem::gateway {

namespace {

constexpr int kIdleMs = 4000;          // an idle connection is closed after this (before the upstream does)
constexpr std::size_t kMaxIdle = 64;   // idle connections kept

// The idle timer of a pooled connection, found by its name: QAbstractSocket keeps a QTimer child
// of its own (its connect timeout), and taking that one for ours made Qt, when it fired, try to
// connect the connected socket again ("QNativeSocketEngine::connectToHost() was called not in
// ... UnconnectedState") and turn its write notifications off.
QTimer* idleTimer(QTcpSocket* s) { return s->findChild<QTimer*>(u"idem-upstream-idle"_s, Qt::FindDirectChildrenOnly); }

QByteArray bytes(std::string_view s) { return QByteArray(s.data(), static_cast<qsizetype>(s.size())); }

std::string lower(std::string_view s)
{
    std::string out(s);
    for (char& c : out)
        if (c >= 'A' && c <= 'Z')
            c = static_cast<char>(c - 'A' + 'a');
    return out;
}

// The headers a Connection header names belong to that hop too.
std::set<std::string> connectionTokens(const std::vector<http::Header>& headers)
{
    std::set<std::string> out;
    for (const auto& h : headers)
        if (http::equalsIgnoreCase(h.name, "Connection"))
            for (const QByteArray& t : bytes(h.value).split(','))
                out.insert(lower(t.trimmed().toStdString()));
    return out;
}

bool bodyExpected(std::string_view method)
{
    return method != "GET" && method != "HEAD" && method != "DELETE" && method != "OPTIONS" && method != "TRACE";
}

} // namespace

// One request on one connection, from writing it to the end of its answer.
class UpstreamCall : public QObject {
public:
    UpstreamCall(Upstream* up, QTcpSocket* s, bool head, std::function<void(UpstreamResult)> done)
        : QObject(up), m_up(up), m_socket(s), m_parser(head, up->m_maxResponse), m_done(std::move(done))
    {
        m_clock.start();
        connect(s, &QTcpSocket::readyRead, this, [this] { read(); });
        connect(s, &QTcpSocket::disconnected, this, [this] {
            m_parser.closed();
            end();
        });
        connect(s, &QTcpSocket::errorOccurred, this, [this](QAbstractSocket::SocketError e) {
            if (e == QAbstractSocket::RemoteHostClosedError)
                return; // disconnected() says whether the answer was complete
            if (!m_parser.done())
                fail(UpstreamResult::Kind::Failed, "the upstream cannot be reached: " + m_socket->errorString().toStdString());
        });
        m_timer.setSingleShot(true);
        connect(&m_timer, &QTimer::timeout, this, [this] {
            fail(UpstreamResult::Kind::TimedOut, "no answer from the upstream within " + formatDuration(m_up->m_timeout));
        });
        m_timer.start(static_cast<int>(up->m_timeout.count()));
    }

private:
    void read()
    {
        const QByteArray b = m_socket->readAll();
        m_parser.feed(std::string_view(b.constData(), static_cast<std::size_t>(b.size())));
        if (m_parser.done() || m_parser.failed())
            end();
    }

    void end()
    {
        if (m_parser.failed())
            return fail(UpstreamResult::Kind::Failed, m_parser.error());
        if (!m_parser.done())
            return;
        UpstreamResult out;
        out.kind = UpstreamResult::Kind::Answered;
        http::Response& r = m_parser.response();
        const auto hop = connectionTokens(r.headers);
        out.response.status = r.status;
        for (auto& h : r.headers) // Content-Length stays for a HEAD answer (serialize() writes its own otherwise)
            if ((!hopByHop(h.name) || http::equalsIgnoreCase(h.name, "Content-Length")) && !hop.count(lower(h.name)) &&
                !http::equalsIgnoreCase(h.name, "Date"))
                out.response.headers.push_back(std::move(h));
        out.response.body = std::move(r.body);
        finish(std::move(out), m_parser.keepAlive());
    }

    void fail(UpstreamResult::Kind kind, std::string why)
    {
        UpstreamResult out;
        out.kind = kind;
        out.error = std::move(why);
        finish(std::move(out), false);
    }

    void finish(UpstreamResult out, bool reuse)
    {
        if (m_finished)
            return;
        m_finished = true;
        m_timer.stop();
        out.seconds = static_cast<double>(m_clock.nsecsElapsed()) / 1e9;
        disconnect(m_socket, nullptr, this, nullptr);
        if (reuse && m_socket->state() == QAbstractSocket::ConnectedState && m_socket->bytesAvailable() == 0) {
            m_up->giveBack(m_socket);
        } else {
            m_socket->abort();
            m_socket->deleteLater();
        }
        auto done = std::move(m_done);
        deleteLater();
        done(std::move(out));
    }

    Upstream* m_up;
    QTcpSocket* m_socket;
    http::ResponseParser m_parser;
    std::function<void(UpstreamResult)> m_done;
    QElapsedTimer m_clock;
    QTimer m_timer;
    bool m_finished = false;
};

Upstream::Upstream(const QUrl& base, Millis timeout, std::size_t maxResponse, QObject* parent)
    : QObject(parent), m_host(base.host()), m_tls(base.scheme() == u"https"_s), m_timeout(timeout),
      m_maxResponse(maxResponse)
{
    m_port = static_cast<quint16>(base.port(m_tls ? 443 : 80));
    m_basePath = base.path(QUrl::FullyEncoded).toLatin1();
    while (m_basePath.endsWith('/'))
        m_basePath.chop(1);
    m_hostHeader = base.host(QUrl::FullyEncoded).toLatin1();
    if (m_hostHeader.contains(':'))
        m_hostHeader = '[' + m_hostHeader + ']';
    if (base.port() != -1)
        m_hostHeader += ':' + QByteArray::number(base.port());
}

QTcpSocket* Upstream::connection()
{
    while (!m_idle.empty()) {
        QPointer<QTcpSocket> s = m_idle.back();
        m_idle.pop_back();
        if (s && s->state() == QAbstractSocket::ConnectedState) {
            disconnect(s, nullptr, this, nullptr);
            if (QTimer* idle = idleTimer(s))
                idle->stop();
            return s;
        }
        if (s)
            s->deleteLater();
    }
    QTcpSocket* s = nullptr;
    if (m_tls) {
        auto* ssl = new QSslSocket(this);
        ssl->connectToHostEncrypted(m_host, m_port);
        s = ssl;
    } else {
        s = new QTcpSocket(this);
        s->connectToHost(m_host, m_port);
    }
    s->setSocketOption(QAbstractSocket::LowDelayOption, 1);
    return s;
}

void Upstream::giveBack(QTcpSocket* s)
{
    if (m_idle.size() >= kMaxIdle) {
        s->disconnectFromHost();
        s->deleteLater();
        return;
    }
    m_idle.emplace_back(s);
    // an idle connection that the upstream closes, or that talks out of turn, is dropped
    const auto drop = [this, s] {
        std::erase_if(m_idle, [s](const QPointer<QTcpSocket>& p) { return p == s || !p; });
        disconnect(s, nullptr, this, nullptr);
        s->abort();
        s->deleteLater();
    };
    connect(s, &QTcpSocket::disconnected, this, drop);
    connect(s, &QTcpSocket::readyRead, this, drop);
    QTimer* idle = idleTimer(s);
    if (!idle) {
        idle = new QTimer(s);
        idle->setObjectName(u"idem-upstream-idle"_s);
        idle->setSingleShot(true);
    }
    disconnect(idle, nullptr, this, nullptr);
    connect(idle, &QTimer::timeout, this, drop);
    idle->start(kIdleMs);
}

void Upstream::forward(const http::Request& r, const QByteArray& clientAddress, const std::vector<http::Header>& extra,
                       std::function<void(UpstreamResult)> done)
{
    QByteArray out = bytes(r.method) + ' ' + m_basePath + bytes(r.target) + " HTTP/1.1\r\nHost: " + m_hostHeader + "\r\n";
    // headers of one name go as one, comma-joined (Cookie with "; "), in the order they came
    const auto hop = connectionTokens(r.headers);
    std::vector<std::pair<std::string, QByteArray>> merged;
    std::map<std::string, std::size_t> at; // lower name -> index in merged
    const auto add = [&](const std::string& name, const QByteArray& value, bool replace) {
        const std::string key = lower(name);
        auto it = at.find(key);
        if (it == at.end()) {
            at[key] = merged.size();
            merged.emplace_back(name, value);
        } else if (replace) {
            merged[it->second].second = value;
        } else {
            merged[it->second].second += (key == "cookie" ? "; " : ", ") + value;
        }
    };
    for (const auto& h : r.headers)
        if (!hopByHop(h.name) && !hop.count(lower(h.name)))
            add(h.name, bytes(h.value), false);
    add("X-Forwarded-For", clientAddress, false);
    if (const std::string* host = r.header("Host"))
        add("X-Forwarded-Host", bytes(*host), true);
    for (const auto& h : extra)
        add(h.name, bytes(h.value), true);
    for (const auto& [name, value] : merged)
        out += bytes(name) + ": " + value + "\r\n";
    if (!r.body.empty() || bodyExpected(r.method))
        out += "Content-Length: " + QByteArray::number(static_cast<qsizetype>(r.body.size())) + "\r\n";
    out += "\r\n";
    out += bytes(r.body);

    QTcpSocket* s = connection();
    new UpstreamCall(this, s, r.method == "HEAD", std::move(done));
    s->write(out); // written once connected when the connection is new
}

} // namespace idem::gateway
