#include "redis/slotmap.h"

#include "idem/errors.h"
#include "idem/redis/reply.h"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <charconv>
#include <mutex>

namespace idem {

std::vector<ClusterShard> parseClusterSlots(const redisReply* r, const std::string& answeringHost)
{
    // CLUSTER SLOTS: [start, end, [host, port, id, ...], [replica host, port, id, ...]...] per range
    if (reply::isError(r))
        throw ReplyError("CLUSTER SLOTS: " + std::string(reply::errorText(r)));
    if (reply::arraySize(r) > 16384)
        throw ProtoError("CLUSTER SLOTS named more ranges than there are slots");
    const auto address = [&](const redisReply* node) {
        std::string host = reply::str(reply::element(node, 0));
        if (host.empty() || host == "?") // the node that answered, known by the address we used
            host = answeringHost;
        const std::int64_t port = reply::integer(reply::element(node, 1));
        if (port < 1 || port > 65535)
            throw ProtoError("CLUSTER SLOTS named port " + std::to_string(port));
        return host + ":" + std::to_string(port);
    };
    std::vector<ClusterShard> shards;
    for (std::size_t i = 0; i < reply::arraySize(r); ++i) {
        const redisReply* range = reply::element(r, i);
        if (reply::arraySize(range) < 3)
            continue;
        const auto first = std::clamp<std::int64_t>(reply::integer(reply::element(range, 0)), 0, 16383);
        const auto last = std::clamp<std::int64_t>(reply::integer(reply::element(range, 1)), first, 16383);
        const std::string primary = address(reply::element(range, 2));
        auto shard = std::find_if(shards.begin(), shards.end(), [&](const ClusterShard& s) { return s.primary == primary; });
        if (shard == shards.end()) {
            if (shards.size() >= kMaxClusterNodes)
                throw ProtoError("CLUSTER SLOTS named more than " + std::to_string(kMaxClusterNodes) + " primaries");
            shard = shards.insert(shards.end(), ClusterShard{static_cast<int>(first), 0, {}, primary, {}});
            for (std::size_t n = 3; n < reply::arraySize(range); ++n)
                shard->replicas.push_back(address(reply::element(range, n)));
        }
        shard->firstSlot = std::min(shard->firstSlot, static_cast<int>(first));
        shard->slotCount += static_cast<int>(last - first + 1);
        shard->ranges.emplace_back(static_cast<int>(first), static_cast<int>(last));
    }
    std::sort(shards.begin(), shards.end(), [](const auto& a, const auto& b) { return a.firstSlot < b.firstSlot; });
    return shards;
}

std::vector<ClusterNodeLine> parseClusterNodes(std::string_view text)
{
    std::vector<ClusterNodeLine> all;
    for (std::size_t pos = 0; pos < text.size();) {
        const std::size_t eol = std::min(text.find('\n', pos), text.size());
        std::vector<std::string_view> f;
        for (std::size_t p = pos; p < eol;) {
            const std::size_t sp = std::min(text.find(' ', p), eol);
            if (sp > p)
                f.push_back(text.substr(p, sp - p));
            p = sp + 1;
        }
        pos = eol + 1;
        if (f.size() < 8)
            continue;
        ClusterNodeLine n;
        n.id = f[0];
        const std::string flags = "," + std::string(f[2]) + ",";
        n.myself = flags.find(",myself,") != std::string::npos;
        n.isPrimary = flags.find(",master,") != std::string::npos;
        n.primary = f[3];
        for (std::size_t i = 8; i < f.size(); ++i) {
            if (f[i].starts_with("[")) {
                n.moving = true;
                continue;
            }
            const auto dash = f[i].find('-');
            const std::string_view first = f[i].substr(0, dash);
            const std::string_view last = dash == std::string_view::npos ? first : f[i].substr(dash + 1);
            int a = 0, b = -1;
            std::from_chars(first.data(), first.data() + first.size(), a);
            std::from_chars(last.data(), last.data() + last.size(), b);
            n.slotsHeld += b >= a ? b - a + 1 : 0;
        }
        all.push_back(std::move(n));
    }
    return all;
}

std::int16_t SlotMap::indexLocked(const std::string& address)
{
    auto at = std::find(m_addresses.begin(), m_addresses.end(), address);
    if (at != m_addresses.end())
        return static_cast<std::int16_t>(at - m_addresses.begin());
    if (m_addresses.size() >= kMaxClusterNodes)
        return -1; // never wraps: a slot not known goes to the seed, which redirects it
    m_addresses.push_back(address);
    return static_cast<std::int16_t>(m_addresses.size() - 1);
}

namespace {
void remember(std::vector<std::string>& nodes, const std::string& address)
{
    if (nodes.size() < kMaxClusterNodes && std::find(nodes.begin(), nodes.end(), address) == nodes.end())
        nodes.push_back(address);
}
} // namespace

void SlotMap::update(const std::vector<ClusterShard>& shards)
{
    std::unique_lock lock(m_mutex);
    m_node.fill(-1);
    m_addresses.clear();
    m_nodes.clear();
    for (const ClusterShard& s : shards) {
        const std::int16_t index = indexLocked(s.primary);
        for (const auto& [first, last] : s.ranges) // parseClusterSlots clamped them to 0..16383
            std::fill(m_node.begin() + first, m_node.begin() + last + 1, index);
        remember(m_nodes, s.primary);
        for (const std::string& r : s.replicas)
            remember(m_nodes, r);
    }
}

void SlotMap::pin(std::uint16_t slot, const std::string& address)
{
    std::unique_lock lock(m_mutex);
    m_node[slot & 0x3FFF] = indexLocked(address);
    remember(m_nodes, address);
}

std::vector<std::string> SlotMap::nodes() const
{
    std::shared_lock lock(m_mutex);
    return m_nodes;
}

std::vector<std::string> SlotMap::nodesToAsk(const std::vector<std::string>& talkedTo, const std::string& failed) const
{
    std::vector<std::string> out;
    const auto add = [&](const std::string& a) {
        if (a != failed && std::find(out.begin(), out.end(), a) == out.end())
            out.push_back(a);
    };
    for (const std::string& a : talkedTo)
        add(a);
    for (const std::string& a : nodes())
        add(a);
    return out;
}

std::optional<std::string> SlotMap::addressFor(std::uint16_t slot) const
{
    std::shared_lock lock(m_mutex);
    const std::int16_t n = m_node[slot & 0x3FFF];
    if (n < 0)
        return std::nullopt;
    return m_addresses[static_cast<std::size_t>(n)];
}

bool SlotMap::empty() const
{
    std::shared_lock lock(m_mutex);
    return m_addresses.empty();
}

} // namespace idem
