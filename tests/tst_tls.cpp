// TLS on real redis-servers with certificates the test makes: the state machine, idemctl and
// keyspace notifications over rediss://; every error retrying cannot fix said in one line with the
// setting to change; timeouts, interrupt, fail-closed and reconnect exactly as on plaintext.
#include "idem/engine/executor.h"
#include "idem/errors.h"
#include "idem/monitor/keyspacelistener.h"
#include "idem/monitor/scanner.h"
#include "testsupport.h"

#include <QtTest>

#include <atomic>
#include <csignal>
#include <thread>

using idem::OutcomeKind;

namespace {

// Client sockets in ESTABLISHED to 127.0.0.1:port, from /proc/net/tcp
int establishedTo(int port)
{
    QFile f(u"/proc/net/tcp"_qs);
    if (!f.open(QIODevice::ReadOnly))
        return 0;
    const QByteArray remote = QByteArray("0100007F:") + QByteArray::number(port, 16).toUpper().rightJustified(4, '0');
    int n = 0;
    for (const QByteArray& line : f.readAll().split('\n')) {
        const QList<QByteArray> cols = line.simplified().split(' ');
        if (cols.size() > 3 && cols[2] == remote && cols[3] == "01")
            ++n;
    }
    return n;
}

idem::ConnectionOptions quick(idem::ConnectionOptions o)
{
    o.connectTimeout = idem::Millis(1000);
    o.commandTimeout = idem::Millis(1000);
    o.reconnectMin = idem::Millis(10);
    o.reconnectMax = idem::Millis(50);
    return o;
}

// The ConfigError a connection to `o` ends in, with its field; fails the test otherwise.
std::pair<std::string, std::string> configError(const idem::ConnectionOptions& o)
{
    idem::Connection c(quick(o));
    try {
        c.connect();
        c.checked({"PING"});
    } catch (const idem::ConfigError& e) {
        return {e.what(), e.field()};
    } catch (const std::exception& e) {
        return {std::string("not a ConfigError: ") + e.what(), ""};
    }
    return {"connected", ""};
}

} // namespace

class TestTls : public QObject {
    Q_OBJECT
    const idemtest::TestCerts& certs = idemtest::TestCerts::get();

private slots:
    void stateMachineOverTls()
    {
        idem::LocalServer server(certs.serverOptions());
        const idem::ConnectionOptions o = server.connectionOptions();
        QVERIFY(o.tls.enabled);
        idem::Connection c(o);
        c.connect();
        QVERIFY(c.tls());
        idem::ConnectionPool pool(o, 4);
        idem::Store store(pool, idem::StoreOptions{.keyNamespace = "tls"});
        idem::Executor ex(store);
        int runs = 0;
        const auto work = [&](const idem::WorkContext&) {
            ++runs;
            return idem::WorkResult::success(std::string(300 * 1024, 'r')); // larger than a TLS record
        };
        QCOMPARE(ex.execute("t-1", "{}", work).kind, OutcomeKind::Executed);
        const auto again = ex.execute("t-1", "{}", work);
        QCOMPARE(again.kind, OutcomeKind::Replayed);
        QCOMPARE(again.response.size(), std::size_t(300 * 1024));
        QCOMPARE(runs, 1);
        std::vector<idem::AcquireRequest> batch;
        for (int i = 0; i < 200; ++i)
            batch.push_back({"b-" + std::to_string(i), ""});
        for (const auto& r : store.acquireBatch(batch))
            QCOMPARE(r.status, idem::AcquireStatus::Acquired);
    }

    void clientCertificates()
    {
        idem::LocalServer server(certs.serverOptions("server.pem", true));
        idem::ConnectionOptions o = server.connectionOptions();
        idem::Connection with(o);
        with.connect();
        QCOMPARE(idem::reply::str(with.checked({"PING"}).get()), std::string("PONG"));
        o.tls.certFile.clear();
        o.tls.keyFile.clear();
        const auto [why, field] = configError(o);
        QVERIFY2(field == "tls-cert", why.c_str());
        QVERIFY2(why.find("client certificate") != std::string::npos, why.c_str());
        QVERIFY2(why.starts_with("Redis at rediss://"), why.c_str()); // the alert, or the reset: the server named
    }

    void errorsRetryingCannotFix_data()
    {
        QTest::addColumn<QString>("serverCert");
        QTest::addColumn<QString>("change");
        QTest::addColumn<QString>("field");
        QTest::addColumn<QString>("says");
        QTest::newRow("unknown CA") << "other-server.pem" << "" << "tls-ca" << "does not trust";
        QTest::newRow("expired") << "expired.pem" << "" << "server-certificate" << "expired";
        QTest::newRow("host name mismatch") << "elsewhere.pem" << "" << "tls-server-name" << "host name mismatch";
        QTest::newRow("missing key file") << "server.pem" << "no-key" << "tls-key" << "cannot read";
        QTest::newRow("unreadable CA") << "server.pem" << "no-ca" << "tls-ca" << "cannot read";
        QTest::newRow("cert without key") << "server.pem" << "cert-only" << "tls-key" << "needs its key";
        QTest::newRow("plaintext client on a TLS port") << "server.pem" << "plaintext" << "url" << "a TLS port";
    }
    void errorsRetryingCannotFix()
    {
        QFETCH(QString, serverCert);
        QFETCH(QString, change);
        QFETCH(QString, field);
        QFETCH(QString, says);
        idem::LocalServer server(certs.serverOptions(serverCert.toLatin1().constData()));
        idem::ConnectionOptions o = server.connectionOptions();
        if (change == u"no-key"_qs) {
            o.tls.certFile = certs.path("client.pem");
            o.tls.keyFile = certs.path("missing.key");
        } else if (change == u"no-ca"_qs) {
            o.tls.caFile = certs.path("missing-ca.pem");
        } else if (change == u"cert-only"_qs) {
            o.tls.certFile = certs.path("client.pem");
        } else if (change == u"plaintext"_qs) {
            o.tls = {};
        }
        const auto [why, got] = configError(o);
        QVERIFY2(QString::fromStdString(got) == field, why.c_str());
        QVERIFY2(QString::fromStdString(why).contains(says), why.c_str());
        QVERIFY(why.find('\n') == std::string::npos);
        // what fixes it: the name the certificate is for, or no verification (said to be unsafe)
        if (change.isEmpty() && field == u"tls-server-name"_qs) {
            o.tls.serverName = "elsewhere.example";
            idem::Connection named(o);
            named.connect();
            QCOMPARE(idem::reply::str(named.checked({"PING"}).get()), std::string("PONG"));
        }
        if (change.isEmpty()) {
            o.tls.serverName.clear();
            o.tls.insecure = true;
            idem::Connection blind(o);
            blind.connect();
            QCOMPARE(idem::reply::str(blind.checked({"PING"}).get()), std::string("PONG"));
        }
    }

    void tlsClientOnAPlaintextPort()
    {
        idem::LocalServer plain;
        idem::ConnectionOptions o = plain.connectionOptions();
        o.tls.enabled = true;
        o.tls.caFile = certs.path("ca.pem");
        const auto [why, field] = configError(o);
        QVERIFY2(field == "url", why.c_str());
        QVERIFY2(why.find("does not speak TLS") != std::string::npos, why.c_str());
    }

    // A plaintext server that answered before, or a cluster node a server named, and hangs up
    // during a handshake (SIGSTOPped with the connection accepted by the kernel, then killed: a
    // node dying) is going away: said so, and worth another try, not taken for a TLS port as a
    // first connection's hang-up is (above)
    void aServerThatAnsweredBeforeHangsUpAndIsNoTlsPort_data()
    {
        QTest::addColumn<QString>("again");
        QTest::newRow("a connection's reconnect") << "connection";
        QTest::newRow("a listener started again") << "listener";
        QTest::newRow("a new listener for a node subscribed to before") << "new listener";
        QTest::newRow("a first connection to a node a cluster named") << "named node";
    }
    void aServerThatAnsweredBeforeHangsUpAndIsNoTlsPort()
    {
        QFETCH(QString, again);
        idem::LocalServerOptions so;
        so.extraArgs = {"--notify-keyspace-events", "KA"};
        idem::LocalServer server(so);
        idem::ConnectionOptions o = quick(server.connectionOptions());
        o.commandTimeout = idem::Millis(5000); // the handshake waits on the stopped server until it dies
        idem::Connection c(o);
        // as the console's scanner reaches a cluster's other nodes (the seed answered these options)
        idem::Connection named(idem::optionsAtNode(o, "127.0.0.1:" + std::to_string(o.port)));
        idem::KeyspaceListener listener(o, "hangup:*", [](const std::string&, const std::string&) {});
        idem::KeyspaceListener newListener(o, "hangup:*", [](const std::string&, const std::string&) {});
        std::string why;
        if (again == u"connection"_qs) {
            c.connect();
            QCOMPARE(idem::reply::str(c.checked({"PING"}).get()), std::string("PONG"));
            c.disconnect(); // (its socket gone: the only one established below is the reconnect's)
        } else if (again == u"listener"_qs) {
            QVERIFY2(listener.start(&why), why.c_str());
            listener.stop();
        } else if (again == u"new listener"_qs) {
            newListener.setSubscribedBefore();
        }

        server.pause();
        bool configError = false;
        bool unreachable = false;
        std::thread hungUp([&] {
            try {
                if (again == u"connection"_qs)
                    c.connect();
                else if (again == u"named node"_qs)
                    named.connect();
                else if (again == u"listener"_qs)
                    unreachable = !listener.start(&why) && listener.unreachable();
                else
                    unreachable = !newListener.start(&why) && newListener.unreachable();
            } catch (const idem::ConfigError& e) {
                configError = true;
                why = e.what();
            } catch (const idem::Error& e) {
                why = e.what();
            }
        });
        // connected (the kernel accepts for the stopped server), waiting for PONG
        QTRY_VERIFY_WITH_TIMEOUT(establishedTo(o.port) > 0, 10'000);
        QThread::msleep(100); // (the handshake's request written)
        ::kill(server.pid(), SIGKILL); // as it is (LocalServer::kill() lets it run again first)
        hungUp.join();
        server.kill(); // (reaped)
        QVERIFY2(!configError, why.c_str());
        QVERIFY2(why.find("closed the connection during the handshake") != std::string::npos, why.c_str());
        QVERIFY2(why.find("TLS") == std::string::npos, why.c_str());
        if (again == u"listener"_qs || again == u"new listener"_qs)
            QVERIFY2(unreachable, why.c_str()); // worth another try
    }

    // interrupt() of a connection with no socket: a fresh one's first connect gives up (a keyspace
    // listener interrupted before it connects), saying so, not as a TLS port; one that was open and
    // is closed is not poisoned, its next use reconnects (ConnectionPool::interruptAll's promise)
    void interruptWithoutASocket()
    {
        idem::LocalServer server;
        idem::ConnectionOptions o = quick(server.connectionOptions());
        o.reconnectMin = o.reconnectMax = idem::Millis(0);
        idem::Connection fresh(o);
        fresh.interrupt();
        try {
            fresh.connect();
            QFAIL("a fresh connection's first connect went on after interrupt()");
        } catch (const idem::ConfigError& e) {
            QFAIL(e.what());
        } catch (const idem::IoError& e) {
            QVERIFY2(std::string(e.what()).find("interrupted") != std::string::npos, e.what());
        }
        fresh.connect(); // once only
        QCOMPARE(idem::reply::str(fresh.checked({"PING"}).get()), std::string("PONG"));

        idem::Connection used(o);
        QCOMPARE(idem::reply::str(used.checked({"PING"}).get()), std::string("PONG"));
        used.disconnect();
        used.interrupt();
        QCOMPARE(idem::reply::str(used.checked({"PING"}).get()), std::string("PONG"));
    }

    // what plaintext guarantees, over TLS too: a hung server times out, interrupt() ends a blocked
    // read, a killed server fails closed (the work does not run) and a restarted one is reached again
    void timeoutsInterruptAndFailClosed()
    {
        idem::LocalServer server(certs.serverOptions());
        const auto o = quick(server.connectionOptions());
        idem::Connection c(o);
        c.connect();
        server.pause();
        QElapsedTimer t;
        t.start();
        QVERIFY_THROWS_EXCEPTION(idem::TimeoutError, c.checked({"PING"}));
        QVERIFY(t.elapsed() < 3000);
        server.resume();

        idem::ConnectionOptions blocking = o;
        blocking.commandTimeout = idem::Millis(0); // wait for ever
        idem::Connection sub(blocking);
        sub.connect();
        sub.checked({"SUBSCRIBE", "nothing-comes"});
        std::atomic<bool> ended{false};
        std::thread reader([&] {
            try {
                sub.readReply();
            } catch (const idem::Error&) {
            }
            ended = true;
        });
        QThread::msleep(100);
        QVERIFY(!ended);
        sub.interrupt();
        reader.join();
        QVERIFY(ended);

        idem::ConnectionPool pool(o, 2);
        idem::Store store(pool, idem::StoreOptions{.keyNamespace = "tlsfo"});
        idem::Executor ex(store);
        int runs = 0;
        const auto work = [&](const idem::WorkContext&) {
            ++runs;
            return idem::WorkResult::success("ok");
        };
        QCOMPARE(ex.execute("before", "", work).kind, OutcomeKind::Executed);
        server.kill();
        QCOMPARE(ex.execute("during", "", work).kind, OutcomeKind::StoreUnavailable);
        QCOMPARE(runs, 1); // not run while the store was away
        server.start();
        idem::Outcome after;
        // (by hand: QTRY_* evaluates its expression once more at the end, and this one runs work)
        QElapsedTimer waited;
        waited.start();
        do
            after = ex.execute("after", "", work);
        while (after.kind == OutcomeKind::StoreUnavailable && waited.elapsed() < 5000 && (QThread::msleep(20), true));
        QCOMPARE(after.kind, OutcomeKind::Executed); // reached again, and run once
        QCOMPARE(runs, 2);
    }

    void keyspaceNotificationsOverTls()
    {
        idem::LocalServerOptions so = certs.serverOptions();
        so.extraArgs = {"--notify-keyspace-events", "KEA"};
        idem::LocalServer server(so);
        std::atomic<int> events{0};
        idem::KeyspaceListener listener(server.connectionOptions(), "tlsks:*",
                                        [&](const std::string&, const std::string&) { ++events; });
        std::string why;
        QVERIFY2(listener.start(&why), why.c_str());
        idem::Connection c(server.connectionOptions());
        c.checked({"SET", "tlsks:{a}", "x"});
        QTRY_VERIFY_WITH_TIMEOUT(events.load() >= 1, 3000);
    }

    void idemctlOverTls()
    {
        idem::LocalServer server(certs.serverOptions());
        const QString url = QString::fromStdString(server.url());
        const QStringList tls = {u"--url"_qs, url, u"--tls-ca"_qs, QString::fromStdString(certs.path("ca.pem"))};
        auto first = idemtest::runIdemctl(tls + QStringList{u"run"_qs, u"--key"_qs, u"k"_qs, u"--"_qs, u"echo"_qs, u"ran"_qs});
        QCOMPARE(first.exitCode, 0);
        QCOMPARE(first.out, QByteArray("ran\n"));
        auto second = idemtest::runIdemctl(tls + QStringList{u"run"_qs, u"--key"_qs, u"k"_qs, u"--"_qs, u"echo"_qs, u"again"_qs});
        QCOMPARE(second.out, QByteArray("ran\n")); // replayed over TLS
        // the system's CAs do not know the test CA: refused in one line, the command not run
        auto untrusted = idemtest::runIdemctl({u"--url"_qs, url, u"run"_qs, u"--key"_qs, u"k2"_qs, u"--"_qs,
                                               u"echo"_qs, u"must not run"_qs});
        QCOMPARE(untrusted.exitCode, 69);
        QVERIFY(untrusted.out.isEmpty());
        QVERIFY2(untrusted.err.contains("does not trust") && untrusted.err.count('\n') == 1, untrusted.err.constData());
        // --tls-insecure works and says so every time
        auto insecure = idemtest::runIdemctl({u"--url"_qs, url, u"--tls-insecure"_qs, u"stats"_qs});
        QCOMPARE(insecure.exitCode, 0);
        QVERIFY(insecure.err.contains("not verified"));
        // TLS flags with a plaintext URL are a usage error
        auto mixed = idemtest::runIdemctl({u"--url"_qs, u"redis://127.0.0.1:1"_qs, u"--tls-ca"_qs, u"x"_qs, u"stats"_qs});
        QCOMPARE(mixed.exitCode, 64);
    }
};

QTEST_GUILESS_MAIN(TestTls)
#include "tst_tls.moc"
