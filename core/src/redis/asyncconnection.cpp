#include "idem/redis/asyncconnection.h"

#include "idem/errors.h"
#include "idem/redis/connection.h"
#include "redis/asyncrouting.h"
#include "redis/reader.h"
#include "redis/resp.h"
#include "redis/stream.h"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <deque>
#include <mutex>
#include <poll.h>
#include <queue>
#include <sys/eventfd.h>
#include <thread>
#include <unistd.h>

namespace idem {

namespace {
using Clock = std::chrono::steady_clock;
constexpr auto kNever = Clock::time_point::max();
} // namespace

// The I/O thread and what it shares with callers. Callers append to the queue under the mutex and
// write the eventfd only when the thread sleeps in poll(); the thread takes the whole queue at once,
// so whatever piled up while it was busy goes out in one write.
class AsyncConnection::Io {
public:
    explicit Io(ConnectionOptions options)
        : m_options(std::move(options)), m_connector(m_options), m_wakeFd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK))
    {
        if (m_wakeFd < 0)
            throw IoError("eventfd failed");
        m_readBuffer.resize(64 * 1024);
        m_thread = std::thread([this] { run(); });
    }

    ~Io()
    {
        close();
        ::close(m_wakeFd);
    }

    void enqueue(std::string resp, std::size_t count, RepliesHandler done, Millis timeout)
    {
        if (timeout.count() < 0)
            timeout = m_options.commandTimeout;
        Request rq;
        rq.count = count == 0 ? 1 : count;
        rq.done = std::move(done);
        rq.deadline = timeout.count() > 0 ? Clock::now() + timeout : kNever;
        rq.timeout = timeout;
        bool wake = false;
        {
            std::unique_lock lock(m_mutex);
            if (m_closed) {
                lock.unlock();
                rq.done({}, std::make_exception_ptr(ClosedError("Redis at " + m_options.describe() + ": closed")));
                return;
            }
            if (m_queuedBytes.empty())
                m_queuedBytes = std::move(resp);
            else
                m_queuedBytes.append(resp);
            m_queued.push_back(std::move(rq));
            ++m_pending;
            wake = m_sleeping && !m_woken;
            m_woken = m_woken || wake;
        }
        if (wake)
            this->wake();
    }

    void interrupt()
    {
        {
            std::lock_guard lock(m_mutex);
            m_interrupt = true;
        }
        wake();
    }

    void checkPrimarySoon()
    {
        if (!m_options.viaSentinel())
            return;
        {
            std::lock_guard lock(m_mutex);
            m_checkPrimary = true;
        }
        wake();
    }

    void close()
    {
        {
            std::lock_guard lock(m_mutex);
            m_closed = true;
        }
        wake();
        if (m_thread.joinable() && m_thread.get_id() != std::this_thread::get_id())
            m_thread.join();
    }

    const ConnectionOptions& options() const { return m_options; }
    bool connected() const { return m_connected; }
    std::size_t pending() const { return m_pending; }

private:
    struct Request {
        std::size_t count = 1; // replies it waits for
        std::vector<ReplyPtr> replies;
        RepliesHandler done; // empty once answered: a timed-out request's replies are dropped
        Clock::time_point deadline = kNever;
        Millis timeout{0};
        std::uint64_t seq = 0;
    };

    void wake()
    {
        const std::uint64_t one = 1;
        [[maybe_unused]] const auto n = ::write(m_wakeFd, &one, sizeof one);
    }

    std::string where() const
    {
        std::string w = "Redis at " + m_options.describe();
        if (m_options.viaSentinel() && m_stream)
            w += " (primary " + m_stream->peer() + ")";
        return w;
    }

    static void deliver(RepliesHandler& done, std::vector<ReplyPtr> replies, std::exception_ptr error)
    {
        if (!done)
            return;
        auto handler = std::move(done);
        done = nullptr;
        try {
            handler(std::move(replies), std::move(error));
        } catch (...) {
            // a handler's exception has nowhere to go; the I/O thread must go on
        }
    }

    void run()
    {
        std::deque<Request> taken;
        std::string bytes;
        while (true) {
            bool closing = false, interrupted = false, checkPrimary = false;
            {
                std::lock_guard lock(m_mutex);
                closing = m_closed;
                interrupted = std::exchange(m_interrupt, false);
                checkPrimary = std::exchange(m_checkPrimary, false);
                if (!m_queued.empty()) {
                    taken.swap(m_queued);
                    bytes.swap(m_queuedBytes);
                }
            }
            if (closing || interrupted) {
                const auto e = std::make_exception_ptr(
                    ClosedError(where() + (closing ? ": closed" : ": interrupted")));
                dropConnection(e);
                failAll(taken, e);
                bytes.clear();
                if (closing) {
                    std::deque<Request> late; // queued since: nothing is queued after m_closed
                    {
                        std::lock_guard lock(m_mutex);
                        late.swap(m_queued);
                    }
                    failAll(late, e);
                    return;
                }
            }
            // through Sentinel, also before sending, at most once a second: a primary a planned
            // failover replaced takes writes until it is demoted, seconds later, and loses them
            if (checkPrimary || (!taken.empty() && m_options.viaSentinel()))
                recheckPrimary();
            if (!taken.empty()) {
                start(taken, bytes);
                taken.clear();
                bytes.clear();
            }
            if (m_stream) {
                try {
                    flush();
                    readReplies();
                } catch (const Error&) {
                    dropConnection(broken());
                }
            }
            checkTimeouts();
            waitForWork();
        }
    }

    // Requests taken from the queue: connect if need be, then they join the ones in flight.
    void start(std::deque<Request>& taken, std::string& bytes)
    {
        if (!m_stream) {
            try {
                m_stream = m_connector.handOver(); // Connection's handshake, backoff and errors
                m_nextPrimaryCheck = std::chrono::steady_clock::now() + std::chrono::seconds(1); // it asked them
                m_stream->setNonBlocking();
                m_reader = resp::makeReader();
                m_connected = true;
            } catch (...) {
                m_stream.reset();
                failAll(taken, std::current_exception());
                return;
            }
        }
        if (m_out.empty())
            m_out.swap(bytes);
        else
            m_out.append(bytes);
        for (auto& rq : taken) {
            rq.seq = m_nextSeq++;
            if (rq.deadline != kNever)
                m_deadlines.emplace(rq.deadline, rq.seq);
            m_inflight.push_back(std::move(rq));
        }
    }

    void flush()
    {
        while (m_outPos < m_out.size()) {
            const std::size_t n = m_stream->writeSome(std::string_view(m_out).substr(m_outPos), m_writeWants);
            if (n == 0)
                return;
            m_outPos += n;
        }
        m_out.clear();
        m_outPos = 0;
        if (m_out.capacity() > 1024 * 1024) // a huge request once does not keep its buffer for ever
            std::string().swap(m_out);
    }

    void readReplies()
    {
        m_readWants = Stream::Want::Read;
        while (m_stream) {
            const std::size_t n = m_stream->readSome(m_readBuffer.data(), m_readBuffer.size(), m_readWants);
            if (n == 0)
                return;
            if (redisReaderFeed(m_reader.get(), m_readBuffer.data(), n) != REDIS_OK)
                throw ProtoError(resp::readerError(m_reader.get()));
            while (m_stream) {
                void* raw = nullptr;
                if (redisReaderGetReply(m_reader.get(), &raw) != REDIS_OK)
                    throw ProtoError(resp::readerError(m_reader.get()));
                if (!raw)
                    break;
                onReply(ReplyPtr(static_cast<redisReply*>(raw)));
            }
        }
    }

    void onReply(ReplyPtr r)
    {
        if (m_inflight.empty())
            throw ProtoError("a reply nobody asked for");
        // A primary demoted to a replica answers writes with -READONLY: through Sentinel the
        // connection is dropped so that the next request asks who the primary is now.
        const bool demoted = m_options.viaSentinel() && reply::isError(r.get()) &&
                             reply::errorText(r.get()).starts_with("READONLY");
        Request& front = m_inflight.front();
        front.replies.push_back(std::move(r));
        if (front.replies.size() == front.count) {
            Request done = std::move(front);
            m_inflight.pop_front();
            --m_pending;
            deliver(done.done, std::move(done.replies), nullptr);
        }
        if (demoted)
            dropConnection(std::make_exception_ptr(
                ClosedError(where() + ": the node was demoted to a replica (READONLY); asking the sentinels again")));
    }

    // Through Sentinel: whether the node this connection reached is still the one the sentinels
    // name; if not, the connection is dropped (its requests fail, closed) and the next asks them
    // again. A primary that came back empty and still thinks itself the primary answers every
    // write without READONLY until it is demoted. The sentinels are asked on this thread, as a
    // reconnect asks them, which stalls its requests meanwhile: at most once a second, and after
    // a slow or failed answer only once ten times that long has passed (sentinels that hang
    // while every WAIT falls short must not keep this thread from its own work).
    void recheckPrimary()
    {
        const auto started = std::chrono::steady_clock::now();
        if (!m_stream || started < m_nextPrimaryCheck || !m_options.unixSocket.empty())
            return;
        std::string named;
        const auto v = m_connector.askPrimary(m_stream->peer(), &named);
        if (v == Connection::PrimaryVerdict::Elsewhere)
            dropConnection(std::make_exception_ptr(
                ClosedError(where() + ": the sentinels name " + named + " as the primary now; asking them again")));
        m_nextPrimaryCheck = Connection::nextPrimaryCheck(started, v != Connection::PrimaryVerdict::Unknown);
    }

    // Called from a catch block: the error that broke the connection, saying where.
    std::exception_ptr broken()
    {
        const std::string w = where();
        try {
            throw;
        } catch (const ConfigError& e) {
            return std::make_exception_ptr(ConfigError(w + ": " + e.what(), e.field(), e.certain()));
        } catch (const ClosedError& e) {
            return std::make_exception_ptr(ClosedError(w + ": " + e.what()));
        } catch (const ProtoError& e) {
            return std::make_exception_ptr(ProtoError(w + ": " + e.what()));
        } catch (const IoError& e) {
            return std::make_exception_ptr(IoError(w + ": " + e.what()));
        } catch (const Error& e) {
            return std::make_exception_ptr(IoError(w + ": " + e.what()));
        }
    }

    void dropConnection(const std::exception_ptr& e)
    {
        m_stream.reset();
        m_reader.reset();
        m_connected = false;
        m_out.clear();
        m_outPos = 0;
        m_deadlines = {};
        m_writeWants = Stream::Want::Write;
        m_readWants = Stream::Want::Read;
        failAll(m_inflight, e);
    }

    void failAll(std::deque<Request>& requests, const std::exception_ptr& e)
    {
        auto failing = std::move(requests);
        requests.clear();
        m_pending -= failing.size();
        for (auto& rq : failing)
            deliver(rq.done, {}, e);
    }

    bool timedOutFront() const
    {
        return !m_inflight.empty() && m_inflight.front().deadline != kNever && !m_inflight.front().done;
    }

    Millis hangGrace() const { return m_options.commandTimeout.count() > 0 ? m_options.commandTimeout : Millis(2000); }

    void checkTimeouts()
    {
        const auto now = Clock::now();
        while (!m_deadlines.empty() && m_deadlines.top().first <= now) {
            const std::uint64_t seq = m_deadlines.top().second;
            m_deadlines.pop();
            if (m_inflight.empty() || seq < m_inflight.front().seq)
                continue; // answered already
            Request& rq = m_inflight[static_cast<std::size_t>(seq - m_inflight.front().seq)];
            deliver(rq.done, {},
                    std::make_exception_ptr(TimeoutError(where() + ": no reply within " +
                                                         std::to_string(rq.timeout.count()) +
                                                         " ms")));
        }
        // the oldest request timed out and still nothing came: the server is hung, not slow
        if (timedOutFront() && m_inflight.front().deadline + hangGrace() <= now)
            dropConnection(std::make_exception_ptr(
                TimeoutError(where() + ": no reply for " + std::to_string(hangGrace().count()) +
                             " ms after a request timed out: the connection is dropped")));
    }

    void waitForWork()
    {
        auto until = kNever;
        if (!m_deadlines.empty())
            until = m_deadlines.top().first;
        if (timedOutFront())
            until = std::min(until, m_inflight.front().deadline + hangGrace());
        int timeoutMs = -1;
        if (until != kNever)
            timeoutMs = static_cast<int>(std::clamp<long long>(
                std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count() + 1, 0, 60'000));
        pollfd fds[2] = {{m_wakeFd, POLLIN, 0}, {-1, 0, 0}};
        nfds_t n = 1;
        if (m_stream) {
            fds[1].fd = m_stream->fd();
            fds[1].events = POLLIN;
            const bool wantsWrite = (m_outPos < m_out.size() && m_writeWants == Stream::Want::Write) ||
                                    m_readWants == Stream::Want::Write;
            if (wantsWrite)
                fds[1].events |= POLLOUT;
            n = 2;
        }
        {
            std::lock_guard lock(m_mutex);
            if (!m_queued.empty() || m_closed || m_interrupt || m_checkPrimary)
                return;
            m_sleeping = true;
            m_woken = false;
        }
        ::poll(fds, n, timeoutMs);
        bool woken = false;
        {
            std::lock_guard lock(m_mutex);
            m_sleeping = false;
            woken = m_woken;
        }
        if (woken || (fds[0].revents & POLLIN)) {
            std::uint64_t count = 0;
            [[maybe_unused]] const auto r = ::read(m_wakeFd, &count, sizeof count);
        }
    }

    const ConnectionOptions m_options;
    Connection m_connector; // connects (handshake, Sentinel, backoff) and hands the stream over
    const int m_wakeFd;

    std::mutex m_mutex; // guards what callers share with the thread:
    std::deque<Request> m_queued;
    std::string m_queuedBytes;
    bool m_closed = false, m_interrupt = false, m_sleeping = false, m_woken = false, m_checkPrimary = false;

    std::atomic<bool> m_connected{false};
    std::atomic<std::size_t> m_pending{0};

    // the I/O thread's own
    std::unique_ptr<Stream> m_stream;
    std::unique_ptr<redisReader, ReaderDeleter> m_reader;
    std::chrono::steady_clock::time_point m_nextPrimaryCheck{};
    std::string m_out; // written up to m_outPos
    std::size_t m_outPos = 0;
    Stream::Want m_writeWants = Stream::Want::Write, m_readWants = Stream::Want::Read;
    std::vector<char> m_readBuffer;
    std::deque<Request> m_inflight; // written (or being written), in order; seq counts up by one
    std::uint64_t m_nextSeq = 0;
    using Deadline = std::pair<Clock::time_point, std::uint64_t>;
    std::priority_queue<Deadline, std::vector<Deadline>, std::greater<>> m_deadlines;
    std::thread m_thread; // last: started when the rest is ready
};

AsyncConnection::AsyncConnection(ConnectionOptions options) : m_io(std::make_unique<Io>(std::move(options))) {}

AsyncConnection::~AsyncConnection() = default;

void AsyncConnection::send(std::string resp, std::size_t count, RepliesHandler done, Millis timeout)
{
    m_io->enqueue(std::move(resp), count, std::move(done), timeout);
}

void AsyncConnection::command(std::span<const std::string_view> args, ReplyHandler done, Millis timeout)
{
    std::string resp;
    resp::Writer(resp).command(args);
    m_io->enqueue(std::move(resp), 1,
                  [done = std::move(done)](std::vector<ReplyPtr> replies, std::exception_ptr error) {
                      done(replies.empty() ? ReplyPtr() : std::move(replies.front()), std::move(error));
                  },
                  timeout);
}

void AsyncConnection::command(std::initializer_list<std::string_view> args, ReplyHandler done, Millis timeout)
{
    command(std::span<const std::string_view>(args.begin(), args.size()), std::move(done), timeout);
}

std::future<ReplyPtr> AsyncConnection::command(std::initializer_list<std::string_view> args, Millis timeout)
{
    auto promise = std::make_shared<std::promise<ReplyPtr>>();
    auto future = promise->get_future();
    command(args,
            [promise](ReplyPtr r, std::exception_ptr error) {
                if (error)
                    promise->set_exception(std::move(error));
                else
                    promise->set_value(std::move(r));
            },
            timeout);
    return future;
}

std::future<std::vector<ReplyPtr>> AsyncConnection::send(std::string resp, std::size_t count, Millis timeout)
{
    auto promise = std::make_shared<std::promise<std::vector<ReplyPtr>>>();
    auto future = promise->get_future();
    send(std::move(resp), count,
         [promise](std::vector<ReplyPtr> rs, std::exception_ptr error) {
             if (error)
                 promise->set_exception(std::move(error));
             else
                 promise->set_value(std::move(rs));
         },
         timeout);
    return future;
}

void AsyncConnection::interrupt() { m_io->interrupt(); }
void AsyncConnection::checkPrimarySoon() { m_io->checkPrimarySoon(); }
void AsyncConnection::close() { m_io->close(); }
const ConnectionOptions& AsyncConnection::options() const { return m_io->options(); }
bool AsyncConnection::isConnected() const { return m_io->connected(); }
std::size_t AsyncConnection::pending() const { return m_io->pending(); }

AsyncPool::AsyncPool(ConnectionOptions options, std::size_t size)
    : m_routing(std::make_unique<Routing>(*this)), m_options(std::move(options))
{
    if (size == 0)
        size = std::max(1u, std::thread::hardware_concurrency());
    for (std::size_t i = 0; i < size; ++i)
        m_connections.push_back(std::make_unique<AsyncConnection>(m_options));
}

AsyncPool::~AsyncPool()
{
    close(); // every thread stopped (its pending calls failed) while all it may reach for is there
    m_connections.clear();
    m_routing.reset();
}

void AsyncPool::close()
{
    m_routing->closing = true; // no more redirects followed, no pool made for another node
    for (auto& c : m_connections)
        c->close();
    m_routing->closeAll();
}

AsyncConnection& AsyncPool::next()
{
    return *m_connections[m_next.fetch_add(1, std::memory_order_relaxed) % m_connections.size()];
}

void AsyncPool::interruptAll()
{
    for (auto& c : m_connections)
        c->interrupt();
}

void AsyncPool::checkPrimariesSoon()
{
    for (auto& c : m_connections)
        c->checkPrimarySoon();
}

} // namespace idem
