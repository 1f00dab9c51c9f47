#pragma once

#include "idem/redis/connection.h"

#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

namespace idem {

// A fixed-size, thread-safe pool of Connections, created lazily.
class ConnectionPool {
public:
    class Handle {
    public:
        Handle(ConnectionPool* pool, std::unique_ptr<Connection> c) : m_pool(pool), m_conn(std::move(c)) {}
        Handle(Handle&&) noexcept = default;
        Handle& operator=(Handle&&) = delete;
        ~Handle();
        Connection* operator->() const { return m_conn.get(); }
        Connection& operator*() const { return *m_conn; }

    private:
        ConnectionPool* m_pool;
        std::unique_ptr<Connection> m_conn;
    };

    explicit ConnectionPool(ConnectionOptions options, std::size_t size = 8);
    // Waits up to the command timeout for a free connection; throws TimeoutError after that.
    Handle acquire();
    const ConnectionOptions& options() const { return m_options; }
    std::size_t size() const { return m_size; }
    // Thread-safe: ends every call blocked on one of the pool's connections (Connection::interrupt;
    // those calls fail, and their connections reconnect on next use). For shutting down.
    void interruptAll();

private:
    void release(std::unique_ptr<Connection> c);

    ConnectionOptions m_options;
    std::size_t m_size;
    std::size_t m_created = 0;
    std::vector<std::unique_ptr<Connection>> m_idle;
    std::vector<Connection*> m_all; // every connection made; they live as long as the pool
    std::mutex m_mutex;
    std::condition_variable m_cv;
};

} // namespace idem
