#pragma once

#include "idem/engine/asyncstore.h"

#include <QMetaObject>
#include <QObject>

#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace idem::gateway {

// Answers of the async store (they come on a connection's I/O thread) handed to the gateway's
// thread as queued calls, and not at all once the gateway closes the relay (its destructor does,
// first): what was posted and not delivered yet goes with the gateway's other posted events.
class Relay : public std::enable_shared_from_this<Relay> {
public:
    explicit Relay(QObject* context) : m_context(context) {}
    void close()
    {
        std::lock_guard lock(m_mutex);
        m_context = nullptr;
        m_pending.clear();
    }
    // Answers that arrive while earlier ones wait for the gateway's thread join them: one queued
    // call (one wake-up of that thread) runs them all, in the order they came.
    void post(std::function<void()> f)
    {
        std::lock_guard lock(m_mutex);
        if (!m_context)
            return;
        m_pending.push_back(std::move(f));
        if (m_pending.size() == 1)
            QMetaObject::invokeMethod(m_context, [self = shared_from_this()] { self->drain(); }, Qt::QueuedConnection);
    }
    template <typename T> StoreCallback<T> bind(std::function<void(const T&, std::exception_ptr)> f)
    {
        return [self = shared_from_this(), f = std::move(f)](T value, std::exception_ptr error) {
            self->post([f, value = std::move(value), error] { f(value, error); });
        };
    }

private:
    void drain()
    {
        std::vector<std::function<void()>> batch;
        {
            std::lock_guard lock(m_mutex);
            batch.swap(m_pending);
        }
        for (auto& f : batch)
            f();
    }

    std::mutex m_mutex;
    QObject* m_context;
    std::vector<std::function<void()>> m_pending;
};

} // namespace idem::gateway
