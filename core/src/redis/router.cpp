#include "redis/router.h"

#include "idem/errors.h"
#include "idem/redis/cluster.h"
#include "redis/slotmap.h"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <mutex>
#include <optional>
#include <thread>

namespace idem {

namespace {
std::string addressOf(const ConnectionOptions& o) { return o.host + ":" + std::to_string(o.port); }
} // namespace

bool isTryAgain(const redisReply* r) { return reply::isError(r) && reply::errorText(r).starts_with("TRYAGAIN"); }

std::uint16_t hashSlot(std::string_view key)
{
    // Redis Cluster: CRC16 (XMODEM) of the hash tag - the text between the first '{' and the
    // next '}' when that is not empty - or of the whole key, modulo 16384
    if (const auto open = key.find('{'); open != std::string_view::npos) {
        const auto close = key.find('}', open + 1);
        if (close != std::string_view::npos && close > open + 1)
            key = key.substr(open + 1, close - open - 1);
    }
    std::uint16_t crc = 0;
    for (const unsigned char c : key) {
        crc = static_cast<std::uint16_t>(crc ^ (c << 8));
        for (int bit = 0; bit < 8; ++bit)
            crc = static_cast<std::uint16_t>(crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1);
    }
    return static_cast<std::uint16_t>(crc & 0x3FFF);
}

bool clusterEnabled(Connection& c)
{
    const ReplyPtr r = c.command({"INFO", "cluster"});
    return !reply::isError(r.get()) && reply::view(r.get()).find("cluster_enabled:1") != std::string_view::npos;
}

std::vector<ClusterShard> clusterShards(Connection& c)
{
    const ReplyPtr r = c.checked({"CLUSTER", "SLOTS"});
    return parseClusterSlots(r.get(), c.options().host);
}

ClusterRouter::ClusterRouter(ConnectionPool& seed) : m_seed(seed) {}

bool ClusterRouter::clusterMode(Connection& c)
{
    int mode = m_mode.load();
    if (mode < 0) { // asked once
        mode = clusterEnabled(c) ? 1 : 0;
        m_mode = mode;
    }
    return mode == 1;
}

bool ClusterRouter::mapped() const { return !m_map.empty(); }

ConnectionPool& ClusterRouter::poolAt(const std::string& address)
{
    if (m_seed.options().unixSocket.empty() && address == addressOf(m_seed.options()))
        return m_seed;
    {
        std::shared_lock lock(m_mutex);
        if (const auto it = m_pools.find(address); it != m_pools.end())
            return *it->second;
    }
    const auto node = parseNodeAddress(address);
    if (!node)
        throw ProtoError("Redis Cluster named a node idem cannot read: '" + address + "'");
    ConnectionOptions o = m_seed.options();
    o.unixSocket.clear();
    o.host = node->host;
    o.port = node->port;
    o.namedByServer = true;
    std::unique_lock lock(m_mutex);
    auto& slot = m_pools[address];
    if (!slot)
        slot = std::make_unique<ConnectionPool>(o, m_seed.size());
    return *slot;
}

ConnectionPool& ClusterRouter::poolForSlot(std::uint16_t slot)
{
    const auto address = m_map.addressFor(slot);
    return address ? poolAt(*address) : m_seed;
}

void ClusterRouter::refresh(Connection& c)
{
    const ReplyPtr r = c.command({"CLUSTER", "SLOTS"});
    if (reply::isError(r.get()))
        return; // not allowed or not a cluster: redirects are then followed one slot at a time
    m_map.update(parseClusterSlots(r.get(), c.options().host));
}

void ClusterRouter::refreshAvoiding(const std::string& failed)
{
    // the nodes talked to first, then every other node the map named (the failed primary's
    // replicas among them: the seed may be the node that died)
    std::vector<std::string> talkedTo = {addressOf(m_seed.options())};
    {
        std::shared_lock lock(m_mutex);
        for (auto& [address, pool] : m_pools)
            talkedTo.push_back(address);
    }
    for (const std::string& address : m_map.nodesToAsk(talkedTo, failed)) {
        try {
            auto conn = poolAt(address).acquire();
            refresh(*conn);
            return;
        } catch (const IoError&) {
            // that one is down too: the next
        } catch (const ProtoError&) {
            // an address idem cannot read: the next
        }
    }
}

void ClusterRouter::refreshAvoiding(const ConnectionPool& failed) { refreshAvoiding(addressOf(failed.options())); }

ReplyPtr ClusterRouter::routedImpl(std::string_view key, void* run, ReplyPtr (*call)(void*, Connection&))
{
    constexpr int kMaxRedirects = 5, kMaxTryAgain = 8;
    std::string askAt; // after ASK: the node to ask, once
    for (int hop = 0, tryAgain = 0;; ++hop) {
        ReplyPtr r;
        std::optional<reply::Redirect> to;
        {
            // standalone (or not known to be a cluster yet): the pool given, no slot computed
            ConnectionPool& pool = !askAt.empty()    ? poolAt(askAt)
                                   : knownCluster() ? poolForSlot(hashSlot(key))
                                                    : m_seed;
            auto conn = pool.acquire();
            try {
                // the first call asks whether this is a cluster and, if so, learns the whole map,
                // so that if the node given dies, the others (its promoted replica) are known
                if (m_mode.load() < 0 && askAt.empty() && clusterMode(*conn) && !mapped())
                    refresh(*conn);
                if (!askAt.empty())
                    conn->checked({"ASKING"});
                r = call(run, *conn);
            } catch (const IoError&) {
                // a node that does not answer may be failing over: the call fails closed, and the
                // map is asked again of another node, so that later calls find the new primary
                if (knownCluster())
                    refreshAvoiding(addressOf(pool.options()));
                throw;
            }
            to = reply::redirect(r.get());
            if (to && to->node.host.empty()) // "MOVED 3999 :6380": the host the request went to
                to->address = pool.options().host + to->address;
            if (to && !to->ask && hop < kMaxRedirects)
                refresh(*conn); // the slot moved: learn the whole map again
        }
        // TRYAGAIN: the slot is being moved and a script's keys are not all on one side yet
        // (a fresh id's record and meta key are both missing): wait, and start over from the owner
        if (isTryAgain(r.get()) && tryAgain < kMaxTryAgain) {
            std::this_thread::sleep_for(std::chrono::milliseconds(std::min(100, 5 << tryAgain++)));
            askAt.clear();
            hop = -1; // a wait is not a redirect
            continue;
        }
        if (!to || hop >= kMaxRedirects)
            return r;
        m_mode = 1;
        askAt.clear();
        if (to->ask) {
            askAt = to->address;
        } else if (m_map.addressFor(to->slot) != to->address) {
            m_map.pin(to->slot, to->address); // CLUSTER SLOTS refused or behind: at least this slot
        }
    }
}

} // namespace idem
