#pragma once

#include "idem/gateway/httpserver.h"

#include <QElapsedTimer>
#include <QObject>
#include <QTimer>

#include <deque>
#include <optional>

class QTcpSocket;

namespace idem::http {

// One client connection: bytes in to the parser, requests out to the handler, answers back in
// request order. Deletes itself when the client goes (its Responders then answer into nothing).
class HttpConnection : public QObject {
    Q_OBJECT
public:
    HttpConnection(QTcpSocket* socket, HttpServer* server);
    ~HttpConnection() override;
    void respond(quint64 seq, Response r);
    // The server drains: close now if nothing is asked, else after the last answer.
    void drain();

private:
    struct Slot {
        quint64 seq = 0;
        bool head = false;
        bool keepAlive = true;
        bool http10 = false; // an HTTP/1.0 client kept alive is told so
        bool safe = true;    // GET, HEAD, OPTIONS, TRACE
        bool ready = false;
        std::optional<Request> waiting; // parsed, not handed to the handler yet
        std::string bytes;
    };
    enum class Phase { None, Head, Body }; // of the request being read
    void readSome();
    void watchPhase(); // (re)arms m_deadline when a request's head or body begins
    void tooSlow();
    void written();
    bool holdingBack() const; // reading or handing over paused by the gateway, not by the client
    void dispatch(); // hands waiting requests over, as far as the ones ahead of them allow
    void flush();
    void refuse(const ParseError& e);
    void idle();
    void closeAfterWrite();
    void touch();
    bool lastWanted() const; // draining, and nothing asked or half asked: the connection may go

    QTcpSocket* m_socket;
    HttpServer* m_server;
    RequestParser m_parser;
    std::deque<Slot> m_slots;
    quint64 m_nextSeq = 1;
    bool m_closing = false;     // the last answer is out: no more reading
    bool m_continueOwed = false; // a 100 Continue waits for the answers ahead of it
    bool m_dispatching = false, m_dispatchAgain = false;
    bool m_outputFull = false; // the client does not read its answers: no request is handed over
    bool m_timedOut = false;   // a 408 is owed: nothing more is read
    Phase m_phase = Phase::None;
    quint64 m_phaseOf = 0; // m_nextSeq when the phase began: a request taken since starts another
    QTimer m_deadline;     // the head's or the body's: a byte now and then does not move it
    QTimer m_idle;           // fires once per idle period, not restarted by every byte:
    QElapsedTimer m_active;  // when the connection last did something
};

} // namespace idem::http
