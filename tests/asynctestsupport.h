// What the asynchronous core's tests share (tst_async.cpp, tst_asyncexec.cpp): quick connection
// options, a namespace's store options, a future's error as text, a thread-pool runner, and
// counters read from the server's INFO.
#pragma once

#include "idem/engine/asyncstore.h"
#include "idem/engine/executor.h"
#include "idem/errors.h"
#include "idem/redis/asyncconnection.h"
#include "idem/redis/localserver.h"
#include "testsupport.h"


#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace asynctest {
inline idem::ConnectionOptions quick(idem::ConnectionOptions o, int commandMs = 1000)
{
    o.connectTimeout = idem::Millis(300);
    o.commandTimeout = idem::Millis(commandMs);
    o.reconnectMin = idem::Millis(20);
    o.reconnectMax = idem::Millis(200);
    return o;
}

inline idem::StoreOptions ns(std::string name, idem::Millis lease = idem::Millis(30000))
{
    idem::StoreOptions o;
    o.keyNamespace = std::move(name);
    o.lease = lease;
    return o;
}

inline std::string text(const idem::ReplyPtr& r) { return idem::reply::str(r.get()); }

// the error a future holds, as its message; "" when it holds a value
template <typename T>
std::string errorOf(std::future<T>& f, bool* timeout = nullptr, bool* closed = nullptr)
{
    try {
        f.get();
        return {};
    } catch (const idem::TimeoutError& e) {
        if (timeout)
            *timeout = true;
        return e.what();
    } catch (const idem::ClosedError& e) {
        if (closed)
            *closed = true;
        return e.what();
    } catch (const idem::Error& e) {
        return e.what();
    }
}

// Threads that run posted tasks (work that sleeps must not hold an I/O thread). Not Qt's global
// pool: ThreadSanitizer cannot see the synchronisation inside Qt (its mutexes are futexes in an
// uninstrumented library), so a task posted from an I/O thread read as a race with its creation.
class TaskThreads {
public:
    explicit TaskThreads(int n)
    {
        for (int i = 0; i < n; ++i)
            m_threads.emplace_back([this] { loop(); });
    }
    ~TaskThreads()
    {
        {
            std::lock_guard lock(m_mutex);
            m_stop = true;
        }
        m_wake.notify_all();
        for (auto& t : m_threads)
            t.join();
    }
    void post(std::function<void()> task)
    {
        {
            std::lock_guard lock(m_mutex);
            m_tasks.push_back(std::move(task));
        }
        m_wake.notify_one();
    }

private:
    void loop()
    {
        while (true) {
            std::function<void()> task;
            {
                std::unique_lock lock(m_mutex);
                m_wake.wait(lock, [this] { return m_stop || !m_tasks.empty(); });
                if (m_tasks.empty())
                    return;
                task = std::move(m_tasks.front());
                m_tasks.pop_front();
            }
            task();
        }
    }
    std::mutex m_mutex;
    std::condition_variable m_wake;
    std::deque<std::function<void()>> m_tasks;
    bool m_stop = false;
    std::vector<std::thread> m_threads;
};

inline void onPool(std::function<void()> task)
{
    static TaskThreads threads(4);
    threads.post(std::move(task));
}

inline long long infoField(idem::Connection& c, const char* section, const std::string& field)
{
    const std::string info = text(c.checked({"INFO", section}));
    const auto at = info.find(field + ":");
    if (at == std::string::npos)
        return 0;
    const auto count = info.find("count=", at);
    return count == std::string::npos ? 0 : std::atoll(info.c_str() + count + 6);
}
template <typename T>
bool ready(std::future<T>& f, int ms)
{
    return f.wait_for(std::chrono::milliseconds(ms)) == std::future_status::ready;
}

inline long long evalshaCalls(idem::Connection& admin)
{
    const std::string stats = text(admin.checked({"INFO", "commandstats"}));
    const auto at = stats.find("cmdstat_evalsha:calls=");
    return at == std::string::npos ? 0LL : std::atoll(stats.c_str() + at + 22);
}
} // namespace asynctest
