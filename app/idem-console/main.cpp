// idem-console: the operator console. With no server given, it starts its own redis-server on a
// free loopback port with demo traffic, and stops it on exit.
#include "mainwindow.h"

#include "idem/lab/demotraffic.h"
#include "idem/errors.h"
#include "idem/format/record.h"
#include "idem/redis/localserver.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QMessageBox>
#include <QSocketNotifier>
#include <csignal>
#include <cstdio>
#include <memory>
#include <unistd.h>

using namespace Qt::StringLiterals;

namespace {
int g_signalPipe[2] = {-1, -1};

// SIGINT / SIGTERM end the event loop, so the embedded redis-server and the demo stop cleanly.
void quitOnSignals(QApplication& app)
{
    if (::pipe(g_signalPipe) != 0)
        return;
    auto* notifier = new QSocketNotifier(g_signalPipe[0], QSocketNotifier::Read, &app);
    QObject::connect(notifier, &QSocketNotifier::activated, &app, [] { QApplication::quit(); });
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
} // namespace

int main(int argc, char** argv)
{
    QApplication app(argc, argv);
    QApplication::setOrganizationName(u"idem"_s);
    QApplication::setApplicationName(u"idem-console"_s);
    QApplication::setApplicationVersion(u"0.1.0"_s);

    QCommandLineParser parser;
    parser.setApplicationDescription(
        u"Operator console for idem idempotency stores in Redis. Without --url (or IDEM_URL) it "
        "starts a private redis-server with demo traffic and stops it on exit."_s);
    parser.addHelpOption();
    parser.addVersionOption();
    const QCommandLineOption url(u"url"_s, u"redis://[user:password@]host:port/db or unix:///path.sock"_s, u"URL"_s);
    const QCommandLineOption ns(u"namespace"_s, u"Key namespace (default: idempotency)"_s, u"NAME"_s,
                                u"idempotency"_s);
    const QCommandLineOption pattern(u"pattern"_s, u"SCAN MATCH pattern (default: NAMESPACE:*)"_s, u"GLOB"_s);
    const QCommandLineOption format(u"format"_s,
                                    u"Read every key as this library's records: idem, powertools, powertools-python, "
                                    "node-idempotency, express-idempotency, idempotent-request, camel, json, plain "
                                    "(default: each key's own)"_s,
                                    u"NAME"_s);
    const QCommandLineOption readOnly(u"read-only"_s, u"Disable force-fail and purge"_s);
    const QCommandLineOption noDemo(u"no-demo"_s, u"Embedded server without demo traffic"_s);
    const QCommandLineOption audit(u"audit-file"_s, u"Where the audit trail is appended"_s, u"FILE"_s);
    parser.addOptions({url, ns, pattern, format, readOnly, noDemo, audit});
    parser.process(app);
    quitOnSignals(app);

    MainWindow::Options options;
    options.connection.url = parser.isSet(url) ? parser.value(url) : qEnvironmentVariable("IDEM_URL");
    options.connection.keyNamespace = parser.value(ns);
    options.connection.pattern = parser.value(pattern);
    options.connection.format = parser.value(format);
    if (const auto f = idem::formatFromString(options.connection.format.toStdString());
        parser.isSet(format) && (!f || *f == idem::RecordFormat::Unknown)) {
        std::fprintf(stderr, "idem-console: --format must be idem, powertools, powertools-python, node-idempotency, "
                             "express-idempotency, idempotent-request, camel, json or plain\n");
        return 64;
    }
    options.readOnly = parser.isSet(readOnly);
    options.auditPath = parser.value(audit);
    if (options.connection.keyNamespace.isEmpty() || options.connection.keyNamespace.contains(u'{') ||
        options.connection.keyNamespace.contains(u'}')) {
        std::fprintf(stderr, "idem-console: --namespace must be non-empty and free of '{' and '}'\n");
        return 64;
    }

    std::unique_ptr<idem::LocalServer> server;
    std::unique_ptr<idem::DemoTraffic> demo;
    if (options.connection.url.isEmpty()) {
        try {
            idem::LocalServerOptions lo;
            lo.extraArgs = {"--notify-keyspace-events", "KEA"}; // live updates in the demo
            server = std::make_unique<idem::LocalServer>(lo);
            options.connection.url = QString::fromStdString(server->url());
            if (options.connection.pattern.isEmpty())
                options.connection.pattern = u"*"_s; // a private server: every key on it is the demo's
            if (!parser.isSet(noDemo)) {
                idem::DemoTrafficOptions dto;
                dto.keyNamespace = options.connection.keyNamespace.toStdString();
                demo = std::make_unique<idem::DemoTraffic>(server->connectionOptions(), dto);
                demo->seed();
                demo->start();
            }
            options.titleNote = u"embedded demo redis-server (pid %1, stops on exit)"_s.arg(server->pid());
        } catch (const idem::Error& e) {
            std::fprintf(stderr, "idem-console: cannot start the embedded redis-server: %s\n", e.what());
            QMessageBox::critical(nullptr, u"idem console"_s,
                                  u"Cannot start the embedded redis-server:\n%1\n\nInstall redis-server, or "
                                  "start idem-console with --url."_s.arg(QString::fromUtf8(e.what())));
            return 69;
        }
    }

    MainWindow window(options);
    window.show();
    const int rc = QApplication::exec();
    if (demo)
        demo->stop();
    return rc;
}
