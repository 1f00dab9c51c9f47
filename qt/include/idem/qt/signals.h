#pragma once

class QCoreApplication;

namespace idem::qt {

// SIGINT and SIGTERM end `app`'s event loop (through a self-pipe: nothing but write() runs in the
// handler), so that what the program started - a private redis-server, demo traffic - stops cleanly.
void quitOnSignals(QCoreApplication& app);

} // namespace idem::qt
