#pragma once

#include <functional>

class QCoreApplication;

namespace idem::qt {

// SIGINT and SIGTERM end `app`'s event loop (through a self-pipe: nothing but write() runs in the
// handler), so that what the program started - a private redis-server, demo traffic - stops cleanly.
// With `first`, the first signal calls it instead (a graceful stop that quits when it is done),
// and a second one quits at once.
void quitOnSignals(QCoreApplication& app, std::function<void()> first = {});

} // namespace idem::qt
