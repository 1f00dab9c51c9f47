// Records the real libraries wrote (tests/data/peers, captured by tools/peers/capture.sh), loaded
// into a real Redis and read by the monitor as of the moment they were captured: each must be read
// as its own library means it - state, stale, TTL, stored response - and none that is valid may be
// called malformed. tst_peersactions.cpp has purges and force-fail on them, tst_peersqueues.cpp
// the data of job queues and task backends.
#include "idem/engine/store.h"
#include "idem/monitor/monitor.h"
#include "peerstestsupport.h"

#include <QRegularExpression>

#include <functional>

using namespace peerstest;
using idem::RecordFormat;
using idem::RecordState;

namespace {

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

class TestPeers : public PeersTest {
    Q_OBJECT

private slots:
    void initTestCase() { setUp(); requireCorpus(); }

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
};

QTEST_GUILESS_MAIN(TestPeers)
#include "tst_peers.moc"
