#include "pg/pgpipeline.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace idem {

namespace {

void put32(std::string& out, std::uint32_t v)
{
    const char b[4] = {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
                       static_cast<char>(v)};
    out.append(b, 4);
}

// PostgreSQL's binary format of a one-dimensional array (array_recv): dimensions, flags, element
// type, then each element's length (-1: NULL) and bytes; text and bytea elements are their bytes
template <typename Calls> std::string binaryArray(Oid elementType, const Calls& calls, std::size_t k)
{
    std::size_t bytes = 20;
    bool nulls = false;
    for (const auto& c : calls) {
        const auto& v = c.params[k].value;
        nulls = nulls || !v;
        bytes += 4 + (v ? v->size() : 0);
    }
    std::string a;
    a.reserve(bytes);
    put32(a, 1); // dimensions
    put32(a, nulls ? 1 : 0);
    put32(a, elementType);
    put32(a, static_cast<std::uint32_t>(calls.size()));
    put32(a, 1); // lower bound
    for (const auto& c : calls) {
        const auto& v = c.params[k].value;
        put32(a, v ? static_cast<std::uint32_t>(v->size()) : 0xffffffffu);
        if (v)
            a += *v;
    }
    return a;
}

// An answer the server gave about the statement (not about the connection)
bool refusedByServer(const std::exception_ptr& error)
{
    try {
        std::rethrow_exception(error);
    } catch (const PgError&) {
        return true;
    } catch (...) {
        return false;
    }
}

} // namespace

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

void PgPipeline::send(const char* statement, std::vector<PgParam> params, Done done, const PgBatch* batch)
{
    bool wake = false;
    {
        std::lock_guard lock(m_mutex);
        if (m_stop)
            throw ClosedError("PostgreSQL: the store is closing");
        // from the I/O thread (a callback chaining the next call) the loop sends it before it
        // waits again: no wake-up needed, and it goes out with the others of this round
        wake = m_queue.empty() && std::this_thread::get_id() != m_ioThread;
        m_queue.push_back(Call{statement, batch, std::move(params), std::move(done)});
        ++m_pending;
    }
    if (wake) {
        const std::uint64_t one = 1;
        [[maybe_unused]] const auto n = ::write(m_wake, &one, sizeof one);
    }
}

PgPipelineCounts PgPipeline::counts() const
{
    return {m_statements.load(), m_batches.load(), m_batchedCalls.load(), m_batchesResent.load()};
}

void PgPipeline::interrupt()
{
    std::lock_guard lock(m_mutex);
    if (m_conn)
        m_conn->interrupt();
}

void PgPipeline::fail(Call& c, const std::exception_ptr& error)
{
    --m_pending;
    try {
        c.done(nullptr, 0, error);
    } catch (...) {
        // a callback's exception has nowhere to go
    }
}

int& PgPipeline::inFlight(const PgBatch* kind)
{
    for (auto& [k, n] : m_inFlight)
        if (k == kind)
            return n;
    return m_inFlight.emplace_back(kind, 0).second;
}

void PgPipeline::finish(Sent& s)
{
    if (s.kind)
        --inFlight(s.kind);
    if (!s.error && s.batched && PQntuples(s.answer.get()) != static_cast<int>(s.calls.size()))
        s.error = std::make_exception_ptr(ProtoError("PostgreSQL answered " + std::to_string(PQntuples(s.answer.get())) +
                                                     " rows to a batch of " + std::to_string(s.calls.size()) + " calls"));
    if (s.error) {
        if (s.batched && refusedByServer(s.error)) { // again one by one: each gets its own answer
            ++m_batchesResent;
            std::lock_guard lock(m_mutex);
            for (Call& c : s.calls) {
                c.batch = nullptr;
                m_queue.push_back(std::move(c));
            }
            return;
        }
        for (Call& c : s.calls)
            fail(c, s.error);
        return;
    }
    m_pending -= s.calls.size();
    for (std::size_t i = 0; i < s.calls.size(); ++i) {
        try {
            s.calls[i].done(s.answer.get(), static_cast<int>(i), nullptr);
        } catch (...) {
            // a callback's exception has nowhere to go
        }
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
        if (!m_held.empty()) { // the held calls came first
            m_held.insert(m_held.end(), std::make_move_iterator(calls.begin()), std::make_move_iterator(calls.end()));
            calls.swap(m_held);
            m_held.clear();
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
    // batchable calls joined to the open batch of their kind, in the order the first of each came
    std::vector<Sent> out;
    std::vector<std::pair<const PgBatch*, std::size_t>> open;
    for (Call& c : calls) {
        auto it = std::find_if(open.begin(), open.end(), [&](const auto& o) { return o.first == c.batch; });
        if (c.batch && it != open.end() && out[it->second].calls.size() < c.batch->maxCalls) {
            out[it->second].calls.push_back(std::move(c));
            continue;
        }
        if (c.batch) {
            int& n = inFlight(c.batch);
            if (n >= kBatchesInFlight) { // held until an answer of its kind comes: then with the others
                m_held.push_back(std::move(c));
                continue;
            }
            ++n;
            if (it != open.end())
                it->second = out.size();
            else
                open.emplace_back(c.batch, out.size());
        }
        Sent s;
        s.statement = c.statement;
        s.kind = c.batch;
        s.calls.push_back(std::move(c));
        out.push_back(std::move(s));
    }
    for (std::size_t i = 0; i < out.size(); ++i) {
        if (!sendOne(std::move(out[i]))) { // the connection broke while sending: the rest fails too
            const std::string why = PQerrorMessage(m_conn->get());
            const auto closed = std::make_exception_ptr(ClosedError("PostgreSQL: " + why));
            for (std::size_t j = i + 1; j < out.size(); ++j)
                for (Call& c : out[j].calls)
                    fail(c, closed);
            lost(why);
            return;
        }
    }
    flush();
}

bool PgPipeline::sendOne(Sent s)
{
    std::vector<PgParam> arrays;
    if (s.calls.size() > 1) {
        const PgBatch& b = *s.calls.front().batch;
        std::sort(s.calls.begin(), s.calls.end(),
                  [](const Call& x, const Call& y) { return x.params.front().value < y.params.front().value; });
        for (std::size_t k = 0; k < b.elementTypes.size(); ++k)
            arrays.push_back(PgParam::bytes(binaryArray(b.elementTypes[k], s.calls, k)));
        s.statement = b.statement;
        s.batched = true;
        ++m_batches;
        m_batchedCalls += s.calls.size();
    }
    m_arrays.fill(s.batched ? arrays : s.calls.front().params);
    PGconn* conn = m_conn->get();
    const bool queued = PQsendQueryPrepared(conn, s.statement, m_arrays.count(), m_arrays.values.data(),
                                            m_arrays.lengths.data(), m_arrays.formats.data(), 1) == 1 &&
                        PQpipelineSync(conn) == 1;
    if (!queued) {
        const auto closed = std::make_exception_ptr(ClosedError("PostgreSQL: " + std::string(PQerrorMessage(conn))));
        for (Call& c : s.calls)
            fail(c, closed);
        return false;
    }
    ++m_statements;
    s.sentAt = std::chrono::steady_clock::now();
    m_sent.push_back(std::move(s));
    return true;
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
        Sent& head = m_sent.front();
        const ExecStatusType status = PQresultStatus(r.get());
        if (status == PGRES_PIPELINE_SYNC) {
            if (!head.answer && !head.error)
                head.error = std::make_exception_ptr(ProtoError("PostgreSQL answered nothing to " +
                                                                std::string(head.statement)));
            Sent done = std::move(head);
            m_sent.pop_front();
            finish(done);
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
    m_inFlight.clear();
    std::deque<Sent> sent;
    sent.swap(m_sent);
    std::string line = why;
    while (!line.empty() && (line.back() == '\n' || line.back() == ' '))
        line.pop_back();
    const auto error = timedOut ? std::make_exception_ptr(TimeoutError("PostgreSQL: " + line))
                                : std::make_exception_ptr(ClosedError("PostgreSQL connection lost" +
                                                                      (line.empty() ? std::string() : ": " + line)));
    for (Sent& s : sent)
        for (Call& c : s.calls)
            fail(c, error);
}

} // namespace idem
