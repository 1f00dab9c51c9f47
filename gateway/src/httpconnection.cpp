#include "httpconnection.h"

#include <QDateTime>
#include <QLocale>
#include <QScopeGuard>
#include <QTcpSocket>

#include <utility>
#include <vector>

namespace idem::http {

namespace {
// The Date header's value, made once a second
std::string httpDate()
{
    thread_local qint64 madeAt = -1;
    thread_local std::string date;
    const qint64 now = QDateTime::currentSecsSinceEpoch();
    if (now != madeAt) {
        madeAt = now;
        date = QLocale::c()
                   .toString(QDateTime::fromSecsSinceEpoch(now, Qt::UTC), QStringLiteral("ddd, dd MMM yyyy hh:mm:ss 'GMT'"))
                   .toStdString();
    }
    return date;
}
} // namespace

HttpConnection::HttpConnection(QTcpSocket* socket, HttpServer* server)
    : QObject(server), m_socket(socket), m_server(server), m_parser(server->m_options.limits)
{
    m_parser.setBodyLimit(server->m_options.bodyLimit);
    server->opened();
    m_socket->setParent(this);
    m_socket->setSocketOption(QAbstractSocket::LowDelayOption, 1);
    // what Qt reads ahead of the parser: with pipelined requests beyond the bound left unread, the
    // kernel's buffers fill and TCP pushes back on the client (unbounded, Qt would read on)
    m_socket->setReadBufferSize(64 << 10);
    connect(m_socket, &QTcpSocket::readyRead, this, &HttpConnection::readSome);
    connect(m_socket, &QTcpSocket::bytesWritten, this, &HttpConnection::written);
    m_deadline.setSingleShot(true);
    connect(&m_deadline, &QTimer::timeout, this, &HttpConnection::tooSlow);
    // gone: every Responder of this connection now answers into nothing
    connect(m_socket, &QTcpSocket::disconnected, this, &QObject::deleteLater);
    m_idle.setSingleShot(true);
    m_idle.setInterval(static_cast<int>(server->m_options.idleTimeout.count()));
    connect(&m_idle, &QTimer::timeout, this, &HttpConnection::idle);
    m_active.start();
    m_idle.start();
    if (m_socket->bytesAvailable() > 0)
        QMetaObject::invokeMethod(this, &HttpConnection::readSome, Qt::QueuedConnection);
}

HttpConnection::~HttpConnection() { m_server->gone(); }

void HttpConnection::drain()
{
    // a request already here (its readyRead not handled yet) is answered, not cut off
    if (!m_closing && m_slots.empty() && m_socket->bytesAvailable() > 0)
        readSome();
    if (lastWanted() && !m_closing)
        closeAfterWrite();
}

bool HttpConnection::lastWanted() const
{
    return m_server->m_draining && m_slots.empty() && !m_parser.midRequest();
}

// (restarting the QTimer instead, three times a request, was a timer unregistered and registered
// again in the event dispatcher each time)
void HttpConnection::touch() { m_active.restart(); }

void HttpConnection::readSome()
{
    if (m_closing || m_parser.failed() || m_timedOut)
        return;
    const auto phase = qScopeGuard([this] { watchPhase(); });
    touch();
    // pipelined requests beyond the bound wait in the socket (TCP pushes back on the client)
    while (m_slots.size() < m_server->m_options.maxPipelined && m_socket->bytesAvailable() > 0) {
        // into a buffer kept across reads: a fresh 16 KiB array per read was a large malloc and
        // free a request, which made glibc consolidate its fast bins each time
        thread_local std::vector<char> buffer(16384);
        const qint64 n = m_socket->read(buffer.data(), static_cast<qint64>(buffer.size()));
        if (n <= 0)
            break;
        m_parser.feed(std::string_view(buffer.data(), static_cast<std::size_t>(n)));
        while (auto r = m_parser.take()) {
            Slot s;
            s.seq = m_nextSeq++;
            s.head = r->method == "HEAD";
            s.keepAlive = r->keepAlive;
            s.http10 = r->minorVersion == 0;
            s.safe = s.head || r->method == "GET" || r->method == "OPTIONS" || r->method == "TRACE";
            s.waiting = std::move(*r);
            m_slots.push_back(std::move(s));
        }
        dispatch();
        if (m_closing)
            return;
        if (m_parser.failed())
            return refuse(m_parser.error());
        if (m_parser.closed())
            break;
    }
    if (m_parser.takeContinue()) {
        if (m_slots.empty())
            m_socket->write("HTTP/1.1 100 Continue\r\n\r\n");
        else
            m_continueOwed = true;
    }
}

// Pipelined requests go to the handler in order, and concurrently only while they are all safe
// (RFC 9112 §9.3.2): an unsafe one waits until every answer ahead of it is ready, and whatever
// comes after it waits for its answer — a pipelined PATCH never reaches the upstream before the
// POST ahead of it, and a pipelined duplicate gets the first one's answer replayed.
void HttpConnection::dispatch()
{
    if (m_dispatching) { // a handler that answers at once comes back here through respond()
        m_dispatchAgain = true;
        return;
    }
    m_dispatching = true;
    do {
        m_dispatchAgain = false;
        bool unansweredAhead = false, unsafeAhead = false;
        std::size_t inFlight = 0;
        for (std::size_t i = 0; i < m_slots.size() && !m_closing; ++i) {
            Slot& s = m_slots[i];
            if (s.waiting) {
                if (unsafeAhead || (!s.safe && unansweredAhead) || inFlight >= m_server->m_options.maxConcurrent)
                    break;
                // answers pile up unread: no more requests until the client takes them (written())
                if (m_socket->bytesToWrite() > m_server->m_options.maxUnwritten) {
                    m_outputFull = true;
                    break;
                }
                Request r = std::move(*s.waiting);
                s.waiting.reset();
                const quint64 seq = s.seq;
                const bool safe = s.safe;
                // (the handler may answer at once: respond() and flush() may change m_slots)
                m_server->m_handler(std::move(r), Responder(this, seq, m_socket->peerAddress()));
                if (m_dispatchAgain || m_closing)
                    break;
                unansweredAhead = true; // (answered at once would have set m_dispatchAgain)
                unsafeAhead = unsafeAhead || !safe;
                ++inFlight;
                continue;
            }
            if (!s.ready) {
                unansweredAhead = true;
                unsafeAhead = unsafeAhead || !s.safe;
                ++inFlight;
            }
        }
    } while (m_dispatchAgain && !m_closing);
    m_dispatching = false;
}

void HttpConnection::watchPhase()
{
    if (m_closing)
        return m_deadline.stop();
    const Phase now = m_parser.midHead() ? Phase::Head : m_parser.midRequest() ? Phase::Body : Phase::None;
    if (now == m_phase && m_phaseOf == m_nextSeq)
        return;
    m_phase = now;
    m_phaseOf = m_nextSeq;
    if (now == Phase::None)
        return m_deadline.stop();
    const Millis limit = now == Phase::Head ? m_server->m_options.headerTimeout : m_server->m_options.bodyTimeout;
    m_deadline.start(static_cast<int>(limit.count()));
}

bool HttpConnection::holdingBack() const
{
    return m_outputFull || m_slots.size() >= m_server->m_options.maxPipelined;
}

// A request that trickles in (slowloris): its head or its body took too long, however steadily
// its bytes came. Answered 408, and the connection closed.
void HttpConnection::tooSlow()
{
    if (m_closing || m_parser.failed() || m_phase == Phase::None)
        return;
    if (holdingBack()) // the gateway stopped reading, not the client: its time starts again
        return m_deadline.start();
    const bool head = m_phase == Phase::Head;
    m_phase = Phase::None;
    m_timedOut = true; // nothing more is read; the 408 closes the connection once written
    refuse(ParseError{408, head ? "the request's head did not come in time"
                                : "the request's body did not come in time"});
}

void HttpConnection::written()
{
    touch();
    if (!m_outputFull || m_closing || m_socket->bytesToWrite() > m_server->m_options.maxUnwritten)
        return;
    m_outputFull = false; // the client reads again: the requests it sent meanwhile go on
    dispatch();
    if (!m_closing && m_socket->bytesAvailable() > 0)
        QMetaObject::invokeMethod(this, &HttpConnection::readSome, Qt::QueuedConnection);
}

void HttpConnection::refuse(const ParseError& e)
{
    if (m_server->parseFailed)
        m_server->parseFailed(e);
    Slot s;
    s.seq = m_nextSeq++;
    s.keepAlive = false;
    s.ready = true;
    s.bytes = serialize(problem(e.status, reasonPhrase(e.status), e.reason), false, false, httpDate());
    m_slots.push_back(std::move(s));
    flush();
}

void HttpConnection::respond(quint64 seq, Response r)
{
    for (Slot& s : m_slots) {
        if (s.seq != seq || s.ready)
            continue;
        // the last request of the connection: say so, and close once it is written
        const bool keepAlive = s.keepAlive && !(s.seq + 1 == m_nextSeq && (m_parser.closed() || m_parser.failed() ||
                                                                            m_server->m_draining));
        s.keepAlive = keepAlive;
        s.bytes = serialize(r, s.head, keepAlive, httpDate());
        if (keepAlive && s.http10) // HTTP/1.0 closes unless told otherwise (RFC 9112 C.2.2)
            s.bytes.insert(s.bytes.find("\r\n\r\n") + 2, "Connection: keep-alive\r\n");
        s.ready = true;
        break;
    }
    flush();
    dispatch();
}

void HttpConnection::flush()
{
    const bool wasFull = m_slots.size() >= m_server->m_options.maxPipelined;
    bool wrote = false;
    while (!m_slots.empty() && m_slots.front().ready && !m_closing) {
        Slot s = std::move(m_slots.front());
        m_slots.pop_front();
        m_socket->write(s.bytes.data(), static_cast<qint64>(s.bytes.size()));
        wrote = true;
        if (!s.keepAlive)
            closeAfterWrite();
    }
    if (wrote && !m_closing)
        m_socket->flush(); // at once, not on the next turn of the event loop
    if (!m_closing && lastWanted())
        closeAfterWrite(); // (an answer that was ready before the drain said keep-alive)
    if (m_closing)
        return;
    touch();
    if (m_slots.empty() && std::exchange(m_continueOwed, false) && m_parser.midRequest())
        m_socket->write("HTTP/1.1 100 Continue\r\n\r\n");
    if (wasFull && m_socket->bytesAvailable() > 0)
        QMetaObject::invokeMethod(this, &HttpConnection::readSome, Qt::QueuedConnection);
}

void HttpConnection::closeAfterWrite()
{
    m_closing = true;
    m_slots.clear();
    m_socket->disconnectFromHost(); // after what is written; then disconnected() deletes this
}

void HttpConnection::idle()
{
    const qint64 left = m_server->m_options.idleTimeout.count() - m_active.elapsed();
    if (left > 0)
        return m_idle.start(static_cast<int>(left)); // it did something since: the rest of its time
    // a request being answered keeps the connection (the upstream's timeout bounds it), unless its
    // client has not read an answer for the whole idle time
    if (!m_slots.empty() && !m_outputFull) {
        m_active.restart();
        return m_idle.start(static_cast<int>(m_server->m_options.idleTimeout.count()));
    }
    m_closing = true;
    m_socket->abort();
    deleteLater();
}

} // namespace idem::http
