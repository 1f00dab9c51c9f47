#pragma once

#include "pg/pgconnection.h"

#include <chrono>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace idem {

// One PostgreSQL connection in libpq's pipeline mode, driven by an I/O thread of its own: prepared
// statements are sent as they come, without waiting for the answers before them, each followed by
// a Sync, so each is its own transaction and an error in one leaves the others alone. Calls queued
// while the thread is busy go out together in one write (what submit() chains produce), and the
// server reads them in one read.
//
// `done` runs on the I/O thread with the result (binary format, PGRES_TUPLES_OK) or the error, of
// the kinds PgConnection throws. A connection lost fails every call sent on it with ClosedError;
// the next call connects again (the connect, bounded by connect_timeout, runs on the I/O thread).
// Thread-safe; send() may be called from `done`.
class PgPipeline {
public:
    using Done = std::function<void(PgResultPtr, std::exception_ptr)>;
    // prepare(c): readies a new connection (prepares the statements) before it enters the pipeline
    // callTimeout: no answer to the oldest call under way for this long, and the connection is
    // taken for hung: closed, its calls failed with TimeoutError
    PgPipeline(std::string conninfo, int connectTimeoutSeconds, std::chrono::milliseconds callTimeout,
               std::function<void(PgConnection&)> prepare);
    ~PgPipeline(); // fails what is still queued or under way with ClosedError, then joins
    PgPipeline(const PgPipeline&) = delete;
    PgPipeline& operator=(const PgPipeline&) = delete;

    void send(const char* statement, std::vector<PgParam> params, Done done);
    // From any thread: shuts the socket down; what is under way fails with ClosedError at once.
    void interrupt();

private:
    struct Call {
        const char* statement = nullptr;
        std::vector<PgParam> params;
        Done done;
        PgResultPtr answer{nullptr, &PQclear};
        std::exception_ptr error;
        std::chrono::steady_clock::time_point sentAt;
    };
    void run();
    void sendQueued(std::vector<Call>& calls);
    bool connect(std::exception_ptr& error);
    void readAnswers();
    void flush();
    void lost(const std::string& why, bool timedOut = false);
    static void finish(Call& c);
    static void fail(Call& c, const std::exception_ptr& error); // finish() with this error

    const std::string m_conninfo;
    const int m_connectTimeout;
    const std::chrono::milliseconds m_callTimeout;
    const std::function<void(PgConnection&)> m_prepare;
    int m_wake = -1; // eventfd: calls queued, or stop

    std::mutex m_mutex; // m_queue, m_stop, m_conn's pointer (interrupt reads it)
    std::vector<Call> m_queue;
    bool m_stop = false;
    std::unique_ptr<PgConnection> m_conn;

    // the I/O thread's own
    std::deque<Call> m_sent;
    bool m_wantWrite = false;
    std::thread::id m_ioThread;
    std::thread m_thread; // last: it starts with everything above made
};

} // namespace idem
