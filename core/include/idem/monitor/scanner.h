#pragma once

#include "idem/monitor/monitor.h"
#include "idem/redis/cluster.h"

#include <array>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace idem {

// Where a scan reads on a Redis Cluster: the primaries, or one replica of each (a console then
// adds no load to the primaries; what it shows lags by the replication delay).
enum class ReadFrom { Primaries, Replicas };

struct ScannerOptions {
    ReadFrom readFrom = ReadFrom::Primaries;
    // How long a cluster shard may stay unreachable (its primary failing over) before the scan
    // gives up with its error.
    Millis failoverWait{30000};
};

// The options of a cluster's node ("host:port", as the cluster names it): the seed's (user,
// password, TLS, timeouts) at that address; `readOnly`: READONLY, to read a replica.
ConnectionOptions optionsAtNode(const ConnectionOptions& seed, const std::string& address, bool readOnly = false);

// One shard's page of a step.
struct ShardPage {
    std::string node;       // "host:port" it was read from
    int shard = 0;          // the shard's first hash slot (0 on one server)
    bool restarted = false; // its node changed (a failover): the shard is read again from the start
    ScanPage page;
};

// One step of a whole scan: a page from every shard not finished yet.
struct ScanStep {
    std::vector<ShardPage> pages;
    std::vector<std::string> notes; // what happened to the topology, one line each
    std::size_t records() const;
};

// Scans a whole store: one server (or a Sentinel-managed primary), or every shard of a Redis
// Cluster, given any node's address. On a cluster each step reads one page (SCAN with the same
// COUNT) of every shard in parallel, one connection per node. Keys a node redirects (a slot
// migrating) are read on the node the redirect names; a shard whose node fails is read again from
// the start on the node that serves it after the failover; topology changes are followed, never
// fatal, up to ScannerOptions::failoverWait of a shard being unreachable. Not thread-safe.
class Scanner {
public:
    Scanner(ConnectionOptions seed, MonitorOptions options, ScannerOptions scanner = {});
    ~Scanner();
    Scanner(const Scanner&) = delete;
    Scanner& operator=(const Scanner&) = delete;

    // Connects and learns the topology (done by the first step otherwise). Throws IoError,
    // ConfigError.
    void open();
    ScanStep next();
    bool done() const;
    void restart(); // a new pass from the start (the topology asked again)

    bool cluster() const { return m_cluster; }
    // the nodes read from, "host:port" (one server: its endpoint once connected)
    std::vector<std::string> nodes() const;
    // Every node of the cluster as last learned, primaries first, then replicas (empty on one
    // server): where a client may go when the node it was given stops answering.
    std::vector<std::string> clusterNodes() const;
    // "one server" / "3 primaries" / "3 replicas (of 3 primaries)": for titles and messages
    std::string describe() const;

    // Classifies keys now (keyspace notifications, refresh of visible rows), each on the node
    // that serves its slot.
    std::vector<Record> classify(const std::vector<std::string>& keys, std::int64_t* serverNowMs = nullptr);
    // Commands on the node records were read from (Record::node, "host:port"), in one round trip
    // on the scanner's connection to it (READONLY when it is a replica): a key's other fields, read
    // where its record was. One server, or no node named: the seed. Replies as
    // Connection::pipeline gives them (a key whose slot moved since: -MOVED). Throws IoError.
    std::vector<ReplyPtr> pipelineAt(const std::string& node, const std::vector<std::vector<std::string_view>>& commands);
    // Purges each record that is still what was read (Monitor::unlinkIfUnchanged), on the
    // primary serving its slot now, with its audit entry. Returns how many were removed.
    std::size_t unlinkIfUnchanged(const std::vector<Record>& seen, const Actor& by);

    // How many keys the nodes read from hold (DBSIZE of each, O(1)): a progress estimate. On a
    // cluster a node that does not answer (failing over) counts 0: its shard's scan says more.
    std::int64_t keyCount();
    // The connection options for a node ("host:port"): the seed's, at that address.
    ConnectionOptions optionsFor(const std::string& address) const;
    // Ends calls blocked on any of the scanner's connections (thread-safe).
    void interrupt();

    const MonitorOptions& options() const { return m_options; }
    Monitor& seedMonitor(); // the monitor of the seed's connection (its options, its decoding)

private:
    struct Node {
        std::unique_ptr<Connection> connection;
        std::unique_ptr<Monitor> monitor;
    };
    struct Shard {
        ClusterShard topology;
        std::string readAt;    // the node this scan reads it from
        std::string cursor = "0";
        bool finished = false;
        bool restarted = false;
        std::chrono::steady_clock::time_point failingSince{};
        std::string lastError;
    };
    Node& node(const std::string& address, bool readOnly);
    void learnTopology(std::vector<std::string>* notes);
    std::string readAddress(const ClusterShard& s) const;
    const Shard* shardOfSlot(int slot) const;
    void readRedirected(std::vector<Redirected> redirected, ShardPage& into);
    // Which primary serves each slot, and whether a slot is migrating (CLUSTER SLOTS, and CLUSTER
    // NODES of each primary), as one string; "" when a node could not say. A pass whose start and
    // end differ, or that began or ended with a slot migrating, read keys while they moved: those
    // may be missing from it, or in it twice. `known`: the shards just learned (else asked).
    std::string slotMap(const std::vector<ClusterShard>* known = nullptr);

    ConnectionOptions m_seedOptions;
    MonitorOptions m_options;
    ScannerOptions m_scanner;
    Node m_seed;
    bool m_open = false;
    bool m_cluster = false;
    std::vector<Shard> m_shards;
    std::array<std::int16_t, 16384> m_slotShard{}; // index into m_shards; -1: no shard serves it
    std::map<std::string, Node, std::less<>> m_nodes; // "host:port" (+ " ro" for READONLY ones)
    mutable std::mutex m_nodesMutex;                  // m_nodes' shape, for interrupt()
    std::vector<std::string> m_pendingNotes;          // learned outside a step, told by the next
    bool m_passBegun = false;                         // this pass's first step took slotMap()
    std::string m_passStartMap;
};

} // namespace idem
