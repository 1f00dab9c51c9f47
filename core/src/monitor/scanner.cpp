#include "idem/monitor/scanner.h"

#include "engine/guard.h"

#include "idem/errors.h"

#include <algorithm>
#include <set>
#include <string_view>
#include <future>
#include <thread>

namespace idem {

namespace {

using Clock = std::chrono::steady_clock;

// An error reply retrying cannot fix (ACL, credentials): said at once, not waited out as a failover.
bool refusedForGood(std::string_view error)
{
    for (std::string_view prefix : {"NOPERM", "NOAUTH", "WRONGPASS"})
        if (error.starts_with(prefix))
            return true;
    return false;
}

} // namespace

ConnectionOptions optionsAtNode(const ConnectionOptions& seed, const std::string& address, bool readOnly)
{
    ConnectionOptions o = seed;
    const auto colon = address.rfind(':');
    o.host = address.substr(0, colon);
    if (o.host.size() > 2 && o.host.front() == '[' && o.host.back() == ']')
        o.host = o.host.substr(1, o.host.size() - 2);
    o.port = std::atoi(address.c_str() + colon + 1);
    o.unixSocket.clear();
    o.sentinel = {};
    o.readOnly = readOnly;
    o.namedByServer = true;
    return o;
}

std::size_t ScanStep::records() const
{
    std::size_t n = 0;
    for (const auto& p : pages)
        n += p.page.records.size();
    return n;
}

Scanner::Scanner(ConnectionOptions seed, MonitorOptions options, ScannerOptions scanner)
    : m_seedOptions(std::move(seed)), m_options(std::move(options)), m_scanner(scanner)
{
    m_seed.connection = std::make_unique<Connection>(m_seedOptions);
    m_seed.monitor = std::make_unique<Monitor>(*m_seed.connection, m_options); // checks the options
    m_slotShard.fill(-1);
}

Scanner::~Scanner() = default;

Monitor& Scanner::seedMonitor() { return *m_seed.monitor; }

Scanner::Node& Scanner::node(const std::string& address, bool readOnly)
{
    const std::string name = readOnly ? address + " ro" : address;
    auto at = m_nodes.find(name);
    if (at == m_nodes.end()) {
        Node n;
        n.connection = std::make_unique<Connection>(optionsAtNode(m_seedOptions, address, readOnly));
        n.monitor = std::make_unique<Monitor>(*n.connection, m_options);
        std::lock_guard lock(m_nodesMutex);
        at = m_nodes.emplace(name, std::move(n)).first;
    }
    return at->second;
}

ConnectionOptions Scanner::optionsFor(const std::string& address) const
{
    return m_cluster ? optionsAtNode(m_seedOptions, address, m_scanner.readFrom == ReadFrom::Replicas) : m_seedOptions;
}

void Scanner::interrupt()
{
    m_seed.connection->interrupt();
    std::lock_guard lock(m_nodesMutex);
    for (auto& [name, n] : m_nodes)
        n.connection->interrupt();
}

std::int64_t Scanner::keyCount()
{
    open();
    if (!m_cluster)
        return reply::integer(m_seed.connection->checked({"DBSIZE"}).get());
    std::int64_t n = 0;
    for (const auto& s : m_shards) {
        try {
            n += reply::integer(node(s.readAt, s.readAt != s.topology.primary).connection->checked({"DBSIZE"}).get());
        } catch (const IoError&) {
            // a node failing over: an estimate without it; the scan waits the failover out
        }
    }
    return n;
}

void Scanner::open()
{
    if (m_open)
        return;
    if (!m_seed.connection->isConnected())
        m_seed.connection->connect();
    m_cluster = clusterEnabled(*m_seed.connection);
    m_shards.clear();
    if (m_cluster) {
        learnTopology(&m_pendingNotes);
    } else {
        Shard one;
        one.topology.slotCount = 16384;
        one.topology.ranges = {{0, 16383}};
        m_shards.push_back(std::move(one));
    }
    m_open = true;
}

std::string Scanner::readAddress(const ClusterShard& s) const
{
    return m_scanner.readFrom == ReadFrom::Replicas && !s.replicas.empty() ? s.replicas.front() : s.primary;
}

void Scanner::learnTopology(std::vector<std::string>* notes)
{
    // from the seed, or any node read so far when the seed is the one that failed
    std::vector<ClusterShard> shards;
    std::string errors;
    bool learned = false;
    const auto ask = [&](Connection& c) {
        try {
            shards = clusterShards(c);
            learned = true;
        } catch (const IoError& e) {
            errors += std::string(errors.empty() ? "" : "; ") + e.what();
        } catch (const ReplyError& e) {
            errors += std::string(errors.empty() ? "" : "; ") + e.what();
        }
    };
    ask(*m_seed.connection);
    for (auto it = m_nodes.begin(); !learned && it != m_nodes.end(); ++it)
        ask(*it->second.connection);
    if (!learned)
        throw IoError("Redis Cluster: no node answered CLUSTER SLOTS (" + errors + ")");

    std::vector<Shard> next;
    for (const ClusterShard& t : shards) {
        Shard s;
        s.topology = t;
        s.readAt = readAddress(t);
        if (notes && m_scanner.readFrom == ReadFrom::Replicas && t.replicas.empty())
            notes->push_back("slots from " + std::to_string(t.firstSlot) + ": no replica is available, read from the primary " +
                             t.primary);
        const auto old = std::find_if(m_shards.begin(), m_shards.end(),
                                      [&](const Shard& o) { return o.topology.firstSlot == t.firstSlot; });
        if (old != m_shards.end() && old->readAt == s.readAt) {
            s.cursor = old->cursor; // the same node: its SCAN goes on where it was
            s.finished = old->finished;
            s.restarted = old->restarted;
            s.failingSince = old->failingSince;
            s.lastError = old->lastError;
        } else if (old != m_shards.end()) {
            s.restarted = old->cursor != "0" || old->finished;
            if (notes)
                notes->push_back("slots from " + std::to_string(t.firstSlot) + " are read from " + s.readAt +
                                 " now (was " + old->readAt + ")" + (s.restarted ? ": read again from the start" : ""));
        } else if (m_open && notes) {
            notes->push_back("a shard serves slots from " + std::to_string(t.firstSlot) + " now, at " + s.readAt);
            s.restarted = true;
        }
        next.push_back(std::move(s));
    }
    m_shards = std::move(next);
    m_slotShard.fill(-1);
    for (std::size_t i = 0; i < m_shards.size(); ++i)
        for (const auto& [first, last] : m_shards[i].topology.ranges)
            for (int slot = first; slot <= last; ++slot)
                m_slotShard[static_cast<std::size_t>(slot)] = static_cast<std::int16_t>(i);
}

bool Scanner::done() const
{
    return m_open && std::all_of(m_shards.begin(), m_shards.end(), [](const Shard& s) { return s.finished; });
}

void Scanner::restart()
{
    m_passBegun = false;
    if (m_cluster && m_open)
        learnTopology(&m_pendingNotes);
    for (auto& s : m_shards) {
        s.cursor = "0";
        s.finished = false;
        s.restarted = false;
    }
}

std::vector<std::string> Scanner::nodes() const
{
    std::vector<std::string> out;
    if (!m_cluster) {
        if (const std::string e = m_seed.connection->endpoint(); !e.empty())
            out.push_back(e);
        return out;
    }
    for (const auto& s : m_shards)
        out.push_back(s.readAt);
    return out;
}

std::vector<std::string> Scanner::clusterNodes() const
{
    std::vector<std::string> out;
    if (!m_cluster)
        return out;
    const auto add = [&](const std::string& n) {
        if (!n.empty() && std::find(out.begin(), out.end(), n) == out.end())
            out.push_back(n);
    };
    for (const auto& s : m_shards)
        add(s.topology.primary);
    for (const auto& s : m_shards)
        for (const auto& r : s.topology.replicas)
            add(r);
    return out;
}

std::string Scanner::describe() const
{
    if (!m_cluster)
        return "one server";
    std::size_t replicas = 0;
    for (const auto& s : m_shards)
        replicas += s.readAt != s.topology.primary ? 1 : 0;
    const std::string primaries = std::to_string(m_shards.size()) + (m_shards.size() == 1 ? " primary" : " primaries");
    if (replicas == 0)
        return primaries;
    return std::to_string(replicas) + (replicas == 1 ? " replica" : " replicas") + " (of " + primaries + ")";
}

ScanStep Scanner::next()
{
    open();
    ScanStep step;
    step.notes = std::exchange(m_pendingNotes, {});
    if (!m_cluster) { // one server: its errors are the caller's, as before
        Shard& s = m_shards.front();
        if (s.finished)
            return step;
        ShardPage p;
        p.page = m_seed.monitor->scanPage(s.cursor);
        p.node = m_seed.connection->endpoint();
        for (auto& r : p.page.records)
            r.node = p.node;
        s.cursor = p.page.cursor;
        s.finished = s.cursor == "0";
        step.pages.push_back(std::move(p));
        return step;
    }

    struct Task {
        std::size_t shard;
        Monitor* monitor;
        std::string cursor;
        ScanPage page;
        std::vector<Redirected> redirected;
        std::string error;
        std::exception_ptr fatal;
    };
    if (!std::exchange(m_passBegun, true) && m_cluster) {
        // open() and restart() have just learned the topology: the pass starts from it
        std::vector<ClusterShard> known;
        for (const Shard& s : m_shards)
            known.push_back(s.topology);
        m_passStartMap = slotMap(&known);
    }
    std::vector<Task> tasks;
    for (std::size_t i = 0; i < m_shards.size(); ++i)
        if (!m_shards[i].finished)
            tasks.push_back({i, node(m_shards[i].readAt, m_shards[i].readAt != m_shards[i].topology.primary).monitor.get(),
                             m_shards[i].cursor, {}, {}, {}, {}});
    const auto run = [](Task& t) {
        try {
            t.page = t.monitor->scanPage(t.cursor, &t.redirected);
        } catch (const IoError& e) { // the node is gone or failing over: followed below
            t.error = e.what();
        } catch (const ReplyError& e) {
            if (refusedForGood(e.what())) // a user without the permission: the same on every node, now and later
                t.fatal = std::current_exception();
            else // LOADING, CLUSTERDOWN, a node being reconfigured
                t.error = e.what();
        } catch (...) {
            t.fatal = std::current_exception();
        }
    };
    if (tasks.size() == 1) {
        run(tasks.front());
    } else { // every shard's page at once: one thread per node, its own connection
        std::vector<std::future<void>> running;
        for (auto& t : tasks)
            running.push_back(std::async(std::launch::async, run, std::ref(t)));
        for (auto& f : running)
            f.get();
    }
    for (auto& t : tasks)
        if (t.fatal)
            std::rethrow_exception(t.fatal);

    bool anyFailed = false, anyRead = false, moved = false;
    const auto now = Clock::now();
    for (auto& t : tasks) {
        Shard& s = m_shards[t.shard];
        if (!t.error.empty()) {
            anyFailed = true;
            if (s.failingSince == Clock::time_point{})
                s.failingSince = now;
            s.lastError = t.error;
            if (now - s.failingSince > m_scanner.failoverWait)
                throw IoError(t.error + " (slots from " + std::to_string(s.topology.firstSlot) + " unreachable for " +
                              formatDuration(std::chrono::duration_cast<Millis>(now - s.failingSince)) + ")");
            continue;
        }
        anyRead = true;
        s.failingSince = {};
        ShardPage p;
        p.node = s.readAt;
        p.shard = s.topology.firstSlot;
        p.restarted = std::exchange(s.restarted, false);
        p.page = std::move(t.page);
        for (auto& r : p.page.records)
            r.node = p.node;
        s.cursor = p.page.cursor;
        s.finished = s.cursor == "0";
        moved = moved || !t.redirected.empty();
        readRedirected(std::move(t.redirected), p);
        step.pages.push_back(std::move(p));
    }
    if (anyFailed || moved) {
        try {
            learnTopology(&step.notes);
        } catch (const IoError& e) {
            step.notes.push_back(e.what());
        }
        if (anyFailed && !anyRead)
            std::this_thread::sleep_for(std::chrono::milliseconds(200)); // a failover takes seconds
    }
    if (done() && !m_passStartMap.empty()) {
        const std::string end = slotMap();
        if (!end.empty() && (end != m_passStartMap || end.find(" migrating") != std::string::npos))
            step.notes.push_back("hash slots moved between nodes while the keys were read (a resharding or a "
                                 "failover): keys that moved may be missing from this pass, or in it twice; "
                                 "read again once it is over");
        m_passStartMap.clear();
    }
    return step;
}

std::string Scanner::slotMap(const std::vector<ClusterShard>* known)
{
    try {
        std::string map;
        std::set<std::string> primaries;
        for (const ClusterShard& t : known ? *known : clusterShards(*m_seed.connection)) {
            for (const auto& [first, last] : t.ranges)
                map += std::to_string(first) + "-" + std::to_string(last) + "@" + t.primary + ";";
            primaries.insert(t.primary);
        }
        // a slot being moved shows as [slot->-id] (or [slot-<-id]) on its own node's line only
        for (const std::string& p : primaries) {
            const ReplyPtr r = node(p, false).connection->command({"CLUSTER", "NODES"});
            if (reply::isError(r.get()))
                return {};
            for (const ClusterNodeLine& n : parseClusterNodes(reply::str(r.get())))
                if (n.myself && n.moving)
                    map += p + " migrating;";
        }
        return map;
    } catch (const Error&) {
        return {}; // a node that cannot say: no verdict
    }
}

void Scanner::readRedirected(std::vector<Redirected> redirected, ShardPage& into)
{
    // by the node (and kind) the redirects name
    std::sort(redirected.begin(), redirected.end(),
              [](const auto& a, const auto& b) { return std::tie(a.address, a.ask) < std::tie(b.address, b.ask); });
    for (std::size_t i = 0; i < redirected.size();) {
        std::size_t j = i;
        std::vector<std::string> keys;
        for (; j < redirected.size() && redirected[j].address == redirected[i].address &&
               redirected[j].ask == redirected[i].ask;
             ++j)
            keys.push_back(redirected[j].key);
        try {
            auto records = node(redirected[i].address, false).monitor->classify(keys, nullptr, nullptr, redirected[i].ask);
            for (auto& r : records) {
                r.node = redirected[i].address;
                into.page.records.push_back(std::move(r));
            }
        } catch (const IoError&) {
            // the node the slot moved to is not reachable: its own shard's scan reads them
        }
        i = j;
    }
}

const Scanner::Shard* Scanner::shardOfSlot(int slot) const
{
    const auto i = m_slotShard[static_cast<std::size_t>(slot)];
    return i < 0 ? nullptr : &m_shards[static_cast<std::size_t>(i)];
}

std::vector<Record> Scanner::classify(const std::vector<std::string>& keys, std::int64_t* serverNowMs)
{
    open();
    if (!m_cluster) {
        auto out = m_seed.monitor->classify(keys, serverNowMs);
        for (auto& r : out)
            r.node = m_seed.connection->endpoint();
        return out;
    }
    std::map<std::string, std::vector<std::string>> byNode;
    for (const auto& k : keys)
        if (const Shard* s = shardOfSlot(hashSlot(k)))
            byNode[s->readAt].push_back(k);
    std::vector<Record> out;
    std::vector<Redirected> redirected;
    for (auto& [address, group] : byNode) {
        const Shard* s = shardOfSlot(hashSlot(group.front()));
        std::int64_t now = 0;
        auto records = node(address, address != s->topology.primary).monitor->classify(group, &now, &redirected);
        if (serverNowMs && *serverNowMs == 0)
            *serverNowMs = now;
        for (auto& r : records) {
            r.node = address;
            out.push_back(std::move(r));
        }
    }
    if (!redirected.empty()) {
        ShardPage extra;
        readRedirected(std::move(redirected), extra);
        for (auto& r : extra.page.records)
            out.push_back(std::move(r));
        learnTopology(nullptr);
    }
    return out;
}

std::vector<ReplyPtr> Scanner::pipelineAt(const std::string& address,
                                          const std::vector<std::vector<std::string_view>>& commands)
{
    open();
    if (!m_cluster || address.empty())
        return m_seed.connection->pipeline(commands);
    const bool primary = std::any_of(m_shards.begin(), m_shards.end(),
                                     [&](const Shard& s) { return s.topology.primary == address; });
    return node(address, !primary).connection->pipeline(commands);
}

std::size_t Scanner::unlinkIfUnchanged(const std::vector<Record>& seen, const Actor& by)
{
    open();
    if (!m_cluster)
        return m_seed.monitor->unlinkIfUnchanged(seen, by);
    std::size_t unlinked = 0;
    std::vector<std::pair<std::string, std::string>> purged; // key, what it was: their audit entries
    std::vector<Record> left = seen;
    for (int round = 0; round < 4 && !left.empty(); ++round) {
        if (round > 0) { // some slots moved: where are they now
            std::this_thread::sleep_for(std::chrono::milliseconds(50 << round));
            learnTopology(nullptr);
        }
        std::map<std::string, std::vector<Record>> byPrimary;
        for (auto& r : left)
            if (const Shard* s = shardOfSlot(hashSlot(r.key)))
                byPrimary[s->topology.primary].push_back(std::move(r));
        left.clear();
        for (auto& [primary, group] : byPrimary) {
            const UnlinkResult r = node(primary, false).monitor->unlinkEach(group, by, false);
            unlinked += r.unlinked;
            for (const auto& [i, was] : r.purged)
                purged.emplace_back(group[i].key, was);
            for (const std::size_t i : r.redirected)
                left.push_back(std::move(group[i]));
        }
    }
    // the audit stream has a slot of its own: its entries right after the purges, on its node
    if (!purged.empty()) {
        const std::string stream = guard::auditKey(m_options.keyNamespace);
        if (const Shard* s = shardOfSlot(hashSlot(stream))) {
            std::string entries;
            for (const auto& [key, was] : purged)
                entries += guard::auditEntry(stream, "purge", key, guard::Actor{by.who, by.why}, was);
            const auto replies =
                node(s->topology.primary, false).connection->pipelineFormatted(entries, purged.size() * guard::kAuditCommands);
            for (const auto& r : replies)
                if (reply::isError(r.get()))
                    throw ReplyError("audit: " + std::string(reply::errorText(r.get())));
        }
    }
    return unlinked;
}

} // namespace idem
