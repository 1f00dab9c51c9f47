// idem-gateway: an HTTP reverse proxy that gives any upstream Idempotency-Key semantics on Redis.
// Without --url (or IDEM_URL) it starts a private redis-server and prints its URL, so that
// idem-console --url URL can watch the keys it writes.
#include "idem/qt/signals.h"
#include "idem/duration.h"
#include "idem/engine/scripts.h"
#include "idem/errors.h"
#include "idem/gateway/gateway.h"
#include "idem/redis/connection.h"
#include "idem/redis/localserver.h"
#include "idem/redis/reply.h"

#include <QCoreApplication>

#include <csignal>
#include <chrono>
#include <cstdio>
#include <thread>
#include <memory>
#include <optional>
#include <string>

using namespace Qt::StringLiterals;

namespace {
QString hostPort(const QHostAddress& h, quint16 port)
{
    const QString host = h == QHostAddress::Any ? u"0.0.0.0"_s : h.toString();
    return (h.protocol() == QAbstractSocket::IPv6Protocol ? u'[' + host + u']' : host) + u':' + QString::number(port);
}

// One connection before anything listens. What retrying cannot fix (a refused password, a
// certificate, a missing database) ends the gateway here, when it is deployed, rather than
// answering every request with 503. A server not up yet is only said: the gateway fails closed
// until it answers, and a supervisor may well start Redis after it. A likely cause read from a
// symptom (a TLS session closed before its first answer: a client certificate missing, whose
// alert the reset can overtake; sentinels that know no such primary) is asked again, five times
// over about two seconds: the same answer every time ends the gateway too.
// 0: go on; else the exit code (77: credentials refused, as idemctl says it; 69: another setting)
int redisUsable(const idem::ConnectionOptions& options, bool failOpen)
{
    const char* until = failOpen ? "protected requests go to the upstream unprotected (--fail-open)"
                                 : "protected requests get 503";
    constexpr int kTries = 5;
    for (int attempt = 1;; ++attempt) {
        try {
            idem::Connection(options).connect();
            return 0;
        } catch (const idem::ConfigError& e) {
            if (e.certain() || attempt == kTries) {
                std::fprintf(stderr, "idem-gateway: %s (check %s%s)\n", e.what(), e.field().c_str(),
                             e.certain() ? "" : "; the same answer five times in two seconds");
                const std::string_view what = e.what();
                const bool credentials = what.find("WRONGPASS") != what.npos || what.find("NOAUTH") != what.npos;
                return credentials ? 77 : 69;
            }
        } catch (const idem::Error& e) {
            std::fprintf(stderr, "idem-gateway: warning: %s; %s until it answers\n", e.what(), until);
            return 0;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100 * attempt));
    }
}

// What the gateway needs of Redis, the service role's (`idemctl acl service`): its scripts, and the
// keys of its namespace. A user without them would answer every protected request 503: said in
// words before anything listens, exit 77. (SCRIPT LOAD of acquire.lua writes no key; EXISTS reads
// one of the namespace, where the ACL's key patterns are checked.)
std::optional<std::string> missingPermission(const idem::ConnectionOptions& options, const std::string& ns)
{
    try {
        idem::Connection c(options);
        const std::string probe = ns + ":{idem-gateway-startup-check}";
        const auto replies = c.pipeline({{"SCRIPT", "LOAD", idem::scripts::acquire().source}, {"EXISTS", probe}});
        for (const auto& r : replies) {
            const std::string error(idem::reply::isError(r.get()) ? idem::reply::errorText(r.get()) : "");
            if (!error.starts_with("NOPERM"))
                continue;
            const std::string who = options.user.empty() ? "default" : options.user;
            const auto quote = error.find("'"), end = quote == std::string::npos ? quote : error.find("'", quote + 1);
            const std::string what = end == std::string::npos ? "keys under '" + ns + ":'"
                                                              : "the '" + error.substr(quote + 1, end - quote - 1) + "' command";
            return "user '" + who + "' may not use " + what + " (NOPERM), which the gateway needs; the service role of "
                   "the namespace has it: see `idemctl --namespace " + ns + " acl service --help`";
        }
    } catch (const idem::Error&) {
        // not answering now: the gateway fails closed until it does (redisUsable said so)
    }
    return std::nullopt;
}

// "1 request", "3 requests"
std::string requests(std::size_t n) { return std::to_string(n) + (n == 1 ? " request" : " requests"); }

} // namespace

int main(int argc, char** argv)
{
    // Qt's own event dispatcher, not GLib's: it writes its eventfd once per wake-up where GLib's
    // writes it for every event posted (each store answer), a system call each on a busy gateway
    if (!qEnvironmentVariableIsSet("QT_NO_GLIB"))
        qputenv("QT_NO_GLIB", "1");
    QCoreApplication app(argc, argv);
    QCoreApplication::setOrganizationName(u"idem"_s);
    QCoreApplication::setApplicationName(u"idem-gateway"_s);
    QCoreApplication::setApplicationVersion(u"0.1.0"_s);
    std::signal(SIGPIPE, SIG_IGN);

    idem::gateway::GatewayOptions options;
    if (const int rc = idem::gateway::parseCommandLine(QCoreApplication::arguments(), options); rc >= 0)
        return rc;

    std::unique_ptr<idem::LocalServer> server;
    if (!options.urlGiven) {
        try {
            idem::LocalServerOptions lo;
            lo.extraArgs = {"--notify-keyspace-events", "KEA"}; // the console shows changes live
            server = std::make_unique<idem::LocalServer>(lo);
            options.connection = server->connectionOptions();
        } catch (const idem::Error& e) {
            std::fprintf(stderr, "idem-gateway: cannot start the private redis-server: %s (install redis-server, or "
                                 "give --url)\n", e.what());
            return 69;
        }
        std::printf("redis: %s (private, stops with the gateway; watch it: idem-console --url %s --namespace %s)\n",
                    server->url().c_str(), server->url().c_str(), options.keyNamespace.c_str());
    } else {
        if (const int rc = redisUsable(options.connection, options.failOpen); rc != 0)
            return rc;
        if (const auto why = missingPermission(options.connection, options.keyNamespace)) {
            std::fprintf(stderr, "idem-gateway: %s\n", why->c_str());
            return 77;
        }
        std::printf("redis: %s\n", options.connection.describe().c_str());
    }
    idem::gateway::Gateway gateway(options);
    // a rollout's SIGTERM: requests under way end and are stored, then the gateway exits
    QObject::connect(&gateway, &idem::gateway::Gateway::drained, &app, &QCoreApplication::quit);
    idem::qt::quitOnSignals(app, [&gateway, &options] {
        const std::size_t n = gateway.inFlight();
        if (n == 0)
            std::printf("draining: no new connections; nothing under way\n");
        else
            std::printf("draining: no new connections; %s under way %s within %s (a second signal: exit now)\n",
                        requests(n).c_str(), n == 1 ? "ends" : "end", idem::formatDuration(options.drainTimeout).c_str());
        std::fflush(stdout);
        gateway.drain(options.drainTimeout);
    });
    QString error;
    if (!gateway.start(&error)) {
        std::fprintf(stderr, "idem-gateway: %s\n", qPrintable(error));
        return 69;
    }
    std::printf("listening: %s://%s -> %s\n", options.listenTls ? "https" : "http", qPrintable(hostPort(options.listenHost, gateway.port())),
                qPrintable(options.upstream.toString()));
    if (options.admin)
        std::printf("admin: http://%s (/metrics /healthz /policy)\n",
                    qPrintable(hostPort(options.adminHost, gateway.adminPort())));
    std::fflush(stdout);
    const int rc = QCoreApplication::exec();
    // a drain that ended with requests under way (its timeout, or a second signal) cut them off: a
    // supervisor is told, in the exit code and in words
    const std::size_t n = gateway.drainTimedOut() ? gateway.cutOff() : gateway.inFlight();
    if (n > 0) {
        const std::string how = gateway.drainTimedOut()
                                    ? "the drain timed out after " + idem::formatDuration(options.drainTimeout)
                                    : std::string("stopped by a second signal");
        std::fprintf(stderr, "idem-gateway: %s: %s cut off (a key taken keeps its lease; a retry takes it "
                             "over when the lease runs out)\n",
                     how.c_str(), requests(n).c_str());
        return 1;
    }
    return rc;
}
