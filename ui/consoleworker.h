#pragma once

#include "keyrow.h"
#include "storeauditview.h"

#include "idem/redis/options.h"

#include <QElapsedTimer>
#include <QHash>
#include <QObject>
#include <QSet>
#include <QString>
#include <QStringList>
#include <QTimer>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

namespace idem {
class Error;
class Connection;
class ConnectionPool;
class KeyspaceListener;
class Monitor;
class Scanner;
class Store;
class PgStore;
class PgTable;
class PgWatch;
struct Record;
} // namespace idem
class QSocketNotifier;

struct ConnectionSettings {
    QString url;      // redis://[user:password@]host:port/db (a password here wins)
    QString user;     // ACL user, when not in the URL
    QString password; // when not in the URL; never stored in settings
    QString keyNamespace = QStringLiteral("idempotency");
    QString pattern;  // SCAN MATCH; empty: "<namespace>:*"
    QString format;   // every key read as this library's (idem::formatFromString); empty: each key's own
    QString table;    // PostgreSQL: a table another program writes ([schema.]name, idem::PgTable), not idem.records
    int rescanIntervalMs = 5000; // when keyspace notifications are unavailable
    int scanCount = 500;
    // TLS, for a rediss:// (or rediss-sentinel://) URL, as idemctl's --tls-* flags; empty: the
    // defaults (the system's CA bundle, no client certificate, the host's name)
    QString tlsCa;
    QString tlsCert;
    QString tlsKey;
    QString tlsServerName;
    bool tlsInsecure = false;  // no verification: said in the title and the status bar; never stored
    QString sentinelPassword;  // the sentinels' own, for a redis-sentinel:// URL; never stored
    // On a Redis Cluster: scan one replica per shard (READONLY), so that watching adds no load to
    // the primaries; actions still go to the primaries. No effect on a single server.
    bool readFromReplicas = false;
};
Q_DECLARE_METATYPE(ConnectionSettings)

// The options that reach Redis with these settings (URL, then user, password, TLS and Sentinel
// settings the URL does not give). Settings that do not fit the URL (TLS files for a plaintext
// URL, a Sentinel password without sentinels) throw idem::ConfigError naming the field to change;
// a URL that cannot be parsed throws idem::UsageError.
idem::ConnectionOptions connectionOptions(const ConnectionSettings& settings);

// A PostgreSQL store's address as libpq takes it: a postgresql:// (or postgres://) URI, or
// key=value pairs ("host=... dbname=..."). The console then watches table idem.records.
bool isPostgresUrl(const QString& url);
// The URL as shown: a PostgreSQL URI without its password
QString postgresShown(const QString& url);
// What libpq is given: the URL, with `password` added (a URI's query parameter, or a key=value pair)
// when one is given apart from it (the Connect dialog's Password field) and the URL has none
QString postgresConninfo(const QString& url, const QString& password);
// A password in a PostgreSQL URL (postgresql://user:pw@..., or password=... pairs): the URL without
// it, and the password (percent-decoded, or unquoted) in `password`; the URL unchanged when none.
QString postgresWithoutPassword(const QString& url, QString* password);

// The inspector's view of a record (Redis key or PostgreSQL row); `lastAction` in HTML, may be empty
QString recordHtml(const idem::Record& rec, std::int64_t nowMs, const QString& lastAction);

struct ActionResult {
    QString action; // "force-fail" or "purge"
    int requested = 0;
    int changed = 0;
    int skipped = 0; // changed since they were read, or gone
    QString why;     // why the first key skipped was left as it was, when the store says
    QString error;
    QStringList keys; // the keys it was asked to change
};

// The setting to change when retrying cannot fix an error (idem::ConfigError, or a reply that says
// NOAUTH, WRONGPASS or NOPERM); empty when waiting might. `message` gets it in words.
QString settingToFix(const std::exception& e, const QString& server, QString* message);
Q_DECLARE_METATYPE(ActionResult)

// Runs every Redis conversation of the console on its own thread (moveToThread): scans in
// pages (returning to its event loop between pages, so actions and inspections interleave),
// follows keyspace notifications when the server has them, rescans on an interval otherwise,
// asks the server's clock every 2 s while idle (so a server that went away is noticed at once),
// reconnects with backoff after a drop. What retrying cannot fix (idem::ConfigError: a wrong or
// missing password, a user without a permission, a database out of range, a certificate refused,
// a host name mismatch, TLS on one side only, a primary no sentinel knows) stops the retries:
// `refused` names the setting to change. Through Sentinel, a lost primary is "failing over" until
// the sentinels name the new one, which the link's detail then names. On a Redis Cluster, a node
// whose notifications stop (it died, or hangs: PING unanswered) makes the data not live: the keys
// are read again on the short interval, and notifications followed again once the scan has found
// the node serving those slots now; a URL whose node does not answer is reached through another
// node the console knew. Results go back to the GUI as queued signals.
class ConsoleWorker : public QObject {
    Q_OBJECT
public:
    // Refused: the server answered, and said no in a way waiting will not change
    enum class Link { Disconnected, Connecting, Connected, Retrying, Refused };
    Q_ENUM(Link)
    static constexpr int kHeartbeatMs = 2000;

    ConsoleWorker();
    ~ConsoleWorker() override;

    // Thread-safe, from any thread: ends the Redis call the worker may be blocked in, so that the
    // console closes at once even when Redis hangs (instead of after a command timeout).
    void abortIo();

public Q_SLOTS:
    void open(const ConnectionSettings& settings);
    void close();
    void rescan();
    void inspect(const QString& key);
    void readAudit(); // the store's audit stream: auditRead
    void forceFail(const QVector<KeyRow>& rows, const QString& reason, bool terminal, const QString& who);
    void purge(const QVector<KeyRow>& rows, const QString& reason, const QString& who);
    // The GUI took one rowsArrived batch in: scanning goes on while few batches are in flight,
    // so a slow GUI slows the scan instead of queueing a million rows in memory.
    void batchConsumed();

Q_SIGNALS:
    void linkChanged(ConsoleWorker::Link link, const QString& detail);
    // Retrying stopped: `field` is the setting to change ("password", "user", "url", ...), `message`
    // says what is wrong in words.
    void refused(const QString& field, const QString& message);
    // The server answered (its clock): the data shown is current as of now.
    void heartbeat(qint64 serverNowMs);
    // Whether this connection may change keys under the namespace (a harmless probe: UNLINK of a
    // key that cannot exist); `why` says why not (NOPERM, a read-only replica).
    void writeAccess(bool allowed, const QString& why);
    // `interrupted`: not live because a node's notifications stopped or cannot be had (it does not
    // answer: a failover), not because of a setting; said louder than a server without them
    void liveUpdates(bool notifications, const QString& detail, bool interrupted);
    // What happened to a cluster's topology while reading it (a shard read from the promoted replica
    // after a failover, slots that moved during a pass), one line each
    void clusterNote(const QString& note);
    // what the scan cannot see (a node of a multi-primary cluster), one line; empty = every key
    // The nodes rows name (KeyRow::node - 1 indexes it): sent before the first row that names a new one.
    void nodesChanged(const QStringList& nodes);
    void rowsArrived(const QVector<KeyRow>& rows, qint64 serverNowMs, quint64 generation);
    void rowsGone(const QStringList& keys);
    void scanStarted(quint64 generation, qint64 keysInDatabase);
    void scanFinished(const ScanSummary& summary);
    void inspected(const QString& key, const QString& html);
    void auditRead(const QVector<StoreAuditRow>& rows, qint64 serverNowMs, const QString& error);
    // For the history (HistoryRecorder): every record read, as the rows of rowsArrived (the same
    // shared vector), with who acted ({op, by}) where the record says; `notification`: read because
    // a keyspace notification named it, else by a scan.
    void observed(const QVector<KeyRow>& rows, const QHash<QString, QStringList>& actors, qint64 serverNowMs,
                  quint64 generation, bool notification);
    // Keys a notification named that are gone, with who purged them where their meta key says.
    void observedGone(const QStringList& keys, const QHash<QString, QStringList>& actors, qint64 serverNowMs);
    void actionDone(const ActionResult& result);

private:
    void connectNow();
    // The connection, scanner, pool and store, through the node `o` names (throws idem::Error)
    void connectTo(const idem::ConnectionOptions& o);
    void scanStep();
    void flushDirty();
    void lost(const QString& why);
    // A failure: refused when retrying cannot fix it, else lost (retried with backoff)
    void failed(const idem::Error& e);
    void refuse(const QString& field, const QString& message);
    void beat();
    void probeWriteAccess();
    QString lastAction(const QString& key, std::int64_t nowMs); // from the meta key; empty: none
    void attachErrors(QVector<KeyRow>& rows); // FAILED hashes: their error text, when short
    // those of `failedRows`, read on `node` (KeyRow::node's name: where they were read)
    void attachErrors(QVector<KeyRow>& rows, const std::vector<qsizetype>& failedRows, const std::string& node);
    void dropIo(); // store, pool, monitor and connection, in that order
    void noteDirty(const QString& key);
    void noteGone(const QSet<QString>& gone, std::int64_t serverNowMs); // observedGone()
    idem::Monitor& monitor();
    void stopListeners();
    // Keyspace notifications from every node read: started where none runs (at connect; after a
    // failover, on the node serving those slots now); listeners of nodes no longer read stop.
    void listen();
    void checkListeners(); // a listener whose connection dropped or hung: not live, rescanning
    // Whether the node connected through answers a PING; when not, the connection is lost (and
    // retried, through another node of a cluster): the status bar never says "connected" to a node
    // known to be gone
    bool connectionAnswers();
    void setLive(bool live, const QString& detail, bool interrupted);
    KeyRow rowOf(const idem::Record& r, std::int64_t serverNowMs); // with its node's index
    // an action's result with its name and size; not connected: already answered, with that error
    ActionResult startAction(const QString& action, const QVector<KeyRow>& rows, bool connected);
    void noteRefusedWrite(const QString& error); // NOPERM, READONLY: writeAccess(false)

    // A PostgreSQL store (consoleworker_pg.cpp): pages of idem.records in id order (keyset), the
    // ids schema v4's triggers NOTIFY re-read, actions through idem.force_fail and idem.purge
    void pgConnectNow();
    void pgRescan();
    bool beginScan(); // false while a scan runs: one more is queued behind it
    void pgScanStep();
    void pgTake();       // the LISTEN socket is readable
    void pgFlushDirty(); // the ids noted: read again
    void pgFailed(const idem::Error& e);
    void pgInspect(const QString& key);
    void pgReadAudit(); // table idem.operations
    void pgAction(const QString& action, const QVector<KeyRow>& rows, const QString& reason, bool terminal,
                  const QString& who);
    bool onPostgres() const { return m_pg || m_pgTable; }
    std::int64_t pgServerNowMs(); // on the watch's connection, or (--table) the table's
    std::unique_ptr<idem::PgStore> m_pg;
    // --table: another program's table, instead of m_pg and m_pgWatch (nothing of schema idem)
    std::unique_ptr<idem::PgTable> m_pgTable;
    bool m_pgFirstPage = true;
    std::unique_ptr<idem::PgWatch> m_pgWatch; // schema idem's: LISTEN, and a row in idem.watchers
    QSocketNotifier* m_pgNotifier = nullptr;
    std::string m_pgAfter; // the last id of the page read

    ConnectionSettings m_settings;
    std::mutex m_ioMutex; // guards the m_conn and m_pool pointers for abortIo()
    std::unique_ptr<idem::Connection> m_conn;
    std::unique_ptr<idem::ConnectionPool> m_pool;
    std::unique_ptr<idem::Scanner> m_scanner; // every shard of a cluster, or the one server
    idem::Monitor* m_monitor = nullptr;       // the scanner's seed monitor: options, decoding
    std::unique_ptr<idem::Store> m_store;
    std::map<std::string, std::unique_ptr<idem::KeyspaceListener>> m_listeners; // by node read ("": one server)
    std::vector<std::string> m_listenedFor; // the nodes read when listen() last ran
    std::set<std::string> m_subscribedTo;   // nodes a listener started on since open()
    idem::KeyspaceListener* m_subscribing = nullptr; // the one listen() starts now (m_ioMutex): abortIo() ends it
    quint64 m_listenEpoch = 0; // stopListeners() counts: notifications of listeners stopped are dropped
    bool m_live = false;
    bool m_listenAgain = true; // false: notifications are off (a setting), not asked again until a reconnect
    QString m_liveDetail;
    // Every node of the cluster last seen (primaries first), kept across a drop: a URL whose node is
    // down is reached through one of them. Empty: not a cluster.
    std::vector<std::string> m_clusterNodes;
    std::string m_urlEndpoint;             // the URL's node as last reached ("host:port")
    std::atomic<bool> m_aborting{false}; // abortIo(): no further node is tried
    QTimer* m_rescanTimer = nullptr;
    QTimer* m_retryTimer = nullptr;
    QTimer* m_dirtyTimer = nullptr;
    QTimer* m_heartbeatTimer = nullptr;
    int m_retryDelayMs = 500;
    bool m_scanning = false;
    int m_inFlight = 0;           // rowsArrived batches the GUI has not taken in yet
    bool m_waitingForGui = false; // a scan step waits for batchConsumed()
    bool m_rescanQueued = false;
    std::map<std::string, quint8> m_nodeIndex; // a row's node as a small index (KeyRow::node)
    QStringList m_nodeNames;                   // index - 1 -> "host:port"
    quint64 m_generation = 0;
    ScanSummary m_summary;
    QElapsedTimer m_scanClock;
    QSet<QString> m_dirty;
    Link m_link = Link::Disconnected;
    bool m_viaSentinel = false; // lost: "failing over", and the sentinels are asked again
    QString m_endpoint;         // host:port last connected to (through Sentinel: the primary)
};
