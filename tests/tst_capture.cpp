// Capture: event logs from a Redis Stream another client (redis-cli) wrote, read strictly
// read-only, and from JSON lines of another shape; then replayed. Each test that writes a stream
// does it on a private redis-server of its own.
#include "idem/errors.h"
#include "idem/lab/capture.h"
#include "idem/lab/replay.h"
#include "idem/redis/cluster.h"
#include "idem/redis/reply.h"
#include "testsupport.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <fstream>
#include <sstream>

using namespace Qt::StringLiterals;

namespace {
// Commands for redis-cli, one per line, as a user types them (its own quoting: "\xff" is a byte).
void redisCli(int port, const QByteArray& commands, const QStringList& auth = {})
{
    QProcess p;
    p.start(u"redis-cli"_s, QStringList{u"-p"_s, QString::number(port)} + auth);
    QVERIFY(p.waitForStarted());
    p.write(commands);
    p.closeWriteChannel();
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 0);
    QVERIFY2(!p.readAllStandardOutput().contains("ERR"), "redis-cli was refused");
}

// 250 good entries at known times, and five that are no event, interleaved.
QByteArray orders()
{
    QByteArray c;
    for (int i = 0; i < 250; ++i) {
        c += "XADD orders 1700000000" + QByteArray::number(100 + i) + "-0 id order-" + QByteArray::number(i) +
             " payload \"{\\\"amount\\\":" + QByteArray::number(i * 3) + "}\"\n";
        if (i == 10)
            c += "XADD orders 1700000000" + QByteArray::number(100 + i) + "-1 payload 7\n"; // no id
        if (i == 20)
            c += "XADD orders 1700000000" + QByteArray::number(100 + i) + "-1 id lonely\n"; // no payload
        if (i == 30) // a binary payload: kept, as base64
            c += "XADD orders 1700000000" + QByteArray::number(100 + i) + "-1 id bin-1 payload \"\\xff\\x00\\xfe\"\n";
        if (i == 40) // text that is not JSON: a JSON string
            c += "XADD orders 1700000000" + QByteArray::number(100 + i) + "-1 id text-1 payload \"hello there\"\n";
        if (i == 50) // an id that is not UTF-8
            c += "XADD orders 1700000000" + QByteArray::number(100 + i) + "-1 id \"\\xc3\\x28\" payload 1\n";
    }
    return c;
}

std::string dump(idem::Connection& c, const std::string& key)
{
    return idem::reply::str(c.checked({"DUMP", key}).get());
}
} // namespace

class TestCapture : public QObject {
    Q_OBJECT
private:
    std::unique_ptr<idem::LocalServer> server;

private slots:
    void initTestCase()
    {
        server = std::make_unique<idem::LocalServer>();
        redisCli(server->port(), orders());
        redisCli(server->port(), "SET not-a-stream x\n");
    }

    void pagesFieldsAndTimes()
    {
        idem::Connection c(server->connectionOptions());
        const long long xrangeBefore = idemtest::commandCalls(c, "xrange");
        idem::CaptureOptions o;
        o.stream = "orders";
        o.pageSize = 40;
        std::vector<idem::CaptureProblem> problems;
        int pages = 0;
        idem::CaptureCallbacks cb;
        cb.problem = [&](const idem::CaptureProblem& p) { problems.push_back(p); };
        cb.page = [&](const idem::CaptureResult&) { return ++pages, true; };
        const auto r = idem::captureStream(server->connectionOptions(), o, cb);
        QCOMPARE(r.read, std::size_t(255));
        QCOMPARE(r.events.size(), std::size_t(252)); // 250 orders, the binary one, the text one
        QCOMPARE(r.skipped, std::size_t(3));
        QCOMPARE(problems.size(), std::size_t(3));
        QCOMPARE(problems[0].where, std::string("1700000000110-1"));
        QVERIFY2(problems[0].why.find("no field \"id\"") != std::string::npos, problems[0].why.c_str());
        QCOMPARE(problems[1].where, std::string("1700000000120-1"));
        QVERIFY(problems[1].why.find("payload") != std::string::npos);
        QCOMPARE(problems[2].where, std::string("1700000000150-1"));
        QVERIFY(problems[2].why.find("UTF-8") != std::string::npos);
        // bounded pages: 255 entries in pages of 40 is 7 XRANGE calls, the last one short
        QCOMPARE(pages, 7);
        QCOMPARE(idemtest::commandCalls(c, "xrange") - xrangeBefore, 7LL);

        QCOMPARE(r.events[0].id, std::string("order-0"));
        QCOMPARE(r.events[0].payload, std::string(R"({"amount":0})"));
        QCOMPARE(r.events[0].atMs, std::int64_t(1700000000100));
        const auto find = [&](const std::string& id) {
            for (const auto& e : r.events)
                if (e.id == id)
                    return e;
            return idem::ReplayEvent{};
        };
        QCOMPARE(find("bin-1").payload, std::string(R"({"base64":"/wD+"})"));
        QCOMPARE(find("text-1").payload, std::string(R"("hello there")"));
        QCOMPARE(find("text-1").atMs, std::int64_t(1700000000140));

        // what it writes is what replay reads, event for event
        std::stringstream log;
        idem::writeEventLog(log, r.events);
        const auto back = idem::parseEventLog(log);
        QCOMPARE(back.size(), r.events.size());
        for (std::size_t i = 0; i < back.size(); ++i) {
            QCOMPARE(back[i].id, r.events[i].id);
            QCOMPARE(back[i].payload, r.events[i].payload);
            QCOMPARE(back[i].atMs, r.events[i].atMs);
        }
    }

    void rangesAndCount()
    {
        idem::CaptureOptions o;
        o.stream = "orders";
        o.from = "1700000000200";
        o.to = "1700000000209-0";
        o.pageSize = 3;
        auto r = idem::captureStream(server->connectionOptions(), o);
        QCOMPARE(r.events.size(), std::size_t(10));
        QCOMPARE(r.events.front().id, std::string("order-100"));
        QCOMPARE(r.events.back().id, std::string("order-109"));
        o.from = "-";
        o.to = "+";
        o.count = 5;
        r = idem::captureStream(server->connectionOptions(), o);
        QCOMPARE(r.read, std::size_t(5));
        QCOMPARE(r.events.back().id, std::string("order-4"));
    }

    // A payload is JSON as replay reads it back from a log (keys in order, numbers and escapes as
    // the library writes them), on one line; a JSON string holding bytes that are not UTF-8, and
    // text cut inside a string, are no JSON; an id that is overlong UTF-8 or a surrogate is refused.
    void payloadsAsWritten_data()
    {
        QTest::addColumn<QByteArray>("payload");
        QTest::addColumn<QByteArray>("expected");
        QTest::newRow("as replay reads it") << QByteArray("{\"s\":\"caf\\u00e9\",\"n\":1.50}")
                                            << QByteArray("{\"n\":1.5,\"s\":\"caf\xc3\xa9\"}");
        QTest::newRow("spaces") << QByteArray("{\"a\": [1, 2],\n \"b\" : \"x y\"}")
                                << QByteArray("{\"a\":[1,2],\"b\":\"x y\"}");
        QTest::newRow("scalar") << QByteArray("7") << QByteArray("7");
        QTest::newRow("bad utf-8 in a string") << QByteArray("\"\xff\"") << QByteArray("{\"base64\":\"Iv8i\"}");
        QTest::newRow("cut") << QByteArray("{\"a\":\"b") << QByteArray("\"{\\\"a\\\":\\\"b\"");
        QTest::newRow("utf-8 text") << QByteArray("caf\xc3\xa9") << QByteArray("\"caf\xc3\xa9\"");
    }
    void payloadsAsWritten()
    {
        QFETCH(QByteArray, payload);
        QFETCH(QByteArray, expected);
        idem::CaptureOptions o;
        idem::ReplayEvent ev;
        std::string why;
        QVERIFY(idem::eventFromEntry("5-0", {{"id", "x"}, {"payload", payload.toStdString()}}, o, ev, why));
        QCOMPARE(QByteArray::fromStdString(ev.payload), expected);
        for (const char* badId : {"\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe2\x82"})
            QVERIFY(!idem::eventFromEntry("5-0", {{"id", badId}, {"payload", "1"}}, o, ev, why));
        QVERIFY(idem::eventFromEntry("5-0", {{"id", "\xf0\x9f\x98\x80"}, {"payload", "1"}}, o, ev, why));
    }

    void refusesWhatIsNoStream()
    {
        idem::CaptureOptions o;
        o.stream = "missing";
        QVERIFY_THROWS_EXCEPTION(idem::UsageError, idem::captureStream(server->connectionOptions(), o));
        o.stream = "not-a-stream";
        QVERIFY_THROWS_EXCEPTION(idem::UsageError, idem::captureStream(server->connectionOptions(), o));
        o.stream = "orders";
        o.from = "yesterday";
        QVERIFY_THROWS_EXCEPTION(idem::UsageError, idem::captureStream(server->connectionOptions(), o));
    }

    // Nothing is written: the stream's serialization (entries, groups, last id) and the key count
    // are the same afterwards, and a user who may only read captures it all.
    void readOnlyOnTheSource()
    {
        idem::Connection c(server->connectionOptions());
        const std::string before = dump(c, "orders");
        const long long keys = idem::reply::integer(c.checked({"DBSIZE"}).get());
        c.checked({"ACL", "SETUSER", "cap-reader", "on", ">cap-pw", "~*", "resetchannels", "-@all", "+@read",
                   "+@connection", "+info"});
        auto ro = server->connectionOptions();
        ro.user = "cap-reader";
        ro.password = "cap-pw";
        // the user really cannot write (so a capture that tried would fail)
        idem::Connection roc(ro);
        QVERIFY(idem::reply::isError(roc.command({"XGROUP", "CREATE", "orders", "g", "$"}).get()));
        QVERIFY(idem::reply::isError(roc.command({"SET", "x", "1"}).get()));

        idem::CaptureOptions o;
        o.stream = "orders";
        o.pageSize = 17;
        const auto r = idem::captureStream(ro, o);
        QCOMPARE(r.events.size(), std::size_t(252));
        const auto streams = idem::listStreams(ro);
        QCOMPARE(streams.size(), std::size_t(1));
        QCOMPARE(streams[0].key, std::string("orders"));
        QCOMPARE(streams[0].length, std::int64_t(255));

        QCOMPARE(dump(c, "orders"), before);
        QCOMPARE(idem::reply::integer(c.checked({"DBSIZE"}).get()), keys);
        QCOMPARE(idem::reply::arraySize(c.checked({"XINFO", "GROUPS", "orders"}).get()), std::size_t(0));
    }

    void trimmedWhileRead()
    {
        idem::Connection c(server->connectionOptions());
        redisCli(server->port(), "DEL trimmed\n");
        QByteArray cmds;
        for (int i = 1; i <= 100; ++i)
            cmds += "XADD trimmed " + QByteArray::number(i) + "-0 id t" + QByteArray::number(i) + " payload 1\n";
        redisCli(server->port(), cmds);
        idem::CaptureOptions o;
        o.stream = "trimmed";
        o.pageSize = 10;
        idem::CaptureCallbacks cb;
        bool trimmed = false;
        cb.page = [&](const idem::CaptureResult&) {
            if (!trimmed) // another client trims the first half away while the capture reads
                c.checked({"XTRIM", "trimmed", "MINID", "51"});
            trimmed = true;
            return true;
        };
        const auto r = idem::captureStream(server->connectionOptions(), o, cb);
        // the first page, the pages read ahead before the trim (at most 3 more), then from 51 on:
        // in order, nothing twice, the rest whole
        QVERIFY2(r.events.size() >= 60 && r.events.size() <= 90, std::to_string(r.events.size()).c_str());
        const std::size_t kept = r.events.size() - 50;
        QCOMPARE(kept % 10, std::size_t(0));
        for (std::size_t i = 0; i < r.events.size(); ++i)
            QCOMPARE(r.events[i].id, "t" + std::to_string(i < kept ? i + 1 : 51 + (i - kept)));
        QCOMPARE(r.skipped, std::size_t(0));
    }

    void jsonLinesWithAMapping()
    {
        std::istringstream in(R"({"meta":{"key":"a-1"},"body":{"x":1},"ts":1700000000000}
not json

{"meta":{"key":42},"body":[1,2],"ts":"1700000000005"}
{"meta":{},"body":1,"ts":1}
{"meta":{"key":"late"},"body":1,"ts":-4}
{"meta":{"key":"nobody"},"ts":1}
)");
        idem::JsonlMapping m;
        m.idField = "meta.key";
        m.payloadField = "body";
        m.timeField = "ts";
        std::vector<idem::CaptureProblem> problems;
        idem::CaptureCallbacks cb;
        cb.problem = [&](const idem::CaptureProblem& p) { problems.push_back(p); };
        const auto r = idem::captureJsonl(in, m, cb);
        QCOMPARE(r.events.size(), std::size_t(2));
        QCOMPARE(r.events[0].id, std::string("a-1"));
        QCOMPARE(r.events[0].payload, std::string(R"({"x":1})"));
        QCOMPARE(r.events[0].atMs, std::int64_t(1700000000000));
        QCOMPARE(r.events[1].id, std::string("42"));
        QCOMPARE(r.events[1].atMs, std::int64_t(1700000000005));
        QCOMPARE(r.skipped, std::size_t(4));
        QCOMPARE(problems.size(), std::size_t(4));
        QCOMPARE(problems[0].where, std::string("line 2"));
        QCOMPARE(problems[1].where, std::string("line 5"));
        QCOMPARE(problems[2].where, std::string("line 6"));
        QCOMPARE(problems[3].where, std::string("line 7"));
    }

    // idemctl capture as a read-only user, then idemctl replay of what it wrote.
    void idemctlCaptureThenReplay()
    {
        QTemporaryDir tmp;
        const QString log = tmp.filePath(u"orders.jsonl"_s);
        const QString url = u"redis://cap-reader:cap-pw@127.0.0.1:%1/0"_s.arg(server->port());
        auto r = idemtest::runIdemctl({u"--url"_s, url, u"capture"_s, u"--stream"_s, u"orders"_s, u"--to"_s,
                                       u"1700000000159"_s, u"--page-size"_s, u"25"_s, u"--out"_s, log});
        QCOMPARE(r.exitCode, 1); // some entries were skipped: said, and by exit code
        QVERIFY2(r.err.contains("skipped 1700000000110-1: no field \"id\""), r.err.constData());
        QVERIFY2(r.err.contains("captured 62 event(s) from 65 entries of stream 'orders'; 3 skipped"),
                 r.err.constData());
        std::ifstream in(log.toStdString());
        QCOMPARE(idem::parseEventLog(in).size(), std::size_t(62));

        auto rp = idemtest::runIdemctl({u"replay"_s, log, u"--speed"_s, u"0"_s, u"--duplicates"_s, u"2"_s,
                                        u"--json"_s},
                                       60000);
        QCOMPARE(rp.exitCode, 0);
        QVERIFY2(rp.out.contains("\"executions\":62"), rp.out.constData());

        // JSON lines, to standard output
        const QString other = tmp.filePath(u"other.jsonl"_s);
        QFile f(other);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("{\"e\":{\"id\":\"x\"},\"d\":{\"v\":1},\"t\":5}\n[]\n");
        f.close();
        auto j = idemtest::runIdemctl({u"capture"_s, u"--from-jsonl"_s, other, u"--id-field"_s, u"e.id"_s,
                                       u"--payload-field"_s, u"d"_s, u"--time-field"_s, u"t"_s});
        QCOMPARE(j.exitCode, 1);
        QCOMPARE(j.out, QByteArray("{\"id\":\"x\",\"payload\":{\"v\":1},\"at_ms\":5}\n"));
        QVERIFY(j.err.contains("skipped line 2"));

        // bad usage: one line, exit 64
        auto bad = idemtest::runIdemctl({u"--url"_s, url, u"capture"_s, u"--stream"_s, u"orders"_s,
                                         u"--from-jsonl"_s, other});
        QCOMPARE(bad.exitCode, 64);
        QCOMPARE(bad.err.count('\n'), 1);
        auto missing = idemtest::runIdemctl({u"--url"_s, url, u"capture"_s, u"--stream"_s, u"nope"_s});
        QCOMPARE(missing.exitCode, 64);
        QVERIFY(missing.err.contains("no key 'nope'"));
    }

    // On a Redis Cluster the stream lives on one node; capture reads it there whichever node it
    // was pointed at, and the picker lists streams of every primary.
    void onACluster()
    {
        idem::LocalCluster cluster(3);
        const std::string keys[] = {"cap-a", "cap-b", "cap-c", "cap-d"};
        for (const auto& key : keys) {
            idem::Connection c(cluster.node(0));
            // written on its own node
            int owner = -1;
            for (int n = 0; n < 3 && owner < 0; ++n) {
                idem::Connection node(cluster.node(n));
                auto r = node.command({"XADD", key, "*", "id", key + "-1", "payload", "{}"});
                if (!idem::reply::isError(r.get()))
                    owner = n;
            }
            QVERIFY(owner >= 0);
        }
        for (int n = 0; n < 3; ++n) {
            idem::CaptureOptions o;
            o.stream = "cap-c";
            const auto r = idem::captureStream(cluster.node(n), o);
            QCOMPARE(r.events.size(), std::size_t(1));
            QCOMPARE(r.events[0].id, std::string("cap-c-1"));
        }
        const auto streams = idem::listStreams(cluster.node(1));
        QCOMPARE(streams.size(), std::size_t(4));
        for (const auto& s : streams)
            QCOMPARE(s.length, std::int64_t(1));
    }
};

QTEST_GUILESS_MAIN(TestCapture)
#include "tst_capture.moc"
