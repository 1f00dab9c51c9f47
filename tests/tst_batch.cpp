// Batch acquire on a real Redis: many ids per script call and many calls per round trip, every
// kind of answer in one batch, answers carrying any bytes, and what a single acquire costs.
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

idem::WorkResult respond(std::string s) { return idem::WorkResult::success(std::move(s)); }

} // namespace

class TestBatch : public QObject {
    Q_OBJECT

    std::unique_ptr<idem::ConnectionPool> pool;
    std::unique_ptr<idem::Store> store;
    std::unique_ptr<idem::Connection> raw;

    void fresh(idem::Millis lease = idem::Millis(2000))
    {
        idem::StoreOptions so;
        so.keyNamespace = idemtest::uniqueNamespace("batch");
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

    // a Store asks INFO cluster once, on its first call, whatever it is: on a cluster it then
    // learns the map, so that calls find the promoted replica if the node it was given dies
    // (on a server of its own: INFO calls of tests running in parallel would count on a shared one)
    void clusterInfoAskedOncePerStore()
    {
        idem::LocalServer own;
        idem::Connection counter(own.connectionOptions());
        idem::ConnectionPool ownPool(own.connectionOptions(), 2);
        const auto infoCalls = [&] { return idemtest::commandCalls(counter, "info"); };
        idem::StoreOptions so;
        so.keyNamespace = idemtest::uniqueNamespace("info");
        idem::Store s(ownPool, so);
        long long before = infoCalls();
        QCOMPARE(s.acquire("one", "").status, AcquireStatus::Acquired);
        QCOMPARE(infoCalls() - before, 2LL); // the first infoCalls() itself, and the Store's
        before = infoCalls();
        QCOMPARE(s.acquireBatch({{"two", ""}, {"three", ""}}).size(), std::size_t(2));
        s.acquireBatch({{"four", ""}, {"five", ""}});
        QCOMPARE(s.acquire("six", "").status, AcquireStatus::Acquired);
        QCOMPARE(infoCalls() - before, 1LL); // the infoCalls() only: asked once per Store
    }


    void batchAcquire()
    {
        std::vector<idem::AcquireRequest> rq;
        for (int i = 0; i < 50; ++i)
            rq.push_back({"b-" + std::to_string(i), idem::fingerprint("p" + std::to_string(i))});
        auto first = store->acquireBatch(rq);
        QCOMPARE(first.size(), rq.size());
        for (std::size_t i = 0; i < first.size(); ++i) {
            QCOMPARE(first[i].status, AcquireStatus::Acquired);
            QCOMPARE(first[i].ticket.id, rq[i].id);
        }
        for (int i = 0; i < 10; ++i)
            store->complete(first[i].ticket, "done-" + std::to_string(i));
        rq.push_back({"b-0", idem::fingerprint("other")});
        // every kind of answer in one call: a terminal failure and a key that is no record, too
        auto term = store->acquire("b-term", "");
        QCOMPARE(store->fail(term.ticket, idem::FailPolicy::Terminal, "boom").status, idem::OwnerStatus::Ok);
        rq.push_back({"b-term", ""});
        raw->checked({"RPUSH", store->recordKey("b-list"), "x"});
        rq.push_back({"b-list", ""});
        rq.push_back({"b-new", ""});
        auto second = store->acquireBatch(rq);
        QCOMPARE(second.size(), rq.size());
        for (int i = 0; i < 10; ++i) {
            QCOMPARE(second[i].status, AcquireStatus::Duplicate);
            QCOMPARE(second[i].response, "done-" + std::to_string(i));
            QCOMPARE(second[i].fence, first[i].ticket.fence);
        }
        for (int i = 10; i < 50; ++i) {
            QCOMPARE(second[i].status, AcquireStatus::InProgress);
            QVERIFY(second[i].remainingMs > 0 && second[i].remainingMs <= store->options().lease.count());
            QCOMPARE(second[i].fence, first[i].ticket.fence);
            QCOMPARE(second[i].attempt, std::int64_t(1));
        }
        QCOMPARE(second[50].status, AcquireStatus::Mismatch);
        QCOMPARE(second[50].storedFingerprint, rq[0].fingerprint);
        QCOMPARE(second[51].status, AcquireStatus::FailedTerminal);
        QCOMPARE(second[51].error, std::string("boom"));
        QCOMPARE(second[51].fence, term.ticket.fence);
        QCOMPARE(second[52].status, AcquireStatus::Unusable);
        QVERIFY2(second[52].error.find("list") != std::string::npos, second[52].error.c_str());
        QCOMPARE(second[53].status, AcquireStatus::Acquired);
        QCOMPARE(second[53].ticket.attempt, std::int64_t(1));
        QVERIFY(second[53].ticket.fence > first[49].ticket.fence);
        QCOMPARE(second[53].serverNowMs, second[0].serverNowMs); // one call: one server time
    }

    // acquire.lua answers a line per id, stored text as its tail ("DUPLICATE <fence> <response>",
    // "FAILED <fence> <error>"; for one id "<now_us> " before it): any bytes survive, for one id
    // and in a batch
    void answersCarryAnyBytes()
    {
        std::string big(300 * 1024, '\0');
        std::mt19937 rng(7);
        for (char& c : big)
            c = static_cast<char>(rng());
        const std::vector<std::string> responses = {
            "", " ", "  spaces around  ", std::string("nul\0inside\0", 12), "line\r\nbreaks\r\n",
            "DUPLICATE 1 2 looks like a reply", "ACQUIRED 1 1 1 0 1", big};
        idem::Executor ex(*store);
        for (std::size_t i = 0; i < responses.size(); ++i) {
            const std::string id = "bytes-" + std::to_string(i);
            const std::string payload = i % 2 ? "payload-" + std::to_string(i) : std::string(); // with and without a fingerprint
            const auto first = ex.execute(id, payload, [&](const idem::WorkContext&) { return respond(responses[i]); });
            QCOMPARE(first.kind, OutcomeKind::Executed);
            const auto again = ex.execute(id, payload, [&](const idem::WorkContext&) -> idem::WorkResult {
                throw std::runtime_error("a duplicate ran");
            });
            QCOMPARE(again.kind, OutcomeKind::Replayed);
            QCOMPARE(again.response.size(), responses[i].size());
            QVERIFY(again.response == responses[i]);
            QCOMPARE(again.fence, first.fence);
            const auto one = store->acquire(id, idem::fingerprint(payload));
            QCOMPARE(one.status, AcquireStatus::Duplicate);
            QVERIFY(one.response == responses[i]);
            QCOMPARE(one.fence, first.fence);
            QCOMPARE(one.serverNowMs, std::int64_t(0)); // a duplicate is answered without reading the clock
            const auto both = store->acquireBatch({{id, idem::fingerprint(payload)}, {"bytes-fresh-" + std::to_string(i), ""}});
            QCOMPARE(both[0].status, AcquireStatus::Duplicate);
            QVERIFY(both[0].response == responses[i]);
            QCOMPARE(both[0].fence, first.fence);
            QCOMPARE(both[1].status, AcquireStatus::Acquired);

            // the same bytes as a terminal failure's error
            const std::string fid = "bytes-failed-" + std::to_string(i);
            const auto failed = ex.execute(fid, "", [&](const idem::WorkContext&) {
                return idem::WorkResult::failure(responses[i], idem::FailPolicy::Terminal);
            });
            QCOMPARE(failed.kind, OutcomeKind::Failed);
            const auto oneFailed = store->acquire(fid, "");
            QCOMPARE(oneFailed.status, AcquireStatus::FailedTerminal);
            QVERIFY(oneFailed.error == responses[i]);
            QCOMPARE(oneFailed.fence, failed.fence);
            const auto batchFailed = store->acquireBatch({{fid, ""}, {id, ""}});
            QCOMPARE(batchFailed[0].status, AcquireStatus::FailedTerminal);
            QVERIFY(batchFailed[0].error == responses[i]);
            QCOMPARE(batchFailed[1].status, AcquireStatus::Duplicate);
        }
        // the other answers for one id: mismatch (the stored fingerprint back), in progress, unusable
        QCOMPARE(store->acquire("bytes-1", idem::fingerprint("other")).storedFingerprint,
                 idem::fingerprint("payload-1"));
        const auto held = store->acquire("bytes-held", "", idem::Millis(60000));
        const auto busy = store->acquire("bytes-held", "");
        QCOMPARE(busy.status, AcquireStatus::InProgress);
        QVERIFY(busy.remainingMs > 50000 && busy.remainingMs <= 60000);
        QCOMPARE(busy.fence, held.ticket.fence);
        QCOMPARE(busy.attempt, std::int64_t(1));
        // a completed hash whose fence is not digits (written by hand): its response still comes
        // back whole, with fence 0 - never a response cut at a space in the fence
        for (const char* fence : {"1 2", "1e5", ""}) {
            const std::string k = store->recordKey(std::string("bytes-fence-") + fence);
            raw->checked({"HSET", k, "state", "COMPLETED", "fence", fence, "response", "r s"});
            raw->checked({"PEXPIRE", k, "60000"});
            const auto d = store->acquire(std::string("bytes-fence-") + fence, "");
            QCOMPARE(d.status, AcquireStatus::Duplicate);
            QCOMPARE(d.response, std::string("r s"));
            QCOMPARE(d.fence, std::int64_t(0));
        }
        raw->checked({"SET", store->recordKey("bytes-string"), "x y z"});
        const auto unusable = store->acquire("bytes-string", "");
        QCOMPARE(unusable.status, AcquireStatus::Unusable);
        QVERIFY2(unusable.error.find("key holds a string") != std::string::npos, unusable.error.c_str());
    }


    // one id twice in a batch (a consumer that got a redelivery in the same poll): the first is
    // acquired, the second finds it in progress - never two owners
    void sameIdTwiceInOneBatch()
    {
        for (const std::size_t size : {std::size_t(2), std::size_t(16), std::size_t(64)}) {
            const std::string tag = "twice-" + std::to_string(size) + "-";
            std::vector<idem::AcquireRequest> rq;
            for (std::size_t i = 0; i + 1 < size; ++i)
                rq.push_back({tag + std::to_string(i), ""});
            rq.push_back({tag + "0", ""}); // the first id again, last
            const auto got = store->acquireBatch(rq);
            QCOMPARE(got.front().status, AcquireStatus::Acquired);
            QCOMPARE(got.back().status, AcquireStatus::InProgress);
            QCOMPARE(got.back().fence, got.front().ticket.fence);
            QCOMPARE(store->inspect(tag + "0")->owner, got.front().ticket.token);
        }
    }

    // many script calls in one round trip (64 ids per call), long ids (the request is encoded in
    // one buffer of about a megabyte), every ticket owning its own record, and a normal batch after it
    void bigBatchAcquire()
    {
        std::vector<idem::AcquireRequest> rq;
        for (int i = 0; i < 1000; ++i)
            rq.push_back({"big-" + std::to_string(i) + "-" + std::string(400, 'x'), i % 2 ? "" : "fp-" + std::to_string(i)});
        auto got = store->acquireBatch(rq);
        QCOMPARE(got.size(), rq.size());
        std::set<std::string> tokens;
        for (std::size_t i = 0; i < got.size(); ++i) {
            QCOMPARE(got[i].status, AcquireStatus::Acquired);
            QCOMPARE(got[i].ticket.id, rq[i].id);
            QCOMPARE(got[i].ticket.token.size(), std::size_t(32));
            tokens.insert(got[i].ticket.token);
        }
        QCOMPARE(tokens.size(), rq.size());
        // the server's time comes once per script call: the same for the 64 ids of one call, the
        // lease deadline counted from it, and close to what TIME says now
        auto time = raw->checked({"TIME"});
        const std::int64_t serverMs = idem::reply::integer(idem::reply::element(time.get(), 0)) * 1000 +
                                      idem::reply::integer(idem::reply::element(time.get(), 1)) / 1000;
        for (std::size_t i = 0; i < got.size(); ++i) {
            QCOMPARE(got[i].serverNowMs, got[i / 64 * 64].serverNowMs);
            QCOMPARE(got[i].ticket.leaseUntilMs, got[i].serverNowMs + store->options().lease.count());
            QVERIFY(got[i].serverNowMs <= serverMs && got[i].serverNowMs > serverMs - 10'000);
        }
        for (std::size_t i : {std::size_t(0), std::size_t(63), std::size_t(64), std::size_t(999)}) {
            const auto rec = store->inspect(rq[i].id);
            QVERIFY(rec);
            QCOMPARE(rec->owner, got[i].ticket.token);
            QCOMPARE(store->complete(got[i].ticket, "r" + std::to_string(i)).status, idem::OwnerStatus::Ok);
        }
        auto again = store->acquireBatch({{rq[64].id, rq[64].fingerprint}, {"after-big", ""}});
        QCOMPARE(again[0].status, AcquireStatus::Duplicate);
        QCOMPARE(again[0].response, std::string("r64"));
        QCOMPARE(again[1].status, AcquireStatus::Acquired);
    }
};

QTEST_GUILESS_MAIN(TestBatch)
#include "tst_batch.moc"
