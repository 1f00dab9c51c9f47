#pragma once

#include "idem/gateway/httpserver.h"
#include "idem/gateway/metrics.h"
#include "idem/gateway/options.h"
#include "idem/gateway/routepolicy.h"

#include <QObject>

#include <memory>
#include <string>
#include <unordered_map>

namespace idem {
class AsyncPool;
class AsyncStore;
class ConnectionPool;
class Store;
class Watchdog;
} // namespace idem

namespace idem::gateway {

class Upstream;
struct Exchange;
class Relay;

// The HTTP Idempotency-Key gateway: a reverse proxy in front of `options.upstream` that runs each
// protected request through idem's state machine (acquire -> upstream -> complete or release).
// Lives on one thread with an event loop; never waits on Redis there (the async store's answers
// come back to this thread as queued calls).
class Gateway : public QObject {
    Q_OBJECT
public:
    explicit Gateway(GatewayOptions options, QObject* parent = nullptr);
    ~Gateway() override;

    // Listens (and the admin listener, if asked). False with `error` set when a port is taken.
    bool start(QString* error);
    quint16 port() const;
    quint16 adminPort() const;
    const Metrics& metrics() const { return m_metrics; }
    const GatewayOptions& options() const { return m_options; }
    const Policy& policy() const { return m_policy; }
    // The published policy (what /policy serves): methods, key rules, retention, limits.
    std::string policyJson() const;

    // A graceful stop (SIGTERM): no new connections, /healthz says "draining", requests under
    // way run to their end and are answered (their answers stored, so a retry replays), and
    // drained() comes once every client connection has gone, or after `timeout` at the latest.
    // A request cut off by the timeout keeps its lease: a retry takes it over when it runs out.
    void drain(Millis timeout);
    bool draining() const { return m_draining; }
    std::size_t inFlight() const { return m_inFlight; }
    bool drainTimedOut() const { return m_drainTimedOut; }
    // requests under way when the drain timed out (what it cut off)
    std::size_t cutOff() const { return m_cutOff; }

signals:
    void drained();

private:
    friend struct Exchange;
    void handle(http::Request r, http::Responder out);
    void handleAdmin(const http::Request& r, const http::Responder& out);
    void acquire(std::shared_ptr<Exchange> x);
    bool waitMore(const std::shared_ptr<Exchange>& x);
    void wakeWaiters(const std::string& id);
    void pass(std::shared_ptr<Exchange> x, Outcome o);
    void acquired(std::shared_ptr<Exchange> x);
    void answered(std::shared_ptr<Exchange> x);
    void finish(const std::shared_ptr<Exchange>& x, http::Response r, Outcome o);
    http::Response keyProblem(const Exchange& x, std::string_view detail) const;
    void storeFailed(const std::shared_ptr<Exchange>& x, const std::string& why);
    // The store's acquires and completions of one turn of this thread's event loop go out together
    // when the turn ends (AsyncStore::hold): a few script calls of many ids, not one call each.
    void holdStore();
    void releaseStore();
    void checkDrained();

    GatewayOptions m_options;
    Policy m_policy; // the flags' default and the routes of --config
    Metrics m_metrics;
    bool m_storeUp = true; // what the last call to Redis said
    std::string m_storeProblem; // and why it failed, for /healthz (never for clients)
    bool m_holding = false, m_releaseConnected = false;
    bool m_draining = false, m_drained = false;
    std::size_t m_inFlight = 0; // requests handled and not yet answered
    // --wait-in-progress: the duplicates waiting for a key, by record id; a key this gateway ran
    // wakes them when its answer is stored or it is released (a key another gateway runs: polls)
    std::unordered_multimap<std::string, std::weak_ptr<Exchange>> m_waiters;
    bool m_drainTimedOut = false;
    std::size_t m_cutOff = 0;
    std::unique_ptr<ConnectionPool> m_blockingPool; // the watchdog's Store needs one; it is not used
    std::unique_ptr<Store> m_store;
    std::unique_ptr<AsyncPool> m_pool;
    std::unique_ptr<AsyncStore> m_async;
    std::unique_ptr<Watchdog> m_watchdog;
    std::shared_ptr<Relay> m_relay;
    Upstream* m_upstream = nullptr;
    http::HttpServer* m_server = nullptr;
    http::HttpServer* m_admin = nullptr;
};

} // namespace idem::gateway
