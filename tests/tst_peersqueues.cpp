// Job queues and task backends (BullMQ, RQ, Sidekiq, Celery) beside idem's records: their keys
// are another program's data, named as such, and no bulk purge takes them. tst_peers.cpp has the
// idempotency libraries' records.
#include "idem/engine/store.h"
#include "peerstestsupport.h"

#include <QDateTime>

#include <map>

using namespace peerstest;

class TestPeersQueues : public PeersTest {
    Q_OBJECT

private slots:
    void initTestCase() { setUp(); }

    // Job queues and task backends share the store: BullMQ's, RQ's, Sidekiq's and Celery's keys,
    // written here as those programs write them (the sources are cited in docs/formats.md), are
    // another program's data - FOREIGN, the program named, a Celery result that says STARTED no
    // lock - and no bulk purge takes one, by any state, by a pattern alone, with --live or under
    // --format; `purge --key` does (an active job only with --live). What merely shares a generic
    // name (`queue:<x>` that is no list, `<x>:work` that is no hash) stays unknown.
    void otherProgramsDataIsNeverBulkPurged()
    {
        conn->checked({"FLUSHALL"});
        const std::string now = std::to_string(QDateTime::currentMSecsSinceEpoch());
        const std::string nowS = std::to_string(QDateTime::currentSecsSinceEpoch());
        const auto cmd = [&](std::vector<std::string> args) {
            const std::vector<std::string_view> v(args.begin(), args.end());
            const auto reply = conn->command(v);
            QVERIFY2(!idem::reply::isError(reply.get()), args.front().c_str());
        };
        std::map<std::string, std::string> owner; // key -> the program it belongs to
        const auto theirs = [&](const char* program, std::vector<std::string> args) {
            owner[args.at(1)] = program;
            cmd(std::move(args));
        };

        // BullMQ 5, queue "emails" under the default prefix "bull" (QueueKeys, storeJob.lua,
        // moveToActive, moveToFinished): job 1 active, 2 waiting, 3 completed
        theirs("BullMQ", {"SET", "bull:emails:id", "3"});
        theirs("BullMQ", {"HSET", "bull:emails:meta", "opts.maxLenEvents", "10000", "version", "bullmq:5.34.0"});
        const std::vector<std::string> job = {"name", "welcome", "data", "{\"to\":\"ada@example.com\"}", "opts",
                                              "{\"attempts\":3,\"backoff\":{\"delay\":1000,\"type\":\"fixed\"}}",
                                              "timestamp", now, "delay", "0", "priority", "0"};
        const auto bullJob = [&](const std::string& key, std::vector<std::string> more) {
            std::vector<std::string> args = {"HSET", key};
            args.insert(args.end(), job.begin(), job.end());
            args.insert(args.end(), more.begin(), more.end());
            theirs("BullMQ", std::move(args));
        };
        bullJob("bull:emails:1", {"processedOn", now, "ats", "1", "pb", "worker-1"});
        bullJob("bull:emails:2", {});
        bullJob("bull:emails:3", {"processedOn", now, "ats", "1", "finishedOn", now, "returnvalue", "{\"sent\":true}",
                                  "atm", "1"});
        theirs("BullMQ", {"SET", "bull:emails:1:lock", "f3a9c2e1-77b0-4d7e-9c1a-0d2b6f1e8a44", "PX", "30000"});
        theirs("BullMQ", {"RPUSH", "bull:emails:wait", "2"});
        theirs("BullMQ", {"RPUSH", "bull:emails:active", "1"});
        theirs("BullMQ", {"ZADD", "bull:emails:completed", now, "3"});
        theirs("BullMQ", {"ZADD", "bull:emails:marker", "0", "0"});
        theirs("BullMQ", {"XADD", "bull:emails:events", "*", "event", "added", "jobId", "2", "name", "welcome"});
        // ... and under an application's prefixes ("{jobs}" on a Redis Cluster, as BullMQ's docs ask
        // there; one with a ':'), told by what the keys hold
        bullJob("{jobs}:mail:7", {"processedOn", now, "ats", "1", "pb", "worker-2"});
        bullJob("app:bull:mail:8", {});
        theirs("BullMQ", {"HSET", "{jobs}:mail:meta", "opts.maxLenEvents", "10000", "version", "bullmq:5.34.0"});
        theirs("BullMQ", {"RPUSH", "{jobs}:mail:active", "7"});
        theirs("BullMQ", {"XADD", "{jobs}:mail:events", "*", "event", "added", "jobId", "8", "name", "welcome"});

        // RQ 2 (Job.to_dict, Queue, the registries), queue "default"
        const std::string zpickle("x\x9c\x6b\x60\x99\x1a\xc0\x00", 8); // data: a compressed pickle
        const auto rqJob = [&](const std::string& id, const std::string& status, std::vector<std::string> more) {
            std::vector<std::string> args = {"HSET", "rq:job:" + id, "status", status, "origin", "default",
                                             "description", "billing.tasks.charge(order_id='o-1')", "created_at",
                                             "2026-11-28T19:00:00.120512Z", "enqueued_at", "2026-11-28T19:00:00.121733Z",
                                             "data", zpickle, "timeout", "180", "result_ttl", "500"};
            args.insert(args.end(), more.begin(), more.end());
            theirs("RQ", std::move(args));
        };
        rqJob("6a9d6c8e-4c55-4b8f-9d07-7c2f0e1b3a10", "queued", {});
        rqJob("0b3e2a71-5d2c-4f7e-8a66-1f9e4c3d2b01", "started",
              {"started_at", "2026-11-28T19:00:01.002003Z", "worker_name", "w-1", "last_heartbeat",
               "2026-11-28T19:00:01.002003Z"});
        rqJob("9f1c7e22-3b4a-4c6d-8e5f-0a1b2c3d4e5f", "finished",
              {"started_at", "2026-11-28T19:00:01.002003Z", "ended_at", "2026-11-28T19:00:03.004005Z"});
        rqJob("5c1e0d9b-8a7f-4e6d-b5c4-a3b2c1d0e9f8", "failed",
              {"ended_at", "2026-11-28T19:00:03.004005Z", "exc_info", std::string("x\x9c\x0bI,J", 6)});
        theirs("RQ", {"RPUSH", "rq:queue:default", "6a9d6c8e-4c55-4b8f-9d07-7c2f0e1b3a10"});
        theirs("RQ", {"SADD", "rq:queues", "rq:queue:default"});
        theirs("RQ", {"SADD", "rq:workers", "rq:worker:w-1"});
        theirs("RQ", {"HSET", "rq:worker:w-1", "birth", "2026-11-28T18:00:00.000000Z", "state", "busy", "queues",
                      "default", "current_job", "0b3e2a71-5d2c-4f7e-8a66-1f9e4c3d2b01", "pid", "4242"});
        theirs("RQ", {"ZADD", "rq:wip:default", nowS, "0b3e2a71-5d2c-4f7e-8a66-1f9e4c3d2b01"});
        theirs("RQ", {"ZADD", "rq:finished:default", nowS, "9f1c7e22-3b4a-4c6d-8e5f-0a1b2c3d4e5f"});

        // Sidekiq 8 (Launcher#heartbeat, Client, Stats), process web-1:4242:<hex(6)>
        const std::string identity = "web-1:4242:3b1f0c9a7d2e";
        theirs("Sidekiq", {"HSET", identity + ":work", "2ck",
                           "{\"queue\":\"default\",\"payload\":\"{\\\"retry\\\":true,\\\"queue\\\":\\\"default\\\","
                           "\\\"class\\\":\\\"HardJob\\\",\\\"args\\\":[1],\\\"jid\\\":\\\"b4a577edbccf1d805744efa2\\\"}\","
                           "\"run_at\":" + nowS + "}"});
        cmd({"EXPIRE", identity + ":work", "60"});
        theirs("Sidekiq", {"HSET", identity, "info",
                           "{\"hostname\":\"web-1\",\"pid\":4242,\"tag\":\"\",\"concurrency\":5,\"queues\":[\"default\"],"
                           "\"identity\":\"" + identity + "\"}",
                           "busy", "1", "beat", nowS + ".25", "rtt_us", "250", "quiet", "false", "rss", "123456"});
        cmd({"EXPIRE", identity, "60"});
        theirs("Sidekiq", {"SADD", "processes", identity});
        theirs("Sidekiq", {"SADD", "queues", "default"});
        theirs("Sidekiq", {"LPUSH", "queue:default",
                           "{\"retry\":true,\"queue\":\"default\",\"class\":\"HardJob\",\"args\":[2],"
                           "\"jid\":\"c5b688fecdd02e916855f0b3\",\"enqueued_at\":" + nowS + "}"});
        theirs("Sidekiq", {"ZADD", "retry", nowS, "{\"class\":\"HardJob\",\"jid\":\"d6c799\",\"retry_count\":0}"});
        theirs("Sidekiq", {"ZADD", "schedule", nowS, "{\"class\":\"HardJob\",\"jid\":\"e7d8aa\"}"});
        theirs("Sidekiq", {"ZADD", "dead", nowS, "{\"class\":\"HardJob\",\"jid\":\"f8e9bb\"}"});
        theirs("Sidekiq", {"SET", "stat:processed", "1042"});
        theirs("Sidekiq", {"SET", "stat:failed", "7"});
        theirs("Sidekiq", {"SET", "stat:processed:2026-11-28", "42"});
        theirs("Sidekiq", {"HSET", "j|261128|19:05", "HardJob|ms", "120", "HardJob|p", "3"});

        // Celery 5 (KeyValueStoreBackend, its JSON serializer) with its Redis broker (kombu)
        const auto celeryResult = [&](const std::string& id, const std::string& status, const std::string& result,
                                      const std::string& traceback, const std::string& done) {
            theirs("Celery", {"SET", "celery-task-meta-" + id,
                              "{\"status\": \"" + status + "\", \"result\": " + result + ", \"traceback\": " + traceback +
                                  ", \"children\": [], \"date_done\": " + done + ", \"task_id\": \"" + id + "\"}",
                              "EX", "86400"});
        };
        celeryResult("0f0e1d2c-3b4a-5968-7786-95a4b3c2d1e0", "STARTED",
                     "{\"pid\": 4242, \"hostname\": \"celery@worker-1\"}", "null", "null");
        celeryResult("1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d", "PENDING", "null", "null", "null");
        celeryResult("2b3c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d6e", "SUCCESS", "42", "null",
                     "\"2026-11-28T19:00:03.004005+00:00\"");
        celeryResult("3c4d5e6f-7a8b-4c9d-0e1f-2a3b4c5d6e7f", "FAILURE",
                     "{\"exc_type\": \"ValueError\", \"exc_message\": [\"boom\"], \"exc_module\": \"builtins\"}",
                     "\"Traceback (most recent call last):\\n  ...\\nValueError: boom\\n\"",
                     "\"2026-11-28T19:00:03.004005+00:00\"");
        theirs("Celery", {"SADD", "_kombu.binding.celery", std::string("celery\x06\x16\x06\x16") + "celery"});
        theirs("Celery", {"LPUSH", "celery", "{\"body\": \"W1tdLCB7fSwgeyJjYWxsYmFja3MiOiBudWxsfV0=\", "
                                             "\"content-encoding\": \"utf-8\", \"headers\": {\"task\": \"tasks.add\"}}"});
        theirs("Celery", {"HSET", "unacked", "a1b2c3", "[{\"body\": \"...\"}, \"\", \"celery\"]"});
        theirs("Celery", {"ZADD", "unacked_index", nowS, "a1b2c3"});

        // what is not theirs: an idem record, unknown keys (among them generic names of another
        // type than the program's: no queue, no work hash) and a list no program is known to write
        idem::ConnectionPool pool(server->connectionOptions(), 1);
        idem::Store store(pool);
        const auto a = store.acquire("order-1");
        QCOMPARE(a.status, idem::AcquireStatus::Acquired);
        QCOMPARE(store.complete(a.ticket, "ok").status, idem::OwnerStatus::Ok);
        const std::string record = store.recordKey("order-1");
        const std::vector<std::string> unknown = {"cache:user:7", "queue:report", "nightly:work", "rq:cache:1",
                                                  "profile:user:9"};
        for (const std::string& key : unknown)
            if (key != "profile:user:9")
                cmd({"SET", key, "{\"name\":\"ada\"}"});
        // a hash at a job's shape with a name, but no millisecond timestamp: not BullMQ's
        cmd({"HSET", "profile:user:9", "name", "ada", "timestamp", "12"});
        cmd({"RPUSH", "audit:events", "x"});

        const QStringList url = {QStringLiteral("--url"), QString::fromStdString(server->url())};
        const auto ctl = [&](QStringList args) { return idemtest::runIdemctl(url + args); };
        const auto exists = [&](const std::string& k) { return idem::reply::integer(conn->checked({"EXISTS", k}).get()) == 1; };
        const auto allStillThere = [&](const QByteArray& out) {
            for (const auto& [key, program] : owner)
                QVERIFY2(exists(key), (key + " (" + program + ") was deleted: " + out.toStdString()).c_str());
        };

        // read as what they are
        std::map<std::string, QJsonObject> listed;
        const auto list = ctl({QStringLiteral("list"), QStringLiteral("--pattern"), QStringLiteral("*"),
                               QStringLiteral("--json")});
        QCOMPARE(list.exitCode, 0);
        for (const QByteArray& line : list.out.split('\n'))
            if (const auto o = QJsonDocument::fromJson(line).object(); !o.isEmpty())
                listed[o.value(u"key"_qs).toString().toStdString()] = o;
        for (const auto& [key, program] : owner) {
            QVERIFY2(listed.count(key), key.c_str());
            const QJsonObject& o = listed[key];
            const QByteArray row = QJsonDocument(o).toJson(QJsonDocument::Compact);
            QVERIFY2(o.value(u"state"_qs).toString() == u"FOREIGN"_qs, row.constData());
            QVERIFY2(o.value(u"program"_qs).toString() == QString::fromStdString(program), row.constData());
            QVERIFY2(o.value(u"reason"_qs).toString().startsWith(QString::fromStdString(program + "'s ")), row.constData());
        }
        for (const std::string& key : unknown) {
            QCOMPARE(listed[key].value(u"state"_qs).toString(), u"UNKNOWN"_qs);
            QVERIFY(!listed[key].contains(u"program"_qs));
        }
        QVERIFY(!listed["audit:events"].contains(u"program"_qs));
        QVERIFY(listed["bull:emails:1"].value(u"reason"_qs).toString().contains(u"active"_qs));
        QVERIFY(listed["bull:emails:3"].value(u"reason"_qs).toString().contains(u"finished"_qs));
        QCOMPARE(listed["rq:job:0b3e2a71-5d2c-4f7e-8a66-1f9e4c3d2b01"].value(u"status_as_written"_qs).toString(),
                 u"started"_qs);
        QCOMPARE(listed["celery-task-meta-0f0e1d2c-3b4a-5968-7786-95a4b3c2d1e0"].value(u"status_as_written"_qs).toString(),
                 u"STARTED"_qs);
        // a Celery result that says STARTED or PENDING is no lock: nothing counts as started or blocked
        const auto stats = QJsonDocument::fromJson(ctl({QStringLiteral("stats"), QStringLiteral("--pattern"),
                                                        QStringLiteral("*"), QStringLiteral("--json")}).out).object();
        QCOMPARE(stats.value(u"started"_qs).toInt(), 0);
        QCOMPARE(stats.value(u"blocked"_qs).toInt(), 0);
        QCOMPARE(stats.value(u"completed"_qs).toInt(), 1); // the idem record
        QCOMPARE(stats.value(u"foreign"_qs).toInt(), int(owner.size()) + 1);
        QCOMPARE(stats.value(u"other_programs"_qs).toInt(), int(owner.size())); // (audit:events is no program's)
        QVERIFY(listed["{jobs}:mail:7"].value(u"reason"_qs).toString().contains(u"active"_qs));
        QVERIFY(listed["{jobs}:mail:7"].value(u"reason"_qs).toString().contains(u"prefix '{jobs}'"_qs));

        // no bulk purge takes any of them, whatever it names
        const QStringList purge = {QStringLiteral("purge"), QStringLiteral("--pattern"), QStringLiteral("*"),
                                   QStringLiteral("--yes")};
        const auto byUnknown = ctl(purge + QStringList{QStringLiteral("--state"), QStringLiteral("unknown")});
        QCOMPARE(byUnknown.exitCode, 0);
        allStillThere(byUnknown.out);
        for (const std::string& key : unknown)
            QVERIFY2(!exists(key), byUnknown.out.constData()); // what no program was known to write goes

        const auto byForeign = ctl(purge + QStringList{QStringLiteral("--state"), QStringLiteral("foreign")});
        QCOMPARE(byForeign.exitCode, 0);
        allStillThere(byForeign.out);
        QVERIFY2(!exists("audit:events"), byForeign.out.constData());
        QVERIFY2(byForeign.out.contains("'s data, not idempotency data: no bulk purge takes it; "
                                        "`idemctl purge --key KEY` deletes one)") &&
                     byForeign.out.contains(QByteArray::fromStdString("kept " + std::to_string(owner.size()) +
                                                                      " of other programs")),
                 byForeign.out.constData());
        // (without --yes every key kept is listed, with why)
        const auto told = ctl({QStringLiteral("purge"), QStringLiteral("--state"), QStringLiteral("foreign"),
                               QStringLiteral("--pattern"), QStringLiteral("*"), QStringLiteral("--json")});
        std::size_t kept = 0;
        for (const QByteArray& line : told.out.trimmed().split('\n')) {
            const QJsonObject o = QJsonDocument::fromJson(line).object();
            QVERIFY2(o.value(u"action"_qs).toString() == u"keep"_qs, line.constData());
            QVERIFY2(o.value(u"why"_qs).toString().contains(u"purge --key"_qs), line.constData());
            ++kept;
        }
        QCOMPARE(kept, owner.size());
        const auto shown = ctl({QStringLiteral("purge"), QStringLiteral("--state"), QStringLiteral("foreign"),
                                QStringLiteral("--pattern"), QStringLiteral("bull:emails:1")});
        QVERIFY2(shown.out == "keep bull:emails:1  (unknown, FOREIGN: BullMQ's data, not idempotency data: no bulk "
                              "purge takes it; `idemctl purge --key KEY` deletes one)\n",
                 shown.out.constData());

        for (const QStringList& more : {QStringList{QStringLiteral("--state"), QStringLiteral("foreign"), QStringLiteral("--live")},
                                        QStringList{QStringLiteral("--state"), QStringLiteral("started"), QStringLiteral("--live")},
                                        QStringList{QStringLiteral("--state"), QStringLiteral("completed")},
                                        QStringList{QStringLiteral("--format"), QStringLiteral("json"), QStringLiteral("--state"),
                                                    QStringLiteral("completed")},
                                        QStringList{QStringLiteral("--format"), QStringLiteral("json"), QStringLiteral("--state"),
                                                    QStringLiteral("started"), QStringLiteral("--live")}}) {
            const bool global = more.first() == u"--format"_qs; // (a global option goes before the command)
            const auto done = ctl(global ? more.mid(0, 2) + purge + more.mid(2) : purge + more);
            QVERIFY2(done.exitCode == 0, done.err.constData());
            allStillThere(done.out);
        }
        QVERIFY(!exists(record)); // idem's own completed record went with --state completed
        const auto b = store.acquire("order-2");
        QCOMPARE(store.complete(b.ticket, "ok").status, idem::OwnerStatus::Ok);
        const auto byPattern = ctl(purge);
        QCOMPARE(byPattern.exitCode, 0);
        allStillThere(byPattern.out);
        QVERIFY2(!exists(store.recordKey("order-2")), byPattern.out.constData()); // and by a pattern alone

        // one at a time, by key: what an operator who inspected it means to delete
        const auto byKey = [&](const std::string& key, QStringList more = {}) {
            return ctl(QStringList{QStringLiteral("purge"), QStringLiteral("--key"), QString::fromStdString(key)} + more);
        };
        const auto active = byKey("bull:emails:1");
        QCOMPARE(active.exitCode, 1); // a worker holds it: only with --live
        QVERIFY2(active.err.contains("is BullMQ's work in progress (status active;") && active.err.contains("--live") &&
                     active.err.count('\n') == 1,
                 active.err.constData());
        QVERIFY(exists("bull:emails:1"));
        QCOMPARE(byKey("{jobs}:mail:7").exitCode, 1); // under another prefix as well
        QVERIFY(exists("{jobs}:mail:7"));
        const auto done = byKey("bull:emails:3");
        QCOMPARE(done.exitCode, 0);
        QVERIFY2(done.out.contains("purged bull:emails:3 (was BullMQ's FOREIGN)"), done.out.constData());
        QVERIFY(!exists("bull:emails:3"));
        QCOMPARE(byKey("rq:job:0b3e2a71-5d2c-4f7e-8a66-1f9e4c3d2b01").exitCode, 1);
        QCOMPARE(byKey("rq:job:0b3e2a71-5d2c-4f7e-8a66-1f9e4c3d2b01", {QStringLiteral("--live")}).exitCode, 0);
        QCOMPARE(byKey("celery-task-meta-2b3c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d6e").exitCode, 0);
        QCOMPARE(byKey(identity + ":work").exitCode, 0);
        QVERIFY(!exists(identity + ":work"));
    }
};

QTEST_GUILESS_MAIN(TestPeersQueues)
#include "tst_peersqueues.moc"
