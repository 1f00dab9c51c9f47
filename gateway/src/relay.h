#pragma once

#include "idem/engine/asyncstore.h"

#include <QMetaObject>
#include <QObject>

#include <functional>
#include <memory>
#include <mutex>

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
    }
    void post(std::function<void()> f)
    {
        std::lock_guard lock(m_mutex);
        if (m_context)
            QMetaObject::invokeMethod(m_context, std::move(f), Qt::QueuedConnection);
    }
    template <typename T> StoreCallback<T> bind(std::function<void(const T&, std::exception_ptr)> f)
    {
        return [self = shared_from_this(), f = std::move(f)](T value, std::exception_ptr error) {
            self->post([f, value = std::move(value), error] { f(value, error); });
        };
    }

private:
    std::mutex m_mutex;
    QObject* m_context;
};

} // namespace idem::gateway
