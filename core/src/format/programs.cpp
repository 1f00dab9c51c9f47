// Well-known programs that share a Redis with idempotency records but keep no idempotency data:
// job queues (BullMQ, RQ, Sidekiq) and task results (Celery and its broker, kombu). Their keys are
// recognised by shape together with the Redis type and, for hashes, the few fields a scan reads
// anyway (programHashFields, in the scan's one HMGET), never by an extra round trip. What is read
// as theirs is FOREIGN with the program named (Record::program): no bulk purge takes it by any
// state, and an unknown one of theirs is never "unknown, purgeable". Where a shape is generic
// (`queue:<name>`, `<x>:work`, `queues`) the type must agree; keeping a key that was not theirs is
// safe, deleting one that was is not. docs/formats.md cites the sources read for each shape.
#include "format/profile.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace idem::format {

namespace {

const std::string* field(const KeyRead& in, std::string_view name)
{
    for (const auto& [k, v] : in.fields)
        if (k == name)
            return &v;
    return nullptr;
}

bool digits(std::string_view s)
{
    return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

bool hex(std::string_view s)
{
    return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isxdigit(c); });
}

Record owned(std::string_view program, const std::string& what)
{
    Record r = make(RecordFormat::Unknown, RecordState::Foreign);
    r.program = std::string(program);
    r.reason = std::string(program) + "'s " + what + ": not idempotency data";
    return r;
}

// BullMQ (and Bull before it): every key of a queue is <prefix>:<queue>:<suffix>, prefix "bull" by
// default (QueueKeys); neither a queue name nor a custom job id may hold ':'. A job is the hash at
// <prefix>:<queue>:<id> (storeJob.lua: name, data, opts, timestamp, delay, priority; a worker adds
// processedOn and counts attempts in atm, Bull in attemptsMade; finishedOn once done).
constexpr std::string_view kBull = "bull:";

// A queue's keys other than its jobs, with the type BullMQ gives each (QueueKeys, the Lua scripts).
std::string_view bullStructureType(std::string_view suffix)
{
    static constexpr std::array<std::pair<std::string_view, std::string_view>, 14> kinds = {{
        {"wait", "list"},        {"active", "list"},     {"paused", "list"},      {"prioritized", "zset"},
        {"delayed", "zset"},     {"completed", "zset"},  {"failed", "zset"},      {"marker", "zset"},
        {"repeat", "zset"},      {"events", "stream"},   {"stalled", "set"},      {"stalled-check", "string"},
        {"id", "string"},        {"meta", "hash"},
    }};
    for (const auto& [name, type] : kinds)
        if (name == suffix)
            return type;
    return {};
}

bool bullJobSuffix(std::string_view suffix)
{
    return suffix.find(':') == std::string_view::npos && bullStructureType(suffix).empty() && suffix != "pc" &&
           suffix != "limiter";
}

// What a key of queue `queue` is, as BullMQ wrote it (`suffix`: what follows the queue's name).
Record bullKey(const KeyRead& in, std::string_view queue, std::string_view suffix, std::string_view prefix)
{
    const std::string ofQueue = " of queue " + quoted(queue) + (prefix.empty() ? "" : " (prefix " + quoted(prefix) + ")");
    if (in.type == "hash" && bullJobSuffix(suffix)) {
        if (!field(in, "timestamp") && !field(in, "name"))
            return owned("BullMQ", "hash " + quoted(suffix) + ofQueue + " (no job fields read: a job being written or removed?)");
        std::string what = "job " + quoted(suffix) + ofQueue;
        if (const std::string* name = field(in, "name"))
            what += ", named " + quoted(*name);
        const std::string* attempts = field(in, "atm");
        attempts = attempts ? attempts : field(in, "attemptsMade");
        if (attempts && digits(*attempts))
            what += ", " + *attempts + " attempt(s) made";
        Record r = owned("BullMQ", what);
        if (field(in, "finishedOn")) {
            r.reason += "; finished (a completed or failed job its queue keeps)";
        } else if (field(in, "processedOn")) {
            r.rawStatus = "active"; // a worker holds it now: purge --key wants --live
            r.reason += "; active: a worker is processing it";
        } else {
            r.reason += "; waiting, delayed or prioritized: not yet processed";
        }
        return r;
    }
    std::string what = quoted(suffix) + " " + in.type;
    if (suffix.ends_with(":lock"))
        what = "worker's lock on job " + quoted(suffix.substr(0, suffix.size() - 5));
    else if (suffix == "id")
        what = "job id counter";
    else if (suffix == "meta")
        what = "queue settings";
    else if (suffix == "wait" || suffix == "paused" || suffix == "active")
        what = "list of " + std::string(suffix) + " jobs";
    else if (suffix == "events")
        what = "event stream";
    return owned("BullMQ", what + ofQueue);
}

std::optional<Record> bullmq(const KeyRead& in)
{
    const std::string_view key = in.key;
    if (!key.starts_with(kBull))
        return std::nullopt;
    const std::string_view rest = key.substr(kBull.size());
    const auto colon = rest.find(':');
    if (colon == 0 || colon == std::string_view::npos || colon + 1 == rest.size())
        return std::nullopt;
    return bullKey(in, rest.substr(0, colon), rest.substr(colon + 1), {});
}

// The <prefix>:<queue>:<suffix> of a key under another prefix than "bull" (an application's own, or
// "{name}" on a Redis Cluster, as BullMQ's documentation asks there): the last two segments are the
// queue and what of it. Nothing for keys of another shape, and for idem's own (<ns>:{<id>}).
struct BullParts {
    std::string_view prefix, queue, suffix;
};
std::optional<BullParts> bullParts(std::string_view key)
{
    if (key.starts_with(kBull) || key.ends_with('}'))
        return std::nullopt;
    const auto last = key.rfind(':');
    if (last == std::string_view::npos || last == 0 || last + 1 == key.size())
        return std::nullopt;
    const auto before = key.rfind(':', last - 1);
    if (before == std::string_view::npos || before == 0 || before + 1 == last)
        return std::nullopt;
    return BullParts{key.substr(0, before), key.substr(before + 1, last - before - 1), key.substr(last + 1)};
}

// BullMQ under a prefix of the application's: the key's shape alone does not say it, so what is in
// it must. A job hash with BullMQ's own fields (a name, and a timestamp in milliseconds, which
// storeJob.lua writes together), the queue's settings with BullMQ's version in them, or a queue
// structure of BullMQ's name and type. (A worker's "<id>:lock" is a lock by its name already.)
std::optional<Record> bullmqPrefixed(const KeyRead& in)
{
    const std::optional<BullParts> p = bullParts(in.key);
    if (!p)
        return std::nullopt;
    if (in.type == "hash" && bullJobSuffix(p->suffix)) {
        const std::string* name = field(in, "name");
        const std::string* timestamp = field(in, "timestamp");
        if (!name || !timestamp || !digits(*timestamp) || timestamp->size() < 12)
            return std::nullopt;
        return bullKey(in, p->queue, p->suffix, p->prefix);
    }
    if (p->suffix == "meta") {
        const std::string* version = field(in, "version");
        if (in.type != "hash" || !version || !version->starts_with("bullmq:"))
            return std::nullopt;
        return bullKey(in, p->queue, p->suffix, p->prefix);
    }
    const std::string_view type = bullStructureType(p->suffix);
    if (type.empty() || type != in.type || (p->suffix == "id" && !digits(in.value)))
        return std::nullopt;
    Record r = bullKey(in, p->queue, p->suffix, p->prefix);
    r.reason += " (told by its name and type alone: kept, as BullMQ's would be)";
    return r;
}

// RQ keeps everything under "rq:" (its prefixes are class attributes: Job.redis_job_namespace_prefix
// "rq:job:", Queue "rq:queue:" and "rq:queues", the registries "rq:wip:", "rq:finished:", ...). A
// job is the hash rq:job:<id> with status (created, queued, started, finished, failed, deferred,
// scheduled, stopped, canceled, ...), origin (its queue), data, enqueued_at, started_at, ...
std::optional<Record> rq(const KeyRead& in)
{
    const std::string_view key = in.key;
    if (!key.starts_with("rq:"))
        return std::nullopt;
    const std::string_view rest = key.substr(3);
    const std::string_view kind = rest.substr(0, rest.find(':'));
    static constexpr std::array<std::string_view, 28> kinds = {
        "job", "queue", "queues", "wip", "finished", "failed", "deferred", "ready", "scheduled", "canceled",
        "registry", "worker", "workers", "results", "executions", "execution", "group", "groups", "scheduler",
        "scheduler-lock", "clean_registries", "suspended", "rl", "rl-keys", "cron_job", "cron_scheduler",
        "cron_schedulers", "pubsub"};
    if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end())
        return std::nullopt;
    const std::string_view name = kind.size() < rest.size() ? rest.substr(kind.size() + 1) : std::string_view();
    if (kind == "job" && in.type == "hash" && !name.empty() && name.find(':') == std::string_view::npos) {
        std::string what = "job " + quoted(name);
        if (const std::string* origin = field(in, "origin"))
            what += " of queue " + quoted(*origin);
        Record r = owned("RQ", what);
        if (const std::string* status = field(in, "status")) {
            r.rawStatus = *status; // its own word ("started": a worker runs it; purge --key wants --live)
            r.reason += "; status " + quoted(*status);
        }
        return r;
    }
    std::string what = in.type + " " + std::string(kind);
    if (kind == "queue" && in.type == "list")
        what = "queue " + quoted(name) + " (job ids waiting)";
    else if (kind == "wip")
        what = "registry of started jobs of queue " + quoted(name);
    else if (kind == "queues" || kind == "workers")
        what = "set of its " + std::string(kind);
    return owned("RQ", what);
}

// Sidekiq: a process's identity is "<hostname>:<pid>:<12 hex digits>" (Component#identity). Its
// heartbeat writes the hash <identity> (info, busy, beat, quiet, rtt_us, rss) and the hash
// <identity>:work (thread id -> the job it runs; rewritten every beat, 60 s TTL), and reads the
// list <identity>-signals. Jobs wait in the lists queue:<name> (named in the set queues); the
// sorted sets schedule, retry and dead hold jobs for later; processes names the live processes;
// stat:processed and stat:failed (and per day, stat:<...>:<yyyy-mm-dd>) count; its metrics are the
// hashes j|<yymmdd>|<h>:<m> and the bitfield strings h|<class>-<d>-<h>:<m>. An optional
// redis-namespace prefix "sidekiq:" is read through.
bool identity(std::string_view s)
{
    const auto last = s.rfind(':');
    if (last == std::string_view::npos || last == 0 || s.size() - last - 1 != 12 || !hex(s.substr(last + 1)))
        return false;
    const auto pid = s.rfind(':', last - 1);
    return pid != std::string_view::npos && pid > 0 && digits(s.substr(pid + 1, last - pid - 1));
}

std::optional<Record> sidekiq(const KeyRead& in)
{
    std::string_view key = in.key;
    if (in.type == "hash" && key.size() > 5 && key.ends_with(":work"))
        return owned("Sidekiq", "work hash of process " + quoted(key.substr(0, key.size() - 5)) +
                                    " (the jobs its threads run now; rewritten at every heartbeat)");
    if (in.type == "hash" && identity(key) && field(in, "beat"))
        return owned("Sidekiq", "heartbeat of process " + quoted(key));
    if (in.type == "list" && key.ends_with("-signals") && identity(key.substr(0, key.size() - 8)))
        return owned("Sidekiq", "signal list of process " + quoted(key.substr(0, key.size() - 8)));
    if (key.starts_with("sidekiq:"))
        key.remove_prefix(8);
    if (in.type == "list" && key.starts_with("queue:") && key.size() > 6)
        return owned("Sidekiq", "queue " + quoted(key.substr(6)) + " (jobs waiting)");
    if (in.type == "set" && (key == "queues" || key == "processes"))
        return owned("Sidekiq", "set of its " + std::string(key));
    if (in.type == "zset" && (key == "schedule" || key == "retry" || key == "dead"))
        return owned("Sidekiq", std::string(key) + " set (jobs kept for later)");
    if (in.type == "string" && (key.starts_with("stat:processed") || key.starts_with("stat:failed"))) {
        const std::string_view stat = key.substr(5);
        const auto colon = stat.find(':');
        const std::string_view day = colon == std::string_view::npos ? std::string_view() : stat.substr(colon + 1);
        if ((colon == std::string_view::npos || (day.size() == 10 && day[4] == '-' && day[7] == '-')) &&
            digits(trimmedWord(in.value)))
            return owned("Sidekiq", "counter " + quoted(key));
    }
    if (in.type == "hash" && key.size() > 9 && key.starts_with("j|") && digits(key.substr(2, 6)) && key[8] == '|')
        return owned("Sidekiq", "metrics of minute " + quoted(key.substr(2)));
    if (in.type == "string" && key.starts_with("h|") && key.find('-') != std::string_view::npos)
        return owned("Sidekiq", "execution-time histogram " + quoted(key.substr(2)));
    return std::nullopt;
}

// Celery's result backend: KeyValueStoreBackend writes each task's result at celery-task-meta-<id>
// (a group's at celery-taskset-meta-<id>, and a chord's counters at that key plus .j, .t, .s),
// after a global key prefix if one is configured: a serialized dict with status (PENDING, STARTED,
// RETRY, SUCCESS, FAILURE, REVOKED, ...), result, traceback, children, date_done, task_id. A STARTED
// one is no lock: the worker writes the result over it, and a duplicate delivery is Celery's to
// prevent. Its Redis broker (kombu) keeps the queue list itself ("celery" by default), the sets
// _kombu.binding.<queue>, and unacked (hash), unacked_index (zset), unacked_mutex (string).
std::size_t afterPrefix(std::string_view key, std::string_view what)
{
    const auto at = key.find(what);
    if (at == std::string_view::npos || (at > 0 && std::string_view(":_-.").find(key[at - 1]) == std::string_view::npos))
        return std::string_view::npos;
    return at + what.size();
}

std::optional<Record> celery(const Input& x)
{
    const KeyRead& in = x.in;
    const std::string_view key = in.key;
    if (const auto at = afterPrefix(key, "celery-task-meta-"); at != std::string_view::npos && at < key.size()) {
        Record r = owned("Celery", "result of task " + quoted(key.substr(at)));
        const std::string* status = x.object ? x.object->string("status") : nullptr;
        if (status) {
            r.rawStatus = *status;
            r.reason += "; status " + quoted(*status);
        }
        return r;
    }
    if (const auto at = afterPrefix(key, "celery-taskset-meta-"); at != std::string_view::npos && at < key.size())
        return owned("Celery", "result of group " + quoted(key.substr(at)));
    if (key.starts_with("_kombu.binding.") && in.type == "set")
        return owned("Celery", "broker binding of queue " + quoted(key.substr(15)) + " (kombu)");
    if ((key == "unacked" && in.type == "hash") || (key == "unacked_index" && in.type == "zset") ||
        (key == "unacked_mutex" && in.type == "string"))
        return owned("Celery", "broker's " + std::string(key) + " (kombu: messages delivered, not yet acknowledged)");
    if (key == "celery" && in.type == "list")
        return owned("Celery", "default task queue (kombu)");
    return std::nullopt;
}

} // namespace

std::optional<Record> programData(const Input& x)
{
    if (std::optional<Record> r = bullmq(x.in))
        return r;
    if (std::optional<Record> r = rq(x.in))
        return r;
    if (std::optional<Record> r = celery(x))
        return r;
    if (std::optional<Record> r = sidekiq(x.in))
        return r;
    return bullmqPrefixed(x.in); // last: the others' own shapes first
}

std::vector<std::string_view> programHashFields(std::string_view key)
{
    // (only names hashFieldsToRead() has not: "status" is read of every hash)
    if (key.starts_with(kBull) && std::count(key.begin(), key.end(), ':') == 2)
        return {"name", "timestamp", "processedOn", "finishedOn", "atm", "attemptsMade"};
    if (key.starts_with("rq:job:") && key.find(':', 7) == std::string_view::npos)
        return {"origin"};
    if (identity(key))
        return {"beat"};
    if (const std::optional<BullParts> p = bullParts(key)) { // under another prefix: what would say it is
        if (p->suffix == "meta")
            return {"version"};
        if (bullJobSuffix(p->suffix))
            return {"name", "timestamp", "processedOn", "finishedOn", "atm", "attemptsMade"};
    }
    return {};
}

} // namespace idem::format
