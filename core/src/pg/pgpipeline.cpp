#include "pg/pgpipeline.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace idem {

PgPipeline::PgPipeline(std::string conninfo, int connectTimeoutSeconds, std::chrono::milliseconds callTimeout,
                       std::function<void(PgConnection&)> prepare)
    : m_conninfo(std::move(conninfo)), m_connectTimeout(connectTimeoutSeconds), m_callTimeout(callTimeout),
      m_prepare(std::move(prepare))
{
    m_wake = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (m_wake < 0)
        throw IoError(std::string("PostgreSQL pipeline: eventfd: ") + std::strerror(errno));
    m_thread = std::thread([this] { run(); });
}

PgPipeline::~PgPipeline()
{
    {
        std::lock_guard lock(m_mutex);
        m_stop = true;
    }
    const std::uint64_t one = 1;
    [[maybe_unused]] const auto n = ::write(m_wake, &one, sizeof one);
    m_thread.join();
    ::close(m_wake);
}

void PgPipeline::send(const char* statement, std::vector<PgParam> params, Done done)
{
    bool wake = false;
    {
        std::lock_guard lock(m_mutex);
        if (m_stop)
            throw ClosedError("PostgreSQL: the store is closing");
        // from the I/O thread (a callback chaining the next call) the loop sends it before it
        // waits again: no wake-up needed, and it goes out with the others of this round
        wake = m_queue.empty() && std::this_thread::get_id() != m_ioThread;
        Call c;
        c.statement = statement;
        c.params = std::move(params);
        c.done = std::move(done);
        m_queue.push_back(std::move(c));
    }
    if (wake) {
        const std::uint64_t one = 1;
        [[maybe_unused]] const auto n = ::write(m_wake, &one, sizeof one);
    }
}

void PgPipeline::interrupt()
{
    std::lock_guard lock(m_mutex);
    if (m_conn)
        m_conn->interrupt();
}

void PgPipeline::fail(Call& c, const std::exception_ptr& error)
{
    c.answer.reset();
    c.error = error;
    finish(c);
}

void PgPipeline::finish(Call& c)
{
    try {
        c.done(std::move(c.answer), c.error);
    } catch (...) {
        // a callback's exception has nowhere to go
    }
}

void PgPipeline::run()
{
    {
        std::lock_guard lock(m_mutex);
        m_ioThread = std::this_thread::get_id();
    }
    std::vector<Call> calls;
    for (;;) {
        bool stop = false;
        {
            std::lock_guard lock(m_mutex);
            stop = m_stop;
            calls.swap(m_queue);
        }
        if (stop) {
            const auto closing = std::make_exception_ptr(ClosedError("PostgreSQL: the store is closing"));
            for (Call& c : calls)
                fail(c, closing);
            lost("the store is closing");
            std::lock_guard lock(m_mutex);
            if (m_queue.empty())
                break;
            continue; // callbacks queued more: fail those too
        }
        if (!calls.empty()) {
            sendQueued(calls);
            calls.clear();
            std::lock_guard lock(m_mutex);
            if (!m_queue.empty())
                continue; // callbacks of failed calls queued more
        }
        pollfd fds[2] = {{m_wake, POLLIN, 0}, {-1, 0, 0}};
        if (m_conn) {
            fds[1].fd = PQsocket(m_conn->get());
            fds[1].events = static_cast<short>(POLLIN | (m_wantWrite ? POLLOUT : 0));
        }
        int waitMs = -1; // until the oldest call under way is due
        if (!m_sent.empty()) {
            const auto due = m_sent.front().sentAt + m_callTimeout - std::chrono::steady_clock::now();
            waitMs = static_cast<int>(
                std::max<long long>(0, std::chrono::ceil<std::chrono::milliseconds>(due).count()));
        }
        if (::poll(fds, m_conn ? 2 : 1, waitMs) < 0 && errno != EINTR)
            break; // cannot happen with valid descriptors
        if (fds[0].revents & POLLIN) {
            std::uint64_t n = 0;
            [[maybe_unused]] const auto r = ::read(m_wake, &n, sizeof n);
        }
        if (m_conn && (fds[1].revents & POLLOUT))
            flush();
        if (m_conn && (fds[1].revents & (POLLIN | POLLERR | POLLHUP)))
            readAnswers();
        if (m_conn && !m_sent.empty() && std::chrono::steady_clock::now() - m_sent.front().sentAt >= m_callTimeout)
            lost("no answer within " + std::to_string(m_callTimeout.count()) + " ms: the connection is taken for hung",
                 true);
    }
}

bool PgPipeline::connect(std::exception_ptr& error)
{
    try {
        auto c = std::make_unique<PgConnection>(m_conninfo, m_connectTimeout);
        m_prepare(*c);
        if (PQenterPipelineMode(c->get()) != 1 || PQsetnonblocking(c->get(), 1) != 0)
            throw IoError("PostgreSQL: cannot enter pipeline mode: " + std::string(PQerrorMessage(c->get())));
        std::lock_guard lock(m_mutex);
        m_conn = std::move(c);
        m_wantWrite = false;
        return true;
    } catch (...) {
        error = std::current_exception();
        return false;
    }
}

void PgPipeline::sendQueued(std::vector<Call>& calls)
{
    std::exception_ptr error;
    if (!m_conn && !connect(error)) {
        for (Call& c : calls)
            fail(c, error);
        return;
    }
    PgParamArrays a;
    std::size_t i = 0;
    for (; i < calls.size(); ++i) {
        Call& c = calls[i];
        a.fill(c.params);
        PGconn* conn = m_conn->get();
        const bool queued =
            PQsendQueryPrepared(conn, c.statement, a.count(), a.values.data(), a.lengths.data(), a.formats.data(), 1) == 1 &&
            PQpipelineSync(conn) == 1;
        if (!queued)
            break;
        c.sentAt = std::chrono::steady_clock::now();
        m_sent.push_back(std::move(c));
    }
    if (i < calls.size()) { // the connection broke while sending: what did not go out fails too
        const std::string why = PQerrorMessage(m_conn->get());
        const auto closed = std::make_exception_ptr(ClosedError("PostgreSQL: " + why));
        for (std::size_t j = i; j < calls.size(); ++j)
            fail(calls[j], closed);
        lost(why);
        return;
    }
    flush();
}

void PgPipeline::flush()
{
    const int r = PQflush(m_conn->get());
    if (r < 0)
        return lost(PQerrorMessage(m_conn->get()));
    m_wantWrite = r == 1;
}

void PgPipeline::readAnswers()
{
    PGconn* conn = m_conn->get();
    if (PQconsumeInput(conn) != 1)
        return lost(PQerrorMessage(conn));
    // Each call's answers: its result (or error), a NULL that ends them, then the Sync's.
    int nulls = 0;
    while (!m_sent.empty() && PQisBusy(conn) == 0) {
        PGresult* raw = PQgetResult(conn);
        if (!raw) {
            if (++nulls > 1)
                break; // nothing more has come
            continue;
        }
        nulls = 0;
        PgResultPtr r(raw, &PQclear);
        Call& head = m_sent.front();
        const ExecStatusType status = PQresultStatus(r.get());
        if (status == PGRES_PIPELINE_SYNC) {
            if (!head.answer && !head.error)
                head.error = std::make_exception_ptr(ProtoError("PostgreSQL answered nothing to " +
                                                                std::string(head.statement)));
            Call c = std::move(head);
            m_sent.pop_front();
            finish(c);
            continue;
        }
        if (head.answer || head.error)
            continue; // (a statement answers one result set)
        if (status == PGRES_TUPLES_OK) {
            head.answer = std::move(r);
        } else {
            try {
                throwPgError(conn, r.get(), head.statement);
            } catch (...) {
                head.error = std::current_exception();
            }
            if (PQstatus(conn) != CONNECTION_OK)
                return lost(PQerrorMessage(conn));
        }
    }
    if (PQstatus(conn) != CONNECTION_OK)
        lost(PQerrorMessage(conn));
}

void PgPipeline::lost(const std::string& why, bool timedOut)
{
    std::unique_ptr<PgConnection> gone;
    {
        std::lock_guard lock(m_mutex);
        gone = std::move(m_conn);
    }
    m_wantWrite = false;
    std::deque<Call> sent;
    sent.swap(m_sent);
    std::string line = why;
    while (!line.empty() && (line.back() == '\n' || line.back() == ' '))
        line.pop_back();
    const auto error = timedOut ? std::make_exception_ptr(TimeoutError("PostgreSQL: " + line))
                                : std::make_exception_ptr(ClosedError("PostgreSQL connection lost" +
                                                                      (line.empty() ? std::string() : ": " + line)));
    for (Call& c : sent)
        fail(c, error);
}

} // namespace idem
