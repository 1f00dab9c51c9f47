#include "idem/qt/submit.h"

#include "idem/errors.h"

#include <QMetaObject>
#include <QPointer>

#include <memory>
#include <mutex>

namespace idem::qt {

namespace {
// The context as the I/O threads may see it: a pointer that the context's destroyed() clears under
// the same mutex that guards posting to it. A completion is posted while the mutex is held, so the
// context cannot finish dying in between; what was posted and not delivered yet is discarded by
// ~QObject with the context's other posted events.
struct Relay {
    std::mutex mutex;
    QObject* context = nullptr;
    QMetaObject::Connection watch;
};
} // namespace

Completion onThreadOf(QObject* context, std::function<void(const Outcome&)> callback)
{
    if (!context)
        throw UsageError("idem::qt: a completion needs a context object");
    auto relay = std::make_shared<Relay>();
    relay->context = context;
    relay->watch = QObject::connect(
        context, &QObject::destroyed, context,
        [relay] {
            std::lock_guard lock(relay->mutex);
            relay->context = nullptr;
        },
        Qt::DirectConnection);
    return [relay, callback = std::move(callback)](Outcome outcome) {
        std::lock_guard lock(relay->mutex);
        if (!relay->context)
            return;
        QObject::disconnect(relay->watch); // one completion per execution
        QMetaObject::invokeMethod(
            relay->context,
            [guard = QPointer<QObject>(relay->context), callback, outcome = std::move(outcome)] {
                if (guard)
                    callback(outcome);
            },
            Qt::QueuedConnection);
    };
}

void submit(Executor& executor, std::string_view id, std::string_view payload, Work work, QObject* context,
            std::function<void(const Outcome&)> callback, const ExecuteOptions& options)
{
    executor.submit(id, payload, std::move(work), onThreadOf(context, std::move(callback)), options);
}

} // namespace idem::qt
