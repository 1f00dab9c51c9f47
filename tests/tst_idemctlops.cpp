// idemctl's operator commands against the fixture's redis-server: list, inspect, force-fail and
// purge on idem's records, on keys of another type or library, in a namespace with glob
// characters, on nothing; a record idem-gateway wrote. tst_idemctl.cpp has idemctl run.
#include "idem/engine/store.h"
#include "idem/redis/pool.h"
#include "idemctltestsupport.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>

class TestIdemctlOps : public IdemctlTest {
    Q_OBJECT

private slots:
    void init() { setUp(); }

    // ids of very different lengths (a gateway's run to 60 characters and more) keep the columns
    // after them in line: the ID column is as wide as the longest id
    void listColumnsLineUp()
    {
        const QString longId = s("c57d989fe30f51be3f74ee4981d84a288 POST /payments/refunds pay-46e1ae-1");
        QCOMPARE(run(s("a"), {s("true")}).exitCode, 0);
        QCOMPARE(run(longId, {s("true")}).exitCode, 0);
        QCOMPARE(run(s("mid-sized-id-0001"), {s("true")}).exitCode, 0);
        const auto r = ctl({s("list")});
        QCOMPARE(r.exitCode, 0);
        const QList<QByteArray> lines = r.out.trimmed().split('\n');
        QCOMPARE(lines.size(), 4); // the header and three rows
        const qsizetype at = lines[0].indexOf("STATE");
        QVERIFY(at > longId.size());
        for (const QByteArray& line : lines.mid(1)) {
            QVERIFY2(line.indexOf("COMPLETED") == at, line.constData());
            QVERIFY2(line.indexOf("idem") == lines[0].indexOf("FORMAT"), line.constData());
        }
    }

    void inspectForceFailPurge()
    {
        QCOMPARE(ctl({s("inspect"), s("nothing")}).exitCode, 66);
        QCOMPARE(run(s("rec"), {s("echo"), s("result")}).exitCode, 0);
        auto text = ctl({s("inspect"), s("rec")});
        QCOMPARE(text.exitCode, 0);
        QVERIFY(text.out.contains("COMPLETED"));
        auto json = ctl({s("inspect"), s("rec"), s("--json")});
        QCOMPARE(json.exitCode, 0);
        const auto doc = QJsonDocument::fromJson(json.out).object();
        QCOMPARE(doc.value(s("state")).toString(), s("COMPLETED"));
        QCOMPARE(doc.value(s("format")).toString(), s("idem"));
        QVERIFY(doc.value(s("ttl_ms")).toDouble() > 0);
        QVERIFY(doc.value(s("response")).toString().contains(s("result")));

        // completed records are refused by force-fail; purge lets the id run again
        auto refused = ctl({s("force-fail"), s("rec"), s("--reason"), s("why not")});
        QCOMPARE(refused.exitCode, 1);
        oneLineError(refused);
        const double fenceBefore = doc.value(s("fence")).toDouble();
        QVERIFY(fenceBefore > 0);
        QCOMPARE(ctl({s("purge"), s("rec"), s("--reason"), s("rerun")}).exitCode, 0);
        QCOMPARE(ctl({s("inspect"), s("rec")}).exitCode, 66);
        QCOMPARE(ctl({s("purge"), s("rec")}).exitCode, 66);
        QCOMPARE(run(s("rec"), {s("echo"), s("second")}).out, QByteArray("second\n"));
        auto after = QJsonDocument::fromJson(ctl({s("inspect"), s("rec"), s("--json")}).out).object();
        QVERIFY(after.value(s("fence")).toDouble() > fenceBefore); // fences increase across the purge
        QCOMPARE(after.value(s("meta")).toObject().value(s("last_op")).toString(), s("purge"));

        // a stuck run is force-failed by an operator
        QProcess stuck;
        // its work ends only once the test says so (a file appears), however slow the machine
        const QString go = tmp.filePath(s("stuck-may-end"));
        stuck.start(idemtest::idemctlPath(),
                    common + QStringList{s("run"), s("--key"), s("stuck"), s("--"), s("sh"), s("-c"),
                                         s("while [ ! -e '%1' ]; do sleep 0.05; done").arg(go)});
        QVERIFY(stuck.waitForStarted());
        QTRY_VERIFY_WITH_TIMEOUT(ctl({s("inspect"), s("stuck")}).exitCode == 0, 10000);
        auto ff = ctl({s("force-fail"), s("stuck"), s("--reason"), s("host died"), s("--terminal")});
        QFile(go).open(QIODevice::WriteOnly);
        QCOMPARE(ff.exitCode, 0);
        QVERIFY(stuck.waitForFinished(10000));
        QCOMPARE(stuck.exitCode(), 70); // its lease was taken away: the result is not stored
        auto rec = QJsonDocument::fromJson(ctl({s("inspect"), s("stuck"), s("--json")}).out).object();
        QCOMPARE(rec.value(s("state")).toString(), s("FAILED"));
        QCOMPARE(rec.value(s("terminal")).toBool(), true);
        QCOMPARE(rec.value(s("operator")).toObject().value(s("reason")).toString(), s("host died"));
        QCOMPARE(run(s("stuck"), {s("true")}).exitCode, 79);
    }

    // a namespace is a name, not a pattern: one with glob characters lists, counts and purges its
    // own keys, never those of the namespaces it would match as a glob
    void namespaceIsTakenLiterally()
    {
        const QString plain = QString::fromStdString(idemtest::uniqueNamespace("glob"));
        QString globbed = plain;
        globbed.insert(1, u'[').insert(3, u']'); // "g[l]ob...": as a glob it matches the plain one
        const auto in = [&](const QString& ns, QStringList args) {
            return idemtest::runIdemctl(
                QStringList{s("--url"), QString::fromStdString(idemtest::sharedRedisUrl()), s("--namespace"), ns} + args,
                30000);
        };
        for (const char* key : {"a", "b"})
            QCOMPARE(in(plain, {s("run"), s("--key"), s(key), s("--"), s("true")}).exitCode, 0);
        QCOMPARE(in(globbed, {s("run"), s("--key"), s("c"), s("--"), s("true")}).exitCode, 0);
        for (const QString& ns : QStringList{globbed, QString(plain).replace(1, 1, u'?'), plain.left(3) + u'*'}) {
            const auto listed = in(ns, {s("list"), s("--json")});
            QCOMPARE(listed.exitCode, 0);
            QCOMPARE(listed.out.count('\n'), ns == globbed ? 1 : 0);
            const auto purged = in(ns, {s("purge"), s("--state"), s("completed"), s("--yes"), s("--reason"), s("t")});
            QCOMPARE(purged.exitCode, 0);
        }
        QCOMPARE(in(plain, {s("inspect"), s("a")}).exitCode, 0);
        QCOMPARE(in(plain, {s("inspect"), s("b")}).exitCode, 0);
        QCOMPARE(in(globbed, {s("inspect"), s("c")}).exitCode, 66);
    }

    void foreignAndWrongTypeKeys()
    {
        idem::Connection c(idemtest::sharedRedis());
        const std::string ns = common.at(3).toStdString();
        c.checked({"RPUSH", ns + ":{alist}", "a"});
        c.checked({"SET", ns + ":{foreign}", R"({"status":"PROCESSING","lock_expiry":1600000000})"});
        auto r = run(s("alist"), {s("echo"), s("no")});
        QCOMPARE(r.exitCode, 78); // not "store unavailable": Redis answered, and a retry will not help
        QVERIFY(r.err.contains("list"));
        QVERIFY2(!r.err.contains("unavailable"), r.err.constData());
        QVERIFY(r.out.isEmpty());
        QCOMPARE(idem::reply::integer(c.checked({"LLEN", ns + ":{alist}"}).get()), std::int64_t(1));
        auto j = QJsonDocument::fromJson(ctl({s("inspect"), s("foreign"), s("--json")}).out).object();
        QCOMPARE(j.value(s("format")).toString(), s("json"));
        QCOMPARE(j.value(s("state")).toString(), s("STARTED"));
        QCOMPARE(j.value(s("stale")).toBool(), true);
        QCOMPARE(j.value(s("ttl_ms")).toInt(), -1);
        auto l = QJsonDocument::fromJson(ctl({s("inspect"), s("alist"), s("--json")}).out).object();
        QCOMPARE(l.value(s("state")).toString(), s("FOREIGN")); // a valid key of something else
        QVERIFY(l.value(s("reason")).toString().contains(s("list")));
    }

    // A bulk purge that finds nothing says so in words, acting or not - not "purged 0 key(s) of 0
    // matching (none; formats: none)"
    void bulkPurgeOfNothing()
    {
        const auto acting = ctl({s("purge"), s("--state"), s("failed"), s("--yes")});
        QCOMPARE(acting.exitCode, 0);
        QCOMPARE(acting.out, QByteArray("no key matches; nothing purged\n"));
        const auto dry = ctl({s("purge"), s("--state"), s("failed"), s("--dry-run")});
        QCOMPARE(dry.exitCode, 0);
        QVERIFY(dry.out.isEmpty());
        QVERIFY2(dry.err.startsWith("no key matches; nothing to purge\n"), dry.err.constData());
        const auto json = ctl({s("purge"), s("--state"), s("failed"), s("--yes"), s("--json")});
        QCOMPARE(json.exitCode, 0);
        QVERIFY(json.out.isEmpty()); // stdout holds JSON lines only
        QVERIFY2(json.err.startsWith("no key matches; nothing purged\n"), json.err.constData());
    }

    // A record idem-gateway wrote: its HTTP answer decoded, the JSON body pretty-printed, and in
    // --json an "http" object beside the stored response
    void gatewayAnswerDecoded()
    {
        idem::ConnectionPool pool(idemtest::sharedRedis(), 1);
        idem::Store store(pool, idem::StoreOptions{.keyNamespace = common.at(3).toStdString()});
        const auto a = store.acquire("http-1");
        QCOMPARE(a.status, idem::AcquireStatus::Acquired);
        const std::string answer = "{\"gateway\":1,\"method\":\"POST\",\"route\":\"/orders\",\"status\":201,"
                                   "\"headers\":[[\"Content-Type\",\"application/json\"],[\"Location\",\"/orders/7\"]],"
                                   "\"body\":\"{\\\"id\\\":7,\\\"ok\\\":true}\"}";
        QCOMPARE(store.complete(a.ticket, answer).status, idem::OwnerStatus::Ok);
        const auto text = ctl({s("inspect"), s("http-1")});
        QCOMPARE(text.exitCode, 0);
        QVERIFY2(text.out.contains("response   HTTP 201 to POST /orders") &&
                     text.out.contains("  header   Location: /orders/7") && text.out.contains("  body     JSON, 18 bytes") &&
                     text.out.contains("\"id\": 7"),
                 text.out.constData());
        const auto j = QJsonDocument::fromJson(ctl({s("inspect"), s("http-1"), s("--json")}).out).object();
        const QJsonObject http = j.value(s("http")).toObject();
        QCOMPARE(http.value(s("status")).toInt(), 201);
        QCOMPARE(http.value(s("route")).toString(), s("/orders"));
        QCOMPARE(http.value(s("body_kind")).toString(), s("JSON"));
        QCOMPARE(http.value(s("body")).toString(), s("{\"id\":7,\"ok\":true}"));
        QCOMPARE(j.value(s("response")).toString().toStdString(), answer); // as stored, too
    }
};

QTEST_GUILESS_MAIN(TestIdemctlOps)
#include "tst_idemctlops.moc"
