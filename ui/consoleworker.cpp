#include "consoleworker.h"

#include "logging.h"
#include "qstd.h"

#include "idem/errors.h"
#include "idem/monitor/keyspacelistener.h"
#include "idem/monitor/monitor.h"
#include "idem/monitor/scanner.h"
#include "idem/engine/store.h"
#include "idem/pg/pgstore.h"
#include "idem/pg/pgtable.h"
#include "idem/pg/pgwatch.h"

#include <QDateTime>
#include <QSocketNotifier>
#include <QUuid>

using namespace Qt::StringLiterals;

namespace {
constexpr int kMaxRetryDelayMs = 10'000;
constexpr int kMaxFailoverRetryDelayMs = 2'000;
constexpr int kResyncWithNotificationsMs = 60'000;
} // namespace

idem::ConnectionOptions connectionOptions(const ConnectionSettings& settings)
{
    if (isPostgresUrl(settings.url))
        throw idem::UsageError("a PostgreSQL store has no Redis connection options");
    idem::ConnectionOptions o = idem::ConnectionOptions::fromUrl(settings.url.trimmed().toStdString());
    if (o.user.empty())
        o.user = settings.user.toStdString();
    if (o.password.empty())
        o.password = settings.password.toStdString();
    const std::string url = o.describe();
    const auto tls = [&](const QString& value, std::string& into, const char* field, const char* what) {
        if (value.isEmpty())
            return;
        if (!o.tls.enabled)
            throw idem::ConfigError(std::string(what) + " is given, but " + url +
                                        " is not a TLS URL: use rediss:// (or rediss-sentinel://), or leave it empty",
                                    field);
        into = value.toStdString();
    };
    tls(settings.tlsCa, o.tls.caFile, "tls-ca", "a CA file");
    tls(settings.tlsCert, o.tls.certFile, "tls-cert", "a client certificate");
    tls(settings.tlsKey, o.tls.keyFile, "tls-key", "a client key");
    tls(settings.tlsServerName, o.tls.serverName, "tls-server-name", "a TLS server name");
    if (settings.tlsInsecure) {
        if (!o.tls.enabled)
            throw idem::ConfigError("no verification is asked for, but " + url + " is not a TLS URL", "tls-insecure");
        o.tls.insecure = true;
    }
    if (!settings.sentinelPassword.isEmpty()) {
        if (!o.viaSentinel())
            throw idem::ConfigError("a Sentinel password is given, but " + url + " is not a redis-sentinel:// URL",
                                    "sentinel-password");
        o.sentinel.password = settings.sentinelPassword.toStdString();
    }
    return o;
}

QString settingToFix(const std::exception& e, const QString& server, QString* message)
{
    const QString raw = QString::fromUtf8(e.what());
    QString field;
    if (const auto* config = dynamic_cast<const idem::ConfigError*>(&e))
        field = qs(config->field());
    else if (dynamic_cast<const idem::ReplyError*>(&e) && (raw.contains(u"NOAUTH"_s) || raw.contains(u"WRONGPASS"_s)))
        field = u"password"_s;
    else if (dynamic_cast<const idem::ReplyError*>(&e) && raw.contains(u"NOPERM"_s))
        field = u"user"_s;
    if (field.isEmpty() || !message)
        return field;
    QString said = raw.section(u": "_s, -1); // the server's own words
    QString reason = raw;                    // ours, without "Redis at URL: " in front
    while (reason.startsWith(u"Redis at "_s) && reason.contains(u": "_s))
        reason = reason.section(u": "_s, 1);
    QString what;
    bool ours = false; // the reason is the console's (TLS, Sentinel), not an answer of the server
    if (raw.contains(u"NOAUTH"_s) && field != u"sentinel-password"_s)
        what = u"%1 needs a password, and none was given."_s;
    else if (raw.contains(u"without any password configured"_s) && field != u"sentinel-password"_s)
        what = u"%1 has no password set, but a password was given."_s;
    else if ((raw.contains(u"WRONGPASS"_s) || raw.contains(u"invalid password"_s)) && field != u"sentinel-password"_s)
        what = u"%1 refused the user name or password."_s;
    else if (raw.contains(u"NOPERM"_s))
        what = u"The user may not run a command the console needs on %1 (NOPERM). The monitor role has what the "
               u"console reads: idemctl acl monitor."_s;
    else if (field == u"url"_s && raw.contains(u"TLS"_s)) { // a TLS port for redis://, or the reverse
        what = u"%1 and the server do not agree on TLS."_s;
        ours = true;
    } else if (field.startsWith(u"tls-"_s) || raw.contains(u"TLS"_s)) {
        what = u"A TLS connection to %1 cannot be made with these settings."_s;
        ours = true;
    } else if (field == u"sentinel"_s) {
        what = u"No sentinel of %1 knows the primary named after “#” in the URL."_s;
        ours = true;
    } else if (field == u"sentinel-password"_s) {
        what = u"The sentinels of %1 refused the Sentinel password."_s;
        ours = true;
    } else if (field == u"url"_s)
        what = u"%1 cannot be used as given: the URL names something the server does not have."_s;
    else
        what = u"%1 refused the connection settings."_s;
    static const QHash<QString, QString> kFieldNames = {
        {u"password"_s, u"password"_s},
        {u"user"_s, u"ACL user"_s},
        {u"url"_s, u"URL"_s},
        {u"tls-ca"_s, u"CA file"_s},
        {u"tls-cert"_s, u"client certificate"_s},
        {u"tls-key"_s, u"client key"_s},
        {u"tls-server-name"_s, u"server name"_s},
        {u"tls-insecure"_s, u"“no verification” choice"_s},
        {u"sentinel"_s, u"primary's name in the URL"_s},
        {u"sentinel-password"_s, u"Sentinel password"_s}};
    *message = what.arg(server) + (ours ? u" Retrying will not change that: correct the %1 in Connect (Ctrl+O). Why: %2"_s
                                        : u" Retrying will not change that: correct the %1 in Connect (Ctrl+O). The server said: %2"_s)
                                      .arg(kFieldNames.value(field, field), ours ? reason : said);
    return field;
}

ConsoleWorker::ConsoleWorker()
{
    qRegisterMetaType<KeyRow>();
    qRegisterMetaType<QVector<KeyRow>>();
    qRegisterMetaType<ScanSummary>();
    qRegisterMetaType<ConnectionSettings>();
    qRegisterMetaType<ActionResult>();
    qRegisterMetaType<QVector<StoreAuditRow>>();
    m_rescanTimer = new QTimer(this);
    connect(m_rescanTimer, &QTimer::timeout, this, &ConsoleWorker::rescan);
    m_retryTimer = new QTimer(this);
    m_retryTimer->setSingleShot(true);
    connect(m_retryTimer, &QTimer::timeout, this, &ConsoleWorker::connectNow);
    m_dirtyTimer = new QTimer(this);
    m_dirtyTimer->setSingleShot(true);
    connect(m_dirtyTimer, &QTimer::timeout, this, &ConsoleWorker::flushDirty);
    m_heartbeatTimer = new QTimer(this);
    m_heartbeatTimer->setInterval(kHeartbeatMs);
    connect(m_heartbeatTimer, &QTimer::timeout, this, &ConsoleWorker::beat);
}

ConsoleWorker::~ConsoleWorker() { close(); }

idem::Monitor& ConsoleWorker::monitor() { return *m_monitor; }

void ConsoleWorker::stopListeners()
{
    for (auto& [node, l] : m_listeners)
        l->stop();
    m_listeners.clear();
    m_listenedFor.clear();
    // What they said and was not read yet goes with them (a notification still queued for a key
    // of a node that just died would be read after the reconnect, on that node): the next
    // listen() comes with a scan, which reads every key
    ++m_listenEpoch;
    m_dirty.clear();
    m_dirtyTimer->stop();
}

void ConsoleWorker::setLive(bool live, const QString& detail, bool interrupted)
{
    if (live == m_live && detail == m_liveDetail)
        return;
    const bool changed = live != m_live;
    m_live = live;
    m_liveDetail = detail;
    Q_EMIT liveUpdates(live, detail, interrupted);
    if (changed || !m_rescanTimer->isActive())
        m_rescanTimer->start(live ? kResyncWithNotificationsMs : m_settings.rescanIntervalMs);
}

void ConsoleWorker::listen()
{
    if (!m_scanner || !m_monitor)
        return;
    const bool cluster = m_scanner->cluster();
    const std::vector<std::string> nodes = cluster ? m_scanner->nodes() : std::vector<std::string>{std::string()};
    m_listenedFor = nodes;
    // a node no longer read (a failover moved its slots): its listener goes
    for (auto it = m_listeners.begin(); it != m_listeners.end();) {
        if (std::find(nodes.begin(), nodes.end(), it->first) == nodes.end()) {
            it->second->stop();
            it = m_listeners.erase(it);
        } else {
            ++it;
        }
    }
    if (!m_listenAgain)
        return; // notifications are off on the server: the interval rescan says so already
    QStringList unreachable;
    for (const std::string& node : nodes) {
        auto& l = m_listeners[node];
        if (l && l->running())
            continue;
        // each node sends its own keys' notifications only: one subscription per node read
        idem::ConnectionOptions lo = m_scanner->optionsFor(node); // one server: the seed's own
        lo.readOnly = false;                                      // a subscription reads no key
        l = std::make_unique<idem::KeyspaceListener>(
            lo, m_monitor->pattern(),
            [this, epoch = m_listenEpoch](const std::string& key, const std::string&) {
                QMetaObject::invokeMethod(
                    this,
                    [this, epoch, k = qs(key)] {
                        if (epoch == m_listenEpoch) // else: its listener was stopped since
                            noteDirty(k);
                    },
                    Qt::QueuedConnection);
            },
            [this] { // its node dropped or hung: said now, not at the next heartbeat
                QMetaObject::invokeMethod(
                    this,
                    [this] {
                        if (m_conn && m_link == Link::Connected)
                            checkListeners();
                    },
                    Qt::QueuedConnection);
            });
        if (m_subscribedTo.contains(node))
            l->setSubscribedBefore(); // a node hanging up now is going away, not a TLS port
        std::string why;
        {
            std::lock_guard lock(m_ioMutex); // abortIo() reaches it from here
            if (m_aborting)
                return;
            m_subscribing = l.get();
        }
        const bool started = l->start(&why);
        {
            std::lock_guard lock(m_ioMutex);
            m_subscribing = nullptr;
        }
        if (m_aborting)
            return; // closing: neither live nor not
        if (started) {
            m_subscribedTo.insert(node);
            continue;
        }
        if (!l->unreachable()) { // notifications off, or not allowed: a setting, the same on every node
            m_listenAgain = false;
            stopListeners();
            // why first: where the status bar cuts the line, what to change on the server is still read
            setLive(false, u"%1: rescanning every %2 s"_s.arg(qs(why), QString::number(m_settings.rescanIntervalMs / 1000.0)),
                    false);
            return;
        }
        m_listeners.erase(node);
        // the error's last words: the node is named already, the status bar has little room
        unreachable << (cluster ? u"%1 (%2)"_s.arg(qs(node), qs(why).section(u": "_s, -1)) : qs(why));
    }
    if (unreachable.isEmpty()) {
        setLive(true, u"keyspace notifications"_s, false);
        return;
    }
    if (!connectionAnswers())
        return; // the node unreachable is the one connected through: lost, and reconnecting
    qCInfo(lcWorker).noquote() << "no keyspace notifications from" << unreachable.join(u"; "_s);
    setLive(false, u"no notifications from %1: rescanning every %2 s"_s.arg(
                       unreachable.join(u", "_s), QString::number(m_settings.rescanIntervalMs / 1000.0)),
            true);
}

void ConsoleWorker::checkListeners()
{
    QStringList stopped;
    for (auto it = m_listeners.begin(); it != m_listeners.end();) {
        if (it->second->running()) {
            ++it;
            continue;
        }
        const QString why = qs(it->second->endedWhy()).section(u": "_s, -1);
        stopped << (it->first.empty() ? why : u"%1 (%2)"_s.arg(qs(it->first), why));
        it->second->stop();
        it = m_listeners.erase(it);
    }
    if (stopped.isEmpty())
        return;
    if (!connectionAnswers())
        return; // the node that stopped is the one connected through: lost, and reconnecting
    qCWarning(lcWorker).noquote() << "keyspace notifications stopped:" << stopped.join(u"; "_s);
    // what those nodes' keys do now is seen by reading them again, until notifications are back
    setLive(false, u"notifications from %1 lost: rescanning every %2 s"_s.arg(
                       stopped.join(u", "_s), QString::number(m_settings.rescanIntervalMs / 1000.0)),
            true);
    rescan();
}

bool ConsoleWorker::connectionAnswers()
{
    try {
        m_conn->command({"PING"}); // (an error reply is an answer too)
        return true;
    } catch (const idem::Error& e) {
        failed(e);
        return false;
    }
}

KeyRow ConsoleWorker::rowOf(const idem::Record& r, std::int64_t serverNowMs)
{
    KeyRow row = KeyRow::fromRecord(r, serverNowMs, m_monitor->options().keyNamespace);
    if (!r.node.empty()) {
        auto [at, added] = m_nodeIndex.try_emplace(r.node, static_cast<quint8>(std::min<std::size_t>(m_nodeIndex.size() + 1, 255)));
        if (added) {
            m_nodeNames << qs(r.node);
            Q_EMIT nodesChanged(m_nodeNames);
        }
        row.node = at->second;
    }
    return row;
}

void ConsoleWorker::abortIo()
{
    m_aborting = true;
    std::lock_guard lock(m_ioMutex);
    if (m_conn)
        m_conn->interrupt();
    if (m_pool)
        m_pool->interruptAll();
    if (m_scanner)
        m_scanner->interrupt();
    if (m_subscribing) // a node that hangs keeps a subscription waiting for seconds
        m_subscribing->interrupt();
    // PostgreSQL: libpq waits on a hung server for ever; its sockets are shut down instead
    if (m_pg)
        m_pg->interrupt();
    if (m_pgWatch)
        m_pgWatch->interrupt();
    if (m_pgTable)
        m_pgTable->interrupt();
}

void ConsoleWorker::dropIo()
{
    delete m_pgNotifier; // before the connection whose socket it watches
    m_pgNotifier = nullptr;
    std::unique_ptr<idem::PgWatch> watch;
    std::unique_ptr<idem::PgStore> pg;
    std::unique_ptr<idem::PgTable> table;
    {
        std::lock_guard lock(m_ioMutex); // abortIo() reaches them until here
        watch = std::move(m_pgWatch);
        pg = std::move(m_pg);
        table = std::move(m_pgTable);
    }
    watch.reset(); // (says goodbye to the server: outside the lock, as a Redis call would be)
    m_store.reset();
    std::lock_guard lock(m_ioMutex);
    m_pool.reset();
    m_monitor = nullptr;
    m_scanner.reset();
    m_conn.reset();
}

void ConsoleWorker::open(const ConnectionSettings& settings)
{
    close();
    m_settings = settings;
    m_endpoint.clear(); // a primary lost later is a failover; before the first, only unreachable
    m_clusterNodes.clear();
    m_urlEndpoint.clear();
    m_subscribedTo.clear();
    m_aborting = false;
    m_retryDelayMs = 500;
    connectNow();
}

void ConsoleWorker::close()
{
    stopListeners();
    m_rescanTimer->stop();
    m_retryTimer->stop();
    m_dirtyTimer->stop();
    m_heartbeatTimer->stop();
    dropIo();
    m_scanning = false;
    m_rescanQueued = false;
    m_waitingForGui = false;
    if (m_link != Link::Disconnected) {
        m_link = Link::Disconnected;
        Q_EMIT linkChanged(m_link, u"disconnected"_s);
    }
}

void ConsoleWorker::connectNow()
{
    stopListeners();
    if (isPostgresUrl(m_settings.url)) {
        pgConnectNow();
        return;
    }
    idem::ConnectionOptions o;
    try {
        o = connectionOptions(m_settings);
    } catch (const idem::ConfigError& e) {
        QString message;
        refuse(settingToFix(e, qs(idem::ConnectionOptions::fromUrl(m_settings.url.trimmed().toStdString()).describe()),
                            &message),
               message); // (the URL parsed: a ConfigError comes after that)
        return;
    } catch (const idem::Error& e) {
        refuse(u"url"_s, u"The URL cannot be used: %1. Correct it in Connect (Ctrl+O)."_s.arg(qs(e.what())));
        return;
    }
    m_viaSentinel = o.viaSentinel();
    o.connectTimeout = idem::Millis(1500);
    o.commandTimeout = idem::Millis(3000);
    m_link = Link::Connecting;
    Q_EMIT linkChanged(m_link, u"connecting to %1"_s.arg(qs(o.describe())));
    // A cluster the console has read: when the URL's node does not answer, the cluster may still
    // serve (a replica promoted in its place), so the other nodes it knew are tried in turn
    const std::string urlNode = o.host + ':' + std::to_string(o.port);
    std::vector<std::string> others;
    for (const std::string& node : m_clusterNodes)
        if (node != urlNode && node != m_urlEndpoint)
            others.push_back(node);
    idem::ConnectionOptions at = o;
    QString urlDown; // why the URL's node could not be used, when another is
    for (std::size_t next = 0;; ++next) {
        try {
            connectTo(at);
            break;
        } catch (const idem::IoError& e) {
            if (next >= others.size() || m_aborting) {
                if (next == 0)
                    failed(e);
                else
                    lost(u"%1, and no other node of the cluster answered"_s.arg(urlDown));
                return;
            }
            if (next == 0)
                urlDown = qs(e.what());
            qCInfo(lcWorker).noquote() << "cluster: trying" << qs(others[next]) << "after" << qs(e.what());
            dropIo();
            at = idem::optionsAtNode(o, others[next]);
        } catch (const idem::Error& e) {
            failed(e);
            return;
        }
    }
    m_retryDelayMs = 500;
    m_link = Link::Connected;
    m_endpoint = qs(m_conn->endpoint());
    if (urlDown.isEmpty())
        m_urlEndpoint = m_conn->endpoint();
    if (m_scanner->cluster())
        m_clusterNodes = m_scanner->clusterNodes();
    // the node used first: where the status bar cuts the line, it is still read
    Q_EMIT linkChanged(m_link, m_viaSentinel        ? u"connected to primary %2 through %1"_s.arg(qs(o.describe()), m_endpoint)
                               : !urlDown.isEmpty() ? u"connected through node %1: %2 does not answer (%3)"_s.arg(
                                                          m_endpoint, qs(o.describe()), urlDown)
                                                    : u"connected to %1"_s.arg(qs(o.describe())));
    probeWriteAccess();
    m_heartbeatTimer->start();

    // Live updates: keyspace notifications if the server sends them (never turned on by us),
    // subscribed by rescan() before it reads the keys
    m_rescanTimer->stop();
    m_live = false;
    m_liveDetail.clear();
    m_listenAgain = true;
    rescan();
}

void ConsoleWorker::connectTo(const idem::ConnectionOptions& o)
{
    {
        std::lock_guard lock(m_ioMutex);
        m_conn = std::make_unique<idem::Connection>(o);
    }
    if (!m_endpoint.isEmpty()) // a reconnect: a node hanging up now is going away, not a TLS port
        m_conn->setAnsweredBefore();
    m_conn->connect();
    m_conn->checked({"PING"}); // a server that wants a password says so here (NOAUTH)
    idem::MonitorOptions mo;
    mo.keyNamespace = m_settings.keyNamespace.toStdString();
    if (!m_settings.format.isEmpty())
        mo.format = idem::formatFromString(m_settings.format.toStdString());
    mo.pattern = m_settings.pattern.toStdString();
    mo.scanCount = static_cast<std::size_t>(std::clamp(m_settings.scanCount, 10, 5000));
    {
        std::lock_guard lock(m_ioMutex);
        idem::ScannerOptions so;
        so.readFrom = m_settings.readFromReplicas ? idem::ReadFrom::Replicas : idem::ReadFrom::Primaries;
        m_scanner = std::make_unique<idem::Scanner>(o, mo, so);
    }
    m_scanner->open(); // on a cluster: the topology, from any node given
    m_monitor = &m_scanner->seedMonitor();
    m_nodeIndex.clear();
    m_nodeNames.clear();
    Q_EMIT nodesChanged(m_nodeNames);
    {
        std::lock_guard lock(m_ioMutex);
        m_pool = std::make_unique<idem::ConnectionPool>(o, 1);
    }
    idem::StoreOptions so;
    so.keyNamespace = mo.keyNamespace;
    m_store = std::make_unique<idem::Store>(*m_pool, so);
}

void ConsoleWorker::failed(const idem::Error& e)
{
    QString message;
    const QString field = settingToFix(e, qs(m_conn ? m_conn->options().describe() : std::string()), &message);
    if (field.isEmpty())
        lost(qs(e.what()));
    else
        refuse(field, message);
}

void ConsoleWorker::refuse(const QString& field, const QString& message)
{
    qCWarning(lcWorker).noquote() << "not retrying:" << message;
    stopListeners();
    m_rescanTimer->stop();
    m_retryTimer->stop();
    m_heartbeatTimer->stop();
    dropIo();
    m_scanning = false;
    m_waitingForGui = false;
    m_link = Link::Refused;
    Q_EMIT linkChanged(m_link, message);
    Q_EMIT refused(field, message);
}

void ConsoleWorker::beat()
{
    if (onPostgres() && m_link == Link::Connected) {
        if (m_scanning)
            return;
        try {
            if (m_pgWatch)
                m_pgWatch->renewIfDue();
            Q_EMIT heartbeat(pgServerNowMs());
        } catch (const idem::Error& e) {
            pgFailed(e);
        }
        return;
    }
    if (!m_conn || m_link != Link::Connected)
        return;
    checkListeners(); // also while scanning: a scan of a failing-over shard takes seconds
    // A scan's pages are the news; not on a cluster, where they come from every node but the one
    // connected through may be dead (the scan follows the failover): that node is asked anyway
    if (!m_conn || m_link != Link::Connected || (m_scanning && !(m_scanner && m_scanner->cluster())))
        return;
    try {
        // through Sentinel, a primary that was replaced may go on answering reads as a replica:
        // the sentinels are asked whether it is still the one
        if (m_viaSentinel && !m_conn->checkPrimary()) {
            lost(u"the sentinels named another primary"_s);
            return;
        }
        const auto t = m_conn->checked({"TIME"});
        Q_EMIT heartbeat(idem::reply::timeMs(t.get()));
    } catch (const idem::Error& e) {
        failed(e);
    }
}

void ConsoleWorker::probeWriteAccess()
{
    // UNLINK of a key no one can have written: deletes nothing, and is refused exactly when a
    // purge would be (NOPERM for the user, READONLY on a replica)
    const std::string probe = m_settings.keyNamespace.toStdString() + ":{idem-console-probe-" +
                              QUuid::createUuid().toString(QUuid::WithoutBraces).toStdString() + "}";
    try {
        const auto r = m_conn->command({"UNLINK", probe});
        if (!idem::reply::isError(r.get())) {
            Q_EMIT writeAccess(true, {});
            return;
        }
        const QString text = qs(std::string(idem::reply::errorText(r.get())));
        if (text.startsWith(u"READONLY"_s))
            Q_EMIT writeAccess(false, u"this server is a read-only replica"_s);
        else if (text.startsWith(u"NOPERM"_s))
            Q_EMIT writeAccess(false, u"user %1 may not change keys under %2: (NOPERM); the operator role has "
                                      u"that: idemctl acl operator"_s.arg(
                                          m_conn->options().user.empty() ? u"default"_s : qs(m_conn->options().user),
                                          m_settings.keyNamespace));
        else
            Q_EMIT writeAccess(true, {}); // something else: the actions will say
    } catch (const idem::Error& e) {
        failed(e);
    }
}

void ConsoleWorker::lost(const QString& why)
{
    qCInfo(lcWorker) << "connection lost:" << why;
    stopListeners();
    m_rescanTimer->stop();
    m_heartbeatTimer->stop();
    dropIo();
    m_scanning = false;
    m_waitingForGui = false;
    m_link = Link::Retrying;
    if (m_viaSentinel && !m_endpoint.isEmpty()) // the sentinels are asked for the primary on every attempt
        Q_EMIT linkChanged(m_link, u"failing over: primary %1 lost (%2) — asking the sentinels for the new one in %3 s"_s
                                       .arg(m_endpoint, why.section(u": "_s, -1))
                                       .arg(m_retryDelayMs / 1000.0, 0, 'f', 1));
    else if (!m_clusterNodes.empty()) // connectNow() tries the URL's node, then the others it knew
        Q_EMIT linkChanged(m_link, u"%1 — trying it and the cluster's other nodes in %2 s"_s.arg(why).arg(
                                       m_retryDelayMs / 1000.0, 0, 'f', 1));
    else
        Q_EMIT linkChanged(m_link, u"%1 — retrying in %2 s"_s.arg(why).arg(m_retryDelayMs / 1000.0, 0, 'f', 1));
    m_retryTimer->start(m_retryDelayMs);
    // a failover takes seconds: the sentinels are asked often enough to see its end soon after
    m_retryDelayMs = std::min(m_retryDelayMs * 2, m_viaSentinel ? kMaxFailoverRetryDelayMs : kMaxRetryDelayMs);
}
