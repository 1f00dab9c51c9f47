// Records the real libraries wrote (tests/data/peers, captured by tools/peers/capture.sh), loaded
// into a real Redis and read by the monitor as of the moment they were captured: each must be read
// as its own library means it - state, stale, TTL, stored response - and none that is valid may be
// called malformed. Bulk purges by state never take what idem does not understand.
#include "idem/engine/store.h"
#include "idem/monitor/monitor.h"
#include "testsupport.h"

#include <QDateTime>
#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QtTest>

#include <functional>
#include <map>

using idem::RecordFormat;
using idem::RecordState;

namespace {

const QString kCorpus = QStringLiteral(IDEM_PEERS_DIR);

struct Capture {
    QString profile;
    QString caseName;
    std::string key, type;
    std::string value;                    // strings
    std::vector<std::string> members;     // sets
    std::vector<std::pair<std::string, std::string>> hash;
    qint64 pttlMs = -1;
    qint64 capturedAtMs = 0;
    QString status, nextCall, response, client;
};

std::string bytes(const QJsonValue& v) { return v.toString().toStdString(); }
std::string base64(const QJsonValue& v) { return QByteArray::fromBase64(v.toString().toLatin1()).toStdString(); }

std::string expand(std::string text, const QJsonObject& elided)
{
    if (elided.isEmpty())
        return text;
    const std::string marker = bytes(elided.value(QStringLiteral("marker")));
    const std::string fill(static_cast<std::size_t>(elided.value(QStringLiteral("count")).toInteger()),
                           bytes(elided.value(QStringLiteral("char"))).at(0));
    for (auto p = text.find(marker); p != std::string::npos; p = text.find(marker, p + fill.size()))
        text.replace(p, marker.size(), fill);
    return text;
}

struct Profile {
    QString name;
    QJsonObject settings;
    std::vector<Capture> records;
};

Profile load(const QString& file)
{
    QFile f(file);
    if (!f.open(QIODevice::ReadOnly))
        qFatal("cannot read %s", qPrintable(file));
    const QJsonObject doc = QJsonDocument::fromJson(f.readAll()).object();
    Profile p;
    p.name = doc.value(QStringLiteral("profile")).toString();
    p.settings = doc.value(QStringLiteral("settings")).toObject();
    for (const QJsonValue& v : doc.value(QStringLiteral("records")).toArray()) {
        const QJsonObject o = v.toObject();
        Capture c;
        c.profile = p.name;
        c.caseName = o.value(QStringLiteral("case")).toString();
        c.key = o.contains(QStringLiteral("key_base64")) ? base64(o.value(QStringLiteral("key_base64")))
                                                          : bytes(o.value(QStringLiteral("key")));
        c.type = bytes(o.value(QStringLiteral("type")));
        const QJsonObject elided = o.value(QStringLiteral("elided")).toObject();
        if (c.type == "string") {
            c.value = o.contains(QStringLiteral("value_base64")) ? base64(o.value(QStringLiteral("value_base64")))
                                                                  : expand(bytes(o.value(QStringLiteral("value"))), elided);
        } else if (c.type == "set") {
            const bool b64 = o.contains(QStringLiteral("value_base64"));
            for (const QJsonValue& m : o.value(b64 ? QStringLiteral("value_base64") : QStringLiteral("value")).toArray())
                c.members.push_back(b64 ? base64(m) : bytes(m));
        } else if (c.type == "hash") {
            const QJsonObject h = o.value(QStringLiteral("value")).toObject();
            for (auto it = h.begin(); it != h.end(); ++it)
                c.hash.emplace_back(it.key().toStdString(), bytes(it.value()));
        }
        c.pttlMs = o.value(QStringLiteral("pttl_ms")).toInteger();
        c.capturedAtMs = o.value(QStringLiteral("captured_at_ms")).toInteger();
        const QJsonObject lib = o.value(QStringLiteral("library")).toObject();
        c.status = lib.value(QStringLiteral("status")).toString();
        c.nextCall = lib.value(QStringLiteral("next_call")).toString();
        c.response = QString::fromStdString(expand(bytes(lib.value(QStringLiteral("response"))), elided));
        c.client = o.value(QStringLiteral("redis_client")).toString();
        p.records.push_back(std::move(c));
    }
    return p;
}

std::vector<Profile> corpus()
{
    std::vector<Profile> all;
    for (const QString& f : QDir(kCorpus).entryList({QStringLiteral("*.json")}, QDir::Files, QDir::Name))
        all.push_back(load(kCorpus + u'/' + f));
    return all;
}

void put(idem::Connection& c, const Capture& r)
{
    c.checked({"DEL", r.key});
    if (r.type == "string") {
        c.checked({"SET", r.key, r.value});
    } else if (r.type == "set") {
        for (const auto& m : r.members)
            c.checked({"SADD", r.key, m});
    } else if (r.type == "hash") {
        for (const auto& [f, v] : r.hash)
            c.checked({"HSET", r.key, f, v});
    }
    if (r.pttlMs > 0)
        c.checked({"PEXPIRE", r.key, std::to_string(r.pttlMs)});
}

// The library's TTL setting, when the profile has one idem cannot read from the record.
qint64 writerTtlMs(const Profile& p)
{
    if (p.settings.contains(QStringLiteral("cacheTTLMS")))
        return p.settings.value(QStringLiteral("cacheTTLMS")).toInteger();
    if (p.settings.contains(QStringLiteral("adapter_ttl_s")))
        return p.settings.value(QStringLiteral("adapter_ttl_s")).toInteger() * 1000;
    return 0;
}

std::optional<RecordFormat> expectedFormat(const QString& profile)
{
    static const QMap<QString, RecordFormat> formats = {
        {QStringLiteral("powertools"), RecordFormat::Powertools},
        {QStringLiteral("powertools-python"), RecordFormat::PowertoolsPython},
        {QStringLiteral("node-idempotency"), RecordFormat::NodeIdempotency},
        {QStringLiteral("express-idempotency"), RecordFormat::ExpressIdempotency},
        {QStringLiteral("idempotent-request"), RecordFormat::IdempotentRequest},
        {QStringLiteral("camel-redis"), RecordFormat::Camel}};
    if (!formats.contains(profile))
        return std::nullopt;
    return formats.value(profile);
}

// The library's replay (HTTP status and body, a JSON value, or a whole stored response) appears in
// what idem shows as the stored response: as it is, as JSON equal to it, or nested inside it.
bool sameResponse(const QString& library, const std::optional<std::string>& idem)
{
    QString body = library;
    static const QRegularExpression http(QStringLiteral("^HTTP \\d{3} "));
    body.remove(http);
    body.remove(QStringLiteral(" (idempotent-replayed: true)"));
    if (body == u"None"_qs || body == u"undefined"_qs) // the handler returned nothing
        return !idem || *idem == "null";
    if (!idem)
        return false;
    if (body.toStdString() == *idem)
        return true;
    const auto parse = [](const QByteArray& text) {
        // wrapped, so that scalars parse too
        return QJsonDocument::fromJson("[" + text + "]").array().at(0);
    };
    const QJsonValue want = parse(body.toUtf8());
    const QJsonValue got = parse(QByteArray::fromStdString(*idem));
    if (want.isUndefined())
        return false;
    // `needle` is `haystack` or nested in it (a JSON body kept as a string counts as its JSON)
    std::function<bool(const QJsonValue&, const QJsonValue&)> contains = [&](const QJsonValue& haystack,
                                                                             const QJsonValue& needle) {
        if (haystack == needle)
            return true;
        if (haystack.isObject()) {
            const QJsonObject o = haystack.toObject();
            for (auto it = o.begin(); it != o.end(); ++it)
                if (contains(it.value(), needle))
                    return true;
        }
        if (haystack.isString()) // express-idempotency, Powertools for Python: JSON inside a string
            return parse(haystack.toString().toUtf8()) == needle;
        return false;
    };
    // what idem shows holds the replay (an error object around the body), or the replay holds
    // what idem shows (node-idempotency's whole stored response around its body)
    return contains(got, want) || (got.isObject() && contains(want, got));
}

QString describe(const Capture& c, const idem::Record& r)
{
    return u"%1 / %2: idem read %3 %4%5 (%6); the library says %7, next call %8"_qs.arg(
        c.profile, c.caseName, QString::fromUtf8(idem::nameOf(r.format).data()),
        QString::fromUtf8(idem::nameOf(r.state).data()), r.stale ? u" stale"_qs : QString(),
        QString::fromStdString(r.reason.empty() ? r.staleWhy : r.reason), c.status, c.nextCall);
}

} // namespace

class TestPeers : public QObject {
    Q_OBJECT

    std::unique_ptr<idem::LocalServer> server; // a server of its own: the keys keep their libraries' names
    std::unique_ptr<idem::Connection> conn;

private slots:
    void initTestCase()
    {
        server = std::make_unique<idem::LocalServer>();
        conn = std::make_unique<idem::Connection>(server->connectionOptions());
        QVERIFY2(corpus().size() >= 6, "tests/data/peers: the corpus is missing");
    }

    // every captured record, as of the moment it was captured
    void readAsTheLibraryMeansIt_data()
    {
        QTest::addColumn<int>("profile");
        QTest::addColumn<int>("index");
        const auto all = corpus();
        for (std::size_t p = 0; p < all.size(); ++p)
            for (std::size_t i = 0; i < all[p].records.size(); ++i)
                QTest::newRow(qPrintable(all[p].name + u": "_qs + all[p].records[i].caseName))
                    << static_cast<int>(p) << static_cast<int>(i);
    }
    void readAsTheLibraryMeansIt()
    {
        QFETCH(int, profile);
        QFETCH(int, index);
        const auto all = corpus();
        const Profile& p = all[static_cast<std::size_t>(profile)];
        const Capture& c = p.records[static_cast<std::size_t>(index)];
        conn->checked({"FLUSHALL"});
        for (const Capture& other : p.records) // its neighbours too (a lock beside its record)
            put(*conn, other);
        put(*conn, c);
        idem::MonitorOptions mo;
        mo.pattern = "*";
        mo.asOfMs = c.capturedAtMs;
        mo.writerTtlMs = writerTtlMs(p);
        // express-idempotency keys are the raw Idempotency-Key, no shape of the library's: its
        // records are read by their value alone, where a lock is a lock and any other reading is
        // unknown (an API log looks the same); the operator who names the library reads them all
        if (p.name == u"express-idempotency"_qs) {
            idem::Monitor byValue(*conn, mo);
            const auto guessed = byValue.classify({c.key});
            QCOMPARE(guessed.size(), std::size_t(1));
            QVERIFY(guessed.front().state == RecordState::Started || guessed.front().state == RecordState::Unknown);
            QVERIFY(!guessed.front().stale);
            mo.format = RecordFormat::ExpressIdempotency;
        }
        idem::Monitor m(*conn, mo);
        const auto got = m.classify({c.key});
        QCOMPARE(got.size(), std::size_t(1));
        const idem::Record& r = got.front();
        const QString why = describe(c, r);

        // the TTL as captured (read a moment later), or none
        if (c.pttlMs < 0)
            QCOMPARE(r.ttlMs, std::int64_t(-1));
        else
            QVERIFY2(r.ttlMs > 0 && r.ttlMs <= c.pttlMs, qPrintable(why));
        // the library that wrote it, except a set (any name, any writer: foreign to every profile)
        if (c.type != "set")
            QVERIFY2(r.format == expectedFormat(p.name), qPrintable(why));
        // a valid record of a known library is never malformed nor unknown
        QVERIFY2(r.state != RecordState::Malformed && r.state != RecordState::Unknown, qPrintable(why));

        if (c.nextCall == u"not_a_record"_qs) {
            QVERIFY2(r.state == RecordState::Foreign, qPrintable(why));
        } else if (c.nextCall == u"blocked"_qs) {
            // another call is refused: in progress, and not stale (its lease, or window, is live)
            QVERIFY2(r.state == RecordState::Started && !r.stale, qPrintable(why));
        } else if (c.nextCall == u"replay"_qs) {
            QVERIFY2(r.state == RecordState::Completed || (r.state == RecordState::Failed && r.terminal),
                     qPrintable(why));
            // what the inspector shows (the monitor never reads a large response whole)
            idem::ConnectionPool pool(server->connectionOptions(), 1);
            idem::Store store(pool);
            idem::DecodeOptions o = m.decodeOptions(c.capturedAtMs);
            const auto inspected = store.inspectKey(c.key, o);
            QVERIFY(inspected);
            QCOMPARE(inspected->state, r.state);
            QVERIFY2(sameResponse(c.response, inspected->response),
                     qPrintable(why + u"; replayed "_qs + c.response.left(200)));
            if (r.partial)
                QVERIFY(!r.response); // a 1 MB response: the scan read its first and last bytes only
        } else if (c.nextCall == u"runs"_qs) {
            if (c.client.contains(u"glide"_qs)) {
                // Powertools on valkey-glide: the client drops SET's NX and EX, so every call runs
                // whatever the record says; the record itself is live (and has no TTL, flagged)
                QVERIFY2(r.state == RecordState::Started || r.state == RecordState::Completed, qPrintable(why));
                QCOMPARE(r.ttlMs, std::int64_t(-1));
            } else if (c.status == u"EXPIRED"_qs) {
                QVERIFY2(r.state == RecordState::Expired, qPrintable(why));
            } else if (c.status == u"INPROGRESS"_qs && c.value.find("in_progress_expiration") == std::string::npos) {
                // Powertools without a Lambda context: the version captured took it over (its bug);
                // later versions keep it locked until its expiration, and the bytes are the same:
                // read as those do, a live lock no bulk purge takes
                QVERIFY2(r.state == RecordState::Started && !r.stale && r.blocked, qPrintable(why));
            } else {
                QVERIFY2(r.state == RecordState::Started && r.stale, qPrintable(why)); // taken over
            }
        } else if (c.nextCall == u"mismatch"_qs) {
            // another payload is refused: the record stands, whatever its state
            QVERIFY2(r.state == RecordState::Started || r.state == RecordState::Completed, qPrintable(why));
        } else {
            QFAIL(qPrintable(u"unknown next_call "_qs + c.nextCall));
        }
    }

    // The whole corpus at once, scanned (SCAN, the first round trip's GETRANGE, the second's tail and
    // companion keys): no valid record is malformed, and large values are never read whole.
    void scanTheWholeCorpus()
    {
        conn->checked({"FLUSHALL"});
        std::size_t keys = 0;
        for (const Profile& p : corpus())
            for (const Capture& c : p.records) {
                put(*conn, c);
                ++keys;
            }
        idem::MonitorOptions mo;
        mo.pattern = "*";
        idem::Monitor m(*conn, mo);
        std::size_t seen = 0, partial = 0;
        std::string cursor = "0";
        do {
            const auto page = m.scanPage(cursor);
            for (const auto& r : page.records) {
                ++seen;
                // (express-idempotency's completed records, read by their value alone: unknown)
                const bool byValue = r.reason.find("express-idempotency's COMPLETED record by its value alone") !=
                                     std::string::npos;
                QVERIFY2(r.state != RecordState::Malformed && (r.state != RecordState::Unknown || byValue),
                         qPrintable(QString::fromStdString(r.key + ": " + r.reason)));
                partial += r.partial ? 1 : 0;
            }
            cursor = page.cursor;
        } while (cursor != "0");
        QVERIFY(seen > 0 && seen <= keys); // records probed twice share a key
        QVERIFY(partial >= 4);             // the 1 MB responses: classified from their first and last bytes
    }

    // A Powertools lock written without a Lambda context (no in_progress_expiration) that has run
    // for an hour: versions since their fix keep it locked until its expiration, and its bytes
    // are those an older version writes. A bulk purge of stale locks leaves it; only --live takes it.
    void contextlessPowertoolsLockIsNeverPurgedAsStale()
    {
        conn->checked({"FLUSHALL"});
        const std::string key = "orders#HXoPuS989n9jdP6e7H2ySg==";
        const std::int64_t expiration = QDateTime::currentSecsSinceEpoch() + 3600;
        conn->checked({"SET", key, "{\"status\":\"INPROGRESS\",\"expiration\":" + std::to_string(expiration) + "}",
                       "EX", "3600"});
        const QStringList url = {QStringLiteral("--url"), QString::fromStdString(server->url())};
        const auto listed = idemtest::runIdemctl(url + QStringList{QStringLiteral("list"), QStringLiteral("--pattern"),
                                                                   QStringLiteral("orders#*"), QStringLiteral("--json")});
        QCOMPARE(listed.exitCode, 0);
        const QJsonObject o = QJsonDocument::fromJson(listed.out.trimmed()).object();
        QCOMPARE(o.value(u"state"_qs).toString(), u"STARTED"_qs);
        QCOMPARE(o.value(u"stale"_qs).toBool(), false);
        QCOMPARE(o.value(u"blocked"_qs).toBool(), true);
        for (const char* state : {"stale", "started", "blocked"}) {
            const auto kept = idemtest::runIdemctl(url + QStringList{QStringLiteral("purge"), QStringLiteral("--pattern"),
                                                                     QStringLiteral("orders#*"), QStringLiteral("--state"),
                                                                     QString::fromLatin1(state), QStringLiteral("--yes")});
            QCOMPARE(kept.exitCode, 0);
            QVERIFY2(idem::reply::integer(conn->checked({"EXISTS", key}).get()) == 1, state);
        }
        const auto taken = idemtest::runIdemctl(url + QStringList{QStringLiteral("purge"), QStringLiteral("--pattern"),
                                                                  QStringLiteral("orders#*"), QStringLiteral("--state"),
                                                                  QStringLiteral("started"), QStringLiteral("--live"),
                                                                  QStringLiteral("--yes")});
        QCOMPARE(taken.exitCode, 0);
        QCOMPARE(idem::reply::integer(conn->checked({"EXISTS", key}).get()), std::int64_t(0));
    }

    // Bulk purges by state never take a key idem does not understand: malformed, foreign and
    // unknown keys need a pattern too, and a purge of every state a bulk action may take by itself
    // leaves them all where they were.
    void bulkPurgeByStateLeavesWhatIsNotARecord()
    {
        conn->checked({"FLUSHALL"});
        for (const Profile& p : corpus())
            for (const Capture& c : p.records)
                put(*conn, c);
        conn->checked({"SET", "cache:user:7", "{\"name\":\"ada\"}"});  // unknown: a cache entry
        conn->checked({"SET", "session:x", "opaque"});                 // unknown
        conn->checked({"SET", "idem-peers-capture#AAAAAAAAAAAAAAAAAAAAAA==", "{\"status\":"}); // Powertools', broken
        const QStringList url = {QStringLiteral("--url"), QString::fromStdString(server->url())};

        idem::MonitorOptions mo;
        mo.pattern = "*";
        const auto snapshot = [&] {
            idem::Monitor m(*conn, mo);
            std::map<std::string, idem::Record> all;
            std::string cursor = "0";
            do {
                auto page = m.scanPage(cursor);
                for (auto& r : page.records)
                    all.emplace(r.key, std::move(r));
                cursor = page.cursor;
            } while (cursor != "0");
            return all;
        };
        const auto before = snapshot();
        std::vector<std::string> notRecords;
        for (const auto& [key, r] : before)
            if (idem::notARecord(r.state))
                notRecords.push_back(key);
        QVERIFY(notRecords.size() >= 8); // mutexes, sets, a leftover lock, a broken record, unknown keys
        // (a captured mutex lives 10 s: long enough to be gone by itself on a slow run, which is
        // not what this test is about)
        for (const std::string& key : notRecords)
            conn->checked({"PEXPIRE", key, "600000", "GT"});

        for (const char* state : {"malformed", "foreign", "unknown", "no-ttl"}) {
            const auto refused = idemtest::runIdemctl(url + QStringList{QStringLiteral("purge"), QStringLiteral("--state"),
                                                                        QString::fromLatin1(state), QStringLiteral("--yes")});
            QCOMPARE(refused.exitCode, 64);
            QVERIFY2(refused.err.contains("--pattern"), refused.err.constData());
        }
        for (const char* state : {"started", "stale", "blocked", "completed", "failed", "expired"}) {
            const auto done = idemtest::runIdemctl(url + QStringList{QStringLiteral("purge"), QStringLiteral("--pattern"),
                                                                     QStringLiteral("*"), QStringLiteral("--state"),
                                                                     QString::fromLatin1(state), QStringLiteral("--yes")});
            QCOMPARE(done.exitCode, 0);
        }
        for (const std::string& key : notRecords)
            QVERIFY2(idem::reply::integer(conn->checked({"EXISTS", key}).get()) == 1, key.c_str());
        // nor by a pattern alone, which may cover another library's live lock that idem cannot
        // read: Powertools with its attributes renamed (statusAttr: 'state', ...), idempotent-request
        // under another namespace, a lock whose stored request nests deeper than idem reads
        const std::string renamed = "orders-fn#TziDXObz+FJudr9h8vQMYg==";
        conn->checked({"SET", renamed,
                       "{\"state\":\"INPROGRESS\",\"expires_at\":9999999999,\"lock_until\":" +
                           std::to_string(QDateTime::currentMSecsSinceEpoch() + 600'000) + "}",
                       "EX", "600"});
        conn->checked({"SET", "payments_idem:lock:k1", std::to_string(QDateTime::currentSecsSinceEpoch()) + ".123456",
                       "EX", "600"});
        notRecords.clear(); // (the purges above took records some of them stood beside: read again)
        for (const auto& [key, r] : snapshot())
            if (idem::notARecord(r.state))
                notRecords.push_back(key);
        QCOMPARE(snapshot().at(renamed).state, idem::RecordState::Started); // read as a lock (its deadline unknown)
        QVERIFY(std::find(notRecords.begin(), notRecords.end(), "payments_idem:lock:k1") != notRecords.end());
        const auto byPattern = idemtest::runIdemctl(url + QStringList{QStringLiteral("purge"), QStringLiteral("--pattern"),
                                                                      QStringLiteral("*"), QStringLiteral("--yes")});
        QCOMPARE(byPattern.exitCode, 0);
        QVERIFY2(byPattern.out.contains("not understood"), byPattern.out.constData());
        QVERIFY2(idem::reply::integer(conn->checked({"EXISTS", renamed}).get()) == 1, byPattern.out.constData());
        for (const std::string& key : notRecords)
            QVERIFY2(idem::reply::integer(conn->checked({"EXISTS", key}).get()) == 1, (key + ": " + byPattern.out.toStdString()).c_str());
        // named by a pattern, they go: the operator said which keys
        const auto named = idemtest::runIdemctl(url + QStringList{QStringLiteral("purge"), QStringLiteral("--state"),
                                                                  QStringLiteral("unknown"), QStringLiteral("--pattern"),
                                                                  QStringLiteral("session:*"), QStringLiteral("--yes")});
        QCOMPARE(named.exitCode, 0);
        QCOMPARE(idem::reply::integer(conn->checked({"EXISTS", "session:x"}).get()), std::int64_t(0));
        QCOMPARE(idem::reply::integer(conn->checked({"EXISTS", "cache:user:7"}).get()), std::int64_t(1));
    }

    // A bulk purge never deletes a lock whose owner may still run: not by state (kept, and said,
    // unless --live), not as "malformed" under another library's --format, not as "unknown" when
    // only the head and tail of a large value were read.
    void bulkPurgeKeepsLiveLocks()
    {
        conn->checked({"FLUSHALL"});
        const std::string pt = "orders-fn#HXoPuS989n9jdP6e7H2ySg==";
        conn->checked({"SET", pt,
                       "{\"status\":\"INPROGRESS\",\"expiration\":9999999999,\"in_progress_expiration\":" +
                           std::to_string(QDateTime::currentMSecsSinceEpoch() + 600'000) + "}",
                       "EX", "600"});
        const std::string node = "node-idempotency:POST:/orders:k1";
        conn->checked({"SET", node, "{\"status\":\"IN_PROGRESS\"}", "EX", "600"});
        const std::string big = "94f477df3a6ae6b1f4d0c1a61e6b7bb6"; // express-idempotency: a large request in flight
        conn->checked({"SET", big, "{\"request\":{\"body\":\"" + std::string(40'000, 'x') + "\"}}", "EX", "600"});
        conn->checked({"RPUSH", "queue:jobs", "a", "b"});
        const QStringList url = {QStringLiteral("--url"), QString::fromStdString(server->url())};
        const auto exists = [&](const std::string& k) { return idem::reply::integer(conn->checked({"EXISTS", k}).get()) == 1; };
        const auto purge = [&](QStringList args) {
            return idemtest::runIdemctl(url + args + QStringList{QStringLiteral("--pattern"), QStringLiteral("*"),
                                                                 QStringLiteral("--yes")});
        };

        auto forced = idemtest::runIdemctl(url + QStringList{QStringLiteral("--format"), QStringLiteral("node-idempotency"),
                                                             QStringLiteral("purge"), QStringLiteral("--state"),
                                                             QStringLiteral("malformed"), QStringLiteral("--pattern"),
                                                             QStringLiteral("*"), QStringLiteral("--yes")});
        QCOMPARE(forced.exitCode, 0);
        for (const std::string& k : {pt, node, big, std::string("queue:jobs")})
            QVERIFY2(exists(k), (k + ": " + forced.out.toStdString()).c_str());

        auto unknown = purge({QStringLiteral("purge"), QStringLiteral("--state"), QStringLiteral("unknown")});
        QCOMPARE(unknown.exitCode, 0);
        QVERIFY(exists(big));
        QVERIFY2(unknown.out.contains(QByteArray::fromStdString("keep " + big)) && unknown.out.contains("read in part") &&
                     unknown.out.contains("kept 1 read in part"),
                 unknown.out.constData());

        // --json: one object a key, what would happen to it and why
        const auto told = idemtest::runIdemctl(url + QStringList{QStringLiteral("purge"), QStringLiteral("--state"),
                                                                 QStringLiteral("started"), QStringLiteral("--pattern"),
                                                                 QStringLiteral("*"), QStringLiteral("--json")});
        QCOMPARE(told.exitCode, 0);
        int keeps = 0;
        for (const QByteArray& line : told.out.trimmed().split('\n')) {
            const QJsonObject o = QJsonDocument::fromJson(line).object();
            QVERIFY2(!o.isEmpty(), line.constData());
            if (o.value(u"action"_qs).toString() == u"keep"_qs) {
                ++keeps;
                QVERIFY(o.value(u"why"_qs).toString().contains(u"live"_qs));
                QCOMPARE(o.value(u"state"_qs).toString(), u"STARTED"_qs);
            }
        }
        QCOMPARE(keeps, 2);

        auto started = purge({QStringLiteral("purge"), QStringLiteral("--state"), QStringLiteral("started")});
        QCOMPARE(started.exitCode, 0);
        QVERIFY2(started.out.contains("kept 2 live lock(s)"), started.out.constData()); // pt and node
        QVERIFY2(started.out.contains(QByteArray::fromStdString("keep " + pt)), started.out.constData());
        QVERIFY(exists(pt) && exists(node));

        auto live = purge({QStringLiteral("purge"), QStringLiteral("--state"), QStringLiteral("started"),
                           QStringLiteral("--live")});
        QCOMPARE(live.exitCode, 0);
        QVERIFY2(!exists(pt) && !exists(node), live.out.constData());
        QVERIFY(exists("queue:jobs"));
        QVERIFY(exists(big)); // read in part as unknown: not a started record even with --live
    }

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
        const std::vector<std::string> unknown = {"cache:user:7", "queue:report", "nightly:work", "rq:cache:1"};
        for (const std::string& key : unknown)
            cmd({"SET", key, "{\"name\":\"ada\"}"});
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

    // Another library's record is released the way that library does on failure (deleted if
    // unchanged) and never written into; a terminal failure, which it cannot keep, is refused.
    void forceFailAndPurgeOfAnotherLibrarysRecord()
    {
        conn->checked({"FLUSHALL"});
        const std::string key = "orders-fn#HXoPuS989n9jdP6e7H2ySg==";
        const std::string live = "{\"status\":\"INPROGRESS\",\"expiration\":9999999999,\"in_progress_expiration\":" +
                                 std::to_string(QDateTime::currentMSecsSinceEpoch() + 600'000) + "}";
        conn->checked({"SET", key, live, "EX", "600"});
        const QStringList url = {QStringLiteral("--url"), QString::fromStdString(server->url())};
        const QString k = QString::fromStdString(key);
        auto inspect = idemtest::runIdemctl(url + QStringList{QStringLiteral("inspect"), QStringLiteral("--key"), k,
                                                              QStringLiteral("--json")});
        QCOMPARE(inspect.exitCode, 0);
        const auto j = QJsonDocument::fromJson(inspect.out).object();
        QCOMPARE(j.value(u"format"_qs).toString(), u"powertools"_qs);
        QCOMPARE(j.value(u"state"_qs).toString(), u"STARTED"_qs);
        QCOMPARE(j.value(u"stale"_qs).toBool(), false);

        auto terminal = idemtest::runIdemctl(url + QStringList{QStringLiteral("force-fail"), QStringLiteral("--key"), k,
                                                               QStringLiteral("--terminal")});
        QCOMPARE(terminal.exitCode, 1);
        QVERIFY2(terminal.err.contains("keeps no failed state"), terminal.err.constData());
        QCOMPARE(idem::reply::str(conn->checked({"GET", key}).get()), live); // not written into

        // its owner cannot hear of a release: a live lock is released only when told
        auto kept = idemtest::runIdemctl(url + QStringList{QStringLiteral("force-fail"), QStringLiteral("--key"), k});
        QCOMPARE(kept.exitCode, 1);
        QVERIFY2(kept.err.contains("is a live lock") && kept.err.contains("--live"), kept.err.constData());
        QCOMPARE(idem::reply::str(conn->checked({"GET", key}).get()), live);
        auto released = idemtest::runIdemctl(
            url + QStringList{QStringLiteral("force-fail"), QStringLiteral("--key"), k, QStringLiteral("--live")});
        QCOMPARE(released.exitCode, 0);
        QVERIFY2(released.out.contains("released"), released.out.constData());
        QCOMPARE(idem::reply::integer(conn->checked({"EXISTS", key}).get()), std::int64_t(0));

        // purge by key: only if unchanged since read, and only what is there
        // a live lock: refused in one line unless --live
        conn->checked({"SET", key, live, "EX", "600"});
        const auto refused = idemtest::runIdemctl(url + QStringList{QStringLiteral("purge"), QStringLiteral("--key"), k});
        QCOMPARE(refused.exitCode, 1);
        QVERIFY2(refused.err.contains("is a live lock") && refused.err.contains("--live") &&
                     refused.err.count('\n') == 1,
                 refused.err.constData());
        QCOMPARE(idem::reply::str(conn->checked({"GET", key}).get()), live);
        const QStringList purgeLive = {QStringLiteral("purge"), QStringLiteral("--key"), k, QStringLiteral("--live")};
        QCOMPARE(idemtest::runIdemctl(url + purgeLive).exitCode, 0);
        QCOMPARE(idemtest::runIdemctl(url + purgeLive).exitCode, 66);
    }
};

QTEST_GUILESS_MAIN(TestPeers)
#include "tst_peers.moc"
