#pragma once

#include "idem/engine/executor.h"

#include <QObject>

#include <functional>
#include <string_view>

namespace idem::qt {

// Executor::submit() whose completion runs on `context`'s thread (a queued call), and not at all
// once `context` is destroyed - also when that happens while the execution is in flight, on any
// thread. The work itself runs where options.runOn says (e.g. QThreadPool::globalInstance()->start).
void submit(Executor& executor, std::string_view id, std::string_view payload, Work work, QObject* context,
            std::function<void(const Outcome&)> callback, const ExecuteOptions& options = {});

// The same for any completion: wraps `callback` so that it runs on `context`'s thread, or not at all.
Completion onThreadOf(QObject* context, std::function<void(const Outcome&)> callback);

} // namespace idem::qt
