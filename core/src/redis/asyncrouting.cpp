#include "redis/asyncrouting.h"

#include "idem/errors.h"
#include "idem/redis/cluster.h"
#include "idem/redis/reply.h"

#include <hiredis/hiredis.h>

namespace idem {

namespace {
std::string addressOf(const ConnectionOptions& o) { return o.host + ":" + std::to_string(o.port); }

bool isIoError(const std::exception_ptr& e)
{
    try {
        std::rethrow_exception(e);
    } catch (const IoError&) {
        return true;
    } catch (...) {
        return false;
    }
}
} // namespace

AsyncPool::Routing::~Routing()
{
    closing = true;
    decltype(pools) gone;
    {
        std::lock_guard lock(mutex);
        gone.swap(pools);
    }
    gone.clear();
}

void AsyncPool::Routing::closeAll()
{
    closing = true;
    std::vector<AsyncPool*> open; // never erased, and none made once closing: these are all
    {
        std::lock_guard lock(mutex);
        for (auto& [address, pool] : pools)
            open.push_back(pool.get());
    }
    for (AsyncPool* pool : open)
        pool->close(); // joins its threads: not under the lock their answers may take
}

bool AsyncPool::isCluster() const { return m_routing->cluster.load(); }

void AsyncPool::routed(std::string_view key, UnitSender send, RepliesHandler done)
{
    if (!m_routing->asked.load() && !m_routing->asked.exchange(true))
        m_routing->askWhetherCluster();
    auto call = std::make_shared<Routing::Call>(Routing::Call{std::string(key), std::move(send), std::move(done), 0});
    AsyncConnection* c = nullptr;
    try {
        c = &m_routing->poolFor(key).next();
    } catch (const Error&) { // a node the map names that idem cannot read: this call fails, as a reply would
        return call->done({}, std::current_exception());
    }
    m_routing->dispatch(call, *c, false);
}

AsyncPool& AsyncPool::Routing::poolFor(std::string_view key)
{
    if (!cluster.load())
        return seed; // a single server (or not known to be a cluster yet): no slot computed
    const auto address = map.addressFor(hashSlot(key));
    return address ? poolAt(*address) : seed;
}

AsyncPool& AsyncPool::Routing::poolAt(const std::string& address)
{
    if (seed.options().unixSocket.empty() && address == addressOf(seed.options()))
        return seed;
    std::lock_guard lock(mutex);
    if (const auto it = pools.find(address); it != pools.end())
        return *it->second;
    if (closing.load())
        return seed; // closed: its calls fail at once, and no new pool outlives closeAll()
    const auto node = parseNodeAddress(address);
    if (!node)
        throw ProtoError("Redis Cluster named a node idem cannot read: '" + address + "'");
    ConnectionOptions o = seed.options();
    o.unixSocket.clear();
    o.host = node->host;
    o.port = node->port;
    o.namedByServer = true;
    auto& pool = pools[address];
    pool = std::make_unique<AsyncPool>(o, seed.size());
    return *pool;
}

void AsyncPool::Routing::dispatch(const std::shared_ptr<Call>& call, AsyncConnection& c, bool asking)
{
    call->send(c, asking, [this, call, &c](std::vector<ReplyPtr> replies, std::exception_ptr error) {
        if (error) {
            // a node that does not answer may be failing over: this call fails closed, and the map
            // is asked again of another node so that the next ones find the promoted replica
            if (cluster.load() && !closing.load() && isIoError(error))
                refreshAvoiding(addressOf(c.options()));
            return call->done({}, std::move(error));
        }
        auto to = replies.empty() ? std::nullopt : reply::redirect(replies.front().get());
        if (!to || call->hops >= 5 || closing.load())
            return call->done(std::move(replies), nullptr);
        if (to->node.host.empty()) // "MOVED 3999 :6380": the host the request went to
            to->address = c.options().host + to->address;
        ++call->hops;
        cluster = true;
        if (!to->ask) { // the slot moved: at least this slot goes there now, and the whole map is read again
            map.pin(to->slot, to->address);
            refreshFrom(c);
        }
        AsyncPool* target = nullptr;
        try {
            target = &poolAt(to->address);
        } catch (const Error&) {
            return call->done({}, std::current_exception());
        }
        dispatch(call, target->next(), to->ask);
    });
}

void AsyncPool::Routing::askWhetherCluster()
{
    AsyncConnection& c = seed.next();
    c.command({"INFO", "cluster"}, [this, &c](ReplyPtr r, std::exception_ptr error) {
        // refused (an ACL without INFO) or not answered: redirects still tell a cluster
        if (error || closing.load() || reply::isError(r.get()) ||
            reply::view(r.get()).find("cluster_enabled:1") == std::string_view::npos)
            return;
        cluster = true;
        refreshFrom(c);
    });
}

void AsyncPool::Routing::refreshFrom(AsyncConnection& c)
{
    if (refreshing.exchange(true))
        return;
    const std::string host = c.options().host;
    c.command({"CLUSTER", "SLOTS"}, [this, host](ReplyPtr r, std::exception_ptr error) {
        if (!error && !closing.load()) {
            try {
                map.update(parseClusterSlots(r.get(), host));
            } catch (const Error&) {
                // refused or unreadable: redirects go on being followed one slot at a time
            }
        }
        refreshing = false;
    });
}

void AsyncPool::Routing::refreshAvoiding(const std::string& failed)
{
    if (refreshing.exchange(true))
        return;
    // the nodes talked to first, then every other node the map named (the failed primary's
    // replicas among them: the seed may be the node that died); each asked in turn until one answers
    std::vector<std::string> talkedTo = {addressOf(seed.options())};
    {
        std::lock_guard lock(mutex);
        for (auto& [address, pool] : pools)
            talkedTo.push_back(address);
    }
    askForMap(std::make_shared<const std::vector<std::string>>(map.nodesToAsk(talkedTo, failed)), 0);
}

void AsyncPool::Routing::askForMap(std::shared_ptr<const std::vector<std::string>> nodes, std::size_t i)
{
    AsyncPool* pool = nullptr;
    for (; !pool && i < nodes->size() && !closing.load(); ++i) {
        try {
            pool = &poolAt((*nodes)[i]);
        } catch (const Error&) {
            // an address idem cannot read: the next
        }
    }
    if (!pool) {
        refreshing = false;
        return;
    }
    const std::string host = pool->options().host;
    pool->next().command({"CLUSTER", "SLOTS"}, [this, nodes, i, host](ReplyPtr r, std::exception_ptr error) {
        if (error && !closing.load())
            return askForMap(nodes, i); // down too: the next (i is past this one already)
        if (!error && !closing.load()) {
            try {
                map.update(parseClusterSlots(r.get(), host));
            } catch (const Error&) {
                // refused or unreadable: redirects go on being followed one slot at a time
            }
        }
        refreshing = false;
    });
}

} // namespace idem
