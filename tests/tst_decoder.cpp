// The record decoder on native, foreign and malformed values; and on a real Redis through
// Store::inspect (wrong key types, huge values, keys without TTL).
#include "idem/errors.h"
#include "idem/format/record.h"
#include "idem/engine/store.h"
#include "testsupport.h"

#include <QtTest>

using idem::RecordFormat;
using idem::RecordState;

Q_DECLARE_METATYPE(idem::RecordState)
Q_DECLARE_METATYPE(idem::RecordFormat)

namespace {
constexpr std::int64_t kNow = 1'700'000'000'000; // 2023-11-14T22:13:20Z
}

class TestDecoder : public QObject {
    Q_OBJECT
private slots:
    void strings_data()
    {
        QTest::addColumn<QByteArray>("value");
        QTest::addColumn<idem::RecordState>("state");
        QTest::addColumn<idem::RecordFormat>("format");
        QTest::addColumn<bool>("stale");
        QTest::addColumn<QString>("reasonContains");

        auto row = [](const char* name, QByteArray v, RecordState s, RecordFormat f, bool stale = false,
                      const char* reason = "") {
            QTest::newRow(name) << v << s << f << stale << QString::fromLatin1(reason);
        };
        row("json started", R"({"status":"STARTED","started_at":1700000000})", RecordState::Started, RecordFormat::StatusJson);
        row("json pending", R"({"status":"PENDING"})", RecordState::Started, RecordFormat::StatusJson);
        row("json processing", R"({"status":"PROCESSING"})", RecordState::Started, RecordFormat::StatusJson);
        row("json in_progress", R"({"status":"IN_PROGRESS"})", RecordState::Started, RecordFormat::StatusJson);
        row("json lowercase", R"({"status":"processing"})", RecordState::Started, RecordFormat::StatusJson);
        row("json completed", R"({"status":"COMPLETED","response":{"ok":true}})", RecordState::Completed, RecordFormat::StatusJson);
        row("json response_body", R"({"status":"COMPLETED","response_body":"done"})", RecordState::Completed, RecordFormat::StatusJson);
        row("json failed", R"({"status":"FAILED","error":"card declined"})", RecordState::Failed, RecordFormat::StatusJson);
        row("json lock expired", R"({"status":"PROCESSING","lock_expiry":1699999999})", RecordState::Started,
            RecordFormat::StatusJson, true);
        row("json lock live", R"({"status":"PROCESSING","lock_expiry":1700000060000})", RecordState::Started,
            RecordFormat::StatusJson, false);
        row("json lock iso", R"({"status":"STARTED","lock_expiry":"2023-11-14T22:00:00Z"})", RecordState::Started,
            RecordFormat::StatusJson, true);
        row("json old started_at", R"({"status":"STARTED","started_at":"2023-11-14T20:00:00.250+00:00"})",
            RecordState::Started, RecordFormat::StatusJson, true);
        row("json recent started_at", R"({"status":"STARTED","started_at":"2023-11-14T23:10:00+01:00"})",
            RecordState::Started, RecordFormat::StatusJson, false);
        // no zone: the writer's local time, read as the latest instant it can be (UTC-12), so a
        // lease 10 minutes ahead in New York is not read as expired 4 hours ago
        row("json lock iso no zone", R"({"status":"PROCESSING","lock_expiry":"2023-11-14T22:10:00.085798"})",
            RecordState::Started, RecordFormat::StatusJson, false, "no time zone");
        row("json lock iso no zone, past in every zone", R"({"status":"PROCESSING","lock_expiry":"2023-11-14T10:00:00"})",
            RecordState::Started, RecordFormat::StatusJson, true);
        row("json started_at no zone", R"({"status":"STARTED","started_at":"2023-11-14T20:00:00"})",
            RecordState::Started, RecordFormat::StatusJson, false);
        row("plain processing", "PROCESSING", RecordState::Started, RecordFormat::Plain);
        row("plain completed", "COMPLETED", RecordState::Completed, RecordFormat::Plain);
        row("plain failed newline", "FAILED\n", RecordState::Failed, RecordFormat::Plain);
        row("invalid json", R"({"status":"STARTED")", RecordState::Malformed, RecordFormat::StatusJson, false, "invalid JSON");
        row("json array", "[1,2]", RecordState::Malformed, RecordFormat::Unknown, false, "not a known status");
        row("json no status", R"({"state":"x"})", RecordState::Malformed, RecordFormat::StatusJson, false, "status");
        row("json status number", R"({"status":3})", RecordState::Malformed, RecordFormat::StatusJson, false, "status");
        row("json unknown status", R"({"status":"EXPLODED"})", RecordState::Malformed, RecordFormat::StatusJson, false,
            "unknown status");
        row("plain junk", "hello world", RecordState::Malformed, RecordFormat::Unknown, false, "not a known status");
        row("empty", "", RecordState::Malformed, RecordFormat::Unknown, false, "empty");
        row("binary", QByteArray("\x00\x01\xff\xfe garbage", 12), RecordState::Malformed, RecordFormat::Unknown,
            false, "binary");
        row("bad utf8 in json", QByteArray("{\"status\":\"\xc3\x28\"}"), RecordState::Malformed,
            RecordFormat::Unknown, false, "binary");
        row("huge", QByteArray(5 * 1024 * 1024, 'x'), RecordState::Malformed, RecordFormat::Unknown, false,
            "not a known status"); // read and classified like any other, never refused for its size
        // times that cannot be times: a malformed record, never a lease that looks expired
        row("lease past 9999", R"({"status":"STARTED","lock_expiry":"9999999999999999999999"})",
            RecordState::Malformed, RecordFormat::StatusJson, false, "past year 9999");
        row("lease negative", R"({"status":"STARTED","lock_expiry":-5})", RecordState::Malformed,
            RecordFormat::StatusJson, false, "negative");
        row("lease exponent", R"({"status":"STARTED","lock_expiry":1.7e12})", RecordState::Malformed,
            RecordFormat::StatusJson, false, "exponent");
        row("lease not a time", R"({"status":"STARTED","lock_expiry":"soon"})", RecordState::Malformed,
            RecordFormat::StatusJson, false, "not a time");
    }
    void strings()
    {
        QFETCH(QByteArray, value);
        idem::DecodeOptions o;
        o.nowMs = kNow;
        o.staleAfterMs = 15 * 60'000;
        const auto r = idem::decodeString(std::string_view(value.constData(), value.size()), o);
        QTEST(r.state, "state");
        QTEST(r.format, "format");
        QTEST(r.stale, "stale");
        QFETCH(QString, reasonContains);
        if (!reasonContains.isEmpty())
            QVERIFY2(r.reason.find(reasonContains.toStdString()) != std::string::npos, r.reason.c_str());
        if (r.state == RecordState::Malformed) {
            QVERIFY(!r.reason.empty());
            QVERIFY(r.reason.find('\n') == std::string::npos);
        }
    }

    void foreignResponseKept()
    {
        idem::DecodeOptions o;
        o.nowMs = kNow;
        auto r = idem::decodeString(R"({"status":"COMPLETED","response":{"ok":true,"id":7}})", o);
        QVERIFY(r.response);
        QCOMPARE(*r.response, std::string(R"({"ok":true,"id":7})")); // as written
        r = idem::decodeString(R"({"status":"COMPLETED","response_body":"plain text"})", o);
        QCOMPARE(r.response.value_or(""), std::string("plain text"));
        r = idem::decodeString(R"({"status":"FAILED","error":"card declined"})", o);
        QCOMPARE(r.error, std::string("card declined"));
    }

    void timestamps()
    {
        QCOMPARE(idem::parseTimestampMs("1700000000").value_or(0), kNow);
        QCOMPARE(idem::parseTimestampMs("1700000000000").value_or(0), kNow);
        QCOMPARE(idem::parseTimestampMs("1700000000.5").value_or(0), kNow + 500);
        QCOMPARE(idem::parseTimestampMs("2023-11-14T22:13:20Z").value_or(0), kNow);
        QCOMPARE(idem::parseTimestampMs("2023-11-14 23:13:20.125+01:00").value_or(0), kNow + 125);
        QVERIFY(!idem::parseTimestampMs("yesterday"));
        QVERIFY(!idem::parseTimestampMs("2023-13-14T22:13:20Z"));
        QVERIFY(!idem::parseTimestampMs("2023-11-14T22:13:20Zjunk"));
    }

    void nativeHash()
    {
        idem::DecodeOptions o;
        o.nowMs = kNow;
        auto r = idem::decodeHash({{"state", "STARTED"}, {"lease_until_ms", std::to_string(kNow - 1)},
                                   {"token", "abc"}, {"fence", "3"}, {"attempt", "2"}},
                                  o);
        QCOMPARE(r.state, RecordState::Started);
        QVERIFY(r.stale);
        QCOMPARE(r.fence, std::int64_t(3));
        QCOMPARE(r.attempt, std::int64_t(2));
        r = idem::decodeHash({{"state", "STARTED"}, {"lease_until_ms", std::to_string(kNow + 1000)}}, o);
        QVERIFY(!r.stale);
        // a first attempt writes what it was given and the clock once: it started at its fence
        // (µs) and its lease runs lease_ms from there; renewals write lease_until_ms, which wins
        const std::string fence = std::to_string((kNow - 5000) * 1000 + 999);
        r = idem::decodeHash({{"state", "STARTED"}, {"fence", fence}, {"lease_ms", "4000"}}, o);
        QCOMPARE(r.state, RecordState::Started);
        QCOMPARE(r.startedMs, std::optional<std::int64_t>(kNow - 5000));
        QCOMPARE(r.createdMs, r.startedMs);
        QCOMPARE(r.leaseUntilMs, std::optional<std::int64_t>(kNow - 1000));
        QCOMPARE(r.attempt, std::int64_t(1));
        QVERIFY(r.stale);
        r = idem::decodeHash({{"state", "STARTED"}, {"fence", fence}, {"lease_ms", "4000"},
                              {"lease_until_ms", std::to_string(kNow + 1000)}},
                             o);
        QCOMPARE(r.leaseUntilMs, std::optional<std::int64_t>(kNow + 1000));
        QVERIFY(!r.stale);
        // a completion keeps its retention; its TTL, read with it, counts that down
        o.ttlMs = 60'000;
        r = idem::decodeHash({{"state", "COMPLETED"}, {"fence", fence}, {"retention_ms", "90000"}}, o);
        QCOMPARE(r.finishedMs, std::optional<std::int64_t>(kNow - 30'000));
        o.ttlMs = -1; // no TTL (PERSIST): no finish to tell
        r = idem::decodeHash({{"state", "COMPLETED"}, {"fence", fence}, {"retention_ms", "90000"}}, o);
        QVERIFY(!r.finishedMs);
        o.ttlMs = -2;
        r = idem::decodeHash({{"state", "STARTED"}}, o);
        QCOMPARE(r.state, RecordState::Malformed);
        r = idem::decodeHash({{"state", "WHATEVER"}}, o);
        QCOMPARE(r.state, RecordState::Malformed);
        r = idem::decodeHash({{"foo", "bar"}}, o);
        QCOMPARE(r.state, RecordState::Malformed);
        r = idem::decodeHash({{"state", "FAILED"}, {"failure", "terminal"}, {"error", "x"}}, o);
        QCOMPARE(r.state, RecordState::Failed);
        QVERIFY(r.terminal);
        // a hash written by another implementation with a status field
        r = idem::decodeHash({{"status", "PROCESSING"}, {"lock_expiry", "1699999999"}}, o);
        QCOMPARE(r.state, RecordState::Started);
        QVERIFY(r.stale);
    }

    void keyShapes()
    {
        QCOMPARE(idem::idFromKey("idempotency:{order-1}", "idempotency"), std::string("order-1"));
        QCOMPARE(idem::idFromKey("idempotency:{a}b}", "idempotency"), std::string("a}b"));
        QCOMPARE(idem::idFromKey("idempotency:{x}:meta", "idempotency"), std::string());
        QCOMPARE(idem::idFromKey("other:{x}", "idempotency"), std::string());
    }

    // On a real Redis: every kind of thing that can sit at a record's key.
    void inspectOnRealRedis()
    {
        idem::ConnectionPool pool(idemtest::sharedRedis(), 2);
        idem::StoreOptions so;
        so.keyNamespace = idemtest::uniqueNamespace("dec");
        idem::Store store(pool, so);
        idem::Connection c(idemtest::sharedRedis());
        auto key = [&](const char* id) { return store.recordKey(id); };

        c.checked({"RPUSH", key("list"), "a", "b"});
        c.checked({"XADD", key("stream"), "*", "f", "v"});
        c.checked({"SADD", key("set"), "m"});
        c.checked({"ZADD", key("zset"), "1", "m"});
        const std::string big(10 * 1024 * 1024, 'z');
        c.checked({"SET", key("big"), big});
        c.checked({"SET", key("json"), R"({"status":"PROCESSING","started_at":1600000000})"});
        c.checked({"SET", key("binary"), std::string("\x00\xff\x10", 3)});
        c.checked({"SET", key("plain"), "COMPLETED", "PX", "60000"});

        auto expectMalformed = [&](const char* id, const char* why) {
            auto r = store.inspect(id);
            QVERIFY(r);
            QCOMPARE(r->state, RecordState::Malformed);
            QVERIFY2(r->reason.find(why) != std::string::npos, r->reason.c_str());
        };
        // other types are valid keys of something else: foreign, never malformed
        for (const char* type : {"list", "stream", "set", "zset"}) {
            auto r = store.inspect(type);
            QVERIFY(r);
            QCOMPARE(r->state, RecordState::Foreign);
            QVERIFY2(r->reason.find(type) != std::string::npos, r->reason.c_str());
        }
        // a 10 MB value is read by its first and last bytes, never whole, and still classified
        expectMalformed("big", "not a known status");
        QVERIFY(store.inspect("big")->partial);
        QCOMPARE(store.inspect("big")->valueBytes, std::int64_t(big.size()));
        expectMalformed("binary", "binary");

        auto r = store.inspect("json");
        QVERIFY(r);
        QCOMPARE(r->state, RecordState::Started);
        // started in 2020, no lock_expiry: blocked (its writer keeps it until its TTL), stale only
        // in an operator's window (idemctl --stale-after)
        QVERIFY(r->blocked && !r->stale);
        QCOMPARE(r->ttlMs, std::int64_t(-1)); // no TTL: flagged
        r = store.inspect("plain");
        QCOMPARE(r->state, RecordState::Completed);
        QVERIFY(r->ttlMs > 0 && r->ttlMs <= 60000);
        QVERIFY(!store.inspect("absent"));

        // acquire refuses to touch what is not an idem record, and leaves it alone
        for (const char* id : {"list", "json", "big"}) {
            const auto a = store.acquire(id, "");
            QCOMPARE(a.status, idem::AcquireStatus::Unusable);
            QVERIFY(!a.error.empty());
        }
        QCOMPARE(idem::reply::str(c.checked({"TYPE", key("list")}).get()), std::string("list"));
        QCOMPARE(idem::reply::integer(c.checked({"STRLEN", key("big")}).get()), std::int64_t(big.size()));
        QCOMPARE(idem::reply::str(c.checked({"GET", key("json")}).get()),
                 std::string(R"({"status":"PROCESSING","started_at":1600000000})"));
    }
};

QTEST_GUILESS_MAIN(TestDecoder)
#include "tst_decoder.moc"
