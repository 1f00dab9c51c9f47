#include "idem/redis/localcluster.h"

#include "idem/errors.h"
#include "idem/redis/connection.h"

#include <chrono>
#include <thread>

namespace idem {

namespace {

using reply::str;

template <typename Done> void waitFor(const char* what, Millis timeout, Done&& done)
{
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!done()) {
        if (std::chrono::steady_clock::now() > deadline)
            throw Error(std::string("local cluster: ") + what + " did not happen in " + formatDuration(timeout));
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
}

// a field of an INFO section ("" when absent)
std::string infoField(const std::string& text, const std::string& name)
{
    const auto at = text.find(name + ":");
    if (at == std::string::npos)
        return {};
    const auto from = at + name.size() + 1;
    return text.substr(from, text.find('\r', from) - from);
}

} // namespace

LocalCluster::LocalCluster(int primaries, int replicas)
{
    if (primaries < 1 || replicas < 0)
        throw UsageError("a local cluster needs at least one primary");
    LocalServerOptions opts;
    opts.extraArgs = {"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "3000"};
    for (int i = 0; i < primaries + replicas; ++i)
        m_nodes.push_back(std::make_unique<LocalServer>(opts));
    std::vector<std::unique_ptr<Connection>> c;
    for (int i = 0; i < size(); ++i)
        c.push_back(std::make_unique<Connection>(node(i)));
    for (int i = 0; i < primaries; ++i)
        c[static_cast<std::size_t>(i)]->checked({"CLUSTER", "ADDSLOTSRANGE", std::to_string(16384 * i / primaries),
                                                 std::to_string(16384 * (i + 1) / primaries - 1)});
    for (int i = 1; i < size(); ++i)
        c[0]->checked({"CLUSTER", "MEET", "127.0.0.1", std::to_string(m_nodes[static_cast<std::size_t>(i)]->port())});
    const std::string everyone = "cluster_known_nodes:" + std::to_string(size()) + "\r";
    waitFor("every node meeting every other", Millis(15000), [&] {
        for (auto& conn : c)
            if (str(conn->checked({"CLUSTER", "INFO"}).get()).find(everyone) == std::string::npos)
                return false;
        return true;
    });
    for (int i = 0; i < replicas; ++i) {
        const std::string primaryId = str(c[static_cast<std::size_t>(i % primaries)]->checked({"CLUSTER", "MYID"}).get());
        c[static_cast<std::size_t>(primaries + i)]->checked({"CLUSTER", "REPLICATE", primaryId});
    }
    waitFor("cluster_state:ok on every node, replicas known as such", Millis(15000), [&] {
        for (auto& conn : c) {
            if (str(conn->checked({"CLUSTER", "INFO"}).get()).find("cluster_state:ok") == std::string::npos)
                return false;
            const std::string nodes = str(conn->checked({"CLUSTER", "NODES"}).get());
            int slaves = 0;
            for (std::size_t p = nodes.find("slave"); p != std::string::npos; p = nodes.find("slave", p + 1))
                ++slaves;
            if (slaves != replicas)
                return false;
        }
        return true;
    });
}

LocalCluster::~LocalCluster() = default;

ConnectionOptions LocalCluster::node(int i) const { return m_nodes.at(static_cast<std::size_t>(i))->connectionOptions(); }

std::string LocalCluster::url(int i) const { return m_nodes.at(static_cast<std::size_t>(i))->url(); }

void LocalCluster::waitForReplication(Millis timeout)
{
    waitFor("replication", timeout, [&] {
        int slaves = 0;
        for (int i = 0; i < size(); ++i) {
            Connection c(node(i));
            const ReplyPtr role = c.checked({"ROLE"});
            if (str(reply::element(role.get(), 0)) != "slave")
                continue;
            ++slaves;
            const std::string info = str(c.checked({"INFO", "replication"}).get());
            if (infoField(info, "master_link_status") != "up")
                return false;
            Connection p(ConnectionOptions::fromUrl("redis://" + infoField(info, "master_host") + ":" +
                                                    infoField(info, "master_port")));
            const std::string primary = str(p.checked({"INFO", "replication"}).get());
            if (infoField(primary, "master_repl_offset") != infoField(info, "slave_repl_offset"))
                return false;
        }
        for (int i = 0; i < size(); ++i) {
            Connection c(node(i));
            const ReplyPtr slotMap = c.checked({"CLUSTER", "SLOTS"});
            std::size_t listed = 0;
            for (std::size_t r = 0; r < reply::arraySize(slotMap.get()); ++r)
                listed += reply::arraySize(reply::element(slotMap.get(), r)) - 3;
            if (listed < static_cast<std::size_t>(slaves))
                return false;
        }
        return true;
    });
}

} // namespace idem
