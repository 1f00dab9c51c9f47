// Links idem::qt from the installed package: a completion wrapped for a QObject's thread.
#include "idem/qt/submit.h"

#include <QCoreApplication>
#include <QObject>

#include <cstdio>

int main(int argc, char** argv)
{
    QCoreApplication app(argc, argv);
    QObject context;
    bool ran = false;
    idem::Completion done = idem::qt::onThreadOf(&context, [&](const idem::Outcome&) {
        ran = true;
        app.quit();
    });
    done(idem::Outcome{});
    app.exec();
    std::printf("qt completion delivered: %s\n", ran ? "yes" : "no");
    return ran ? 0 : 1;
}
