// The format profiles on values made here: the JSON scanner on whole values, prefixes and tails,
// times that cannot be times, each profile's key shapes and edge cases, a large value read by its
// first and last bytes, and --format. (tst_peers holds what the real libraries wrote.)
#include "idem/format/jsonscan.h"
#include "idem/format/record.h"
#include "testsupport.h"

#include <QtTest>

using idem::RecordFormat;
using idem::RecordState;
namespace json = idem::json;

namespace {

constexpr std::int64_t kNow = 1'795'431'450'000; // 2026-11-23, as the corpus

idem::Record read(const std::string& key, const std::string& value, std::int64_t ttlMs = 30'000,
                  idem::DecodeOptions o = {}, std::size_t prefix = 0)
{
    idem::KeyRead in;
    in.key = key;
    in.type = "string";
    in.ttlMs = ttlMs;
    in.valueBytes = static_cast<std::int64_t>(value.size());
    if (prefix && value.size() > prefix) {
        in.value = value.substr(0, prefix);
        in.tail = value.substr(value.size() - prefix);
    } else {
        in.value = value;
    }
    if (o.nowMs == 0)
        o.nowMs = kNow;
    return idem::decode(in, o);
}


} // namespace

class TestFormats : public QObject {
    Q_OBJECT
private slots:
    // --format names whose records a namespace holds; another library's record there is still read
    // as that library's (a live lock of it never becomes a "malformed" purge candidate), a list is
    // foreign, and only what no library reads is malformed in the named format.
    void forcedFormatNeverMisreadsAnotherLibrary()
    {
        idem::DecodeOptions o;
        o.format = RecordFormat::NodeIdempotency;
        auto r = read("orders#HXoPuS989n9jdP6e7H2ySg==",
                      "{\"status\":\"INPROGRESS\",\"expiration\":1795431481,\"in_progress_expiration\":" +
                          std::to_string(kNow + 600'000) + "}",
                      30'000, o);
        QCOMPARE(r.format, RecordFormat::Powertools);
        QCOMPARE(r.state, RecordState::Started);
        QVERIFY(!r.stale);
        o.format = RecordFormat::Powertools;
        r = read("node-idempotency:POST:/orders:k1", "{\"status\":\"IN_PROGRESS\"}", 30'000, o);
        QCOMPARE(r.format, RecordFormat::NodeIdempotency);
        QCOMPARE(r.state, RecordState::Started);
        idem::KeyRead list;
        list.key = "queue:jobs";
        list.type = "list";
        list.ttlMs = -1;
        o.nowMs = kNow;
        r = idem::decode(list, o);
        QCOMPARE(r.state, RecordState::Foreign);
        r = read("garbage", "not json{", 30'000, o);
        QCOMPARE(r.state, RecordState::Malformed);
        QCOMPARE(r.format, RecordFormat::Powertools);
    }

    void scanWholeObjects()
    {
        const auto j = json::scanObject(" {\"a\":\"x\\\"y\\u00e9\\ud83d\\ude00\",\"b\":-1.5e3,\"c\":{\"d\":[1,{\"e\":null}]},\"f\":true} ", false);
        QVERIFY(j.error.empty());
        QVERIFY(j.complete && j.isObject && !j.cut);
        QCOMPARE(j.members.size(), std::size_t(4));
        QCOMPARE(*j.string("a"), std::string("x\"y\xc3\xa9\xf0\x9f\x98\x80"));
        QCOMPARE(j.find("b")->text, std::string("-1.5e3"));
        QCOMPARE(j.find("c")->kind, json::Kind::Object);
        QCOMPARE(j.find("f")->kind, json::Kind::True);
        // the last of a repeated member wins, as JSON.parse has it
        QCOMPARE(*json::scanObject("{\"s\":\"a\",\"s\":\"b\"}", false).string("s"), std::string("b"));
    }

    void scanRefusals_data()
    {
        QTest::addColumn<QByteArray>("text");
        QTest::addColumn<QString>("why");
        QTest::newRow("cut") << QByteArray("{\"a\":1") << u"unexpected end"_qs;
        QTest::newRow("trailing comma") << QByteArray("{\"a\":1,}") << u"member name"_qs;
        QTest::newRow("bare word") << QByteArray("{\"a\":tru}") << u"bad literal"_qs;
        QTest::newRow("leading zero") << QByteArray("{\"a\":01}") << u"expected ','"_qs;
        QTest::newRow("control char") << QByteArray("{\"a\":\"x\ny\"}") << u"control character"_qs;
        QTest::newRow("lone surrogate") << QByteArray("{\"a\":\"\\udc00\"}") << u"surrogate"_qs;
        QTest::newRow("text after") << QByteArray("{\"a\":1} x") << u"text after"_qs;
        QTest::newRow("array") << QByteArray("[1,2]") << u"not an object"_qs;
        QTest::newRow("deep") << QByteArray("{\"a\":" + QByteArray(200, '[') + QByteArray(200, ']') + "}")
                              << u"nested too deeply"_qs;
    }
    void scanRefusals()
    {
        QFETCH(QByteArray, text);
        QFETCH(QString, why);
        const auto j = json::scanObject(text.toStdString(), false);
        QVERIFY2(QString::fromStdString(j.error).contains(why), j.error.c_str());
        QVERIFY(!j.complete);
    }

    void scanPrefixAndTail()
    {
        const std::string big = "{\"status\":\"COMPLETED\",\"expiration\":1795431481,\"data\":{\"blob\":\"" +
                                std::string(100'000, 'a') + "\"},\"done\":true}";
        const auto head = json::scanObject(big.substr(0, 200), true);
        QVERIFY(head.error.empty());
        QVERIFY(head.cut && !head.complete);
        QCOMPARE(*head.string("status"), std::string("COMPLETED"));
        QVERIFY(head.find("data")->cut);
        // the tail: members after the cut, never something inside a string or a nested value
        const auto tail = json::scanTail(big.substr(big.size() - 200));
        QCOMPARE(tail.size(), std::size_t(1));
        QCOMPARE(tail.front().key, std::string("done"));
        QVERIFY(json::scanTail("aaa\",\"x\":1}}").empty()); // would close the nested object, not the record
        QVERIFY(json::scanTail("aa,\\\"x\\\":1}\"}").empty()); // inside a string a quote is escaped: aa,\"x\":1}"}
        // ...and a prefix cut in a number is not an error
        QVERIFY(json::scanObject("{\"a\":12", true).error.empty());
        QCOMPARE(*json::stringArray("[\"a\",\"b\\n\"]"), (std::vector<std::string>{"a", "b\n"}));
        QVERIFY(!json::stringArray("[\"a\",1]"));
    }

    // a time that cannot be one makes the record malformed with a reason: never a lock whose lease
    // looks long expired (a purge candidate), never undefined behaviour
    void timesOutOfRange_data()
    {
        QTest::addColumn<QByteArray>("expiry");
        QTest::addColumn<QString>("why");
        QTest::newRow("far future") << QByteArray("\"9999999999999999999999\"") << u"past year 9999"_qs;
        QTest::newRow("far future number") << QByteArray("99999999999999999") << u"past year 9999"_qs;
        QTest::newRow("negative") << QByteArray("-1700000000") << u"negative"_qs;
        QTest::newRow("exponent") << QByteArray("1.7e12") << u"exponent"_qs;
        QTest::newRow("words") << QByteArray("\"tomorrow\"") << u"not a time"_qs;
        QTest::newRow("words with an e") << QByteArray("\"garbage\"") << u"not a time"_qs;
        QTest::newRow("exponent with a sign") << QByteArray("\"17E+11\"") << u"exponent"_qs;
        QTest::newRow("object") << QByteArray("{\"s\":1}") << u"not a time"_qs;
        // what Go, Java and C write for a time never set: no lease that ended in 1970
        QTest::newRow("zero") << QByteArray("0") << u"before 2000"_qs;
        QTest::newRow("small") << QByteArray("30") << u"before 2000"_qs;
        QTest::newRow("1999") << QByteArray("946684799999") << u"before 2000"_qs;
    }
    void timesOutOfRange()
    {
        QFETCH(QByteArray, expiry);
        QFETCH(QString, why);
        const auto r = read("fn#HXoPuS989n9jdP6e7H2ySg==",
                            "{\"status\":\"INPROGRESS\",\"expiration\":1795431481,\"in_progress_expiration\":" +
                                expiry.toStdString() + "}");
        QCOMPARE(r.state, RecordState::Malformed);
        QCOMPARE(r.format, RecordFormat::Powertools);
        QVERIFY(!r.stale);
        QVERIFY2(QString::fromStdString(r.reason).contains(why), r.reason.c_str());
        QVERIFY(!idem::parseTimestampMs(expiry.toStdString()));
    }

    // Powertools for Java: a hash at {prefix:id:key} whose field names carry the key
    void powertoolsJavaShapes()
    {
        const std::string key = "{idempotency:id:orders.Handler#d41d8cd98f00b204e9800998ecf8427e}";
        const auto hash = [&](std::vector<std::pair<std::string, std::string>> f) {
            idem::KeyRead in;
            in.key = key;
            in.type = "hash";
            in.ttlMs = 30'000;
            for (auto& [k, v] : f)
                in.fields.emplace_back(key + ":" + k, v);
            idem::DecodeOptions o;
            o.nowMs = kNow;
            return idem::decode(in, o);
        };
        QCOMPARE(idem::extraHashFieldsToRead(key).size(), std::size_t(4));
        QVERIFY(idem::extraHashFieldsToRead("idempotency:{x}").empty());
        auto r = hash({{"status", "INPROGRESS"}, {"expiration", "1795431481"}, {"in-progress-expiration", "1795431510951"}});
        QCOMPARE(r.format, RecordFormat::PowertoolsJava);
        QCOMPARE(r.state, RecordState::Started);
        QVERIFY(!r.stale && idem::mayBeLiveLock(r));
        QCOMPARE(r.leaseUntilMs, std::optional<std::int64_t>(1795431510951));
        r = hash({{"status", "INPROGRESS"}, {"expiration", "1795431481"}, {"in-progress-expiration", "1795431449000"}});
        QVERIFY(r.stale && !idem::mayBeLiveLock(r));
        r = hash({{"status", "INPROGRESS"}, {"expiration", "1795431481"}}); // no Lambda context
        QVERIFY(r.blocked && !r.stale && idem::mayBeLiveLock(r));
        r = hash({{"status", "COMPLETED"}, {"expiration", "1795431481"}, {"data", "{\"ok\":1}"}});
        QCOMPARE(r.state, RecordState::Completed);
        QCOMPARE(r.response, std::optional<std::string>("{\"ok\":1}"));
        r = hash({{"status", "COMPLETED"}, {"expiration", "1795431000"}});
        QCOMPARE(r.state, RecordState::Expired);
        r = hash({{"status", "INPROGRESS"}, {"expiration", "1795431481"}, {"in-progress-expiration", "0"}});
        QCOMPARE(r.state, RecordState::Malformed);
        QVERIFY(idem::mayBeLiveLock(r)); // its status says in progress: kept from every bulk purge
        // what a guarded purge compares covers its renamed fields
        const auto a = hash({{"status", "INPROGRESS"}, {"in-progress-expiration", "1795431449000"}});
        const auto b = hash({{"status", "INPROGRESS"}, {"in-progress-expiration", "1795431449001"}});
        QVERIFY(!a.guardSha1.empty() && a.guardSha1 != b.guardSha1);
        // ...named from the key, there or not: a reader that kept only the digest names the same
        const auto names = idem::guardFieldNames(key, {});
        QCOMPARE(names.size(), idem::hashFieldsToRead().size() + 4);
        QCOMPARE(idem::guardFieldNames(key, a.fields), names);
        QCOMPARE(idem::hashGuardSha1(key, a.fields), a.guardSha1);
        // its builder renames the fields (withStatusAttr, ...): read whole, a field saying
        // INPROGRESS is its lock; a scan that read only the default names saw nothing of it, and
        // keeps it from bulk purges as read in part (never "malformed")
        r = hash({{"st", "INPROGRESS"}, {"exp", "1795431481"}, {"ipe", "1795431510951"}});
        QCOMPARE(r.state, RecordState::Started);
        QVERIFY(r.blocked && !r.stale && idem::mayBeLiveLock(r));
        r = hash({});
        QCOMPARE(r.state, RecordState::Unknown);
        QVERIFY(r.partial);
        QCOMPARE(r.format, RecordFormat::PowertoolsJava);
        r = hash({{"st", "COMPLETED"}, {"exp", "1795431481"}});
        QCOMPARE(r.state, RecordState::Malformed);
    }

    void powertoolsShapes()
    {
        const std::string ts = "orders#HXoPuS989n9jdP6e7H2ySg==", py = "app.handler#6775d2c92fdf7044223899b6dd8c2f4a";
        // live, orphaned, without a deadline, completed, expired, a status it does not have
        auto r = read(ts, "{\"status\":\"INPROGRESS\",\"expiration\":1795431481,\"in_progress_expiration\":1795431510951}");
        QCOMPARE(r.state, RecordState::Started);
        QVERIFY(!r.stale && !r.blocked);
        QCOMPARE(r.changesAtMs, std::optional<std::int64_t>(1795431510951));
        r = read(ts, "{\"status\":\"INPROGRESS\",\"expiration\":1795431481,\"in_progress_expiration\":1795431449000}");
        QVERIFY(r.stale);
        // without a deadline: a live lock until its expiration (later versions keep it so; earlier
        // ones take it over, and the bytes do not say which wrote it): never stale, never purged
        // in bulk as such
        r = read(ts, "{\"status\":\"INPROGRESS\",\"expiration\":1795431481}");
        QCOMPARE(r.state, RecordState::Started);
        QVERIFY(!r.stale && r.blocked);
        QVERIFY(r.reason.find("Lambda context") != std::string::npos);
        QCOMPARE(r.changesAtMs, std::optional<std::int64_t>(1795431481000));
        r = read(ts, "{\"status\":\"COMPLETED\",\"expiration\":1795431481,\"data\":{\"x\":1}}");
        QCOMPARE(r.state, RecordState::Completed);
        QCOMPARE(*r.response, std::string("{\"x\":1}"));
        QCOMPARE(r.changesAtMs, std::optional<std::int64_t>(1795431481000)); // turns EXPIRED then
        r = read(ts, "{\"status\":\"COMPLETED\",\"expiration\":1795431449}");
        QCOMPARE(r.state, RecordState::Expired);
        r = read(ts, "{\"status\":\"FAILED\",\"expiration\":1795431481}");
        QCOMPARE(r.state, RecordState::Malformed);
        QVERIFY(r.reason.find("every call fails") != std::string::npos);
        r = read(ts, "not json");
        QCOMPARE(r.state, RecordState::Malformed);
        QCOMPARE(r.format, RecordFormat::Powertools);
        // attributes renamed (statusAttr: 'state', ...): its lock, deadline unknown, never stale
        r = read(ts, "{\"state\":\"INPROGRESS\",\"expires_at\":1795431481,\"lock_until\":1795431000000}");
        QCOMPARE(r.state, RecordState::Started);
        QVERIFY(r.blocked && !r.stale);
        r = read(ts, "{\"state\":\"COMPLETED\",\"expires_at\":1795431481}"); // not a lock: not guessed
        QCOMPARE(r.state, RecordState::Malformed);
        r = read(ts + ":lock", "true");
        QCOMPARE(r.state, RecordState::Foreign);
        QCOMPARE(r.format, RecordFormat::Powertools);
        // Python: hex hash, json.dumps spacing, data a JSON string
        r = read(py, "{\"data\": \"{\\\"x\\\": 1}\", \"status\": \"COMPLETED\", \"expiration\": 1795431481}");
        QCOMPARE(r.format, RecordFormat::PowertoolsPython);
        QCOMPARE(*r.response, std::string("{\"x\": 1}"));
        // without the key shape, the signature and the spacing decide
        QCOMPARE(read("elsewhere", "{\"status\":\"INPROGRESS\",\"expiration\":1795431481}").format, RecordFormat::Powertools);
        QCOMPARE(read("elsewhere", "{\"status\": \"INPROGRESS\", \"expiration\": 1795431481}").format,
                 RecordFormat::PowertoolsPython);
    }

    // Python writes data first: a 1 MB record's status is at its end, and is read from the tail
    void largeValueByHeadAndTail()
    {
        const std::string big = "{\"data\": \"" + std::string(1 << 20, 'a') +
                                "\", \"status\": \"COMPLETED\", \"expiration\": 1795431481}";
        auto r = read("app.handler#6775d2c92fdf7044223899b6dd8c2f4a", big, 30'000, {}, 8192);
        QCOMPARE(r.state, RecordState::Completed);
        QVERIFY(r.partial);
        QVERIFY(!r.response); // not read
        QCOMPARE(r.valueBytes, std::int64_t(big.size()));
        QCOMPARE(r.guardBytes, std::size_t(8192));
        // an express-idempotency request larger than both ends: not known, never guessed
        const std::string req = "{\"request\":{\"body\":\"" + std::string(1 << 20, 'b') + "\"}}";
        r = read("key-1", req, 30'000, {}, 8192);
        QCOMPARE(r.format, RecordFormat::ExpressIdempotency);
        QCOMPARE(r.state, RecordState::Unknown);
        const std::string done = req.substr(0, req.size() - 1) + ",\"response\":{\"statusCode\":201,\"body\":\"ok\"}}";
        r = read("key-1", done, 30'000, {}, 8192);
        QCOMPARE(r.state, RecordState::Unknown); // by its value alone: never a record to purge
        QVERIFY2(r.reason.find("--format express-idempotency") != std::string::npos, r.reason.c_str());
        idem::DecodeOptions express;
        express.format = RecordFormat::ExpressIdempotency;
        r = read("key-1", done, 30'000, express, 8192);
        QCOMPARE(r.state, RecordState::Completed);
    }

    // A STARTED record's lease that lies beyond what was read is unknown: never "no lease", never
    // stale (it would be a purge --stale candidate whatever its real lease; docs/fuzzing.md)
    void leaseNotReadIsNeverStale()
    {
        const std::string pad = ",\"note\":\"" + std::string(1 << 16, 'n') + "\"";
        const std::string started = "{\"status\":\"STARTED\",\"started_at\":1700000000" + pad +
                                    ",\"lock_expiry\":9999999999" + pad + "}";
        auto r = read("idempotency:{big}", started, 30'000, {}, 8192);
        QCOMPARE(r.state, RecordState::Unknown);
        QVERIFY(r.partial && !r.stale);
        const std::string pt = "{\"status\":\"INPROGRESS\",\"expiration\":1795431481" + pad +
                               ",\"in_progress_expiration\":1795431510951" + pad + "}";
        r = read("fn#HXoPuS989n9jdP6e7H2ySg==", pt, 30'000, {}, 8192);
        QCOMPARE(r.state, RecordState::Unknown);
        QVERIFY(r.partial && !r.stale);
        // read whole, the same records are what they say
        QVERIFY(!read("idempotency:{big}", started).stale);
        QCOMPARE(read("fn#HXoPuS989n9jdP6e7H2ySg==", pt).state, RecordState::Started);
    }

    void noLeaseLibraries()
    {
        idem::DecodeOptions o;
        // node-idempotency: blocked until its TTL; its age from the TTL once the writer's TTL is known
        auto r = read("node-idempotency:POST:/orders:k", "{\"status\":\"IN_PROGRESS\",\"fingerPrint\":\"ab\"}", 30'000, o);
        QCOMPARE(r.state, RecordState::Started);
        QVERIFY(r.blocked && !r.stale);
        QVERIFY(!r.startedMs); // unknown: never stale on a guess
        o.writerTtlMs = 24LL * 3'600'000;
        r = read("node-idempotency:POST:/orders:k", "{\"status\":\"IN_PROGRESS\",\"fingerPrint\":\"ab\"}", 30'000, o);
        QVERIFY(r.blocked && !r.stale); // in progress for 23h59m30s, and no window given: as its library keeps it
        QVERIFY(r.startedMs); // known now, from the TTL
        o.staleAfterMs = 15 * 60'000; // the operator's window
        r = read("node-idempotency:POST:/orders:k", "{\"status\":\"IN_PROGRESS\",\"fingerPrint\":\"ab\"}", 30'000, o);
        QVERIFY(r.blocked && r.stale); // in progress for 23h59m30s, over the 15 min window
        r = read("node-idempotency:POST:/orders:k", "{\"status\":\"DONE\"}", 30'000, o);
        QCOMPARE(r.state, RecordState::Malformed);
        QCOMPARE(r.format, RecordFormat::NodeIdempotency);
        // express-idempotency: no response yet
        r = read("raw-key", "{\"request\":{\"url\":\"/o\",\"method\":\"POST\"}}", 86'000'000, o);
        QCOMPARE(r.format, RecordFormat::ExpressIdempotency);
        QVERIFY(r.blocked && !r.stale);
        // idempotent-request: the lock's value is its start
        r = read("idempotency_keys:lock:k", "1795431000.5", 86'000'000, o);
        QCOMPARE(r.format, RecordFormat::IdempotentRequest);
        QCOMPARE(r.startedMs, std::optional<std::int64_t>(1795431000500));
        QVERIFY(!r.stale);
        r = read("idempotency_keys:lock:k", "1795420000", -1, o);
        QVERIFY(r.stale); // three hours, no TTL: held for ever
        r = read("idempotency_keys:lock:k", "true", 1000, o); // gem 0.1.2-0.1.3: a lock, start unknown
        QCOMPARE(r.state, RecordState::Started);
        QVERIFY(r.blocked && !r.stale && !r.startedMs);
        r = read("idempotency_keys:lock:k", "soon", 1000, o); // not the gem's value: still its lock
        QCOMPARE(r.state, RecordState::Started);
        QVERIFY(r.blocked && !r.stale && idem::mayBeLiveLock(r));
    }

    // A key's shape, or a format that reads every string as its own kind of key, does not beat a
    // value another library reads as its record: a live lock read as "malformed" or "foreign" could
    // go in a purge of those.
    void aValueBeatsAShape()
    {
        idem::DecodeOptions o;
        // an express-idempotency key that looks like a Powertools (Python) hash
        auto r = read("checkout#5d41402abc4b2a76b9719d911017c592", "{\"request\":{\"url\":\"/o\",\"method\":\"POST\"}}",
                      86'000'000, o);
        QCOMPARE(r.format, RecordFormat::ExpressIdempotency);
        QCOMPARE(r.state, RecordState::Started);
        // a status record under idempotent-request's prefix
        r = read("idempotency_keys:order-7",
                 "{\"status\":\"PROCESSING\",\"lock_expiry\":" + std::to_string(kNow / 1000 + 600) + "}", 600'000, o);
        QCOMPARE(r.format, RecordFormat::StatusJson);
        QCOMPARE(r.state, RecordState::Started);
        QVERIFY(!r.stale);
        // forced: Camel (any string is a message id) and Powertools (any ':lock' key is its mutex)
        const std::string live = "{\"status\":\"INPROGRESS\",\"expiration\":9999999999,\"in_progress_expiration\":" +
                                 std::to_string(kNow + 600'000) + "}";
        o.format = RecordFormat::Camel;
        r = read("orders-fn#HXoPuS989n9jdP6e7H2ySg==", live, 600'000, o);
        QCOMPARE(r.format, RecordFormat::Powertools);
        QCOMPARE(r.state, RecordState::Started);
        QVERIFY(!r.stale);
        // a record at another library's own key shape is that library's, whatever its state
        r = read("orders-fn#HXoPuS989n9jdP6e7H2ySg==", "{\"status\":\"COMPLETED\",\"expiration\":9999999999}", -1, o);
        QCOMPARE(r.format, RecordFormat::Powertools);
        QCOMPARE(r.state, RecordState::Completed);
        r = read("camel-orders:ID:broker-1:1", "ID:broker-1:1", -1, o); // still Camel's
        QCOMPARE(r.state, RecordState::Foreign);
        QCOMPARE(r.format, RecordFormat::Camel);
        o.format.reset();
        r = read("camel-orders:ID:broker-1:1", "ID:broker-1:1", -1, o); // a JMS id, colons and all
        QCOMPARE(r.state, RecordState::Foreign);
        QCOMPARE(r.format, RecordFormat::Camel);
        o.format = RecordFormat::Camel;
        o.format = RecordFormat::Powertools;
        r = read("order-42:lock", "{\"request\":{\"url\":\"/o\",\"method\":\"POST\"}}", 600'000, o);
        QCOMPARE(r.format, RecordFormat::ExpressIdempotency);
        QCOMPARE(r.state, RecordState::Started);
        r = read("orders-fn#HXoPuS989n9jdP6e7H2ySg==:lock", "true", 10'000, o); // its mutex
        QCOMPARE(r.state, RecordState::Foreign);
    }

    void forcedFormat()
    {
        idem::DecodeOptions o;
        o.format = RecordFormat::NodeIdempotency;
        auto r = read("anything", "{\"status\":\"IN_PROGRESS\"}", 30'000, o);
        QCOMPARE(r.format, RecordFormat::NodeIdempotency);
        QCOMPARE(r.state, RecordState::Started);
        r = read("anything", "{\"status\":7}", 30'000, o); // what the operator said it is not
        QCOMPARE(r.state, RecordState::Malformed);
        QCOMPARE(r.format, RecordFormat::NodeIdempotency);
        r = read("anything", "{\"request\":{}}", 30'000, o); // express-idempotency's lock: never malformed
        QCOMPARE(r.state, RecordState::Started);
        QCOMPARE(r.format, RecordFormat::ExpressIdempotency);
        o.format = RecordFormat::Native; // a string where idem keeps hashes
        r = read("anything", "no record at all", 30'000, o);
        QCOMPARE(r.state, RecordState::Malformed);
        QCOMPARE(r.format, RecordFormat::Native);
        // ... but what another profile reads is that profile's: a lock, not a broken native record
        r = read("anything", "PROCESSING", 30'000, o);
        QCOMPARE(r.state, RecordState::Started);
        QCOMPARE(r.format, RecordFormat::Plain);
        o.format = RecordFormat::Plain;
        r = read("anything", "{\"status\":\"STARTED\"}", 30'000, o);
        QCOMPARE(r.state, RecordState::Started);
        QCOMPARE(r.format, RecordFormat::StatusJson);
        QCOMPARE(idem::formatFromString("express-idempotency"), std::optional(RecordFormat::ExpressIdempotency));
        QVERIFY(!idem::formatFromString("kong"));
        for (int f = 0; f < idem::kRecordFormats; ++f) // every format has a name that reads back
            QCOMPARE(idem::formatFromString(idem::nameOf(static_cast<RecordFormat>(f))),
                     std::optional(static_cast<RecordFormat>(f)));
    }

    void unknownAndForeign()
    {
        auto r = read("cache:user:7", "{\"name\":\"ada\"}");
        QCOMPARE(r.state, RecordState::Unknown);
        r = read("session:x", "opaque");
        QCOMPARE(r.state, RecordState::Unknown);
        r = read("camel-payments:pay-1", "pay-1");
        QCOMPARE(r.state, RecordState::Foreign);
        QCOMPARE(r.format, RecordFormat::Camel);
        idem::KeyRead in;
        in.key = "queue";
        in.type = "list";
        r = idem::decode(in, {});
        QCOMPARE(r.state, RecordState::Foreign);
        // every field a profile documents says what it means
        for (int f = 0; f + 1 < idem::kRecordFormats; ++f)
            for (const auto& d : idem::fieldDocs(static_cast<RecordFormat>(f)))
                QVERIFY(!d.meaning.empty());
        QVERIFY(idem::fieldDoc(RecordFormat::Powertools, "expiration"));
        QCOMPARE(idem::fieldDoc(RecordFormat::Powertools, "expiration")->time, idem::FieldTime::Seconds);
    }

    // A value's signature at a key without its library's shape is a guess (an API log looks like
    // express-idempotency's record, an export job like Powertools'): at most a lock, which protects
    // the key, never a COMPLETED, FAILED or EXPIRED record or a stale lock for a bulk purge to take
    void aValueAloneIsAtMostALock()
    {
        const std::string later = std::to_string(kNow / 1000 + 86'400), past = std::to_string(kNow / 1000 - 100);
        for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
                 {"apilog:1", R"({"request":{"method":"GET","url":"/users/7"},"response":{"statusCode":200,"body":"{}"}})"},
                 {"export:job:9", "{\"status\":\"COMPLETED\",\"expiration\":" + later + ",\"file\":\"s3://b/x.csv\"}"},
                 {"coupon:77", "{\"status\":\"COMPLETED\",\"expiration\":" + past + "}"},
                 {"order:status:5", R"({"status":"COMPLETE","response":{"body":{"ok":true}}})"}}) {
            const auto r = read(key, value);
            QVERIFY2(r.state == RecordState::Unknown, key.c_str());
            QVERIFY2(r.reason.find("by its value alone") != std::string::npos, r.reason.c_str());
        }
        // the same values at their libraries' keys are their records
        QCOMPARE(read("fn#HXoPuS989n9jdP6e7H2ySg==", "{\"status\":\"COMPLETED\",\"expiration\":" + later + "}").state,
                 RecordState::Completed);
        QCOMPARE(read("node-idempotency:POST:/o:k", R"({"status":"COMPLETE","response":{"body":{"ok":true}}})").state,
                 RecordState::Completed);
        // a lock by its value alone stays a lock, and one whose deadline passed is not stale there
        const std::string expired = "{\"status\":\"INPROGRESS\",\"expiration\":" + later +
                                    ",\"in_progress_expiration\":" + std::to_string(kNow - 60'000) + "}";
        auto r = read("jobs:lock:9", expired);
        QCOMPARE(r.state, RecordState::Started);
        QVERIFY(!r.stale);
        QVERIFY(idem::mayBeLiveLock(r));
        QVERIFY(read("fn#HXoPuS989n9jdP6e7H2ySg==", expired).stale); // at its shape: stale
        // the operator who names the format reads them as that library's
        idem::DecodeOptions o;
        o.format = RecordFormat::Powertools;
        QCOMPARE(read("export:job:9", "{\"status\":\"COMPLETED\",\"expiration\":" + later + "}", 30'000, o).state,
                 RecordState::Completed);
        QVERIFY(read("jobs:lock:9", expired, 30'000, o).stale);
    }

    // What idem cannot read but that may be someone's lock is kept from every purge without --live:
    // a value cut short or written in another syntax that still says in progress, and a key whose
    // name says lock while a TTL bounds it (Redlock, BullMQ's job lock, Powertools' mutex)
    void unreadableLocksStayLocks()
    {
        auto r = read("orders#TTTTTTTTTTTTTTTTTTTTTw==",
                      R"({"status":"INPROGRESS","expiration":1795431481,"in_progress_expir)");
        QCOMPARE(r.state, RecordState::Malformed);
        QVERIFY(idem::mayBeLiveLock(r));
        r = read("orders#TTTTTTTTTTTTTTTTTTTTTw==", "{'status': 'INPROGRESS', 'expiration': 1795431481}");
        QVERIFY(idem::notARecord(r.state) && idem::mayBeLiveLock(r));
        r = read("orders#TTTTTTTTTTTTTTTTTTTTTw==", R"({"status":"COMPLETED","expir)"); // cut, but done
        QVERIFY(!idem::mayBeLiveLock(r));
        for (const char* key : {"lock:payments", "redlock:resource", "bull:emails:1:lock", "orders-mutex",
                                "uniquejobs:4b1d:LOCKED", "orders#HXoPuS989n9jdP6e7H2ySg==:lock"}) {
            r = read(key, "f3a9c2e1-77b0-4d7e-9c1a-0d2b6f1e8a44", 30'000);
            QVERIFY2(idem::notARecord(r.state) && idem::mayBeLiveLock(r), key);
            QVERIFY2(!idem::mayBeLiveLock(read(key, "f3a9c2e1", -1)), key); // no TTL: nothing says it is held
        }
        for (const char* key : {"cache:user:7", "blocks:9", "clock:skew", "session:lockout"})
            QVERIFY2(!idem::mayBeLiveLock(read(key, "f3a9c2e1", 30'000)), key);
    }

    // Outside idem's key shape a status word is no signature: job trackers, caches and Celery keep
    // one. A COMPLETED or FAILED there is another program's value (unknown, its word shown), never
    // a record for a purge by state; an in-progress word is read as a lock, which protects it.
    void aStatusWordAloneIsNoSignature()
    {
        auto r = read("jobs:42", "{\"status\":\"FAILED\",\"error\":\"timeout\"}");
        QCOMPARE(r.state, RecordState::Unknown);
        QCOMPARE(r.format, RecordFormat::Unknown);
        QCOMPARE(r.rawStatus, std::string("FAILED"));
        QVERIFY2(r.reason.find("--format json") != std::string::npos, r.reason.c_str());
        QVERIFY(!idem::mayBeLiveLock(r));
        r = read("jobs:43", "{\"status\":\"completed\",\"response\":\"ok\"}");
        QCOMPARE(r.state, RecordState::Unknown);
        r = read("jobs:44", "FAILED\n");
        QCOMPARE(r.state, RecordState::Unknown);
        QCOMPARE(r.rawStatus, std::string("FAILED"));
        QVERIFY2(r.reason.find("--format plain") != std::string::npos, r.reason.c_str());
        // in progress: a lock, whoever wrote it
        r = read("jobs:45", "{\"status\":\"PROCESSING\"}");
        QCOMPARE(r.state, RecordState::Started);
        QCOMPARE(r.format, RecordFormat::StatusJson);
        QVERIFY(idem::mayBeLiveLock(r));
        r = read("jobs:46", "PROCESSING");
        QCOMPARE(r.state, RecordState::Started);
        QCOMPARE(r.format, RecordFormat::Plain);
        // words no profile has, which still say someone is at work: unknown, and a live lock
        for (const char* v : {"{\"status\":\"RUNNING\"}", "{\"state\":\"working\"}", "BUSY", " held "}) {
            r = read("jobs:47", v);
            QCOMPARE(r.state, RecordState::Unknown);
            QVERIFY2(idem::mayBeLiveLock(r), v);
        }
        r = read("session:9", "opaque"); // a word that is no status is not shown as one
        QVERIFY(r.rawStatus.empty());
        QVERIFY(!idem::mayBeLiveLock(r));
        // at idem's key shape, or when the operator says so, they are hand-written records
        r = read("idempotency:{42}", "{\"status\":\"FAILED\"}");
        QCOMPARE(r.state, RecordState::Failed);
        QCOMPARE(r.format, RecordFormat::StatusJson);
        idem::DecodeOptions o;
        o.format = RecordFormat::StatusJson;
        r = read("jobs:42", "{\"status\":\"FAILED\"}", 30'000, o);
        QCOMPARE(r.state, RecordState::Failed);
        o.format = RecordFormat::Plain;
        r = read("jobs:44", "FAILED", 30'000, o);
        QCOMPARE(r.state, RecordState::Failed);
        QCOMPARE(r.format, RecordFormat::Plain);
    }
};

QTEST_GUILESS_MAIN(TestFormats)
#include "tst_formats.moc"
