// One guarded way to remove a record, whatever started it: Store::purge (idemctl purge ID), the
// Scanner's bulk purge (idemctl purge --state/--stale/--pattern/--key, the console's purge and its
// release of a foreign lock) and force-fail - each keeps an idem record's fence in its meta key and
// leaves an entry in the namespace's audit stream, on one server and on a Cluster.
#include "idem/engine/store.h"
#include "idem/monitor/scanner.h"
#include "idem/redis/localcluster.h"
#include "idem/redis/localserver.h"
#include "testsupport.h"

#include <QDateTime>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include <thread>

namespace {

std::int64_t metaFence(idem::Store& store, const std::string& id)
{
    for (const auto& [k, v] : store.meta(id))
        if (k == "fence")
            return std::stoll(v);
    return 0;
}

// the records the scanner reads, by id
std::map<std::string, idem::Record> scanned(idem::Scanner& scanner)
{
    std::map<std::string, idem::Record> out;
    scanner.open();
    while (!scanner.done())
        for (auto& p : scanner.next().pages)
            for (auto& r : p.page.records)
                out[r.id] = r;
    return out;
}

// Every path on `store`'s server: purge by id, the bulk purge of what was read (a record that
// moved since is left, with no entry), force-fail; fences keep rising, the stream says who and why
void everyPathIsGuarded(const idem::ConnectionOptions& o, const std::string& ns)
{
    idem::ConnectionPool pool(o, 1);
    idem::Store store(pool, idem::StoreOptions{.keyNamespace = ns, .lease = idem::Millis(60000)});
    const auto a = store.acquire("by-id");
    QCOMPARE(store.purge("by-id", "alice", "stuck after deploy").status, idem::AdminStatus::Ok);
    QCOMPARE(metaFence(store, "by-id"), a.ticket.fence);
    QVERIFY(store.acquire("by-id").ticket.fence > a.ticket.fence);

    const auto b = store.acquire("bulk");
    store.acquire("moved");
    idem::MonitorOptions mo;
    mo.keyNamespace = ns;
    idem::Scanner scanner(o, mo);
    auto seen = scanned(scanner);
    QVERIFY(seen.count("bulk") && seen.count("moved"));
    // "moved" is renewed after it was read: the operator did not see this lock
    const auto again = store.acquire("moved"); // in progress: nothing changes...
    QCOMPARE(again.status, idem::AcquireStatus::InProgress);
    {
        const std::string key = store.recordKey("moved");
        idem::Connection c(o);
        auto r = c.command({"HSET", key, "lease_until_ms", "99999999999999"}); // ...until its owner renews it
        if (const auto to = idem::reply::redirect(r.get())) { // on a cluster: on the node serving it
            idem::ConnectionOptions at = o;
            at.host = to->node.host.empty() ? o.host : to->node.host;
            at.port = to->node.port;
            idem::Connection there(at);
            r = there.command({"HSET", key, "lease_until_ms", "99999999999999"});
        }
        QVERIFY(!idem::reply::isError(r.get()));
    }
    QCOMPARE(scanner.unlinkIfUnchanged({seen["bulk"], seen["moved"]}, idem::Actor{"bob", "bulk: stale"}), std::size_t(1));
    QVERIFY(!store.inspect("bulk"));
    QVERIFY(store.inspect("moved"));
    QCOMPARE(metaFence(store, "bulk"), b.ticket.fence);
    QVERIFY(store.acquire("bulk").ticket.fence > b.ticket.fence);

    store.acquire("ff");
    QCOMPARE(store.forceFail("ff", "poison message", true, "carol").status, idem::AdminStatus::Ok);

    const auto audit = store.audit(10);
    QCOMPARE(audit.size(), std::size_t(3)); // newest first; nothing for "moved"
    QCOMPARE(audit[0].action, std::string("force-fail terminal"));
    QCOMPARE(audit[0].by, std::string("carol"));
    QCOMPARE(audit[0].was, std::string("STARTED"));
    QCOMPARE(audit[1].action, std::string("purge"));
    QCOMPARE(audit[1].key, store.recordKey("bulk"));
    QCOMPARE(audit[1].by, std::string("bob"));
    QCOMPARE(audit[1].why, std::string("bulk: stale"));
    QCOMPARE(audit[2].key, store.recordKey("by-id"));
    QCOMPARE(audit[2].why, std::string("stuck after deploy"));
    QCOMPARE(audit[2].was, std::string("STARTED"));
    for (const auto& e : audit) {
        QVERIFY2(e.via.find('@') != std::string::npos, e.via.c_str());
        QVERIFY(e.atMs > 1'600'000'000'000);
    }
    // the meta key keeps the last action of a purged record
    std::map<std::string, std::string> meta;
    for (const auto& [k, v] : store.meta("by-id"))
        meta[k] = v;
    QCOMPARE(meta["last_op_by"], std::string("alice"));
    QCOMPARE(meta["last_op_prev_state"], std::string("STARTED"));
}

} // namespace

class TestGuard : public QObject {
    Q_OBJECT

private slots:
    void oneServer() { everyPathIsGuarded(idemtest::sharedRedis(), idemtest::uniqueNamespace("guard")); }

    // A purge by id given what the operator read takes only that: a stale lock taken over in
    // between is the new owner's live lock, and stays.
    void purgeOfWhatWasRead()
    {
        const std::string ns = idemtest::uniqueNamespace("guardseen");
        idem::ConnectionPool pool(idemtest::sharedRedis(), 1);
        idem::Store store(pool, idem::StoreOptions{.keyNamespace = ns, .lease = idem::Millis(60000)});
        QCOMPARE(store.acquire("x", "", idem::Millis(1)).status, idem::AcquireStatus::Acquired);
        QThread::msleep(5);
        const auto seen = store.inspectKey(store.recordKey("x"));
        QVERIFY(seen && seen->stale);
        const auto taken = store.acquire("x", "");
        QCOMPARE(taken.status, idem::AcquireStatus::Acquired);
        QVERIFY(taken.takeover);
        const auto refused = store.purge("x", "test", "stale", &*seen);
        QCOMPARE(refused.status, idem::AdminStatus::Refused);
        QVERIFY2(refused.reason.find("changed since it was read") != std::string::npos, refused.reason.c_str());
        QVERIFY(store.inspect("x")); // the new owner's lock
        const auto now = store.inspectKey(store.recordKey("x"));
        QCOMPARE(store.purge("x", "test", "read again", &*now).status, idem::AdminStatus::Ok);
        QVERIFY(!store.inspect("x"));
    }

    // Another library's lock renewed between the read and the purge stays, whatever field its
    // lease is in (a hash's lock_expiry) and wherever in a large value it changed (the tail)
    void foreignRenewalBetweenReadAndPurge()
    {
        const std::string ns = idemtest::uniqueNamespace("guardforeign");
        idem::Connection c(idemtest::sharedRedis());
        const std::int64_t now = idem::reply::timeMs(c.checked({"TIME"}).get());
        const std::string old = std::to_string(now - 60'000), renewed = std::to_string(now + 600'000);
        const std::string pad(20000, 'x');
        const auto big = [&](const std::string& until) {
            return "{\"payload\":\"" + pad + "\",\"status\":\"PROCESSING\",\"lock_expiry\":" + until + "}";
        };
        c.checked({"HSET", ns + ":{hs}", "status", "PROCESSING", "lock_expiry", old});
        c.checked({"SET", ns + ":{big}", big(old), "EX", "600"});
        idem::MonitorOptions mo;
        mo.keyNamespace = ns;
        idem::Scanner scanner(idemtest::sharedRedis(), mo);
        auto seen = scanned(scanner);
        QVERIFY(seen.count("hs") && seen.count("big"));
        QVERIFY2(seen["hs"].stale && seen["big"].stale, seen["big"].reason.c_str());
        QVERIFY(seen["big"].partial);
        c.checked({"HSET", ns + ":{hs}", "lock_expiry", renewed});
        c.checked({"SET", ns + ":{big}", big(renewed), "EX", "600"}); // same length, only the tail differs
        QCOMPARE(scanner.unlinkIfUnchanged({seen["hs"], seen["big"]}, idem::Actor{"t", "stale"}), std::size_t(0));
        QCOMPARE(idem::reply::integer(c.checked({"EXISTS", ns + ":{hs}", ns + ":{big}"}).get()), 2);
        // read as they are now (stale again), they go
        c.checked({"HSET", ns + ":{hs}", "lock_expiry", old});
        c.checked({"SET", ns + ":{big}", big(old), "EX", "600"});
        idem::Scanner again(idemtest::sharedRedis(), mo);
        seen = scanned(again);
        QCOMPARE(again.unlinkIfUnchanged({seen["hs"], seen["big"]}, idem::Actor{"t", "stale"}), std::size_t(2));
    }

    // What idem cannot read whole, but whose status says in progress, is another writer's live
    // lock: no idemctl path runs over it, deletes it or writes into it without --live
    void unreadLocksAreNotTaken()
    {
        const std::string ns = idemtest::uniqueNamespace("guardunread");
        idem::Connection c(idemtest::sharedRedis());
        c.checked({"HSET", ns + ":{pay-12}", "state", "STARTED", "owner", "worker-7"}); // no lease
        c.checked({"SET", ns + ":{zero}", R"({"status":"PROCESSING","owner":"w1","lock_expiry":0})", "EX", "600"});
        c.checked({"SET", ns + ":node", R"({"status":"IN_PROGRESS","fingerPrint":"ab"})", "EX", "600"});
        const QStringList g = {QStringLiteral("--url"), QString::fromStdString(idemtest::sharedRedisUrl()),
                               QStringLiteral("--namespace"), QString::fromStdString(ns)};
        const auto run = [&](const QStringList& args) { return idemtest::runIdemctl(g + args); };
        const auto ran = run({QStringLiteral("run"), QStringLiteral("--key"), QStringLiteral("pay-12"),
                              QStringLiteral("--"), QStringLiteral("echo"), QStringLiteral("RAN")});
        QVERIFY2(ran.exitCode == 78 && !ran.out.contains("RAN"), ran.out.constData());
        QVERIFY2(ran.err.contains("without a lease deadline"), ran.err.constData());
        QCOMPARE(run({QStringLiteral("purge"), QStringLiteral("pay-12")}).exitCode, 1);
        QCOMPARE(run({QStringLiteral("force-fail"), QStringLiteral("pay-12")}).exitCode, 1);
        QCOMPARE(run({QStringLiteral("purge"), QStringLiteral("zero")}).exitCode, 1);
        QCOMPARE(run({QStringLiteral("purge"), QStringLiteral("--stale"), QStringLiteral("--yes")}).exitCode, 0);
        QCOMPARE(run({QStringLiteral("purge"), QStringLiteral("--state"), QStringLiteral("malformed"),
                      QStringLiteral("--pattern"), QString::fromStdString(ns + ":*"), QStringLiteral("--yes")})
                     .exitCode,
                 0);
        const auto ff = run({QStringLiteral("force-fail"), QStringLiteral("--key"), QString::fromStdString(ns + ":node")});
        QCOMPARE(ff.exitCode, 1);
        QVERIFY2(ff.err.contains("--live"), ff.err.constData());
        QCOMPARE(idem::reply::integer(c.checked({"EXISTS", ns + ":{pay-12}", ns + ":{zero}", ns + ":node"}).get()), 3);
        QCOMPARE(idem::reply::str(c.checked({"HGET", ns + ":{pay-12}", "state"}).get()), std::string("STARTED"));
        QCOMPARE(idem::reply::integer(c.checked({"HLEN", ns + ":{pay-12}"}).get()), 2); // nothing written into it
        // told, they go
        QCOMPARE(run({QStringLiteral("purge"), QStringLiteral("zero"), QStringLiteral("--live")}).exitCode, 0);
        QCOMPARE(run({QStringLiteral("force-fail"), QStringLiteral("--key"), QString::fromStdString(ns + ":node"),
                      QStringLiteral("--live")})
                     .exitCode,
                 0);
        // a hash no library writes, whose status says it runs, is a live lock too; one that says
        // nothing goes by key (its guard compares every field read, the thousands of a big one too)
        c.checked({"HSET", ns + "-lk", "status", "RUNNING", "lock_expiry", "99999999999"});
        QCOMPARE(run({QStringLiteral("purge"), QStringLiteral("--key"), QString::fromStdString(ns + "-lk")}).exitCode, 1);
        c.checked({"HSET", ns + "-weird", "a", "1", "b", "2"});
        QCOMPARE(run({QStringLiteral("purge"), QStringLiteral("--key"), QString::fromStdString(ns + "-weird")}).exitCode, 0);
        std::vector<std::string> many = {"HSET", ns + "-many"};
        for (int i = 0; i < 9001; ++i) {
            many.push_back("f" + std::to_string(i));
            many.push_back("v");
        }
        std::vector<std::string_view> manyArgs(many.begin(), many.end());
        QVERIFY(!idem::reply::isError(c.command(manyArgs).get()));
        QCOMPARE(run({QStringLiteral("purge"), QStringLiteral("--key"), QString::fromStdString(ns + "-many")}).exitCode, 0);
        QCOMPARE(idem::reply::integer(c.checked({"EXISTS", ns + "-lk", ns + "-weird", ns + "-many"}).get()), 1);
        // a hash outside the namespace is no record of its: refused in words, not a usage error
        c.checked({"HSET", ns + "-jobs:2", "state", "STARTED", "lease_until_ms", "99999999999999"});
        const auto outside = run({QStringLiteral("force-fail"), QStringLiteral("--key"), QString::fromStdString(ns + "-jobs:2")});
        QCOMPARE(outside.exitCode, 1);
        QVERIFY2(outside.err.contains("outside the namespace"), outside.err.constData());
        // a key of someone else's where the audit stream goes: nothing is purged (not half of it)
        c.checked({"SET", ns + ":audit", "x"});
        c.checked({"SET", ns + ":{c1}", "COMPLETED", "EX", "600"});
        QVERIFY(run({QStringLiteral("purge"), QStringLiteral("c1")}).exitCode != 0);
        QCOMPARE(idem::reply::integer(c.checked({"EXISTS", ns + ":{c1}"}).get()), 1);
    }

    // Another program's hashes with a status word of their own - RQ's jobs (rq:job:<id>: status
    // queued/started/finished/failed beside origin, data, exc_info, ...) - are no known library's
    // records: never FAILED or STARTED to a bulk purge by state, listed and counted as unknown with
    // their word, taken only by key. A status hash at idem's key shape stays a hand-written record.
    void otherProgramsStatusHashes()
    {
        const std::string ns = idemtest::uniqueNamespace("guardrq");
        const std::string rq = ns + "-rq:job:";
        idem::Connection c(idemtest::sharedRedis());
        const auto job = [&](const std::string& id, const std::string& status, std::vector<std::string> more) {
            std::vector<std::string> cmd = {"HSET", rq + id, "status", status, "origin", "default",
                                            "description", "billing.tasks.charge(order_id='o-" + id + "')",
                                            "created_at", "2020-01-01T00:00:00.120512Z", "enqueued_at",
                                            "2020-01-01T00:00:00.121733Z", "data", std::string("x\x9c\x6b\x60\x99\x1a\xc0\x00", 8),
                                            "timeout", "180", "result_ttl", "500", "failure_ttl", "31536000", "meta",
                                            std::string("\x80\x05}\x94.", 5)};
            cmd.insert(cmd.end(), more.begin(), more.end());
            const std::vector<std::string_view> args(cmd.begin(), cmd.end());
            QVERIFY(!idem::reply::isError(c.command(args).get()));
        };
        const std::string began = "2020-01-01T00:00:01.002003Z", ended = "2020-01-01T00:00:03.004005Z";
        job("f1", "failed", {"started_at", began, "ended_at", ended, "worker_name", "w-1", "exc_info",
                             std::string("x\x9c\x0bI,J", 6)});
        job("s1", "started", {"started_at", began, "last_heartbeat", began, "worker_name", "w-2"});
        job("d1", "finished", {"started_at", began, "ended_at", ended});
        job("q1", "queued", {});
        c.checked({"HSET", ns + ":{hw}", "status", "FAILED", "error", "card declined"}); // hand-written
        const QStringList g = {QStringLiteral("--url"), QString::fromStdString(idemtest::sharedRedisUrl()),
                               QStringLiteral("--namespace"), QString::fromStdString(ns)};
        const auto run = [&](const QStringList& args) { return idemtest::runIdemctl(g + args); };
        const QString all = QString::fromStdString(ns + "*"), jobs = QString::fromStdString(rq + "*");
        const auto rows = [&](const QStringList& args) {
            std::map<std::string, QJsonObject> out;
            for (const QByteArray& line : run(args).out.split('\n'))
                if (const auto o = QJsonDocument::fromJson(line).object(); !o.isEmpty())
                    out[o.value(QStringLiteral("key")).toString().toStdString()] = o;
            return out;
        };
        auto listed = rows({QStringLiteral("list"), QStringLiteral("--pattern"), all, QStringLiteral("--json")});
        QCOMPARE(listed.size(), std::size_t(5));
        for (const auto& [id, status] : std::map<std::string, QString>{
                 {"f1", QStringLiteral("failed")}, {"s1", QStringLiteral("started")},
                 {"d1", QStringLiteral("finished")}, {"q1", QStringLiteral("queued")}}) {
            const QJsonObject& o = listed[rq + id];
            QCOMPARE(o.value(QStringLiteral("state")).toString(), QStringLiteral("UNKNOWN"));
            QCOMPARE(o.value(QStringLiteral("format")).toString(), QStringLiteral("unknown"));
            QCOMPARE(o.value(QStringLiteral("status_as_written")).toString(), status);
        }
        QCOMPARE(listed[ns + ":{hw}"].value(QStringLiteral("state")).toString(), QStringLiteral("FAILED"));
        QCOMPARE(rows({QStringLiteral("list"), QStringLiteral("--state"), QStringLiteral("failed"),
                       QStringLiteral("--pattern"), all, QStringLiteral("--json")})
                     .size(),
                 std::size_t(1));
        const auto stats = QJsonDocument::fromJson(
                               run({QStringLiteral("stats"), QStringLiteral("--pattern"), all, QStringLiteral("--json")}).out)
                               .object();
        QCOMPARE(stats.value(QStringLiteral("failed")).toInt(), 1);
        QCOMPARE(stats.value(QStringLiteral("started")).toInt(), 0);
        QCOMPARE(stats.value(QStringLiteral("unknown")).toInt(), 4);
        // the core API the console reads through says the same
        idem::MonitorOptions mo;
        mo.keyNamespace = ns;
        mo.pattern = rq + "*";
        mo.staleAfterMs = 60'000;
        idem::Scanner scanner(idemtest::sharedRedis(), mo);
        const auto seen = scanned(scanner);
        QCOMPARE(seen.size(), std::size_t(4));
        for (const auto& [key, r] : seen) {
            QCOMPARE(r.state, idem::RecordState::Unknown);
            QVERIFY(!idem::matches(r, idem::StateFilter::Failed) && !idem::matches(r, idem::StateFilter::Stale));
            QCOMPARE(idem::mayBeLiveLock(r), key == rq + "s1"); // a running job is someone's live work
        }
        // bulk purges by state, stale window or pattern leave every job; the hand-written record goes
        for (const QStringList& purge :
             {QStringList{QStringLiteral("--state"), QStringLiteral("failed"), QStringLiteral("--pattern"), all},
              QStringList{QStringLiteral("--stale"), QStringLiteral("--stale-after"), QStringLiteral("1m"),
                          QStringLiteral("--pattern"), all},
              QStringList{QStringLiteral("--pattern"), jobs}})
            QCOMPARE(run(QStringList{QStringLiteral("purge"), QStringLiteral("--yes")} + purge).exitCode, 0);
        QCOMPARE(idem::reply::integer(c.checked({"EXISTS", rq + "f1", rq + "s1", rq + "d1", rq + "q1"}).get()), 4);
        QCOMPARE(idem::reply::integer(c.checked({"EXISTS", ns + ":{hw}"}).get()), 0);
        // an operator who says they are hand-written status records reads them so
        QCOMPARE(rows({QStringLiteral("--format"), QStringLiteral("json"), QStringLiteral("list"), QStringLiteral("--state"),
                       QStringLiteral("failed"), QStringLiteral("--pattern"), jobs, QStringLiteral("--json")})
                     .count(rq + "f1"),
                 std::size_t(1));
        // by key: the failed job goes, the running one is a live lock
        QCOMPARE(run({QStringLiteral("purge"), QStringLiteral("--key"), QString::fromStdString(rq + "f1")}).exitCode, 0);
        QCOMPARE(run({QStringLiteral("purge"), QStringLiteral("--key"), QString::fromStdString(rq + "s1")}).exitCode, 1);
        QCOMPARE(idem::reply::integer(c.checked({"EXISTS", rq + "f1", rq + "s1"}).get()), 1);
    }

    // The same for strings: a job tracker's JSON or a cache's status word outside idem's key shape
    // is unknown with its word, never FAILED to a bulk purge; one that says in progress is a lock
    void otherProgramsStatusStrings()
    {
        const std::string ns = idemtest::uniqueNamespace("guardjs");
        const std::string job = ns + "-jobs:";
        idem::Connection c(idemtest::sharedRedis());
        c.checked({"SET", job + "f1", R"({"status":"FAILED","error":"smtp timeout","attempts":3})"});
        c.checked({"SET", job + "d1", R"({"status":"COMPLETED","result":42})"});
        c.checked({"SET", job + "w1", "FAILED"});
        c.checked({"SET", job + "r1", R"({"status":"RUNNING","worker":"w-2"})"});
        // an API log that looks like express-idempotency's completed record, at a key of its own
        c.checked({"SET", job + "log1", R"({"request":{"method":"GET","url":"/u/7"},"response":{"statusCode":200}})"});
        c.checked({"SET", ns + ":{hw}", R"({"status":"FAILED","error":"card declined"})"}); // hand-written
        const QStringList g = {QStringLiteral("--url"), QString::fromStdString(idemtest::sharedRedisUrl()),
                               QStringLiteral("--namespace"), QString::fromStdString(ns)};
        const auto run = [&](const QStringList& args) { return idemtest::runIdemctl(g + args); };
        const QString all = QString::fromStdString(ns + "*"), jobs = QString::fromStdString(job + "*");
        const auto states = [&](const QStringList& args) {
            std::map<std::string, QString> out;
            for (const QByteArray& line : run(args).out.split('\n'))
                if (const auto o = QJsonDocument::fromJson(line).object(); !o.isEmpty())
                    out[o.value(QStringLiteral("key")).toString().toStdString()] =
                        o.value(QStringLiteral("state")).toString() + u' ' +
                        o.value(QStringLiteral("status_as_written")).toString();
            return out;
        };
        const auto listed = states({QStringLiteral("list"), QStringLiteral("--pattern"), all, QStringLiteral("--json")});
        QCOMPARE(listed, (std::map<std::string, QString>{{job + "f1", QStringLiteral("UNKNOWN FAILED")},
                                                         {job + "d1", QStringLiteral("UNKNOWN COMPLETED")},
                                                         {job + "w1", QStringLiteral("UNKNOWN FAILED")},
                                                         {job + "r1", QStringLiteral("UNKNOWN RUNNING")},
                                                         {job + "log1", QStringLiteral("UNKNOWN ")},
                                                         {ns + ":{hw}", QStringLiteral("FAILED ")}}));
        QCOMPARE(run({QStringLiteral("purge"), QStringLiteral("--yes"), QStringLiteral("--state"), QStringLiteral("failed"),
                      QStringLiteral("--pattern"), all})
                     .exitCode,
                 0);
        QCOMPARE(run({QStringLiteral("purge"), QStringLiteral("--yes"), QStringLiteral("--state"),
                      QStringLiteral("completed"), QStringLiteral("--pattern"), all})
                     .exitCode,
                 0);
        QCOMPARE(idem::reply::integer(
                     c.checked({"EXISTS", job + "f1", job + "d1", job + "w1", job + "r1", job + "log1"}).get()),
                 5);
        QCOMPARE(idem::reply::integer(c.checked({"EXISTS", ns + ":{hw}"}).get()), 0);
        // an operator who says they are hand-written records reads them so
        const auto asJson = states({QStringLiteral("--format"), QStringLiteral("json"), QStringLiteral("list"),
                                    QStringLiteral("--state"), QStringLiteral("failed"), QStringLiteral("--pattern"), jobs,
                                    QStringLiteral("--json")});
        QVERIFY(asJson.count(job + "f1"));
        // by key: the failed job goes, the running one is a live lock
        QCOMPARE(run({QStringLiteral("purge"), QStringLiteral("--key"), QString::fromStdString(job + "f1")}).exitCode, 0);
        QCOMPARE(run({QStringLiteral("purge"), QStringLiteral("--key"), QString::fromStdString(job + "r1")}).exitCode, 1);
        QCOMPARE(idem::reply::integer(c.checked({"EXISTS", job + "f1", job + "r1"}).get()), 1);
    }

    // Locks idem cannot read whole stay locks for every purge: Powertools for Java's hash with its
    // fields renamed by its builder (withStatusAttr, ...), a Redlock-style token with a TTL
    void unreadableLocksAreKept()
    {
        const std::string ns = idemtest::uniqueNamespace("guardjava");
        const std::string h = "{" + ns + ":id:renamed#0123456789abcdef0123456789abcdef}";
        const std::string redlock = ns + "-lock:payments";
        idem::Connection c(idemtest::sharedRedis());
        const std::string nowMs = std::to_string(QDateTime::currentMSecsSinceEpoch());
        c.checked({"HSET", h, h + ":st", "INPROGRESS", h + ":exp", "9999999999", h + ":ipe", nowMs + "0"});
        c.checked({"EXPIRE", h, "3600"});
        c.checked({"SET", redlock, "f3a9c2e1-77b0-4d7e-9c1a-0d2b6f1e8a44", "PX", "600000"});
        const QStringList g = {QStringLiteral("--url"), QString::fromStdString(idemtest::sharedRedisUrl()),
                               QStringLiteral("--namespace"), QString::fromStdString(ns)};
        const auto run = [&](const QStringList& args) { return idemtest::runIdemctl(g + args).exitCode; };
        for (const QString& pattern : {QString::fromStdString("{" + ns + "*"), QString::fromStdString(redlock)})
            for (const QString& state : {QStringLiteral("malformed"), QStringLiteral("unknown"), QStringLiteral("foreign")})
                QCOMPARE(run({QStringLiteral("purge"), QStringLiteral("--yes"), QStringLiteral("--state"), state,
                              QStringLiteral("--pattern"), pattern}),
                         0);
        QCOMPARE(idem::reply::integer(c.checked({"EXISTS", h, redlock}).get()), 2);
        QCOMPARE(run({QStringLiteral("purge"), QStringLiteral("--key"), QString::fromStdString(h)}), 1);
        QCOMPARE(run({QStringLiteral("purge"), QStringLiteral("--key"), QString::fromStdString(redlock)}), 1);
        QCOMPARE(idem::reply::integer(c.checked({"EXISTS", h, redlock}).get()), 2);
        QCOMPARE(run({QStringLiteral("purge"), QStringLiteral("--key"), QString::fromStdString(redlock),
                      QStringLiteral("--live")}),
                 0);
    }

    // A purge by id of a record that was not there takes nothing: a lock acquired between the read
    // and the purge (here: held back by CLIENT PAUSE WRITE, which lets reads through) stays
    void purgeOfAnAbsentRecordTakesNothing()
    {
        idem::LocalServer server; // its own: the pause would stall every other test's writes
        const std::string key = "idempotency:{late}";
        idem::Connection c(server.connectionOptions());
        c.checked({"CLIENT", "PAUSE", "1500", "WRITE"});
        std::thread writer([&] {
            idem::Connection w(server.connectionOptions());
            w.checked({"HSET", key, "state", "STARTED", "token", "t", "fence", "1700000000000000", "lease_until_ms",
                       "99999999999999"});
        });
        QThread::msleep(200); // the HSET waits in the pause
        const auto r = idemtest::runIdemctl({QStringLiteral("--url"), QString::fromStdString(server.url()),
                                             QStringLiteral("purge"), QStringLiteral("late")});
        writer.join();
        QCOMPARE(r.exitCode, 66);
        QCOMPARE(idem::reply::integer(c.checked({"EXISTS", key}).get()), 1);
    }

    void cluster()
    {
        idem::LocalCluster cluster(3);
        everyPathIsGuarded(idemtest::quick(cluster.node(1)), "gc");
    }

    // idem's own keys are no operator action's: purge --key and force-fail --key refuse the audit
    // trail (it would lose who did what) and a record's meta key (the fence a purge keeps), in words;
    // inspect --key says what they are
    void ownKeysAreRefused()
    {
        const std::string ns = idemtest::uniqueNamespace("gown");
        idem::ConnectionPool pool(idemtest::sharedRedis(), 1);
        idem::Store store(pool, idem::StoreOptions{.keyNamespace = ns});
        const auto a = store.acquire("rec");
        QCOMPARE(store.purge("rec", "alice", "first").status, idem::AdminStatus::Ok);
        const std::string audit = ns + ":audit", meta = store.metaKey("rec");
        const QStringList g = {QStringLiteral("--url"), QString::fromStdString(idemtest::sharedRedisUrl()),
                               QStringLiteral("--namespace"), QString::fromStdString(ns)};
        const auto b64 = [](const std::string& key) {
            return QString::fromLatin1(QByteArray::fromStdString(key).toBase64());
        };
        const std::vector<std::pair<QStringList, const char*>> attempts = {
            {{QStringLiteral("--key"), QString::fromStdString(audit)}, "audit trail"},
            {{QStringLiteral("--key-base64"), b64(audit)}, "audit trail"},
            {{QStringLiteral("--key"), QString::fromStdString(meta)}, "fence"},
            {{QStringLiteral("--key-base64"), b64(meta)}, "fence"},
        };
        for (const auto& [target, why] : attempts)
            for (const QStringList& command : {QStringList{QStringLiteral("purge"), QStringLiteral("--reason"), QStringLiteral("t")},
                                               QStringList{QStringLiteral("purge"), QStringLiteral("--live")},
                                               QStringList{QStringLiteral("force-fail"), QStringLiteral("--live")}}) {
                const auto r = idemtest::runIdemctl(g + command + target);
                const QByteArray what = (command + target).join(u' ').toUtf8() + ": " + r.err;
                QVERIFY2(r.exitCode == 1, what.constData());
                QVERIFY2(r.err.trimmed().count('\n') == 0 && r.err.contains("refused") && r.err.contains(why),
                         what.constData());
                QVERIFY(r.out.isEmpty());
            }
        idem::Connection c(idemtest::sharedRedis());
        QCOMPARE(idem::reply::integer(c.checked({"EXISTS", audit, meta}).get()), std::int64_t(2));
        QCOMPARE(idem::reply::integer(c.checked({"XLEN", audit}).get()), std::int64_t(1));
        QCOMPARE(metaFence(store, "rec"), a.ticket.fence);
        QVERIFY(store.acquire("rec").ticket.fence > a.ticket.fence);

        const auto trail = idemtest::runIdemctl(g + QStringList{QStringLiteral("inspect"), QStringLiteral("--key"),
                                                               QString::fromStdString(audit)});
        QCOMPARE(trail.exitCode, 0);
        QVERIFY2(trail.out.contains("idem's audit trail") && !trail.out.contains("no known library"),
                 trail.out.constData());
        const auto fenceKeeper = idemtest::runIdemctl(
            g + QStringList{QStringLiteral("inspect"), QStringLiteral("--key"), QString::fromStdString(meta)});
        QCOMPARE(fenceKeeper.exitCode, 0);
        QVERIFY2(fenceKeeper.out.contains("idem's meta key of record rec: keeps its last fence") &&
                     fenceKeeper.out.contains("meta.fence") && !fenceKeeper.out.contains("no known library"),
                 fenceKeeper.out.constData());
        const auto j = QJsonDocument::fromJson(
                           idemtest::runIdemctl(g + QStringList{QStringLiteral("inspect"), QStringLiteral("--key"),
                                                                QString::fromStdString(meta), QStringLiteral("--json")})
                               .out)
                           .object();
        QCOMPARE(j.value(QStringLiteral("idem_key")).toString(), QStringLiteral("meta"));
        QCOMPARE(j.value(QStringLiteral("id")).toString(), QStringLiteral("rec"));
        // one that is not there is not found, as any key
        for (const std::string& absent : {ns + "-none:audit", store.metaKey("never")}) {
            const QStringList other = {QStringLiteral("--url"), QString::fromStdString(idemtest::sharedRedisUrl()),
                                       QStringLiteral("--namespace"),
                                       QString::fromStdString(absent == ns + "-none:audit" ? ns + "-none" : ns)};
            const auto r = idemtest::runIdemctl(other + QStringList{QStringLiteral("inspect"), QStringLiteral("--key"),
                                                                   QString::fromStdString(absent)});
            QCOMPARE(r.exitCode, 66);
            QVERIFY2(r.err.contains("no key at") && r.out.isEmpty(), r.err.constData());
        }
    }

    // idemctl: purge by id, by --key (another library's key), in bulk, force-fail; `idemctl audit`
    // lists them all, filtered by who
    void idemctlPathsAndAudit()
    {
        const std::string ns = idemtest::uniqueNamespace("gctl");
        idem::ConnectionPool pool(idemtest::sharedRedis(), 1);
        idem::Store store(pool, idem::StoreOptions{.keyNamespace = ns});
        store.acquire("one");
        store.acquire("stale", "", idem::Millis(1));
        store.acquire("ff");
        {
            idem::Connection c(idemtest::sharedRedis());
            c.checked({"SET", ns + ":foreign-lock", "{\"status\":\"COMPLETED\"}"});
        }
        QThread::msleep(5);
        const QStringList g = {QStringLiteral("--url"), QString::fromStdString(idemtest::sharedRedisUrl()),
                               QStringLiteral("--namespace"), QString::fromStdString(ns)};
        auto run = [&](QStringList args) {
            auto r = idemtest::runIdemctl(g + args);
            if (r.exitCode != 0)
                qWarning("idemctl %s: %s", qPrintable(args.join(u' ')), r.err.constData());
            return r.exitCode;
        };
        QCOMPARE(run({QStringLiteral("purge"), QStringLiteral("one"), QStringLiteral("--by"), QStringLiteral("dave"),
                      QStringLiteral("--reason"), QStringLiteral("rerun")}),
                 1); // its lease lives: refused
        QCOMPARE(run({QStringLiteral("purge"), QStringLiteral("one"), QStringLiteral("--live"), QStringLiteral("--by"),
                      QStringLiteral("dave"), QStringLiteral("--reason"), QStringLiteral("rerun")}),
                 0);
        QCOMPARE(run({QStringLiteral("purge"), QStringLiteral("--stale"), QStringLiteral("--yes"), QStringLiteral("--by"),
                      QStringLiteral("erin"), QStringLiteral("--reason"), QStringLiteral("stale sweep")}),
                 0);
        QCOMPARE(run({QStringLiteral("purge"), QStringLiteral("--key"), QString::fromStdString(ns + ":foreign-lock"),
                      QStringLiteral("--by"), QStringLiteral("erin")}),
                 0);
        QCOMPARE(run({QStringLiteral("force-fail"), QStringLiteral("ff"), QStringLiteral("--by"), QStringLiteral("dave")}),
                 0);
        auto audit = idemtest::runIdemctl(g + QStringList{QStringLiteral("audit"), QStringLiteral("--json")});
        QCOMPARE(audit.exitCode, 0);
        const QJsonArray all = QJsonDocument::fromJson(audit.out).array();
        QCOMPARE(all.size(), 4);
        QStringList actions;
        for (const auto& e : all)
            actions << e.toObject().value(QStringLiteral("action")).toString() + u' ' +
                           e.toObject().value(QStringLiteral("by")).toString();
        QCOMPARE(actions, (QStringList{QStringLiteral("force-fail retryable dave"), QStringLiteral("purge erin"),
                                       QStringLiteral("purge erin"), QStringLiteral("purge dave")}));
        for (const auto& e : all)
            QVERIFY(e.toObject().value(QStringLiteral("via")).toString().startsWith(u"idemctl@"));
        auto erin = idemtest::runIdemctl(g + QStringList{QStringLiteral("audit"), QStringLiteral("--by"),
                                                         QStringLiteral("erin")});
        QCOMPARE(erin.out.count('\n'), 2);
        QVERIFY(erin.out.contains("stale sweep"));
        // --since counts back from the server's clock
        auto hour = idemtest::runIdemctl(g + QStringList{QStringLiteral("audit"), QStringLiteral("--since"),
                                                         QStringLiteral("1h"), QStringLiteral("--json")});
        QCOMPARE(QJsonDocument::fromJson(hour.out).array().size(), 4);
        QThread::msleep(30);
        auto none = idemtest::runIdemctl(g + QStringList{QStringLiteral("audit"), QStringLiteral("--since"),
                                                         QStringLiteral("10ms"), QStringLiteral("--json")});
        QCOMPARE(QJsonDocument::fromJson(none.out).array().size(), 0);
        // a purged record's last action, said by inspect
        auto gone = idemtest::runIdemctl(g + QStringList{QStringLiteral("inspect"), QStringLiteral("one")});
        QCOMPARE(gone.exitCode, 66);
        QVERIFY2(gone.err.contains("purged by dave") && gone.err.contains("rerun") && gone.err.contains(" UTC"),
                 gone.err.constData());
    }
};

QTEST_GUILESS_MAIN(TestGuard)
#include "tst_guard.moc"
