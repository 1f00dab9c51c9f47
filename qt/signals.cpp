#include "idem/qt/signals.h"

#include <QCoreApplication>
#include <QSocketNotifier>

#include <csignal>
#include <utility>
#include <unistd.h>

namespace idem::qt {

namespace {
int g_signalPipe[2] = {-1, -1};
}

void quitOnSignals(QCoreApplication& app, std::function<void()> first)
{
    if (::pipe(g_signalPipe) != 0)
        return;
    auto* notifier = new QSocketNotifier(g_signalPipe[0], QSocketNotifier::Read, &app);
    QObject::connect(notifier, &QSocketNotifier::activated, &app, [first = std::move(first)]() mutable {
        char c;
        (void)!::read(g_signalPipe[0], &c, 1);
        if (first)
            return std::exchange(first, nullptr)();
        QCoreApplication::quit();
    });
    struct sigaction sa {};
    sa.sa_handler = [](int) {
        const char c = 1;
        (void)!::write(g_signalPipe[1], &c, 1);
    };
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
}

} // namespace idem::qt
