#pragma once

#include "idem/pg/pgstore.h"
#include "pg/pgconnection.h"

#include <atomic>

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

// Several calls of one statement sent as one statement: `statement` takes, for each parameter of
// the single one, an array (binary format) of every call's value, `elementTypes[k]` the k-th
// array's element type (text or bytea, whatever the single statement declares), and answers one
// row per call, in the arrays' order. The calls run in one transaction: one commit, one snapshot,
// one protocol round for all of them on the server.
struct PgBatch {
    const char* statement = nullptr;
    std::vector<Oid> elementTypes;
    std::size_t maxCalls = 256;
};

// One PostgreSQL connection in libpq's pipeline mode, driven by an I/O thread of its own: prepared
// statements are sent as they come, without waiting for the answers before them, each followed by
// a Sync, so each is its own transaction and an error in one leaves the others alone. Calls queued
// while the thread is busy go out together in one write (what submit() chains produce), and the
// server reads them in one read.
//
// Calls sent with a PgBatch are batched: while kBatchesInFlight statements of their kind are under
// way on the connection, they wait, and when an answer comes they go out together (one of them
// alone as the single statement, two or more as the batch statement), ordered by their first
// parameter (the record id), so that two batches lock rows in the same order and cannot deadlock
// each other. A batch the server refuses (a row lock not granted in time, any SQL error) is sent
// again one call at a time, so each call gets the answer it would have had alone.
//
// `done` runs on the I/O thread with the result (binary format, PGRES_TUPLES_OK) and the row that
// answers this call (0 unless batched), or the error, of the kinds PgConnection throws. A
// connection lost fails every call sent on it with ClosedError; the next call connects again (the
// connect, bounded by connect_timeout, runs on the I/O thread). Thread-safe; send() may be called
// from `done`.
class PgPipeline {
public:
    using Done = std::function<void(const PGresult* answer, int row, std::exception_ptr error)>;
    // prepare(c): readies a new connection (prepares the statements) before it enters the pipeline
    // callTimeout: no answer to the oldest call under way for this long, and the connection is
    // taken for hung: closed, its calls failed with TimeoutError
    PgPipeline(std::string conninfo, int connectTimeoutSeconds, std::chrono::milliseconds callTimeout,
               std::function<void(PgConnection&)> prepare);
    ~PgPipeline(); // fails what is still queued or under way with ClosedError, then joins
    PgPipeline(const PgPipeline&) = delete;
    PgPipeline& operator=(const PgPipeline&) = delete;

    void send(const char* statement, std::vector<PgParam> params, Done done, const PgBatch* batch = nullptr);
    // From any thread: shuts the socket down; what is under way fails with ClosedError at once.
    void interrupt();
    PgPipelineCounts counts() const;
    std::size_t pending() const { return m_pending; } // calls sent to it and not answered yet

private:
    struct Call {
        const char* statement = nullptr;
        const PgBatch* batch = nullptr; // null: never batched
        std::vector<PgParam> params;
        Done done;
    };
    // What went out as one statement: a call, or a batch of them
    struct Sent {
        const char* statement = nullptr;
        const PgBatch* kind = nullptr; // its calls' batch, or null
        bool batched = false;
        std::vector<Call> calls;
        PgResultPtr answer{nullptr, &PQclear};
        std::exception_ptr error;
        std::chrono::steady_clock::time_point sentAt;
    };
    void run();
    void sendQueued(std::vector<Call>& calls);
    bool sendOne(Sent s); // false: the connection broke (s's calls are failed)
    bool connect(std::exception_ptr& error);
    void readAnswers();
    void flush();
    void lost(const std::string& why, bool timedOut = false);
    void finish(Sent& s);
    int& inFlight(const PgBatch* kind); // statements of this kind under way

    // statements of one kind under way at once: two, so that the server has the next batch while the
    // answer of the last is read and its calls' next calls made
    static constexpr int kBatchesInFlight = 2;
    void fail(Call& c, const std::exception_ptr& error);

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
    std::deque<Sent> m_sent;
    std::vector<Call> m_held; // batchable calls waiting for their kind's answer
    std::vector<std::pair<const PgBatch*, int>> m_inFlight;
    std::atomic<std::size_t> m_pending{0};
    std::atomic<std::uint64_t> m_statements{0}, m_batches{0}, m_batchedCalls{0}, m_batchesResent{0};
    PgParamArrays m_arrays;
    bool m_wantWrite = false;
    std::thread::id m_ioThread;
    std::thread m_thread; // last: it starts with everything above made
};

} // namespace idem
