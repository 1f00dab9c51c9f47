#pragma once

#include "idem/redis/connection.h"
#include "idem/redis/localcluster.h"
#include "idem/redis/localserver.h"
#include "idem/redis/options.h"

#include "idem/engine/executor.h"

#include <QByteArray>
#include <QString>
#include <QStringList>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace idemtest {

// The fixture's shared redis-server (tests/CMakeLists.txt starts it); QSKIPs nothing: a missing
// fixture is a failure.
idem::ConnectionOptions sharedRedis();
std::string sharedRedisUrl();
// Options that notice a failover quickly: short connect and command timeouts, a fast backoff.
idem::ConnectionOptions quick(idem::ConnectionOptions o);
// A namespace no other test uses, so tests can share the server.
std::string uniqueNamespace(const char* prefix = "t");
// How often the server has run `command` (lower case), from INFO commandstats.
long long commandCalls(idem::Connection& c, const std::string& command);
// The idemctl binary under test.
QString idemctlPath();

// A loopback TCP port bound, not listening, for as long as the object lives: a connection to it
// is refused, and no other process (a redis-server a parallel test starts) can take it meanwhile,
// as it could a port that freeLoopbackPort() found free a moment ago.
class ClosedPort {
public:
    ClosedPort();
    ~ClosedPort();
    ClosedPort(const ClosedPort&) = delete;
    ClosedPort& operator=(const ClosedPort&) = delete;
    int port() const { return m_port; }

private:
    int m_fd = -1;
    int m_port = 0;
};

// A Redis Cluster of private redis-servers on loopback (idem::LocalCluster, Qt-free, shared with
// the benchmarks).
using LocalCluster = idem::LocalCluster;

// A Sentinel-managed primary on loopback: node 0 starts as the primary of `replicas` more, and
// three sentinels watch it as "mymaster" (down after 1 s), ready when every replica is in sync
// and every sentinel knows the replicas and the other sentinels.
class LocalSentinelSet {
public:
    explicit LocalSentinelSet(int replicas = 1);
    ~LocalSentinelSet();
    idem::LocalServer& node(int i) { return *m_nodes.at(static_cast<std::size_t>(i)); }
    idem::LocalServer& sentinel(int i) { return *m_sentinels.at(static_cast<std::size_t>(i)); }
    int nodes() const { return static_cast<int>(m_nodes.size()); }
    std::string url() const; // redis-sentinel://127.0.0.1:s1,...#mymaster
    idem::ConnectionOptions options() const;
    // the node the sentinels name as primary now (-1: none of ours)
    int primary();
    // waits until the sentinels name another node than `previous` and it answers ROLE as master
    int waitForNewPrimary(int previous, int timeoutMs = 30000);
    // waits until the primary has `replicas` replicas online and in sync
    void waitForReplicas(int replicas, int timeoutMs = 30000);
    // waits until every sentinel names `node` and none is failing over any more. A sentinel that
    // leads a failover names the promoted replica before it has switched; one that has not heard
    // of it yet still names the old primary, and if that comes back in the meantime, empty, may
    // make the promoted replica its replica again (losing what was written to it: Sentinel's own
    // window, which no client can close). Restart a killed primary after this.
    void waitForFailoverDone(int node, int timeoutMs = 30000);

private:
    std::string m_dir;
    std::vector<std::unique_ptr<idem::LocalServer>> m_nodes, m_sentinels;
};

// Certificates made by the openssl command line for this test process, once: a CA, a server
// certificate for localhost and 127.0.0.1 signed by it, a client certificate signed by it, and
// what must fail: a server certificate signed by another CA, an expired one, one for another name.
class TestCerts {
public:
    static const TestCerts& get();
    std::string path(const char* name) const; // "ca.pem", "server.pem", "server.key", "client.pem",
                                              // "client.key", "other-ca.pem", "other-server.pem",
                                              // "expired.pem", "elsewhere.pem" (keys: server.key)
    // A TLS-only redis-server with `server` as its certificate (and server.key).
    idem::LocalServerOptions serverOptions(const char* server = "server.pem", bool authClients = false) const;

private:
    TestCerts();
    std::string m_dir;
};

// Deliveries of fresh ids from `threads` workers for as long as `during` runs on the calling
// thread (and a little after): each id delivered until it is executed or replayed
// (StoreUnavailable, InProgress and NotReplicated are redelivered, as a broker would); every run
// of the work counted.
struct DeliveryLoad {
    std::map<std::string, int> runs;
    std::map<std::string, QStringList> history; // what each delivery of an id answered
    std::mutex mutex;
    std::atomic<int> ids{0}, unavailable{0}, notReplicated{0};
    bool viaSubmit = false; // Executor::submit() (the asynchronous path) instead of execute()

    void go(idem::Executor& ex, const std::string& prefix, int threads, const std::function<void()>& during);
    // "" when every id ran exactly once; else which did not, with what each delivery answered
    QString check(const std::string& prefix);
};

struct ProcessResult {
    int exitCode = -1;
    QByteArray out;
    QByteArray err;
};
// Runs idemctl with args and waits (at most timeoutMs).
ProcessResult runIdemctl(const QStringList& args, int timeoutMs = 30000, const QByteArray& stdinData = {});

} // namespace idemtest

#include "idem/engine/executor.h"
#include "idem/lab/racelab.h"
#include "idem/format/record.h"
#include "idem/engine/store.h"

// Readable QCOMPARE failures for idem's enums.
namespace idem {
inline char* toString(const OutcomeKind& k) { return qstrdup(std::string(nameOf(k)).c_str()); }
inline char* toString(const AcquireStatus& s) { return qstrdup(std::string(nameOf(s)).c_str()); }
inline char* toString(const RecordState& s) { return qstrdup(std::string(nameOf(s)).c_str()); }
inline char* toString(const RecordFormat& f) { return qstrdup(std::string(nameOf(f)).c_str()); }
inline char* toString(const OwnerStatus& s)
{
    return qstrdup(s == OwnerStatus::Ok ? "Ok" : "LeaseLost");
}
inline char* toString(const Strategy& s) { return qstrdup(std::string(nameOf(s)).c_str()); }
inline char* toString(const AdminStatus& s)
{
    return qstrdup(s == AdminStatus::Ok         ? "Ok"
                   : s == AdminStatus::NotFound ? "NotFound"
                   : s == AdminStatus::Busy     ? "Busy"
                                                : "Refused");
}
} // namespace idem
