#include "idem/gateway/options.h"

#include "idem/errors.h"
#include "idem/gateway/listenertls.h"
#include "idem/redis/connectionflags.h"

#include <QCommandLineParser>
#include <QFile>
#include <QSslSocket>

#include <cstdio>

using namespace Qt::StringLiterals;

namespace idem::gateway {

namespace {

struct Bad {
    QString message;
};

std::string str(const QString& s) { return s.toStdString(); }

void hostPort(const QString& text, const char* flag, QHostAddress& host, quint16& port)
{
    const qsizetype colon = text.lastIndexOf(u':');
    QString h = colon < 0 ? QString() : text.left(colon);
    if (h.startsWith(u'[') && h.endsWith(u']'))
        h = h.mid(1, h.size() - 2);
    bool ok = false;
    const uint p = text.mid(colon + 1).toUInt(&ok);
    if (colon < 0 || !ok || p > 65535)
        throw Bad{QString::fromLatin1(flag) + u" must be HOST:PORT (port 0 to 65535), not '"_s + text + u"'"_s};
    if (h.isEmpty() || h == u"*"_s)
        host = QHostAddress::Any;
    else if (h == u"localhost"_s)
        host = QHostAddress::LocalHost;
    else if (!host.setAddress(h))
        throw Bad{QString::fromLatin1(flag) + u" needs an IP address as HOST, not '"_s + h + u"'"_s};
    port = static_cast<quint16>(p);
}

template <typename F> auto checked(const char* flag, F&& f)
{
    try {
        return f();
    } catch (const UsageError& e) {
        throw Bad{QString::fromLatin1(flag) + u": "_s + QString::fromUtf8(e.what())};
    }
}

} // namespace

RoutePolicy defaultPolicy(const GatewayOptions& o)
{
    RoutePolicy r;
    r.methods = o.methods;
    r.requireKey = o.requireKey;
    r.lease = o.lease;
    r.retention = o.retention;
    r.stored = defaultStored(o.store5xx);
    r.replayed = defaultReplayed();
    r.fingerprinted = o.fingerprintHeaders;
    r.maxBody = o.maxBody;
    return r;
}

int parseCommandLine(const QStringList& arguments, GatewayOptions& o)
{
    QCommandLineParser p;
    p.setApplicationDescription(
        u"An HTTP reverse proxy that gives an upstream Idempotency-Key semantics on Redis (idem's state "
        "machine): a retried request is answered from the stored answer, a concurrent one with 409, a key reused "
        "with another request with 422. Without --url (or IDEM_URL) it starts a private redis-server and prints "
        "its URL."_s);
    const auto help = p.addHelpOption();
    const auto version = p.addVersionOption();
    const QCommandLineOption upstream(u"upstream"_s, u"The service behind the gateway: http://HOST:PORT[/base]"_s, u"URL"_s);
    const QCommandLineOption listen(u"listen"_s, u"Where clients connect (default 127.0.0.1:8080; port 0: any)"_s,
                                    u"HOST:PORT"_s);
    const QCommandLineOption listenCert(u"listen-cert"_s,
                                        u"The listener speaks TLS with this PEM certificate (its chain after it)"_s,
                                        u"FILE"_s);
    const QCommandLineOption listenKey(u"listen-key"_s, u"The PEM private key of --listen-cert"_s, u"FILE"_s);
    const QCommandLineOption admin(u"admin-listen"_s, u"/metrics, /healthz and /policy (default: none)"_s, u"HOST:PORT"_s);
    const QCommandLineOption url(u"url"_s,
                                 u"Redis: redis://[user:password@]host[:port][/db], rediss://..., unix:///path.sock, "
                                 "redis-sentinel://h1[:p1],h2[:p2][/db]#PRIMARY (default: $IDEM_URL, else a private "
                                 "redis-server)"_s,
                                 u"URL"_s);
    const QCommandLineOption tlsCa(u"tls-ca"_s, u"Redis TLS: CA bundle that verifies the server"_s, u"FILE"_s);
    const QCommandLineOption tlsCert(u"tls-cert"_s, u"Redis TLS: client certificate"_s, u"FILE"_s);
    const QCommandLineOption tlsKey(u"tls-key"_s, u"Redis TLS: the client certificate's key"_s, u"FILE"_s);
    const QCommandLineOption tlsName(u"tls-server-name"_s, u"Redis TLS: the name to verify and send as SNI"_s, u"NAME"_s);
    const QCommandLineOption tlsInsecure(u"tls-insecure"_s, u"Redis TLS: do not verify the server's certificate"_s);
    const QCommandLineOption sentinelPw(u"sentinel-password"_s, u"The sentinels' own password"_s, u"PW"_s);
    const QCommandLineOption ns(u"namespace"_s, u"Key namespace (default: idempotency)"_s, u"NAME"_s);
    const QCommandLineOption requireKey(u"require-key"_s, u"400 for a request of a protected method without a key"_s);
    const QCommandLineOption methods(u"methods"_s, u"Protected methods (default: POST,PATCH); others pass through"_s,
                                     u"LIST"_s);
    const QCommandLineOption lease(u"lease"_s, u"How long a request holds its key without renewal (default: 30s)"_s,
                                   u"DUR"_s);
    const QCommandLineOption retention(u"retention"_s, u"How long an answer is kept for replay (default: 24h)"_s,
                                       u"DUR"_s);
    const QCommandLineOption maxBody(u"max-body"_s, u"Largest request body; larger: 413 (default: 1MiB)"_s, u"SIZE"_s);
    const QCommandLineOption maxResponse(u"max-response"_s,
                                         u"Largest upstream answer; larger: 502 and the key released (default: 8MiB)"_s,
                                         u"SIZE"_s);
    const QCommandLineOption scope(u"key-scope"_s,
                                   u"Whose keys: authorization (default: a digest of the Authorization header), "
                                   "header:NAME, or none"_s,
                                   u"SCOPE"_s);
    const QCommandLineOption fingerprintHeaders(
        u"fingerprint-headers"_s,
        u"Request headers that make a retry another request, comma-separated (e.g. X-Api-Version); with the same "
        "key and another value: 422 (default: none; method, path, query and body always count)"_s,
        u"LIST"_s);
    const QCommandLineOption store5xx(u"store-5xx"_s, u"Store and replay 5xx answers too (default: release the key)"_s);
    const QCommandLineOption failOpen(u"fail-open"_s, u"Redis unreachable: forward unprotected (default: 503)"_s);
    const QCommandLineOption minReplicas(u"min-replicas"_s,
                                         u"A key is taken, and an answer stored, once N replicas have it (WAIT); "
                                         "fewer: 503 before the upstream runs (default: 0)"_s,
                                         u"N"_s);
    const QCommandLineOption replicaTimeout(u"replica-timeout"_s,
                                            u"How long each WAIT of --min-replicas waits (default: 1s)"_s, u"DUR"_s);
    const QCommandLineOption upstreamTimeout(u"upstream-timeout"_s, u"Longest wait for the upstream (default: 30s)"_s,
                                             u"DUR"_s);
    const QCommandLineOption idleTimeout(u"idle-timeout"_s, u"Idle client connections close after (default: 60s)"_s,
                                         u"DUR"_s);
    const QCommandLineOption headerTimeout(u"header-timeout"_s,
                                           u"A request's head must be in this long after its first byte, or 408 and the "
                                           "connection closed (default: 10s)"_s,
                                           u"DUR"_s);
    const QCommandLineOption bodyTimeout(u"body-timeout"_s,
                                         u"A request's body must be in this long after its head, or 408 and the "
                                         "connection closed (default: 60s)"_s,
                                         u"DUR"_s);
    const QCommandLineOption maxConnections(u"max-connections"_s,
                                            u"Client connections at once; beyond, new ones wait in the listen queue "
                                            "until one closes (default: half the open-file limit less 64, at most "
                                            "10000)"_s,
                                            u"N"_s);
    const QCommandLineOption waitInProgress(u"wait-in-progress"_s,
                                            u"A duplicate of a request in flight waits up to DUR for its answer "
                                            "(default: 409 at once)"_s,
                                            u"DUR"_s);
    const QCommandLineOption drainTimeout(u"drain-timeout"_s,
                                          u"SIGTERM or SIGINT: stop listening and let requests under way end for up "
                                          "to DUR, then exit; a second signal exits at once; exit 1 if requests were "
                                          "cut off (default: 20s)"_s,
                                          u"DUR"_s);
    const QCommandLineOption policyLink(u"policy-link"_s,
                                        u"URL of the published policy, linked from 400 answers (default: the admin "
                                        "listener's /policy for clients on this machine, else the draft)"_s,
                                        u"URL"_s);
    const QCommandLineOption config(u"config"_s,
                                    u"Per-route policies (JSON: method(s) + path prefix -> methods, key required, "
                                    "retention, lease, statuses stored, headers replayed, max body); the flags are "
                                    "the default"_s,
                                    u"FILE"_s);
    p.addOptions({config, upstream, listen, listenCert, listenKey, admin, url, tlsCa, tlsCert, tlsKey, tlsName, tlsInsecure, sentinelPw, ns, requireKey,
                  methods, lease, retention, maxBody, maxResponse, scope, fingerprintHeaders, store5xx, failOpen, minReplicas, replicaTimeout,
                  upstreamTimeout,
                  idleTimeout, headerTimeout, bodyTimeout, maxConnections, drainTimeout, waitInProgress, policyLink});
    if (!p.parse(arguments)) {
        // in the words of the other errors, not Qt's ("Unknown option 'x'.")
        const QStringList unknown = p.unknownOptionNames();
        QString why = p.errorText();
        if (!unknown.isEmpty()) {
            // the argument as it was given ("-bogus" is parsed as -b -o -g ...: name all of it)
            QString given = (unknown.first().size() == 1 ? u"-"_s : u"--"_s) + unknown.first();
            for (qsizetype i = 1; i < arguments.size() && arguments[i] != u"--"_s; ++i) {
                const QString a = arguments[i].section(u'=', 0, 0);
                if (a.startsWith(u'-') && a != u"-"_s &&
                    (a.mid(a.startsWith(u"--"_s) ? 2 : 1) == unknown.first() ||
                     (!a.startsWith(u"--"_s) && a.contains(unknown.first())))) {
                    given = a;
                    break;
                }
            }
            why = u"unknown option "_s + given;
        }
        if (why.endsWith(u'.'))
            why.chop(1);
        if (!why.isEmpty())
            why[0] = why[0].toLower();
        std::fprintf(stderr, "idem-gateway: %s (see --help)\n", qPrintable(why));
        return 64;
    }
    if (p.isSet(help)) {
        std::fputs(qPrintable(p.helpText()), stdout);
        return 0;
    }
    if (p.isSet(version)) {
        std::printf("idem-gateway %s\n", qPrintable(QCoreApplication::applicationVersion()));
        return 0;
    }
    try {
        if (!p.positionalArguments().isEmpty())
            throw Bad{u"unexpected argument '"_s + p.positionalArguments().constFirst() + u"'"_s};
        if (!p.isSet(upstream))
            throw Bad{u"--upstream URL is required"_s};
        o.upstream = QUrl(p.value(upstream), QUrl::StrictMode);
        if (!o.upstream.isValid() || (o.upstream.scheme() != u"http"_s && o.upstream.scheme() != u"https"_s) ||
            o.upstream.host().isEmpty() || o.upstream.hasQuery() || o.upstream.hasFragment() ||
            !o.upstream.userInfo().isEmpty())
            throw Bad{u"--upstream must be http://HOST[:PORT][/base] or https://..., not '"_s + p.value(upstream) + u"'"_s};
        if (p.isSet(listen))
            hostPort(p.value(listen), "--listen", o.listenHost, o.listenPort);
        if (p.isSet(listenCert) != p.isSet(listenKey))
            throw Bad{u"--listen-cert and --listen-key go together"_s};
        if (p.isSet(listenCert)) {
            if (!QSslSocket::supportsSsl()) {
                std::fprintf(stderr, "idem-gateway: --listen-cert: this Qt has no TLS backend (%s)\n",
                             qPrintable(QSslSocket::activeBackend()));
                return 69;
            }
            QSslConfiguration tls;
            QString why;
            if (!loadListenerTls(p.value(listenCert), p.value(listenKey), tls, &why))
                throw Bad{why};
            o.listenTls = tls;
        }
        if (p.isSet(admin)) {
            o.admin = true;
            hostPort(p.value(admin), "--admin-listen", o.adminHost, o.adminPort);
        }
        ConnectionFlags flags;
        const QString envUrl = qEnvironmentVariable("IDEM_URL");
        o.urlGiven = p.isSet(url) || !envUrl.isEmpty();
        flags.url = o.urlGiven ? str(p.isSet(url) ? p.value(url) : envUrl) : "redis://127.0.0.1:6379/0";
        const auto opt = [&](const QCommandLineOption& f) {
            return p.isSet(f) ? std::optional<std::string>(str(p.value(f))) : std::nullopt;
        };
        flags.tlsCa = opt(tlsCa);
        flags.tlsCert = opt(tlsCert);
        flags.tlsKey = opt(tlsKey);
        flags.tlsServerName = opt(tlsName);
        flags.sentinelPassword = opt(sentinelPw);
        flags.tlsInsecure = p.isSet(tlsInsecure);
        if (!o.urlGiven && (flags.tlsCa || flags.tlsCert || flags.tlsKey || flags.tlsServerName ||
                            flags.sentinelPassword || flags.tlsInsecure))
            throw Bad{u"the --tls-* options and --sentinel-password need --url (the private redis-server speaks "
                      "plaintext)"_s};
        o.connection = checked("--url", [&] { return connectionFromFlags(flags); });
        if (p.isSet(ns))
            o.keyNamespace = str(p.value(ns));
        if (o.keyNamespace.empty() || o.keyNamespace.find_first_of("{}") != std::string::npos)
            throw Bad{u"--namespace must be non-empty and free of '{' and '}'"_s};
        if (p.isSet(methods)) {
            o.methods.clear();
            for (const QString& m : p.value(methods).split(u',')) {
                const QString t = m.trimmed().toUpper();
                const bool token = !t.isEmpty() && std::all_of(t.begin(), t.end(), [](QChar c) {
                    return (c >= u'A' && c <= u'Z') || c == u'-' || c == u'_';
                });
                if (!token)
                    throw Bad{u"--methods must be a comma-separated list of methods (POST,PATCH,...), not '"_s +
                              p.value(methods) + u"'"_s};
                o.methods.insert(str(t));
            }
        }
        o.requireKey = p.isSet(requireKey);
        const auto duration = [&](const QCommandLineOption& f, const char* name, Millis& into) {
            if (!p.isSet(f))
                return;
            into = checked(name, [&] { return parseDuration(str(p.value(f))); });
            if (into.count() <= 0)
                throw Bad{QString::fromLatin1(name) + u" must be longer than 0"_s};
        };
        duration(lease, "--lease", o.lease);
        duration(retention, "--retention", o.retention);
        duration(upstreamTimeout, "--upstream-timeout", o.upstreamTimeout);
        duration(idleTimeout, "--idle-timeout", o.idleTimeout);
        duration(headerTimeout, "--header-timeout", o.headerTimeout);
        duration(bodyTimeout, "--body-timeout", o.bodyTimeout);
        if (p.isSet(maxConnections)) {
            bool ok = false;
            const qlonglong n = p.value(maxConnections).toLongLong(&ok);
            if (!ok || n < 1 || n > 1'000'000)
                throw Bad{u"--max-connections must be a number from 1 to 1000000, not '"_s + p.value(maxConnections) +
                          u"'"_s};
            o.maxConnections = static_cast<std::size_t>(n);
        }
        duration(drainTimeout, "--drain-timeout", o.drainTimeout);
        duration(waitInProgress, "--wait-in-progress", o.waitInProgress);
        const auto size = [&](const QCommandLineOption& f, const char* name, std::size_t& into) {
            if (!p.isSet(f))
                return;
            into = checked(name, [&] { return parseSize(str(p.value(f))); });
            if (into == 0 || into > (std::size_t(1) << 30))
                throw Bad{QString::fromLatin1(name) + u" must be from 1 byte to 1GiB"_s};
        };
        size(maxBody, "--max-body", o.maxBody);
        size(maxResponse, "--max-response", o.maxResponse);
        if (p.isSet(scope)) {
            const auto s = parseKeyScope(str(p.value(scope)));
            if (!s)
                throw Bad{u"--key-scope must be authorization, header:NAME or none, not '"_s + p.value(scope) + u"'"_s};
            o.scope = *s;
        }
        if (p.isSet(fingerprintHeaders)) {
            std::vector<std::string> names;
            for (const QString& n : p.value(fingerprintHeaders).split(u','))
                names.push_back(str(n.trimmed()));
            std::string why;
            const auto list = gateway::fingerprintHeaders(std::move(names), &why);
            if (!list)
                throw Bad{u"--fingerprint-headers: "_s + QString::fromStdString(why)};
            o.fingerprintHeaders = *list;
        }
        o.store5xx = p.isSet(store5xx);
        o.failOpen = p.isSet(failOpen);
        if (p.isSet(minReplicas)) {
            bool ok = false;
            o.minReplicas = p.value(minReplicas).toInt(&ok);
            if (!ok || o.minReplicas < 0 || o.minReplicas > 100) // 0: off, as without the flag
                throw Bad{u"--min-replicas must be a number of replicas from 0 (off) to 100, not '"_s +
                          p.value(minReplicas) + u"'"_s};
        }
        if (p.isSet(replicaTimeout) && !p.isSet(minReplicas))
            throw Bad{u"--replica-timeout goes with --min-replicas N"_s};
        duration(replicaTimeout, "--replica-timeout", o.replicaTimeout);
        o.policyLink = p.value(policyLink);
        if (p.isSet(config)) {
            QFile f(p.value(config));
            if (!f.open(QIODevice::ReadOnly))
                throw Bad{u"--config "_s + p.value(config) + u": cannot read it: "_s + f.errorString()};
            QString why;
            if (!parseRoutes(f.readAll(), defaultPolicy(o), o.routes, &why))
                throw Bad{u"--config "_s + p.value(config) + u": "_s + why};
        }
    } catch (const Bad& b) {
        std::fprintf(stderr, "idem-gateway: %s\n", qPrintable(b.message));
        return 64;
    }
    if (o.connection.tls.insecure)
        std::fprintf(stderr, "idem-gateway: warning: --tls-insecure: Redis's certificate is not verified\n");
    return -1;
}

} // namespace idem::gateway
