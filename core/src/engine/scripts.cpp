#include "idem/engine/scripts.h"

#include "idem/errors.h"
#include "idem/hash.h"
#include "redis/resp.h"

#include <hiredis/hiredis.h>

namespace idem {

namespace lua {
extern const std::string_view acquire, complete, fail, renew, force_fail, purge;
}

Script makeScript(std::string_view name, std::string_view source)
{
    return Script{name, source, toHex(sha1(source))};
}

namespace scripts {
const Script& acquire()
{
    static const Script s = makeScript("acquire", lua::acquire);
    return s;
}
const Script& complete()
{
    static const Script s = makeScript("complete", lua::complete);
    return s;
}
const Script& fail()
{
    static const Script s = makeScript("fail", lua::fail);
    return s;
}
const Script& renew()
{
    static const Script s = makeScript("renew", lua::renew);
    return s;
}
const Script& forceFail()
{
    static const Script s = makeScript("force_fail", lua::force_fail);
    return s;
}
const Script& purge()
{
    static const Script s = makeScript("purge", lua::purge);
    return s;
}
} // namespace scripts

bool isNoScript(const redisReply* r)
{
    return reply::isError(r) && reply::errorText(r).starts_with("NOSCRIPT");
}

void loadScript(Connection& c, const Script& s)
{
    ReplyPtr r = c.command({"SCRIPT", "LOAD", s.source});
    if (reply::isError(r.get()))
        throw ReplyError("SCRIPT LOAD " + std::string(s.name) + ": " +
                         std::string(reply::errorText(r.get())));
    if (reply::str(r.get()) != s.sha1)
        throw ProtoError("SCRIPT LOAD " + std::string(s.name) + " returned an unexpected SHA1");
}

ReplyPtr runScriptReply(Connection& c, const Script& s, const std::vector<std::string_view>& keys,
                        const std::vector<std::string_view>& args)
{
    // one buffer per thread, its capacity kept: an owner call is half of every new id's round
    // trips, and a fresh string grew four or five times on the way
    thread_local std::string call;
    call.clear();
    resp::Writer w(call);
    resp::evalsha(w, s, keys, args);
    ReplyPtr r = c.commandFormatted(call);
    if (isNoScript(r.get())) {
        loadScript(c, s);
        r = c.commandFormatted(call);
    }
    if (call.capacity() > 256 * 1024) // a huge response once does not keep its buffer for ever
        std::string().swap(call);
    return r;
}

ReplyPtr runScript(Connection& c, const Script& s, const std::vector<std::string_view>& keys,
                   const std::vector<std::string_view>& args)
{
    ReplyPtr r = runScriptReply(c, s, keys, args);
    if (reply::isError(r.get()))
        throw ReplyError("script " + std::string(s.name) + ": " + reply::errorMessage(r.get()));
    return r;
}

std::vector<ReplyPtr> runScriptPipelined(Connection& c, const Script& s, std::string_view resp,
                                         const std::vector<std::size_t>& ends, std::string_view trailer)
{
    const std::size_t extra = trailer.empty() ? 0 : 1;
    std::vector<ReplyPtr> replies;
    if (extra) {
        thread_local std::string out;
        out.assign(resp).append(trailer);
        replies = c.pipelineFormatted(out, ends.size() + 1);
    } else {
        replies = c.pipelineFormatted(resp, ends.size());
    }
    std::vector<std::size_t> again;
    for (std::size_t i = 0; i < ends.size(); ++i)
        if (isNoScript(replies[i].get()))
            again.push_back(i);
    if (again.empty())
        return replies;
    // after a restart, failover or SCRIPT FLUSH: load once, send the refused calls again
    loadScript(c, s);
    std::string retry;
    for (auto i : again)
        retry.append(resp::callAt(resp, ends, i));
    retry.append(trailer);
    auto second = c.pipelineFormatted(retry, again.size() + extra);
    for (std::size_t k = 0; k < again.size(); ++k)
        replies[again[k]] = std::move(second[k]);
    if (extra)
        replies.back() = std::move(second.back());
    return replies;
}

void runScriptPipelinedAsync(AsyncConnection& c, const Script& s, std::string resp, std::vector<std::size_t> ends,
                             std::string_view trailer, RepliesHandler done, Millis timeout)
{
    struct Batch {
        const Script& script;
        std::string resp, trailer;
        std::vector<std::size_t> ends;
        RepliesHandler done;
        std::vector<ReplyPtr> replies;
    };
    const std::size_t calls = ends.size(), extra = trailer.empty() ? 0 : 1;
    auto batch = std::make_shared<Batch>(Batch{s, std::move(resp), std::string(trailer), std::move(ends), std::move(done), {}});
    std::string out = batch->resp;
    out.append(trailer);
    c.send(std::move(out), calls + extra,
           [batch, &c, calls, extra, timeout](std::vector<ReplyPtr> replies, std::exception_ptr error) {
               if (error)
                   return batch->done({}, std::move(error));
               std::vector<std::size_t> again;
               for (std::size_t i = 0; i < calls; ++i)
                   if (isNoScript(replies[i].get()))
                       again.push_back(i);
               if (again.empty())
                   return batch->done(std::move(replies), nullptr);
               // after a restart, failover or SCRIPT FLUSH: load it, then the refused calls again
               std::string retry;
               resp::Writer w(retry);
               const std::string_view load[] = {"SCRIPT", "LOAD", batch->script.source};
               w.command(load);
               for (const auto i : again)
                   retry.append(resp::callAt(batch->resp, batch->ends, i));
               retry.append(batch->trailer);
               batch->replies = std::move(replies);
               const std::size_t count = 1 + again.size() + extra; // before `again` moves
               c.send(std::move(retry), count,
                      [batch, again = std::move(again), extra](std::vector<ReplyPtr> second, std::exception_ptr error) {
                          if (error)
                              return batch->done({}, std::move(error));
                          const redisReply* loaded = second.front().get();
                          if (reply::isError(loaded) || !reply::isString(loaded) || reply::view(loaded) != batch->script.sha1)
                              return batch->done({}, std::make_exception_ptr(ReplyError(
                                                         "SCRIPT LOAD " + std::string(batch->script.name) + ": " +
                                                         (reply::isError(loaded) ? std::string(reply::errorText(loaded))
                                                                                 : std::string("unexpected answer")))));
                          for (std::size_t k = 0; k < again.size(); ++k)
                              batch->replies[again[k]] = std::move(second[1 + k]);
                          if (extra)
                              batch->replies.back() = std::move(second.back());
                          batch->done(std::move(batch->replies), nullptr);
                      },
                      timeout);
           },
           timeout);
}

void runScriptRoutedAsync(AsyncPool& pool, std::string_view key, const Script& s, std::string resp,
                          std::vector<std::size_t> ends, std::string_view trailer, RepliesHandler done)
{
    pool.routed(
        key,
        [&s, resp = std::move(resp), ends = std::move(ends), trailer = std::string(trailer)](
            AsyncConnection& c, bool asking, RepliesHandler replies) {
            if (!asking)
                return runScriptPipelinedAsync(c, s, resp, ends, trailer, std::move(replies));
            std::string unit;
            resp::Writer w(unit);
            const std::string_view load[] = {"SCRIPT", "LOAD", s.source};
            w.command(load);
            const std::string_view asking_[] = {"ASKING"};
            w.command(asking_);
            unit.append(resp).append(trailer);
            const std::size_t count = 2 + ends.size() + (trailer.empty() ? 0 : 1);
            c.send(std::move(unit), count, [replies = std::move(replies)](std::vector<ReplyPtr> r, std::exception_ptr e) {
                if (!e)
                    r.erase(r.begin(), r.begin() + 2); // SCRIPT LOAD's and ASKING's answers
                replies(std::move(r), std::move(e));
            });
        },
        std::move(done));
}

std::string waitCommand(int replicas, Millis timeout)
{
    std::string out;
    resp::Writer w(out);
    w.array(3);
    w.bulk("WAIT");
    w.bulk(static_cast<long long>(replicas));
    w.bulk(static_cast<long long>(timeout.count()));
    return out;
}

void resp::evalshaHead(Writer& w, const Script& s, std::size_t keys, std::size_t args)
{
    if (keys > kMaxScriptKeys)
        throw UsageError("too many keys for one script call");
    w.array(3 + keys + args);
    w.bulk("EVALSHA");
    w.bulk(s.sha1);
    w.bulk(static_cast<long long>(keys));
}

void resp::evalsha(Writer& w, const Script& s, std::span<const std::string_view> keys,
                   std::span<const std::string_view> args)
{
    evalshaHead(w, s, keys.size(), args.size());
    for (const auto k : keys)
        w.bulk(k);
    for (const auto a : args)
        w.bulk(a);
}

} // namespace idem
