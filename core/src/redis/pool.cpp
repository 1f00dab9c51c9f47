#include "idem/redis/pool.h"

#include "idem/errors.h"

namespace idem {

ConnectionPool::ConnectionPool(ConnectionOptions options, std::size_t size)
    : m_options(std::move(options)), m_size(size == 0 ? 1 : size)
{
}

ConnectionPool::Handle::~Handle()
{
    if (m_pool && m_conn)
        m_pool->release(std::move(m_conn));
}

ConnectionPool::Handle ConnectionPool::acquire()
{
    std::unique_lock lock(m_mutex);
    const auto deadline = std::chrono::steady_clock::now() + m_options.commandTimeout;
    while (m_idle.empty() && m_created >= m_size) {
        if (m_cv.wait_until(lock, deadline) == std::cv_status::timeout && m_idle.empty() &&
            m_created >= m_size)
            throw TimeoutError("all " + std::to_string(m_size) +
                               " pooled Redis connections stayed busy for " +
                               std::to_string(m_options.commandTimeout.count()) + " ms");
    }
    if (!m_idle.empty()) {
        auto c = std::move(m_idle.back());
        m_idle.pop_back();
        return Handle(this, std::move(c));
    }
    ++m_created;
    auto c = std::make_unique<Connection>(m_options);
    m_all.push_back(c.get());
    return Handle(this, std::move(c));
}

void ConnectionPool::interruptAll()
{
    std::lock_guard lock(m_mutex);
    for (Connection* c : m_all)
        c->interrupt();
}

void ConnectionPool::release(std::unique_ptr<Connection> c)
{
    {
        std::lock_guard lock(m_mutex);
        m_idle.push_back(std::move(c));
    }
    m_cv.notify_one();
}

} // namespace idem
