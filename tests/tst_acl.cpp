// `idemctl acl`: each role's ACL SETUSER line applied to the shared redis-server (users of their
// own, under a namespace of their own), then everything the role should do works as that user and
// what it must not do is refused with words that name the permission and the role that has it.
#include "idem/engine/store.h"
#include "idem/monitor/keyspacelistener.h"
#include "idem/redis/localcluster.h"
#include "idem/redis/pool.h"
#include "idem/redis/reply.h"
#include "testsupport.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QtTest>

#include <functional>
#include <tuple>

using idemtest::runIdemctl;
using namespace Qt::StringLiterals;

namespace {

QString q(const std::string& s) { return QString::fromStdString(s); }

} // namespace

class TestAcl : public QObject {
    Q_OBJECT

    std::vector<std::string> m_users;

    // The line `idemctl acl ROLE` prints for `user`, applied to the shared server as the admin; the
    // URL that connects as that user.
    QString makeUser(const QString& role, const std::string& user, const std::string& ns, const QStringList& more = {})
    {
        applyUser(role, user, ns, {idemtest::sharedRedis()}, more);
        m_users.push_back(user);
        return u"redis://%1:pw-%1@127.0.0.1:%2/0"_s.arg(q(user)).arg(idemtest::sharedRedis().port);
    }

    static idem::ConnectionOptions as(const std::string& user)
    {
        idem::ConnectionOptions o = idemtest::sharedRedis();
        o.user = user;
        o.password = "pw-" + user;
        return o;
    }

    // records of every state under `ns`, written as the admin
    static void seed(const std::string& ns)
    {
        idem::ConnectionPool pool(idemtest::sharedRedis(), 1);
        idem::Store store(pool, idem::StoreOptions{.keyNamespace = ns, .lease = idem::Millis(60000)});
        for (const char* id : {"done", "gone"}) {
            const auto a = store.acquire(id);
            QCOMPARE(store.complete(a.ticket, "ok").status, idem::OwnerStatus::Ok);
        }
        store.acquire("stuck");
        store.acquire("stuck2");
        QCOMPARE(store.purge("gone", "admin", "seeded").status, idem::AdminStatus::Ok);
    }

    static QStringList g(const QString& url, const std::string& ns) { return {u"--url"_s, url, u"--namespace"_s, q(ns)}; }

    // The line `idemctl acl ROLE` prints for `user`, applied as the admin to each of `servers`
    // (every node of a Cluster, the primary and replicas a Sentinel watches: ACLs are per node).
    static void applyUser(const QString& role, const std::string& user, const std::string& ns,
                          const std::vector<idem::ConnectionOptions>& servers, const QStringList& more = {})
    {
        const auto r = runIdemctl(QStringList{u"--namespace"_s, q(ns), u"acl"_s, role, u"--user"_s, q(user),
                                              u"--password-stdin"_s} + more,
                                  30000, QByteArray("pw-") + QByteArray::fromStdString(user) + '\n');
        if (r.exitCode != 0)
            qFatal("idemctl acl %s: %s", qPrintable(role), r.err.constData());
        const QString line = QString::fromUtf8(r.out).trimmed();
        if (line.contains(u'\n') || line.contains(u"pw-"_s))
            qFatal("one line, without the password: %s", qPrintable(line));
        std::vector<std::string> words;
        for (const QString& w : line.split(u' ', Qt::SkipEmptyParts))
            words.push_back(w.toStdString());
        const std::vector<std::string_view> args(words.begin(), words.end());
        for (const auto& o : servers) {
            idem::Connection admin(o);
            const auto reply = admin.command(args);
            if (idem::reply::isError(reply.get()))
                qFatal("ACL SETUSER refused: %s", std::string(idem::reply::errorText(reply.get())).c_str());
        }
    }

    // What each role may and may not do at `url(user)`, a Cluster's or a Sentinel's: the service
    // runs keys spread over the slots, the monitor lists them all and may not purge, the operator
    // purges one and force-fails in bulk.
    static void rolesWork(const std::function<QString(const std::string& user)>& url, const std::string& ns,
                          const std::vector<idem::ConnectionOptions>& servers)
    {
        for (const char* role : {"service", "monitor", "operator"})
            applyUser(QString::fromLatin1(role), std::string(role) + "-" + ns, ns, servers);
        const QString svc = url("service-" + ns), mon = url("monitor-" + ns), op = url("operator-" + ns);
        for (int i = 0; i < 6; ++i) { // six ids: on a Cluster, more than one node's slots
            const auto r = runIdemctl(g(svc, ns) + QStringList{u"run"_s, u"--key"_s, u"job-%1"_s.arg(i), u"--"_s,
                                                               u"echo"_s, u"ran"_s});
            QVERIFY2(r.exitCode == 0 && r.out == "ran\n", r.err.constData());
        }
        const auto svcList = runIdemctl(g(svc, ns) + QStringList{u"list"_s});
        QVERIFY2(svcList.exitCode == 77 && svcList.err.contains("the monitor role has it"),
                 qPrintable(QString::number(svcList.exitCode) + u" "_s + QString::fromUtf8(svcList.out + svcList.err)));

        const auto list = runIdemctl(g(mon, ns) + QStringList{u"list"_s, u"--json"_s});
        QVERIFY2(list.exitCode == 0, list.err.constData());
        QCOMPARE(QString::fromUtf8(list.out).count(u"\"id\""_s), 6);
        const auto monPurge = runIdemctl(g(mon, ns) + QStringList{u"purge"_s, u"job-0"_s, u"--reason"_s, u"x"_s});
        QVERIFY2(monPurge.exitCode == 77 && monPurge.err.contains("the operator role has it"), monPurge.err.constData());

        const auto purge =
            runIdemctl(g(op, ns) + QStringList{u"purge"_s, u"job-0"_s, u"--reason"_s, u"redo"_s, u"--by"_s, u"alice"_s});
        QVERIFY2(purge.exitCode == 0, purge.err.constData());
        const auto bulk = runIdemctl(g(op, ns) + QStringList{u"purge"_s, u"--state"_s, u"completed"_s, u"--yes"_s,
                                                             u"--reason"_s, u"bulk"_s, u"--by"_s, u"alice"_s});
        QVERIFY2(bulk.exitCode == 0, bulk.err.constData());
        const auto after = runIdemctl(g(mon, ns) + QStringList{u"list"_s, u"--json"_s});
        QCOMPARE(QString::fromUtf8(after.out).count(u"\"id\""_s), 0);
        const auto audit = runIdemctl(g(mon, ns) + QStringList{u"audit"_s, u"--by"_s, u"alice"_s, u"--json"_s});
        QVERIFY2(audit.exitCode == 0 && QJsonDocument::fromJson(audit.out).array().size() >= 6,
                 qPrintable(QString::fromUtf8(audit.out + audit.err)));
    }

private Q_SLOTS:
    void cleanupTestCase()
    {
        idem::Connection admin(idemtest::sharedRedis());
        for (const auto& u : m_users)
            admin.command({"ACL", "DELUSER", u});
    }

    void usage_data()
    {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("says");
        QTest::newRow("bad role") << QStringList{u"admin"_s, u"--user"_s, u"x"_s, u"--nopass"_s} << u"unknown role 'admin'"_s;
        QTest::newRow("no password choice") << QStringList{u"monitor"_s, u"--user"_s, u"x"_s} << u"--password-stdin"_s;
        QTest::newRow("both") << QStringList{u"monitor"_s, u"--user"_s, u"x"_s, u"--nopass"_s, u"--password-stdin"_s}
                              << u"exclude each other"_s;
        QTest::newRow("no user") << QStringList{u"monitor"_s, u"--nopass"_s} << u"--user"_s;
        QTest::newRow("user with a space") << QStringList{u"monitor"_s, u"--user"_s, u"a b"_s, u"--nopass"_s}
                                           << u"one word"_s;
    }
    void usage()
    {
        QFETCH(QStringList, args);
        QFETCH(QString, says);
        const auto r = runIdemctl(QStringList{u"acl"_s} + args);
        QCOMPARE(r.exitCode, 64);
        const QString err = QString::fromUtf8(r.err).trimmed();
        QVERIFY2(err.contains(says) && !err.contains(u'\n'), qPrintable(err));
        QVERIFY(r.out.isEmpty());
    }

    void nopassAndLiveUpdates()
    {
        const auto r = runIdemctl({u"--namespace"_s, u"orders*"_s, u"acl"_s, u"monitor"_s, u"--user"_s, u"m"_s,
                                   u"--nopass"_s, u"--live-updates"_s, u"--db"_s, u"2"_s});
        QCOMPARE(r.exitCode, 0);
        const QString line = QString::fromUtf8(r.out).trimmed();
        QVERIFY2(line.startsWith(u"ACL SETUSER m reset on nopass "_s), qPrintable(line));
        QVERIFY2(line.contains(uR"(%R~orders\*:*)"_s), qPrintable(line)); // the namespace taken literally
        QVERIFY2(line.contains(uR"(&__keyspace@2__:orders\*:*)"_s), qPrintable(line));
    }

    // The console's keyspace notifications (the fixture sends them): only with --live-updates,
    // and then only the namespace's channel
    void liveUpdatesOnlyWhenAsked()
    {
        const std::string ns = idemtest::uniqueNamespace("acll");
        makeUser(u"monitor"_s, "plain-" + ns, ns);
        makeUser(u"monitor"_s, "live-" + ns, ns, {u"--live-updates"_s});
        std::string why;
        idem::KeyspaceListener plain(as("plain-" + ns), ns + ":*", [](const std::string&, const std::string&) {});
        QVERIFY(!plain.start(&why));
        QVERIFY2(why.find("NOPERM") != std::string::npos, why.c_str());
        std::atomic<int> heard{0};
        idem::KeyspaceListener live(as("live-" + ns), ns + ":*", [&](const std::string&, const std::string&) { ++heard; });
        QVERIFY2(live.start(&why), why.c_str());
        idem::KeyspaceListener elsewhere(as("live-" + ns), "other:*", [](const std::string&, const std::string&) {});
        QVERIFY(!elsewhere.start(&why));
        idem::Connection admin(idemtest::sharedRedis());
        admin.checked({"SET", ns + ":x", "1", "PX", "60000"});
        QTRY_VERIFY_WITH_TIMEOUT(heard > 0, 5000);
        live.stop();
    }

    void monitor()
    {
        const std::string ns = idemtest::uniqueNamespace("aclm"), user = "mon-" + ns;
        seed(ns);
        const QString url = makeUser(u"monitor"_s, user, ns);
        for (const QStringList& ok : {QStringList{u"list"_s, u"--json"_s}, QStringList{u"stats"_s},
                                      QStringList{u"inspect"_s, u"done"_s}, QStringList{u"audit"_s}}) {
            const auto r = runIdemctl(g(url, ns) + ok);
            QVERIFY2(r.exitCode == 0, qPrintable(ok.join(u' ') + u": "_s + QString::fromUtf8(r.err)));
        }
        const auto list = runIdemctl(g(url, ns) + QStringList{u"list"_s, u"--json"_s});
        QCOMPARE(QString::fromUtf8(list.out).count(u"\"id\""_s), 3); // done, stuck, stuck2
        QVERIFY(runIdemctl(g(url, ns) + QStringList{u"audit"_s}).out.contains("seeded"));
        const auto gone = runIdemctl(g(url, ns) + QStringList{u"inspect"_s, u"gone"_s}); // its meta key: who, why
        QVERIFY2(gone.exitCode == 66 && gone.err.contains("purged by admin") && gone.err.contains("seeded"),
                 gone.err.constData());

        // no write at all: not the guarded actions, not a plain write (what the console probes)
        for (const QStringList& refused : {QStringList{u"purge"_s, u"done"_s, u"--reason"_s, u"x"_s},
                                           QStringList{u"force-fail"_s, u"stuck"_s, u"--reason"_s, u"x"_s},
                                           QStringList{u"purge"_s, u"--state"_s, u"completed"_s, u"--yes"_s}}) {
            const auto r = runIdemctl(g(url, ns) + refused);
            const QString err = QString::fromUtf8(r.err).trimmed();
            QVERIFY2(r.exitCode == 77, qPrintable(refused.join(u' ') + u": "_s + err));
            QVERIFY2(err.contains(u"user '%1' may not %2"_s.arg(q(user), refused[0])) &&
                         err.contains(u"the operator role has it"_s) && !err.contains(u'\n'),
                     qPrintable(err));
            QVERIFY2(!r.out.contains("purge"), r.out.constData()); // no line says a key was purged
        }
        const auto run = runIdemctl(g(url, ns) + QStringList{u"run"_s, u"--key"_s, u"m-1"_s, u"--"_s, u"echo"_s, u"x"_s});
        QVERIFY2(run.exitCode == 77 && run.out.isEmpty() && run.err.contains("may not run (NOPERM: evalsha)") &&
                     run.err.contains("the service role has it"),
                 run.err.constData());
        idem::Connection c(as(user));
        c.connect();
        for (const char* cmd : {"UNLINK", "DEL"}) {
            const auto r = c.command({cmd, ns + ":{done}"});
            QVERIFY(std::string(idem::reply::errorText(r.get())).starts_with("NOPERM"));
        }
        idem::ConnectionPool pool(idemtest::sharedRedis(), 1);
        idem::Store admin(pool, idem::StoreOptions{.keyNamespace = ns});
        QVERIFY(admin.inspect("done"));
        QVERIFY(admin.inspect("stuck"));
    }

    // A user whose key patterns leave a namespace out: SCAN lists its keys, reading them is
    // refused. list, stats and a bulk purge say so and exit 77; they used to answer "0 record(s)"
    // and "no key matches", exit 0: a store with stuck work that looked empty.
    void namespaceNotReadableIsNotEmpty()
    {
        const std::string mine = idemtest::uniqueNamespace("aclr"), other = idemtest::uniqueNamespace("aclo");
        const std::string user = "mon-" + mine;
        seed(other);
        const QString url = makeUser(u"operator"_s, user, mine);
        for (const QStringList& cmd : {QStringList{u"list"_s}, QStringList{u"stats"_s, u"--json"_s},
                                       QStringList{u"purge"_s, u"--state"_s, u"completed"_s, u"--yes"_s}}) {
            const auto r = runIdemctl(g(url, other) + cmd);
            const QString err = QString::fromUtf8(r.err);
            QVERIFY2(r.exitCode == 77, qPrintable(cmd.join(u' ') + u": "_s + err));
            QVERIFY2(err.contains(u"3 key(s) matched that this user may not read (NOPERM"_s), qPrintable(err));
        }
        idem::ConnectionPool pool(idemtest::sharedRedis(), 1);
        idem::Store admin(pool, idem::StoreOptions{.keyNamespace = other});
        QVERIFY(admin.inspect("done"));
        // its own namespace: nothing refused, exit 0
        seed(mine);
        const auto own = runIdemctl(g(url, mine) + QStringList{u"stats"_s});
        QVERIFY2(own.exitCode == 0 && !own.err.contains("NOPERM"), own.err.constData());
    }

    // A user named in the URL without a password (a nopass user) is that user, never quietly the
    // default one: a nopass monitor's purge is refused. It used to connect without AUTH, as the
    // default user, and purged.
    void nopassUserIsThatUser()
    {
        const std::string ns = idemtest::uniqueNamespace("acln"), user = "nopass-" + ns;
        seed(ns);
        const auto line = runIdemctl(QStringList{u"--namespace"_s, q(ns), u"acl"_s, u"monitor"_s, u"--user"_s, q(user),
                                                 u"--nopass"_s});
        QCOMPARE(line.exitCode, 0);
        std::vector<std::string> words;
        for (const QString& w : QString::fromUtf8(line.out).trimmed().split(u' ', Qt::SkipEmptyParts))
            words.push_back(w.toStdString());
        std::vector<std::string_view> args(words.begin(), words.end());
        idem::Connection admin(idemtest::sharedRedis());
        QVERIFY(!idem::reply::isError(admin.command(args).get()));
        m_users.push_back(user);
        const QString url = u"redis://%1@127.0.0.1:%2/0"_s.arg(q(user)).arg(idemtest::sharedRedis().port);
        QCOMPARE(runIdemctl(g(url, ns) + QStringList{u"stats"_s}).exitCode, 0);
        const auto purge = runIdemctl(g(url, ns) + QStringList{u"purge"_s, u"done"_s, u"--reason"_s, u"x"_s});
        QVERIFY2(purge.exitCode == 77, purge.err.constData());
        idem::ConnectionPool pool(idemtest::sharedRedis(), 1);
        idem::Store store(pool, idem::StoreOptions{.keyNamespace = ns});
        QVERIFY(store.inspect("done"));
    }

    void operatorRole()
    {
        const std::string ns = idemtest::uniqueNamespace("aclo"), other = idemtest::uniqueNamespace("aclx"),
                          user = "op-" + ns;
        seed(ns);
        seed(other);
        const QString url = makeUser(u"operator"_s, user, ns);
        for (const QStringList& ok :
             {QStringList{u"list"_s}, QStringList{u"stats"_s}, QStringList{u"inspect"_s, u"done"_s},
              QStringList{u"purge"_s, u"done"_s, u"--reason"_s, u"stuck after deploy"_s, u"--by"_s, u"alice"_s},
              QStringList{u"force-fail"_s, u"stuck"_s, u"--reason"_s, u"poison"_s, u"--by"_s, u"alice"_s},
              QStringList{u"purge"_s, u"--state"_s, u"started"_s, u"--live"_s, u"--yes"_s, u"--reason"_s, u"bulk"_s,
                          u"--by"_s, u"alice"_s}}) {
            const auto r = runIdemctl(g(url, ns) + ok);
            QVERIFY2(r.exitCode == 0, qPrintable(ok.join(u' ') + u": "_s + QString::fromUtf8(r.err)));
        }
        const auto audit = runIdemctl(g(url, ns) + QStringList{u"audit"_s, u"--by"_s, u"alice"_s, u"--json"_s});
        QCOMPARE(audit.exitCode, 0);
        const QJsonArray entries = QJsonDocument::fromJson(audit.out).array();
        QStringList actions;
        for (const auto& e : entries)
            actions << e.toObject().value(u"action"_s).toString();
        QVERIFY2(actions.contains(u"purge"_s) && actions.contains(u"force-fail retryable"_s) && entries.size() == 3,
                 qPrintable(QString::fromUtf8(audit.out)));
        const auto done = runIdemctl(g(url, ns) + QStringList{u"inspect"_s, u"done"_s});
        QVERIFY2(done.exitCode == 66 && done.err.contains("purged by alice") && done.err.contains("stuck after deploy"),
                 done.err.constData());

        // another namespace's keys: neither read nor changed
        for (const QStringList& refused : {QStringList{u"purge"_s, u"done"_s, u"--reason"_s, u"x"_s},
                                           QStringList{u"force-fail"_s, u"stuck"_s, u"--reason"_s, u"x"_s},
                                           QStringList{u"inspect"_s, u"done"_s}}) {
            const auto r = runIdemctl(g(url, other) + refused);
            const QString err = QString::fromUtf8(r.err).trimmed();
            QVERIFY2(r.exitCode == 77, qPrintable(refused.join(u' ') + u": "_s + err));
            QVERIFY2(err.contains(u"keys under '%1:'"_s.arg(q(other))), qPrintable(err));
        }
        idem::ConnectionPool pool(idemtest::sharedRedis(), 1);
        idem::Store admin(pool, idem::StoreOptions{.keyNamespace = other});
        QVERIFY(admin.inspect("done"));
        QCOMPARE(admin.inspect("stuck")->state, idem::RecordState::Started);
    }

    // The roles on a whole Cluster: the ACL applied to every node, each role's commands reach the
    // node serving each key (CLUSTER SLOTS, MOVED, the scan over every primary).
    void rolesOnACluster()
    {
        idem::LocalCluster cluster(3);
        std::vector<idem::ConnectionOptions> nodes;
        for (int i = 0; i < cluster.size(); ++i)
            nodes.push_back(cluster.node(i));
        const std::string ns = idemtest::uniqueNamespace("aclc");
        const int port = cluster.node(1).port;
        rolesWork([&](const std::string& user) { return u"redis://%1:pw-%1@127.0.0.1:%2"_s.arg(q(user)).arg(port); },
                  ns, nodes);
    }

    // Through Sentinel: the sentinels answer without the user (theirs to configure), the primary
    // and its replica carry the roles.
    void rolesThroughSentinel()
    {
        idemtest::LocalSentinelSet set(1);
        std::vector<idem::ConnectionOptions> nodes;
        for (int i = 0; i < set.nodes(); ++i)
            nodes.push_back(set.node(i).connectionOptions());
        const std::string ns = idemtest::uniqueNamespace("aclq");
        const std::string sentinels = set.url().substr(std::string("redis-sentinel://").size());
        rolesWork([&](const std::string& user) { return u"redis-sentinel://%1:pw-%1@%2"_s.arg(q(user), q(sentinels)); },
                  ns, nodes);
    }

    // The gateway checks at start that its user may run its scripts on its namespace's keys: a
    // monitor, or a service user of another namespace, is told so, exit 77, rather than a gateway
    // that answers every protected request 503 with a NOPERM in its log. A service user starts.
    void gatewayChecksItsUserAtStart()
    {
        const QString gateway = qEnvironmentVariable("IDEM_GATEWAY");
        if (gateway.isEmpty())
            QSKIP("IDEM_GATEWAY is not set (run through ctest; the gateway is built with Qt Network)");
        const std::string ns = idemtest::uniqueNamespace("aclg");
        const auto start = [&](const QString& url, const std::string& space) {
            QProcess p;
            p.start(gateway, {u"--upstream"_s, u"http://127.0.0.1:9"_s, u"--listen"_s, u"127.0.0.1:0"_s, u"--url"_s, url,
                              u"--namespace"_s, q(space)});
            p.waitForStarted(5000);
            const bool ended = p.waitForFinished(10000);
            const QByteArray out = p.readAllStandardOutput();
            if (!ended) {
                p.kill();
                p.waitForFinished(5000);
            }
            return std::make_tuple(ended ? p.exitCode() : -1, out, p.readAllStandardError());
        };
        const QString monitor = makeUser(u"monitor"_s, "gmon-" + ns, ns);
        auto [code, out, err] = start(monitor, ns);
        QVERIFY2(code == 77 && err.contains("may not use the 'script|load' command") && err.contains("service role"),
                 err.constData());
        const QString service = makeUser(u"service"_s, "gsvc-" + ns, ns);
        std::tie(code, out, err) = start(service, "elsewhere-" + ns); // the keys of another namespace
        QVERIFY2(code == 77 && err.contains("may not use keys under 'elsewhere-"), err.constData());
        std::tie(code, out, err) = start(service, ns);
        QVERIFY2(code == -1 && out.contains("listening:"), err.constData()); // it ran until killed
    }

    void service()
    {
        const std::string ns = idemtest::uniqueNamespace("acls"), user = "svc-" + ns;
        seed(ns);
        const QString url = makeUser(u"service"_s, user, ns);
        const QStringList run = g(url, ns) + QStringList{u"run"_s, u"--key"_s, u"job-1"_s, u"--"_s, u"echo"_s, u"ran"_s};
        auto first = runIdemctl(run);
        QVERIFY2(first.exitCode == 0 && first.out == "ran\n", first.err.constData());
        auto again = runIdemctl(run); // replayed: the stored stdout, the command not run
        QVERIFY2(again.exitCode == 0 && again.out == "ran\n", again.err.constData());
        const auto failing = runIdemctl(g(url, ns) + QStringList{u"run"_s, u"--key"_s, u"job-2"_s, u"--"_s, u"false"_s});
        QCOMPARE(failing.exitCode, 1);

        // through the library: acquire, renew, complete, fail
        idem::ConnectionPool pool(as(user), 1);
        idem::Store store(pool, idem::StoreOptions{.keyNamespace = ns, .lease = idem::Millis(60000)});
        const auto a = store.acquire("lib-1");
        QCOMPARE(a.status, idem::AcquireStatus::Acquired);
        QCOMPARE(store.renew(a.ticket).status, idem::OwnerStatus::Ok);
        QCOMPARE(store.complete(a.ticket, "r").status, idem::OwnerStatus::Ok);
        QCOMPARE(store.acquire("lib-1").status, idem::AcquireStatus::Duplicate);
        const auto b = store.acquire("lib-2");
        QCOMPARE(store.fail(b.ticket, idem::FailPolicy::Retryable, "boom").status, idem::OwnerStatus::Ok);

        for (const QStringList& refused : {QStringList{u"list"_s}, QStringList{u"stats"_s}}) {
            const auto r = runIdemctl(g(url, ns) + refused);
            const QString err = QString::fromUtf8(r.err).trimmed();
            QVERIFY2(r.exitCode == 77, qPrintable(refused.join(u' ') + u": "_s + err));
            QVERIFY2(err.contains(u"may not %1 (NOPERM: scan)"_s.arg(refused[0])) &&
                         err.contains(u"the monitor role has it"_s),
                     qPrintable(err));
        }
        const auto purge = runIdemctl(g(url, ns) + QStringList{u"purge"_s, u"job-1"_s, u"--reason"_s, u"x"_s});
        QVERIFY2(purge.exitCode == 77 && purge.err.contains("the operator role has it"), purge.err.constData());

        // the audit stream is out of its reach: a service's credential cannot erase or write the trail
        idem::Connection svc(as(user));
        svc.connect();
        const std::string stream = ns + ":audit";
        for (const std::vector<std::string_view>& cmd : {std::vector<std::string_view>{"DEL", stream},
                                                    std::vector<std::string_view>{"XADD", stream, "*", "action", "purge"},
                                                    std::vector<std::string_view>{"HGETALL", stream}}) {
            const idem::ReplyPtr r = svc.command(cmd);
            QVERIFY2(idem::reply::isError(r.get()) && std::string(idem::reply::errorText(r.get())).starts_with("NOPERM"),
                     std::string(cmd[0]).c_str());
        }
    }
};

QTEST_GUILESS_MAIN(TestAcl)
#include "tst_acl.moc"
