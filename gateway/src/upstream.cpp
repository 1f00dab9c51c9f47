#include "upstream.h"

#include "idem/gateway/keyrules.h"
#include "idem/gateway/responseparser.h"

#include <QSslSocket>

#include <algorithm>
#include <set>
#include <utility>

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace Qt::StringLiterals;

namespace idem::gateway {

namespace {

constexpr int kIdleMs = 4000;          // an idle connection is closed after this (before the upstream does)
constexpr std::size_t kMaxIdle = 64;   // idle connections kept

QByteArray bytes(std::string_view s) { return QByteArray(s.data(), static_cast<qsizetype>(s.size())); }


// The headers a Connection header names belong to that hop too.
std::set<std::string> connectionTokens(const std::vector<http::Header>& headers)
{
    std::set<std::string> out;
    for (const auto& h : headers)
        if (http::equalsIgnoreCase(h.name, "Connection"))
            for (const QByteArray& t : bytes(h.value).split(','))
                out.insert(http::lowerAscii(t.trimmed().toStdString()));
    return out;
}

bool bodyExpected(std::string_view method)
{
    return method != "GET" && method != "HEAD" && method != "DELETE" && method != "OPTIONS" && method != "TRACE";
}

} // namespace

// One request on one connection, from writing it to the end of its answer. Its connection's
// Link holds it; the Upstream's signal handlers call it.
class UpstreamCall {
public:
    UpstreamCall(Upstream* up, QTcpSocket* s, bool head, std::function<void(UpstreamResult)> done)
        : m_up(up), m_socket(s), m_parser(head, up->m_maxResponse), m_done(std::move(done))
    {
        m_clock.start();
    }

    ~UpstreamCall()
    {
        if (m_watch >= 0)
            ::close(m_watch);
    }

    bool finished() const { return m_finished; }

    void read()
    {
        // an answer that begins while the request is still being written answers something else:
        // stray bytes of an earlier answer on a pooled connection (a broken upstream) would be
        // this request's answer, stored under its key
        if (!std::exchange(m_heard, true) && m_socket->bytesToWrite() > 0)
            return fail(UpstreamResult::Kind::Failed,
                        "the upstream answered before the request was written whole: not an answer to it");
        const QByteArray b = m_socket->readAll();
        m_parser.feed(std::string_view(b.constData(), static_cast<std::size_t>(b.size())));
        if (m_parser.done() || m_parser.failed())
            return end();
        if (m_parser.readsUntilClose() && m_watch < 0 && !m_up->m_tls && m_socket->socketDescriptor() >= 0)
            m_watch = ::fcntl(static_cast<int>(m_socket->socketDescriptor()), F_DUPFD_CLOEXEC, 0);
    }

    void closed()
    {
        if (m_watch >= 0 && resetByPeer())
            return fail(UpstreamResult::Kind::Failed, "the upstream reset the connection before its answer was complete");
        m_parser.closed();
        end();
    }

    void unreachable()
    {
        if (!m_parser.done())
            fail(UpstreamResult::Kind::Failed, "the upstream cannot be reached: " + m_socket->errorString().toStdString());
    }

    void timedOut()
    {
        fail(UpstreamResult::Kind::TimedOut, "no answer from the upstream within " + formatDuration(m_up->m_timeout));
    }

private:
    // A body that ends with its connection is whole when the upstream closed it (FIN), not when
    // the connection was reset (RFC 9112 §8): Qt reports both alike, and closes its descriptor.
    // The copy kept of it (m_watch) holds the socket open, so the kernel still knows which: a
    // close leaves it in CLOSE_WAIT (this side has not closed), a reset in CLOSE.
    bool resetByPeer() const
    {
        tcp_info info{};
        socklen_t size = sizeof info;
        if (::getsockopt(m_watch, IPPROTO_TCP, TCP_INFO, &info, &size) != 0)
            return true; // cannot tell: not whole
        return info.tcpi_state != TCP_CLOSE_WAIT;
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
            if ((!hopByHop(h.name) || http::equalsIgnoreCase(h.name, "Content-Length")) && !hop.count(http::lowerAscii(h.name)) &&
                !http::equalsIgnoreCase(h.name, "Date") && !http::equalsIgnoreCase(h.name, "Idempotent-Replayed"))
                out.response.headers.push_back(std::move(h)); // (the gateway says what it replayed)
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
        out.seconds = static_cast<double>(m_clock.nsecsElapsed()) / 1e9;
        Upstream* up = m_up;
        QTcpSocket* s = m_socket;
        auto done = std::move(m_done);
        // this object lives until the end of this function, its Link lets go of it here
        std::shared_ptr<UpstreamCall> self;
        if (auto it = up->m_links.find(s); it != up->m_links.end())
            self = std::move(it->second.call);
        if (reuse && s->state() == QAbstractSocket::ConnectedState && s->bytesAvailable() == 0)
            up->giveBack(s);
        else
            up->drop(s);
        done(std::move(out));
    }

    Upstream* m_up;
    QTcpSocket* m_socket;
    http::ResponseParser m_parser;
    std::function<void(UpstreamResult)> m_done;
    QElapsedTimer m_clock;
    bool m_finished = false;
    bool m_heard = false; // the answer's first bytes came
    int m_watch = -1; // a copy of the descriptor while a body is read until close
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
    m_clock.start();
    m_timer.setSingleShot(true);
    connect(&m_timer, &QTimer::timeout, this, &Upstream::expire);
}

Upstream::~Upstream()
{
    // requests under way end here without an answer (their `done` is not called); the sockets,
    // children of this object, go after it with nothing connected to them
    for (auto& [s, link] : m_links)
        disconnect(s, nullptr, this, nullptr);
    m_links.clear();
}

QTcpSocket* Upstream::connection()
{
    while (!m_idle.empty()) {
        QTcpSocket* s = m_idle.back();
        m_idle.pop_back();
        if (s->state() == QAbstractSocket::ConnectedState)
            return s;
        drop(s);
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
    m_links.emplace(s, Link{});
    connect(s, &QTcpSocket::readyRead, this, [this, s] { onSocket(s, &UpstreamCall::read); });
    connect(s, &QTcpSocket::disconnected, this, [this, s] { onSocket(s, &UpstreamCall::closed); });
    connect(s, &QTcpSocket::errorOccurred, this, [this, s](QAbstractSocket::SocketError e) {
        if (e != QAbstractSocket::RemoteHostClosedError) // (disconnected() says whether the answer was complete)
            onSocket(s, &UpstreamCall::unreachable);
    });
    return s;
}

// Something happened on a pooled connection: its request hears of it; an idle connection that
// talks out of turn, closes or fails is dropped
void Upstream::onSocket(QTcpSocket* s, void (UpstreamCall::*what)())
{
    const auto it = m_links.find(s);
    if (it == m_links.end())
        return;
    if (std::shared_ptr<UpstreamCall> c = it->second.call)
        ((*c).*what)();
    else
        drop(s);
}

void Upstream::drop(QTcpSocket* s, bool gracefully)
{
    m_links.erase(s);
    std::erase(m_idle, s);
    disconnect(s, nullptr, this, nullptr);
    if (gracefully)
        s->disconnectFromHost();
    else
        s->abort();
    s->deleteLater();
}

void Upstream::giveBack(QTcpSocket* s)
{
    if (m_idle.size() >= kMaxIdle)
        return drop(s, true);
    const qint64 now = m_clock.elapsed();
    m_links[s].idleSince = now;
    m_idle.push_back(s);
    armFor(now + kIdleMs);
}

// The timer fires at `at` (m_clock's ms) unless it is set to fire before that already
void Upstream::armFor(qint64 at)
{
    if (m_timer.isActive() && m_armedFor <= at)
        return;
    m_armedFor = at;
    m_timer.start(static_cast<int>(std::max<qint64>(0, at - m_clock.elapsed())));
}

void Upstream::expire()
{
    const qint64 now = m_clock.elapsed();
    while (!m_deadlines.empty()) {
        auto& [at, weak] = m_deadlines.front();
        std::shared_ptr<UpstreamCall> c = weak.lock();
        if (c && !c->finished() && at > now)
            break;
        m_deadlines.pop_front();
        if (c && !c->finished())
            c->timedOut();
    }
    while (!m_idle.empty() && m_links[m_idle.front()].idleSince + kIdleMs <= now)
        drop(m_idle.front());
    // the next: the first deadline, or the oldest idle connection's end
    qint64 next = -1;
    if (!m_deadlines.empty())
        next = m_deadlines.front().first;
    if (!m_idle.empty()) {
        const qint64 idleEnd = m_links[m_idle.front()].idleSince + kIdleMs;
        next = next < 0 ? idleEnd : std::min(next, idleEnd);
    }
    if (next >= 0)
        armFor(next);
}

void Upstream::forward(const http::Request& r, const QByteArray& clientAddress, const std::vector<http::Header>& extra,
                       std::function<void(UpstreamResult)> done)
{
    QByteArray out;
    out.reserve(static_cast<qsizetype>(512 + r.target.size() + r.body.size()));
    // (OPTIONS * asks about the server, not about a path under the base)
    out += bytes(r.method) + ' ' + (r.target == "*" ? QByteArray() : m_basePath) + bytes(r.target) + " HTTP/1.1\r\nHost: " +
           m_hostHeader + "\r\n";
    // headers of one name go as one, comma-joined (Cookie with "; "), in the order they came
    const auto hop = connectionTokens(r.headers);
    // (a few headers: a linear search, no map and no lowered copies of every name)
    std::vector<std::pair<std::string_view, QByteArray>> merged;
    merged.reserve(r.headers.size() + extra.size() + 2);
    const auto add = [&](std::string_view name, const QByteArray& value, bool replace) {
        const auto it = std::find_if(merged.begin(), merged.end(),
                                     [&](const auto& m) { return http::equalsIgnoreCase(m.first, name); });
        if (it == merged.end())
            merged.emplace_back(name, value);
        else if (replace)
            it->second = value;
        else
            it->second += (http::equalsIgnoreCase(name, "Cookie") ? "; " : ", ") + value;
    };
    for (const auto& h : r.headers)
        if (!hopByHop(h.name) && (hop.empty() || !hop.count(http::lowerAscii(h.name))))
            add(h.name, bytes(h.value), false);
    add("X-Forwarded-For", clientAddress, false);
    if (const std::string* host = r.header("Host"))
        add("X-Forwarded-Host", bytes(*host), true);
    for (const auto& h : extra)
        add(h.name, bytes(h.value), true);
    for (const auto& [name, value] : merged) {
        out.append(name.data(), static_cast<qsizetype>(name.size()));
        out += ": " + value + "\r\n";
    }
    if (!r.body.empty() || bodyExpected(r.method))
        out += "Content-Length: " + QByteArray::number(static_cast<qsizetype>(r.body.size())) + "\r\n";
    out += "\r\n";
    out += bytes(r.body);

    QTcpSocket* s = connection();
    auto call = std::make_shared<UpstreamCall>(this, s, r.method == "HEAD", std::move(done));
    // the deadlines end in the order they began (one timeout for all): the first one is the timer's
    while (!m_deadlines.empty() && m_deadlines.front().second.expired())
        m_deadlines.pop_front();
    const qint64 deadline = m_clock.elapsed() + static_cast<qint64>(m_timeout.count());
    m_deadlines.emplace_back(deadline, call);
    armFor(deadline);
    m_links[s].call = std::move(call);
    s->write(out); // written once connected when the connection is new
    if (s->state() == QAbstractSocket::ConnectedState)
        s->flush(); // at once, not on the next turn of the event loop
}

} // namespace idem::gateway
