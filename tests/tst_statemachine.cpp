// The state machine on a real Redis: acquire / complete / fail / renew / force-fail / purge,
// and the high-level execute().
#include "idem/errors.h"
#include "idem/engine/executor.h"
#include "idem/engine/fingerprint.h"
#include "idem/redis/localserver.h"
#include "idem/engine/store.h"
#include "testsupport.h"

#include <QtTest>

#include <atomic>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>

using idem::AcquireStatus;
using idem::OutcomeKind;

namespace {

using Fields = std::map<std::string, std::string>;

Fields hgetall(idem::Connection& c, const std::string& key)
{
    auto r = c.checked({"HGETALL", key});
    Fields f;
    for (std::size_t i = 0; i + 1 < idem::reply::arraySize(r.get()); i += 2)
        f[idem::reply::str(idem::reply::element(r.get(), i))] = idem::reply::str(idem::reply::element(r.get(), i + 1));
    return f;
}

std::int64_t pttl(idem::Connection& c, const std::string& key)
{
    return idem::reply::integer(c.checked({"PTTL", key}).get());
}

idem::WorkResult respond(std::string s) { return idem::WorkResult::success(std::move(s)); }

} // namespace

class TestStateMachine : public QObject {
    Q_OBJECT

    std::unique_ptr<idem::ConnectionPool> pool;
    std::unique_ptr<idem::Store> store;
    std::unique_ptr<idem::Connection> raw;

    void fresh(idem::Millis lease = idem::Millis(2000))
    {
        idem::StoreOptions so;
        so.keyNamespace = idemtest::uniqueNamespace("sm");
        so.lease = lease;
        store = std::make_unique<idem::Store>(*pool, so);
    }

private slots:
    void initTestCase()
    {
        pool = std::make_unique<idem::ConnectionPool>(idemtest::sharedRedis(), 8);
        raw = std::make_unique<idem::Connection>(idemtest::sharedRedis());
    }
    void init() { fresh(); }

    // 1. first call runs; a repeat replays without running; another id runs fresh
    void executeRunsOnceAndReplays()
    {
        idem::Executor ex(*store);
        int runs = 0;
        auto work = [&](const idem::WorkContext& ctx) {
            ++runs;
            return respond("receipt for " + ctx.id + " #" + std::to_string(runs));
        };
        auto first = ex.execute("pay-1", R"({"amount":10})", work);
        QCOMPARE(first.kind, OutcomeKind::Executed);
        QCOMPARE(first.response, std::string("receipt for pay-1 #1"));
        QVERIFY(first.workRan);
        QVERIFY(first.fence > 0);
        auto again = ex.execute("pay-1", R"({"amount":10})", work);
        QCOMPARE(again.kind, OutcomeKind::Replayed);
        QCOMPARE(again.response, std::string("receipt for pay-1 #1"));
        QVERIFY(!again.workRan);
        QCOMPARE(runs, 1);
        auto other = ex.execute("pay-2", R"({"amount":10})", work);
        QCOMPARE(other.kind, OutcomeKind::Executed);
        QCOMPARE(runs, 2);
        // the record is a native hash with the result, and the key has the retention TTL
        const auto f = hgetall(*raw, store->recordKey("pay-1"));
        QCOMPARE(f.at("state"), std::string("COMPLETED"));
        QCOMPARE(f.at("response"), std::string("receipt for pay-1 #1"));
        QVERIFY(pttl(*raw, store->recordKey("pay-1")) > 23 * 3600 * 1000LL);
    }

    // 2. payload mismatch changes nothing; identical retries (any field order) still validate
    void payloadMismatch()
    {
        idem::Executor ex(*store);
        int runs = 0;
        auto work = [&](const idem::WorkContext&) { ++runs; return respond("ok"); };
        QCOMPARE(ex.execute("order-9", R"({"a":1,"b":2})", work).kind, OutcomeKind::Executed);
        const Fields before = hgetall(*raw, store->recordKey("order-9"));
        auto mm = ex.execute("order-9", R"({"a":1,"b":3})", work);
        QCOMPARE(mm.kind, OutcomeKind::PayloadMismatch);
        QVERIFY(!mm.error.empty());
        QCOMPARE(hgetall(*raw, store->recordKey("order-9")), before);
        auto same = ex.execute("order-9", "{ \"b\": 2, \"a\": 1 }", work);
        QCOMPARE(same.kind, OutcomeKind::Replayed);
        QCOMPARE(runs, 1);

        // mismatch against a STARTED record changes nothing either
        auto a = store->acquire("order-10", idem::fingerprint(R"({"x":1})"));
        QCOMPARE(a.status, AcquireStatus::Acquired);
        const Fields started = hgetall(*raw, store->recordKey("order-10"));
        auto b = store->acquire("order-10", idem::fingerprint(R"({"x":2})"));
        QCOMPARE(b.status, AcquireStatus::Mismatch);
        QCOMPARE(hgetall(*raw, store->recordKey("order-10")), started);
    }

    // 3. live STARTED: in progress with the remaining lease; expired: taken over
    void inProgressAndTakeover()
    {
        auto a = store->acquire("job", "", idem::Millis(300));
        QCOMPARE(a.status, AcquireStatus::Acquired);
        QCOMPARE(a.ticket.attempt, std::int64_t(1));
        QVERIFY(!a.takeover);
        auto b = store->acquire("job", "", idem::Millis(300));
        QCOMPARE(b.status, AcquireStatus::InProgress);
        QVERIFY(b.remainingMs > 0 && b.remainingMs <= 300);
        QThread::msleep(350);
        auto c = store->acquire("job", "", idem::Millis(300));
        QCOMPARE(c.status, AcquireStatus::Acquired);
        QVERIFY(c.takeover);
        QCOMPARE(c.ticket.attempt, std::int64_t(2));
        QVERIFY(c.ticket.fence > a.ticket.fence);
        QVERIFY(c.ticket.token != a.ticket.token);
        // the old owner is out
        QCOMPARE(store->complete(a.ticket, "late").status, idem::OwnerStatus::LeaseLost);
        QCOMPARE(store->renew(a.ticket).status, idem::OwnerStatus::LeaseLost);
        QCOMPARE(store->complete(c.ticket, "mine").status, idem::OwnerStatus::Ok);
        auto d = store->acquire("job", "");
        QCOMPARE(d.status, AcquireStatus::Duplicate);
        QCOMPARE(d.response, std::string("mine"));
    }

    // 4. a takeover never overwrites a record that completed in between
    void takeoverNeverOverwritesCompleted()
    {
        // sequential: the expired owner completes first; the would-be taker gets the duplicate
        auto a = store->acquire("t4", "", idem::Millis(50));
        QThread::msleep(80);
        QCOMPARE(store->complete(a.ticket, "from A").status, idem::OwnerStatus::Ok);
        auto b = store->acquire("t4", "", idem::Millis(50));
        QCOMPARE(b.status, AcquireStatus::Duplicate);
        QCOMPARE(b.response, std::string("from A"));

        // racing: completion and takeover at the moment the lease ends; exactly one wins
        int completedWins = 0, takeoverWins = 0;
        for (int round = 0; round < 40; ++round) {
            const std::string id = "race-" + std::to_string(round);
            auto owner = store->acquire(id, "", idem::Millis(20));
            QCOMPARE(owner.status, AcquireStatus::Acquired);
            // even rounds: the owner finishes inside its lease; odd rounds: just after it ended,
            // while a duplicate is already asking. Either way one script decides, and one wins.
            const bool late = round % 2;
            QThread::msleep(late ? 25 : 10);
            idem::OwnerResult done;
            idem::AcquireResult taker;
            std::thread t1([&] {
                if (late)
                    std::this_thread::sleep_for(std::chrono::microseconds(3000));
                done = store->complete(owner.ticket, "A");
            });
            std::thread t2([&] {
                for (int i = 0; i < 50; ++i) {
                    taker = store->acquire(id, "", idem::Millis(1000));
                    if (taker.status != AcquireStatus::InProgress)
                        break;
                    std::this_thread::sleep_for(std::chrono::microseconds(200));
                }
            });
            t1.join();
            t2.join();
            if (done.status == idem::OwnerStatus::Ok) {
                ++completedWins;
                QCOMPARE(taker.status, AcquireStatus::Duplicate);
                QCOMPARE(taker.response, std::string("A"));
            } else {
                ++takeoverWins;
                QCOMPARE(taker.status, AcquireStatus::Acquired);
                QVERIFY(taker.takeover);
                QCOMPARE(hgetall(*raw, store->recordKey(id)).at("state"), std::string("STARTED"));
            }
        }
        QCOMPARE(completedWins + takeoverWins, 40);
        QVERIFY(completedWins > 0);
        QVERIFY(takeoverWins > 0);
        qInfo("completion won %d rounds, takeover won %d", completedWins, takeoverWins);
    }

    // 8. the three failure policies; rejected callers never delete anyone's record
    void failurePolicies()
    {
        // release: deleted, the next delivery runs again
        auto a = store->acquire("rel", "");
        QCOMPARE(store->fail(a.ticket, idem::FailPolicy::Release, "boom").status, idem::OwnerStatus::Ok);
        QCOMPARE(idem::reply::integer(raw->checked({"EXISTS", store->recordKey("rel")}).get()), std::int64_t(0));
        auto a2 = store->acquire("rel", "");
        QCOMPARE(a2.status, AcquireStatus::Acquired);
        QVERIFY(a2.ticket.fence > a.ticket.fence);

        // retryable: kept FAILED, the next acquire is a new attempt
        auto b = store->acquire("retry", "");
        QCOMPARE(store->fail(b.ticket, idem::FailPolicy::Retryable, "timeout").status, idem::OwnerStatus::Ok);
        auto fb = hgetall(*raw, store->recordKey("retry"));
        QCOMPARE(fb.at("state"), std::string("FAILED"));
        QCOMPARE(fb.at("failure"), std::string("retryable"));
        QVERIFY(pttl(*raw, store->recordKey("retry")) > 0);
        auto b2 = store->acquire("retry", "");
        QCOMPARE(b2.status, AcquireStatus::Acquired);
        QCOMPARE(b2.ticket.attempt, std::int64_t(2));

        // terminal: duplicates get the failure back
        auto c = store->acquire("term", "");
        QCOMPARE(store->fail(c.ticket, idem::FailPolicy::Terminal, "card declined").status, idem::OwnerStatus::Ok);
        auto c2 = store->acquire("term", "");
        QCOMPARE(c2.status, AcquireStatus::FailedTerminal);
        QCOMPARE(c2.error, std::string("card declined"));

        // a wrong token cannot fail (or complete) someone else's record
        auto d = store->acquire("mine", "");
        const Fields before = hgetall(*raw, store->recordKey("mine"));
        idem::Ticket forged = d.ticket;
        forged.token = idem::newToken();
        for (auto p : {idem::FailPolicy::Release, idem::FailPolicy::Retryable, idem::FailPolicy::Terminal})
            QCOMPARE(store->fail(forged, p, "x").status, idem::OwnerStatus::LeaseLost);
        QCOMPARE(store->complete(forged, "x").status, idem::OwnerStatus::LeaseLost);
        // and an in-progress duplicate changes nothing
        QCOMPARE(store->acquire("mine", "").status, AcquireStatus::InProgress);
        QCOMPARE(hgetall(*raw, store->recordKey("mine")), before);

        // execute(): work that throws is released by default; a failure result uses its policy
        idem::Executor ex(*store);
        auto thrown = ex.execute("throws", "", [](const idem::WorkContext&) -> idem::WorkResult {
            throw std::runtime_error("kaputt");
        });
        QCOMPARE(thrown.kind, OutcomeKind::Failed);
        QCOMPARE(thrown.error, std::string("kaputt"));
        QVERIFY(!store->inspect("throws"));
        auto term = ex.execute("declined", "", [](const idem::WorkContext&) {
            return idem::WorkResult::failure("declined", idem::FailPolicy::Terminal);
        });
        QCOMPARE(term.kind, OutcomeKind::Failed);
        int ran = 0;
        auto dup = ex.execute("declined", "", [&](const idem::WorkContext&) { ++ran; return respond("x"); });
        QCOMPARE(dup.kind, OutcomeKind::Failed);
        QCOMPARE(dup.error, std::string("declined"));
        QCOMPARE(ran, 0);
    }

    // 10. every key written has a TTL; an expired COMPLETED record lets the id run again
    void everyKeyHasTtl()
    {
        idem::Executor ex(*store);
        ex.execute("k1", "", [](const idem::WorkContext&) { return respond("r"); });
        auto a = store->acquire("k2", "");
        store->renew(a.ticket);
        auto b = store->acquire("k3", "");
        store->fail(b.ticket, idem::FailPolicy::Terminal, "e");
        auto c = store->acquire("k4", "");
        store->fail(c.ticket, idem::FailPolicy::Release, "e");
        store->acquire("k5", "");
        store->forceFail("k5", "stuck", false, "test");
        store->acquire("k6", "");
        store->purge("k6", "test", "cleanup");

        std::string cursor = "0";
        int keys = 0;
        do {
            const std::string pattern = store->options().keyNamespace + ":*";
            auto r = raw->checked({"SCAN", cursor, "MATCH", pattern, "COUNT", "100"});
            cursor = idem::reply::str(idem::reply::element(r.get(), 0));
            const auto* list = idem::reply::element(r.get(), 1);
            for (std::size_t i = 0; i < idem::reply::arraySize(list); ++i) {
                const std::string k = idem::reply::str(idem::reply::element(list, i));
                QVERIFY2(pttl(*raw, k) > 0, k.c_str());
                ++keys;
            }
        } while (cursor != "0");
        // k1 k2 k3 k5, the meta key purge left for k6 (k4 was released), and the audit stream of the
        // force-fail and the purge
        QCOMPARE(keys, 6);

        int runs = 0;
        auto work = [&](const idem::WorkContext&) { ++runs; return respond("v" + std::to_string(runs)); };
        idem::ExecuteOptions shortRetention;
        shortRetention.retention = idem::Millis(100);
        const auto firstRun = ex.execute("exp", "", work, shortRetention);
        QCOMPARE(firstRun.kind, OutcomeKind::Executed);
        QCOMPARE(ex.execute("exp", "", work).kind, OutcomeKind::Replayed);
        QThread::msleep(150);
        auto again = ex.execute("exp", "", work);
        QCOMPARE(again.kind, OutcomeKind::Executed);
        QCOMPARE(again.response, std::string("v2"));
        QVERIFY(again.fence > firstRun.fence); // fences increase across expiry too
    }

    // 11. force-fail and purge; fencing numbers increase across takeover and purge
    void operatorActionsAndFences()
    {
        std::vector<std::int64_t> fences;
        auto a = store->acquire("op", "", idem::Millis(50));
        fences.push_back(a.ticket.fence);
        QThread::msleep(70);
        auto b = store->acquire("op", "", idem::Millis(5000)); // takeover
        QVERIFY(b.takeover);
        fences.push_back(b.ticket.fence);

        auto ff = store->forceFail("op", "stuck on a dead host", false, "alice");
        QCOMPARE(ff.status, idem::AdminStatus::Ok);
        QCOMPARE(ff.previousState, std::string("STARTED"));
        auto rec = store->inspect("op");
        QCOMPARE(rec->state, idem::RecordState::Failed);
        QCOMPARE(rec->opBy, std::string("alice"));
        QCOMPARE(rec->opReason, std::string("stuck on a dead host"));
        QVERIFY(rec->opAtMs && *rec->opAtMs > 0);
        QVERIFY(!rec->terminal);
        // the owner whose record was force-failed loses it
        QCOMPARE(store->complete(b.ticket, "late").status, idem::OwnerStatus::LeaseLost);
        auto c = store->acquire("op", ""); // retryable: runs again
        QCOMPARE(c.status, AcquireStatus::Acquired);
        fences.push_back(c.ticket.fence);

        QCOMPARE(store->forceFail("op", "poison", true, "bob").status, idem::AdminStatus::Ok);
        QCOMPARE(store->acquire("op", "").status, AcquireStatus::FailedTerminal);

        auto p = store->purge("op", "carol", "replay after fix");
        QCOMPARE(p.status, idem::AdminStatus::Ok);
        QCOMPARE(p.previousState, std::string("FAILED"));
        QVERIFY(!store->inspect("op"));
        Fields meta;
        for (const auto& [k, v] : store->meta("op"))
            meta[k] = v;
        QCOMPARE(meta.at("last_op"), std::string("purge"));
        QCOMPARE(meta.at("last_op_by"), std::string("carol"));
        QCOMPARE(meta.at("last_op_reason"), std::string("replay after fix"));
        auto d = store->acquire("op", "");
        QCOMPARE(d.status, AcquireStatus::Acquired);
        QCOMPARE(d.ticket.attempt, std::int64_t(1));
        fences.push_back(d.ticket.fence);
        for (std::size_t i = 1; i < fences.size(); ++i)
            QVERIFY2(fences[i] > fences[i - 1], "fencing numbers must strictly increase");

        // completed records are refused by force-fail (their result stays), purge takes anything
        QCOMPARE(store->complete(d.ticket, "done").status, idem::OwnerStatus::Ok);
        QCOMPARE(store->forceFail("op", "x", false, "eve").status, idem::AdminStatus::Refused);
        QCOMPARE(store->forceFail("nothing", "x", false, "eve").status, idem::AdminStatus::NotFound);
        QCOMPARE(store->purge("nothing", "eve").status, idem::AdminStatus::NotFound);
        raw->checked({"RPUSH", store->recordKey("alist"), "x"});
        QCOMPARE(store->forceFail("alist", "x", false, "eve").status, idem::AdminStatus::Refused);
        QCOMPARE(store->purge("alist", "eve").status, idem::AdminStatus::Ok);
    }

    void retriedCallsAreIdempotent()
    {
        // a caller retrying after a lost reply (same token) gets its own ownership back
        const std::string rk = store->recordKey("lost-reply"), mk = store->metaKey("lost-reply");
        const std::string token = idem::newToken();
        auto onceReply = idem::runScript(*raw, idem::scripts::acquire(), {rk, mk}, {"5000", "65000", "", token});
        auto twiceReply = idem::runScript(*raw, idem::scripts::acquire(), {rk, mk}, {"5000", "65000", "", token});
        // one id: "<now_us>" alone when acquired fresh (the fence is that time, the lease runs
        // from it), else "<now_us> ACQUIRED <fence> <attempt> <lease_until_ms> <takeover>"
        const auto words = [](const idem::ReplyPtr& r) {
            std::vector<std::string> out;
            std::istringstream in(idem::reply::str(r.get()));
            for (std::string w; in >> w;)
                out.push_back(w);
            return out;
        };
        const std::vector<std::string> once = words(onceReply), twice = words(twiceReply);
        QCOMPARE(once.size(), std::size_t(1));
        QCOMPARE(twice.size(), std::size_t(6));
        QCOMPARE(twice[1], std::string("ACQUIRED"));
        QCOMPARE(twice[2], once[0]); // same fence
        QCOMPARE(twice[3], std::string("1"));
        QCOMPARE(twice[4], std::to_string(std::stoll(once[0]) / 1000 + 5000)); // same lease
        QCOMPARE(twice[5], std::string("0"));
        QCOMPARE(hgetall(*raw, rk).at("fence"), once[0]);
        QCOMPARE(hgetall(*raw, rk).at("lease_ms"), std::string("5000"));
        // another token is a real duplicate
        QCOMPARE(store->acquire("lost-reply", "").status, AcquireStatus::InProgress);
        idem::Ticket t{"lost-reply", token, 1, 1, 0};
        QCOMPARE(store->complete(t, "r").status, idem::OwnerStatus::Ok);
        QCOMPARE(store->complete(t, "r").status, idem::OwnerStatus::Ok); // complete retried
        QCOMPARE(store->acquire("lost-reply", "").response, std::string("r"));
    }

    // acquire.lua writes the server clock as strings cut from TIME's reply (seconds and
    // microseconds, the latter not zero-padded): check them against TIME, until microsecond parts
    // below 100000 (which need the padding) have been seen. A first attempt's start is its fence;
    // complete.lua reads no clock: the record keeps its retention, and its TTL counts it down from
    // when it completed
    void recordTimesFromServerClock()
    {
        const auto serverUs = [&] {
            auto r = raw->checked({"TIME"});
            return idem::reply::integer(idem::reply::element(r.get(), 0)) * 1000000 +
                   idem::reply::integer(idem::reply::element(r.get(), 1));
        };
        const std::int64_t retention = store->options().retention.count();
        int padded = 0, checked = 0;
        // bounded by time, not by count: the window recurs every second, whatever a round trip costs
        QElapsedTimer spent;
        spent.start();
        for (int i = 0; padded < 3 && spent.elapsed() < 5000; ++i, ++checked) {
            const std::string id = "clock-" + std::to_string(i);
            const std::int64_t before = serverUs();
            const auto a = store->acquire(id, "fp-1", idem::Millis(4000));
            const std::int64_t after = serverUs();
            QCOMPARE(a.status, AcquireStatus::Acquired);
            const Fields f = hgetall(*raw, store->recordKey(id));
            const std::int64_t fence = std::stoll(f.at("fence"));
            QVERIFY2(before <= fence && fence <= after, f.at("fence").c_str()); // a first fence is the clock
            QCOMPARE(f.at("fence"), std::to_string(fence)); // no leading zeros, no exponent
            QCOMPARE(fence, a.ticket.fence);
            const std::int64_t started = fence / 1000;
            QVERIFY(!f.count("started_ms") && !f.count("attempt")); // implied: the fence, 1
            QCOMPARE(store->inspect(id)->startedMs, std::optional<std::int64_t>(started));
            QVERIFY(!f.count("lease_until_ms")); // implied: the fence's millisecond + lease_ms
            QCOMPARE(f.at("lease_ms"), std::string("4000"));
            QCOMPARE(store->inspect(id)->leaseUntilMs, std::optional<std::int64_t>(started + 4000));
            QCOMPARE(a.ticket.leaseUntilMs, started + 4000);
            QCOMPARE(a.serverNowMs, started);
            QCOMPARE(f.at("fp"), std::string("fp-1"));
            const std::int64_t beforeDone = serverUs();
            const auto done = store->complete(a.ticket, "r");
            const std::int64_t afterDone = serverUs();
            QCOMPARE(done.status, idem::OwnerStatus::Ok);
            QCOMPARE(done.serverNowMs, std::int64_t(0)); // no clock read
            const Fields c = hgetall(*raw, store->recordKey(id));
            QCOMPARE(c.at("retention_ms"), std::to_string(retention));
            QVERIFY(!c.count("finished_ms"));
            // PTTL and TIME are read in one pipeline: the finish they give is within a millisecond
            const auto rec = store->inspect(id);
            QVERIFY(rec && rec->finishedMs);
            QVERIFY2(beforeDone / 1000 - 1 <= *rec->finishedMs && *rec->finishedMs <= afterDone / 1000 + 1,
                     std::to_string(*rec->finishedMs - beforeDone / 1000).c_str());
            QCOMPARE(rec->startedMs, std::optional<std::int64_t>(started));
            if (fence % 1000000 < 100000)
                ++padded;
        }
        QVERIFY2(padded > 0, "no microsecond part below 100000 seen");
        qInfo("%d acquires checked, %d with a microsecond part below 100000", checked, padded);

        // a record whose TTL is not idem's any more (PERSIST) has no finish to tell
        raw->checked({"PERSIST", store->recordKey("clock-0")});
        QVERIFY(!store->inspect("clock-0")->finishedMs);

        // a new attempt keeps the first start as created_ms and drops the failed attempt's fields
        auto a = store->acquire("clock-history", "fp-2", idem::Millis(4000));
        const std::string firstStart = std::to_string(a.ticket.fence / 1000);
        // renew reports the deadline it wrote, counted from the server's time
        const auto renewed = store->renew(a.ticket, idem::Millis(6000));
        QCOMPARE(renewed.status, idem::OwnerStatus::Ok);
        QCOMPARE(renewed.leaseUntilMs, renewed.serverNowMs + 6000);
        QCOMPARE(std::stoll(hgetall(*raw, store->recordKey("clock-history")).at("lease_until_ms")),
                 renewed.leaseUntilMs);
        const auto failed = store->fail(a.ticket, idem::FailPolicy::Retryable, "boom");
        QCOMPARE(failed.status, idem::OwnerStatus::Ok);
        QCOMPARE(std::stoll(hgetall(*raw, store->recordKey("clock-history")).at("finished_ms")), failed.serverNowMs);
        QCOMPARE(store->inspect("clock-history")->finishedMs, std::optional<std::int64_t>(failed.serverNowMs));
        QThread::msleep(2);
        auto b = store->acquire("clock-history", "fp-2", idem::Millis(4000));
        QCOMPARE(b.status, AcquireStatus::Acquired);
        const Fields f = hgetall(*raw, store->recordKey("clock-history"));
        QCOMPARE(f.at("created_ms"), firstStart);
        QCOMPARE(f.at("started_ms"), std::to_string(b.serverNowMs)); // a later attempt writes its start
        QVERIFY(std::stoll(f.at("started_ms")) > std::stoll(firstStart));
        QCOMPARE(f.at("attempt"), std::string("2"));
        QCOMPARE(f.at("fence"), std::to_string(b.ticket.fence));
        QCOMPARE(f.at("fp"), std::string("fp-2"));
        QVERIFY(!f.count("error") && !f.count("failure") && !f.count("finished_ms"));
        QCOMPARE(std::stoll(f.at("lease_until_ms")), b.ticket.leaseUntilMs);
        const auto bRec = store->inspect("clock-history");
        QCOMPARE(bRec->createdMs, std::optional<std::int64_t>(std::stoll(firstStart)));
        QCOMPARE(bRec->startedMs, std::optional<std::int64_t>(b.serverNowMs));
        // completed on a later attempt: the retention replaces nothing else, the start stays
        QCOMPARE(store->complete(b.ticket, "ok").status, idem::OwnerStatus::Ok);
        QCOMPARE(hgetall(*raw, store->recordKey("clock-history")).at("started_ms"), std::to_string(b.serverNowMs));

        // the script refuses a TTL shorter than the lease (a STARTED record must outlive its lease)
        const std::string rk = store->recordKey("clock-ttl"), mk = store->metaKey("clock-ttl");
        try {
            idem::runScript(*raw, idem::scripts::acquire(), {rk, mk}, {"5000", "4999", "", idem::newToken()});
            QFAIL("a TTL shorter than the lease was accepted");
        } catch (const idem::ReplyError& e) {
            QVERIFY2(std::string(e.what()).find("must cover its lease") != std::string::npos, e.what());
        }
        QCOMPARE(idem::reply::integer(raw->checked({"EXISTS", rk}).get()), std::int64_t(0));
    }

    void responseCapAndIds()
    {
        idem::StoreOptions so;
        so.keyNamespace = idemtest::uniqueNamespace("cap");
        so.maxResponseBytes = 1000;
        idem::Store small(*pool, so);
        auto a = small.acquire("big", "");
        QVERIFY_THROWS_EXCEPTION(idem::UsageError, small.complete(a.ticket, std::string(1001, 'x')));
        QCOMPARE(small.inspect("big")->state, idem::RecordState::Started); // nothing half written
        QCOMPARE(small.complete(a.ticket, std::string(1000, 'x')).status, idem::OwnerStatus::Ok);

        idem::Executor ex(small);
        auto o = ex.execute("big2", "", [](const idem::WorkContext&) { return respond(std::string(5000, 'y')); });
        QCOMPARE(o.kind, OutcomeKind::Failed);
        QVERIFY(o.error.find("cap") != std::string::npos);
        QVERIFY(!small.inspect("big2")); // released: the next delivery can try again

        QVERIFY_THROWS_EXCEPTION(idem::UsageError, store->acquire("", ""));
        QVERIFY_THROWS_EXCEPTION(idem::UsageError, store->acquire(std::string(1025, 'i'), ""));
        // binary and brace-laden ids are fine
        const std::string odd("a}{b\x00\xff", 6);
        QCOMPARE(store->acquire(odd, "").status, AcquireStatus::Acquired);
        QCOMPARE(store->inspect(odd)->state, idem::RecordState::Started);
        QVERIFY_THROWS_EXCEPTION(idem::UsageError, idem::Store(*pool, idem::StoreOptions{.keyNamespace = "a{b}"}));
    }

};

QTEST_GUILESS_MAIN(TestStateMachine)
#include "tst_statemachine.moc"
