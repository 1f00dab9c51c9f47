// What one client can take of idem-gateway: memory (pipelined requests whose answers it never
// reads), time (a request trickled in a byte at a time) and connections (--max-connections). Real
// sockets, the fixture's redis-server, an upstream started here; the memory test runs the binary
// (IDEM_GATEWAY) and reads its own VmRSS.
#include "gatewaytestsupport.h"

#include <QFile>

using namespace idem;
using namespace gwtest;
using namespace Qt::StringLiterals;

class TestGatewayLimits : public GatewaySuite {
    Q_OBJECT

private slots:
    void init() { up = std::make_unique<TestUpstream>(); }
    void cleanup() { up.reset(); }

    void clientThatNeverReadsHoldsLittle();
    void trickledRequestsAre408();
    void maxConnectionsHoldsTheRestBack();
};

namespace {
// A process's resident memory in KiB (0: unknown)
qint64 rssKiB(qint64 pid)
{
    QFile f(u"/proc/%1/status"_s.arg(pid));
    if (!f.open(QIODevice::ReadOnly))
        return 0;
    for (const QByteArray& line : f.readAll().split('\n'))
        if (line.startsWith("VmRSS:"))
            return line.mid(6).trimmed().split(' ').value(0).toLongLong();
    return 0;
}
} // namespace

// 3000 pipelined GETs of 100 kB answers (300 MB) from a client that reads none of them: the
// gateway hands over 8 at a time, none while 2 MiB of answers wait, stops reading while its pipeline
// is full, and TCP pushes back on the client. Another client is answered meanwhile. (With 64 at a
// time it grew by 14-16 MB here; with 8, by 3.4 MB.)
void TestGatewayLimits::clientThatNeverReadsHoldsLittle()
{
    QProcess p;
    startGatewayBinary(p, *up, {u"--url"_s, QString::fromStdString(idemtest::sharedRedisUrl()), u"--namespace"_s,
                                QString::fromStdString(idemtest::uniqueNamespace("gwlimits"))});
    const quint16 port = gatewayBinaryPort(p);
    QVERIFY(port != 0);
    QCOMPARE(call(port, request("GET", "/big/100000/warm")).status, 201);
    const qint64 before = rssKiB(p.processId());
    QVERIFY(before > 0);

    QTcpSocket sink;
    sink.setReadBufferSize(4096); // never read: Qt takes 4 KiB, then the kernel's buffers fill
    sink.connectToHost(QHostAddress::LocalHost, port);
    QVERIFY(sink.waitForConnected(5000));
    QByteArray burst;
    for (int i = 0; i < 3000; ++i)
        burst += "GET /big/100000/sink HTTP/1.1\r\nHost: h\r\n\r\n";
    sink.write(burst);
    QTest::qWait(4000);
    const int served = up->calls("/big/100000/sink");
    const qint64 grown = rssKiB(p.processId()) - before;
    QVERIFY2(served < 1000, qPrintable(u"%1 answers made for a client that reads none"_s.arg(served)));
    qInfo("%d answers made, the gateway grew by %lld KiB", served, grown);
#if defined(__SANITIZE_ADDRESS__)
    // AddressSanitizer keeps freed memory in quarantine (256 MiB): the answers counted above say it
    constexpr qint64 kBoundKiB = 512 * 1024;
#else
    constexpr qint64 kBoundKiB = 10 * 1024;
#endif
    QVERIFY2(grown < kBoundKiB, qPrintable(u"the gateway grew by %1 KiB"_s.arg(grown)));

    QElapsedTimer t;
    t.start();
    QCOMPARE(call(port, request("GET", "/other"), 3000).status, 201);
    QVERIFY(t.elapsed() < 3000);
    sink.abort();
    p.terminate();
    QVERIFY(p.waitForFinished(10000));
}

// Slowloris: a byte every 200 ms keeps the idle timer going, not the head's deadline (or the body's)
void TestGatewayLimits::trickledRequestsAre408()
{
    auto g = start([](gateway::GatewayOptions& o) {
        o.headerTimeout = Millis(1000);
        o.bodyTimeout = Millis(1000);
    });
    QVERIFY(g);
    const auto trickle = [&](const QByteArray& start, char byte) {
        auto c = std::make_unique<Client>(g->port());
        c->send(start);
        QElapsedTimer t;
        t.start();
        while (c->replies.empty() && !c->closed && t.elapsed() < 5000) {
            c->send(QByteArray(1, byte));
            QTest::qWait(200);
        }
        (void)QTest::qWaitFor([&] { return c->closed; }, 2000);
        return c;
    };
    const auto head = trickle("POST /t HTTP/1.1\r\nHost: h\r\nX-Slow: ", 'a');
    QCOMPARE(head->replies.size(), 1u);
    QCOMPARE(head->replies[0].status, 408);
    QVERIFY(head->closed);
    const auto body = trickle("POST /t HTTP/1.1\r\nHost: h\r\nIdempotency-Key: slow-1\r\nContent-Length: 1000\r\n\r\n", 'b');
    QCOMPARE(body->replies.size(), 1u);
    QCOMPARE(body->replies[0].status, 408);
    QVERIFY(body->closed);
    QCOMPARE(up->calls("/t"), 0);
    // one request after another on one connection, each in time, for longer than the deadline
    Client steady(g->port());
    for (int i = 0; i < 6; ++i) {
        steady.send(request("GET", "/steady"));
        QVERIFY(steady.wait(static_cast<std::size_t>(i + 1)));
        QTest::qWait(250);
    }
    QCOMPARE(steady.replies.back().status, 201);
}

// At --max-connections, a further client waits (in the listen queue) until one of them closes
void TestGatewayLimits::maxConnectionsHoldsTheRestBack()
{
    auto g = start([](gateway::GatewayOptions& o) { o.maxConnections = 3; });
    QVERIFY(g);
    std::vector<std::unique_ptr<Client>> open;
    for (int i = 0; i < 3; ++i) {
        open.push_back(std::make_unique<Client>(g->port()));
        open.back()->send(request("GET", "/mc"));
        QVERIFY(open.back()->wait(1));
    }
    Client fourth(g->port());
    fourth.send(request("GET", "/mc4"));
    QTest::qWait(1000);
    QVERIFY(fourth.replies.empty());
    QCOMPARE(up->calls("/mc4"), 0);
    open[1]->send(request("GET", "/mc")); // the open ones go on
    QVERIFY(open[1]->wait(2));
    open[0]->close();
    QVERIFY(fourth.wait(1, 5000));
    QCOMPARE(fourth.replies[0].status, 201);
}

QTEST_GUILESS_MAIN(TestGatewayLimits)
#include "tst_gatewaylimits.moc"
