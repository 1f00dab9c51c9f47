// idem-console: the operator console. With no server given, it starts its own redis-server on a
// free loopback port with demo traffic, and stops it on exit. --help and --version need no display.
#include "idem/qt/signals.h"
#include "mainwindow.h"
#include "theme.h"

#include "idem/lab/demotraffic.h"
#ifdef IDEM_CONSOLE_HTTP_DEMO
#include "httpdemo.h"
#endif
#include "idem/engine/store.h"
#include "idem/errors.h"
#include "idem/format/record.h"
#include "idem/redis/localserver.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QMessageBox>
#include <algorithm>
#include <cstdio>
#include <memory>

using namespace Qt::StringLiterals;

namespace {
// Qt's own GUI options (-platform offscreen, -style Fusion, ...): QApplication takes them; the
// parser that runs before it must not call them unknown. Those that take a value say so.
const std::pair<const char*, bool> kQtGuiOptions[] = {
    {"platform", true}, {"platformpluginpath", true}, {"platformtheme", true}, {"plugin", true},
    {"qwindowgeometry", true}, {"qwindowtitle", true}, {"qwindowicon", true}, {"style", true},
    {"stylesheet", true}, {"session", true}, {"display", true}, {"reverse", false}, {"widgetcount", false},
};

QStringList withoutQtGuiOptions(const QStringList& args)
{
    QStringList out;
    for (qsizetype i = 0; i < args.size(); ++i) {
        QString a = args[i];
        bool skip = false;
        if (i > 0 && a.startsWith(u'-')) {
            const QString name = a.mid(a.startsWith(u"--"_s) ? 2 : 1).section(u'=', 0, 0);
            for (const auto& [qt, takesValue] : kQtGuiOptions)
                if (name == QLatin1String(qt)) {
                    skip = true;
                    if (takesValue && !a.contains(u'='))
                        ++i;
                }
        }
        if (!skip)
            out << a;
    }
    return out;
}

bool hasDisplay(const QStringList& args)
{
    return !qEnvironmentVariableIsEmpty("DISPLAY") || !qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY") ||
           !qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM") ||
           std::any_of(args.begin(), args.end(), [](const QString& a) { return a == u"-platform" || a == u"--platform"; });
}

struct CommandLine {
    MainWindow::Options options;
    bool noDemo = false;
    theme::Palette palette = theme::Palette::System;
};

// Parses the command line with a QCoreApplication: --help, --version and mistakes are answered
// (and the process ends) before anything needs a display. Returns an exit code, or -1 to go on.
int parseCommandLine(const QCoreApplication& app, CommandLine& cl)
{
    QCommandLineParser parser;
    parser.setApplicationDescription(
        u"Operator console for idem idempotency stores in Redis or PostgreSQL. Without --url (or IDEM_URL) it "
        "starts a private redis-server with demo traffic and stops it on exit."_s);
    const QCommandLineOption help = parser.addHelpOption();
    const QCommandLineOption version = parser.addVersionOption();
    const QCommandLineOption url(u"url"_s,
                                 u"redis://[user:password@]host[:port][/db], rediss://... (TLS), "
                                 "unix:///path.sock[?db=N], redis-sentinel://[user:pw@]h1[:p1],h2[:p2][/db]#PRIMARY "
                                 "or rediss-sentinel://...; a PostgreSQL store: postgresql://[user@]host[:port]/db or "
                                 "\"host=... dbname=...\" (default: $IDEM_URL, else an embedded demo server)"_s,
                                 u"URL"_s);
    const QCommandLineOption tlsCa(u"tls-ca"_s, u"CA bundle that verifies the server (default: the system's)"_s,
                                   u"FILE"_s);
    const QCommandLineOption tlsCert(u"tls-cert"_s, u"Client certificate (servers with tls-auth-clients yes)"_s,
                                     u"FILE"_s);
    const QCommandLineOption tlsKey(u"tls-key"_s, u"The client certificate's key"_s, u"FILE"_s);
    const QCommandLineOption tlsServerName(u"tls-server-name"_s,
                                           u"The name to verify and send as SNI (default: the host)"_s, u"NAME"_s);
    const QCommandLineOption tlsInsecure(u"tls-insecure"_s,
                                         u"Do not verify the server's certificate (a warning is printed, and shown in "
                                         "the window's title and status bar)"_s);
    const QCommandLineOption sentinelPassword(u"sentinel-password"_s, u"The sentinels' own password"_s, u"PW"_s);
    const QCommandLineOption ns(u"namespace"_s, u"Key namespace (default: idempotency)"_s, u"NAME"_s,
                                u"idempotency"_s);
    const QCommandLineOption pattern(u"pattern"_s, u"SCAN MATCH pattern (default: NAMESPACE:*)"_s, u"GLOB"_s);
    const QCommandLineOption format(u"format"_s,
                                    u"Read every key as this library's records: idem, powertools, powertools-python, "
                                    "powertools-java, node-idempotency, express-idempotency, idempotent-request, camel, json, plain "
                                    "(default: each key's own)"_s,
                                    u"NAME"_s);
    const QCommandLineOption table(u"table"_s,
                                   u"With a postgresql:// URL: watch this table another program writes (seed-style "
                                   "idempotency_keys, Brandur Leach's, ...) instead of idem.records; purge is guarded, "
                                   "nothing else is written"_s,
                                   u"[SCHEMA.]NAME"_s);
    const QCommandLineOption readFrom(u"read-from"_s,
                                      u"primary (default) or replica: on a Redis Cluster, scan one replica per shard so "
                                      "that watching adds no load to the primaries (actions still go to the primaries)"_s,
                                      u"NODES"_s, u"primary"_s);
    const QCommandLineOption readOnly(u"read-only"_s,
                                      u"Disable force-fail and purge for this session (the toggle cannot undo it)"_s);
    const QCommandLineOption noDemo(u"no-demo"_s, u"Embedded server without demo traffic"_s);
    const QCommandLineOption audit(u"audit-file"_s, u"Where the audit trail is appended"_s, u"FILE"_s);
    const QCommandLineOption palette(u"palette"_s,
                                     u"system (default), light or dark: the desktop's colours, or Fusion in light or "
                                     "dark colours"_s,
                                     u"NAME"_s, u"system"_s);
    parser.addOptions({url, tlsCa, tlsCert, tlsKey, tlsServerName, tlsInsecure, sentinelPassword, ns, pattern, format,
                       table, readFrom, readOnly, noDemo, audit, palette});
    if (!parser.parse(withoutQtGuiOptions(app.arguments()))) {
        std::fprintf(stderr, "idem-console: %s See --help.\n", qPrintable(parser.errorText()));
        return 64;
    }
    if (parser.isSet(help) || parser.isSet(u"help-all"_s))
        parser.showHelp(0); // exits
    if (parser.isSet(version))
        parser.showVersion(); // exits

    MainWindow::Options& options = cl.options;
    options.connection.url = parser.isSet(url) ? parser.value(url) : qEnvironmentVariable("IDEM_URL");
    options.connection.keyNamespace = parser.value(ns);
    options.connection.pattern = parser.value(pattern);
    options.connection.format = parser.value(format);
    if (const auto f = idem::formatFromString(options.connection.format.toStdString());
        parser.isSet(format) && (!f || !idem::isRedisFormat(*f))) {
        std::fprintf(stderr, "idem-console: --format must be idem, powertools, powertools-python, powertools-java, "
                             "node-idempotency, express-idempotency, idempotent-request, camel, json or plain\n");
        return 64;
    }
    options.connection.table = parser.value(table).trimmed();
    if (parser.isSet(table) && (options.connection.table.isEmpty() || !isPostgresUrl(options.connection.url))) {
        std::fprintf(stderr, "idem-console: --table names a PostgreSQL table: give it with a postgresql:// --url\n");
        return 64;
    }
    const QString nodes = parser.value(readFrom);
    if (nodes != u"primary"_s && nodes != u"replica"_s && nodes != u"primaries"_s && nodes != u"replicas"_s) {
        std::fprintf(stderr, "idem-console: --read-from must be primary or replica\n");
        return 64;
    }
    options.connection.readFromReplicas = nodes.startsWith(u"replica"_s);
    // TLS and Sentinel settings, as idemctl takes them: with a URL they fit, or not at all
    for (const auto& [option, into] : {std::pair{&tlsCa, &options.connection.tlsCa},
                                       std::pair{&tlsCert, &options.connection.tlsCert},
                                       std::pair{&tlsKey, &options.connection.tlsKey},
                                       std::pair{&tlsServerName, &options.connection.tlsServerName},
                                       std::pair{&sentinelPassword, &options.connection.sentinelPassword}}) {
        if (!parser.isSet(*option))
            continue;
        *into = parser.value(*option);
        if (into->isEmpty()) {
            std::fprintf(stderr, "idem-console: --%s must not be empty\n", qPrintable(option->names().constFirst()));
            return 64;
        }
    }
    options.connection.tlsInsecure = parser.isSet(tlsInsecure);
    const bool tlsOrSentinel = parser.isSet(tlsCa) || parser.isSet(tlsCert) || parser.isSet(tlsKey) ||
                               parser.isSet(tlsServerName) || parser.isSet(tlsInsecure) || parser.isSet(sentinelPassword);
    if (tlsOrSentinel && options.connection.url.isEmpty()) {
        std::fprintf(stderr, "idem-console: the --tls-* options and --sentinel-password need --url (or IDEM_URL): "
                             "the embedded demo server speaks plaintext\n");
        return 64;
    }
    try {
        (void)connectionOptions(options.connection);
    } catch (const idem::ConfigError& e) {
        std::fprintf(stderr, "idem-console: --%s: %s\n", e.field().c_str(), e.what());
        return 64;
    } catch (const idem::Error&) {
        // a URL that cannot be used: the window says so and opens Connect to correct it
    }
    if (options.connection.tlsInsecure)
        std::fprintf(stderr, "idem-console: warning: --tls-insecure: the server's certificate is not verified; anyone "
                             "on the path can read and change what the console sends and shows\n");
    options.readOnly = parser.isSet(readOnly);
    options.auditPath = parser.value(audit);
    if (options.connection.keyNamespace.isEmpty() || options.connection.keyNamespace.contains(u'{') ||
        options.connection.keyNamespace.contains(u'}')) {
        std::fprintf(stderr, "idem-console: --namespace must be non-empty and free of '{' and '}'\n");
        return 64;
    }
    const auto p = theme::paletteFromString(parser.value(palette));
    if (!p) {
        std::fprintf(stderr, "idem-console: --palette must be system, light or dark\n");
        return 64;
    }
    cl.palette = *p;
    cl.noDemo = parser.isSet(noDemo);
    return -1;
}
} // namespace

int main(int argc, char** argv)
{
    QCoreApplication::setOrganizationName(u"idem"_s);
    QCoreApplication::setApplicationName(u"idem-console"_s);
    idem::setToolName("idem-console");
    QCoreApplication::setApplicationVersion(u"0.1.0"_s);

    CommandLine cl;
    QStringList arguments;
    {
        QCoreApplication parsing(argc, argv);
        arguments = parsing.arguments();
        if (const int rc = parseCommandLine(parsing, cl); rc >= 0)
            return rc;
    }
    if (!hasDisplay(arguments)) {
        std::fprintf(stderr, "idem-console: no display (DISPLAY and WAYLAND_DISPLAY are unset). Run it on a desktop, "
                             "or in a terminal try: idemctl list, idemctl stats, idemctl demo\n");
        return 1;
    }
    QApplication app(argc, argv);
    theme::apply(cl.palette);
    idem::qt::quitOnSignals(app);
    MainWindow::Options& options = cl.options;

    std::unique_ptr<idem::LocalServer> server;
    std::unique_ptr<idem::DemoTraffic> demo;
#ifdef IDEM_CONSOLE_HTTP_DEMO
    std::unique_ptr<idem::gateway::HttpDemoThread> httpDemo;
#endif
    if (options.connection.url.isEmpty()) {
        try {
            idem::LocalServerOptions lo;
            lo.extraArgs = {"--notify-keyspace-events", "KEA"}; // live updates in the demo
            server = std::make_unique<idem::LocalServer>(lo);
            options.connection.url = QString::fromStdString(server->url());
            if (options.connection.pattern.isEmpty())
                options.connection.pattern = u"*"_s; // a private server: every key on it is the demo's
            if (!cl.noDemo) {
                idem::DemoTrafficOptions dto;
                dto.keyNamespace = options.connection.keyNamespace.toStdString();
                demo = std::make_unique<idem::DemoTraffic>(server->connectionOptions(), dto);
                demo->seed();
                demo->start();
#ifdef IDEM_CONSOLE_HTTP_DEMO
                // HTTP through an embedded gateway, on this private server only: 201s, replays, 409s, 422s
                idem::gateway::HttpDemo::Options ho;
                ho.redis = server->connectionOptions();
                ho.keyNamespace = dto.keyNamespace;
                httpDemo = std::make_unique<idem::gateway::HttpDemoThread>(ho);
                if (QString why; !httpDemo->start(&why)) {
                    std::fprintf(stderr, "idem-console: the HTTP demo did not start: %s\n", qPrintable(why));
                    httpDemo.reset();
                }
#endif
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
#ifdef IDEM_CONSOLE_HTTP_DEMO
    httpDemo.reset();
#endif
    if (demo)
        demo->stop();
    return rc;
}
