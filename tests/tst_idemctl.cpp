// idemctl end to end against the fixture's redis-server.
#include "idem/engine/store.h"
#include "idem/redis/localserver.h"
#include "idem/redis/pool.h"
#include "idem/utf8.h"
#include "testsupport.h"

#include <QProcess>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

namespace {
QString s(const char* text) { return QString::fromUtf8(text); }

// What in text output could end a line early, forge one or command the terminal: a control byte
// other than the newline (C0, DEL), a C1 control (U+0080..U+009F) or bytes that are not UTF-8.
// Empty when there is none.
QByteArray unsafeText(const QByteArray& out)
{
    if (!idem::validUtf8(std::string_view(out.constData(), static_cast<std::size_t>(out.size()))))
        return "not UTF-8: " + out.toPercentEncoding(" /:{}()_,;=.'");
    for (qsizetype i = 0; i < out.size(); ++i) {
        const auto c = static_cast<unsigned char>(out[i]);
        const auto next = i + 1 < out.size() ? static_cast<unsigned char>(out[i + 1]) : 0;
        if ((c < 0x20 && c != '\n') || c == 0x7f || (c == 0xc2 && next >= 0x80 && next <= 0x9f))
            return "a control character at byte " + QByteArray::number(i) + ": " + out.toPercentEncoding(" /:{}()_,;=.'");
    }
    return {};
}
} // namespace

class TestIdemctl : public QObject {
    Q_OBJECT

    QStringList common;
    QTemporaryDir tmp;

    idemtest::ProcessResult ctl(QStringList args, int timeoutMs = 30000)
    {
        return idemtest::runIdemctl(common + args, timeoutMs);
    }
    idemtest::ProcessResult run(const QString& key, QStringList cmd, QStringList opts = {})
    {
        return ctl(QStringList{s("run"), s("--key"), key} + opts + QStringList{s("--")} + cmd);
    }
    static void oneLineError(const idemtest::ProcessResult& r)
    {
        const QByteArray e = r.err.trimmed();
        QVERIFY2(!e.isEmpty(), "an error must be reported");
        QVERIFY2(!e.contains('\n'), e.constData());
    }

private slots:
    void init()
    {
        common = {s("--url"), QString::fromStdString(idemtest::sharedRedisUrl()), s("--namespace"),
                  QString::fromStdString(idemtest::uniqueNamespace("cli"))};
    }

    void runsOnceAndReplaysOutputAndExitCode()
    {
        const QString marker = tmp.filePath(s("ran-once"));
        const QStringList cmd = {s("sh"), s("-c"), s("echo x >> '%1'; echo hello; exit 3").arg(marker)};
        auto first = run(s("job-1"), cmd);
        QCOMPARE(first.exitCode, 3);
        QCOMPARE(first.out, QByteArray("hello\n"));
        auto second = run(s("job-1"), cmd);
        QCOMPARE(second.exitCode, 3);
        QCOMPARE(second.out, QByteArray("hello\n"));
        QFile f(marker);
        QVERIFY(f.open(QIODevice::ReadOnly));
        QCOMPARE(f.readAll(), QByteArray("x\n"));
        // binary stdout round-trips
        auto bin = run(s("bin"), {s("printf"), s("\\000\\377\\001ok")});
        QCOMPARE(bin.exitCode, 0);
        const QByteArray expected("\x00\xff\x01ok", 5);
        QCOMPARE(bin.out, expected);
        QCOMPARE(run(s("bin"), {s("false")}).out, expected);
    }

    // --min-replicas 0 is off and takes --replica-timeout (scripts that always pass both); a
    // --replica-timeout without --min-replicas is a mistake
    void minReplicasZeroIsOff()
    {
        auto r = run(s("mr-0"), {s("echo"), s("ran")}, {s("--min-replicas"), s("0"), s("--replica-timeout"), s("1s")});
        QVERIFY2(r.exitCode == 0 && r.out == "ran\n", r.err.constData());
        auto alone = run(s("mr-1"), {s("echo"), s("ran")}, {s("--replica-timeout"), s("1s")});
        QCOMPARE(alone.exitCode, 64);
        QVERIFY(alone.out.isEmpty());
    }

    void commandInheritsNoRedisSocket()
    {
        // CMD runs with idemctl's connections open: it must not inherit them (a child that keeps
        // a socket keeps the connection alive after idemctl exits, and could write into it)
        auto r = run(s("fds"), {s("sh"), s("-c"), s("ls -l /proc/self/fd/ 2>/dev/null | grep -c socket: || true")});
        QCOMPARE(r.exitCode, 0);
        QCOMPARE(r.out.trimmed(), QByteArray("0"));
    }

    void payloadMismatch()
    {
        const QString a = tmp.filePath(s("a.json")), b = tmp.filePath(s("b.json")), c = tmp.filePath(s("c.json"));
        auto write = [](const QString& path, const char* text) {
            QFile f(path);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write(text);
        };
        write(a, R"({"amount": 10, "to": "bob"})");
        write(b, R"({"to":"bob","amount":10})");
        write(c, R"({"amount": 11, "to": "bob"})");
        QCOMPARE(run(s("pay"), {s("echo"), s("paid")}, {s("--payload-file"), a}).exitCode, 0);
        auto same = run(s("pay"), {s("echo"), s("again")}, {s("--payload-file"), b});
        QCOMPARE(same.exitCode, 0);
        QCOMPARE(same.out, QByteArray("paid\n"));
        auto other = run(s("pay"), {s("echo"), s("again")}, {s("--payload-file"), c});
        QCOMPARE(other.exitCode, 65);
        QVERIFY(other.out.isEmpty());
        oneLineError(other);
        auto missing = run(s("pay2"), {s("true")}, {s("--payload-file"), tmp.filePath(s("nope"))});
        QCOMPARE(missing.exitCode, 64);
        oneLineError(missing);
    }

    // The work runs until the test lets it end (a file appears): a fixed sleep could be over before
    // a sanitized idemctl on a loaded machine has asked.
    void inProgressAndWait()
    {
        const QString slowMayEnd = tmp.filePath(s("slow-may-end"));
        QProcess slow;
        slow.start(idemtest::idemctlPath(),
                   common + QStringList{s("run"), s("--key"), s("slow"), s("--"), s("sh"), s("-c"),
                                        s("while [ ! -e '%1' ]; do sleep 0.05; done; echo slow-result").arg(slowMayEnd)});
        QVERIFY(slow.waitForStarted());
        QTRY_VERIFY_WITH_TIMEOUT(ctl({s("inspect"), s("slow")}).exitCode == 0, 5000);
        auto busy = run(s("slow"), {s("echo"), s("dup")});
        QCOMPARE(busy.exitCode, 75);
        oneLineError(busy);
        // the work ends a second into the wait
        QVERIFY(QProcess::startDetached(s("sh"), {s("-c"), s("sleep 1; touch '%1'").arg(slowMayEnd)}));
        auto waited = run(s("slow"), {s("echo"), s("dup")}, {s("--wait"), s("10s")});
        QCOMPARE(waited.exitCode, 0);
        QCOMPARE(waited.out, QByteArray("slow-result\n"));
        QVERIFY(slow.waitForFinished(10000));
        QCOMPARE(slow.exitCode(), 0);
        // a wait that runs out is still "in progress"
        const QString go = tmp.filePath(s("slower-may-end"));
        QProcess slower;
        slower.start(idemtest::idemctlPath(),
                     common + QStringList{s("run"), s("--key"), s("slower"), s("--"), s("sh"), s("-c"),
                                          s("while [ ! -e '%1' ]; do sleep 0.05; done").arg(go)});
        QVERIFY(slower.waitForStarted());
        QTRY_VERIFY_WITH_TIMEOUT(ctl({s("inspect"), s("slower")}).exitCode == 0, 5000);
        const auto timedOut = run(s("slower"), {s("true")}, {s("--wait"), s("200ms")});
        QFile(go).open(QIODevice::WriteOnly);
        QCOMPARE(timedOut.exitCode, 75);
        QVERIFY(slower.waitForFinished(10000));
        QCOMPARE(slower.exitCode(), 0);
    }

    void failurePolicies()
    {
        const QString marker = tmp.filePath(s("release-runs"));
        const QStringList failing = {s("sh"), s("-c"), s("echo x >> '%1'; exit 2").arg(marker)};
        QCOMPARE(run(s("rel"), failing, {s("--on-failure"), s("release")}).exitCode, 2);
        QCOMPARE(run(s("rel"), failing, {s("--on-failure"), s("release")}).exitCode, 2);
        QFile f(marker);
        QVERIFY(f.open(QIODevice::ReadOnly));
        QCOMPARE(f.readAll(), QByteArray("x\nx\n")); // released: ran again
        QCOMPARE(run(s("term"), {s("false")}, {s("--on-failure"), s("terminal")}).exitCode, 1);
        auto dup = run(s("term"), {s("true")});
        QCOMPARE(dup.exitCode, 79);
        oneLineError(dup);
        QCOMPARE(run(s("x"), {s("true")}, {s("--on-failure"), s("sometimes")}).exitCode, 64);
        // a command that cannot start is not stored as the result
        QCOMPARE(run(s("typo"), {s("/nonexistent/cmd")}).exitCode, 127);
        QCOMPARE(run(s("typo"), {s("echo"), s("fixed")}).out, QByteArray("fixed\n"));
    }

    void outputOverTheCapIsTruncatedNotRefused()
    {
        auto big = run(s("big"), {s("sh"), s("-c"), s("head -c 5000 /dev/zero | tr '\\0' a")},
                       {s("--max-response"), s("1KiB")});
        QCOMPARE(big.exitCode, 0);
        QCOMPARE(big.out.size(), 5000); // the live run prints everything
        auto replay = run(s("big"), {s("true")});
        QCOMPARE(replay.exitCode, 0);
        QVERIFY(replay.out.size() > 0 && replay.out.size() < 1024);
        QVERIFY(big.out.startsWith(replay.out));
    }

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

    void badInput_data()
    {
        QTest::addColumn<QStringList>("args");
        QTest::newRow("no key") << QStringList{s("run"), s("--"), s("true")};
        QTest::newRow("empty key") << QStringList{s("run"), s("--key"), s(""), s("--"), s("true")};
        QTest::newRow("huge key") << QStringList{s("run"), s("--key"), QString(2000, QLatin1Char('k')), s("--"), s("true")};
        QTest::newRow("no command") << QStringList{s("run"), s("--key"), s("k")};
        QTest::newRow("bad lease") << QStringList{s("run"), s("--key"), s("k"), s("--lease"), s("soon"), s("--"), s("true")};
        QTest::newRow("unknown option") << QStringList{s("run"), s("--key"), s("k"), s("--frobnicate"), s("--"), s("true")};
        QTest::newRow("unknown command") << QStringList{s("launch")};
        // before the command only global options: the others are named, not taken for a value
        QTest::newRow("unknown option before the command") << QStringList{s("--bogus"), s("list")};
        QTest::newRow("command's flag before it") << QStringList{s("--json"), s("list")};
        QTest::newRow("global option without value") << QStringList{s("--namespace")};
        QTest::newRow("inspect two ids") << QStringList{s("inspect"), s("a"), s("b")};
        // the audit trail names who acted
        QTest::newRow("purge by nobody") << QStringList{s("purge"), s("a"), s("--by"), s("")};
        QTest::newRow("force-fail by blanks") << QStringList{s("force-fail"), s("a"), s("--by"), s("  ")};
        QTest::newRow("bulk purge by nobody") << QStringList{s("purge"), s("--state"), s("completed"), s("--yes"), s("--by"), s("")};
        QTest::newRow("by with a newline") << QStringList{s("purge"), s("a"), s("--by"), s("bob\nalice")};
    }
    void badInput()
    {
        QFETCH(QStringList, args);
        auto r = ctl(args);
        QCOMPARE(r.exitCode, 64);
        oneLineError(r);
    }

    // what those checks let through: global options in every form before the command
    void globalOptionsBeforeTheCommand()
    {
        const QString url = QString::fromStdString(idemtest::sharedRedisUrl());
        auto r = idemtest::runIdemctl({s("--url=") + url, s("--namespace=") + common.last(), s("list")});
        QCOMPARE(r.exitCode, 0);
        r = idemtest::runIdemctl({s("--url"), url, s("--namespace"), common.last(), s("stats"), s("--json")});
        QCOMPARE(r.exitCode, 0);
        r = idemtest::runIdemctl({s("-h")});
        QCOMPARE(r.exitCode, 0);
        QVERIFY(r.out.startsWith("usage: idemctl"));
    }

    void badUrlAndUnreachableServer()
    {
        const QString marker = tmp.filePath(s("never"));
        const QStringList cmd = {s("run"), s("--key"), s("k"), s("--"), s("touch"), marker};
        auto badUrl = idemtest::runIdemctl(QStringList{s("--url"), s("http://nope")} + cmd);
        QCOMPARE(badUrl.exitCode, 64);
        oneLineError(badUrl);
        const idemtest::ClosedPort closed;
        const int port = closed.port();
        auto down = idemtest::runIdemctl(QStringList{s("--url"), s("redis://127.0.0.1:%1").arg(port)} + cmd);
        QCOMPARE(down.exitCode, 69);
        oneLineError(down);
        QVERIFY(down.err.contains("not run"));
        QVERIFY(!QFile::exists(marker)); // fail closed
        // IDEM_URL is the default
        QProcess p;
        auto env = QProcessEnvironment::systemEnvironment();
        env.insert(s("IDEM_URL"), s("redis://127.0.0.1:%1").arg(port));
        p.setProcessEnvironment(env);
        p.start(idemtest::idemctlPath(), cmd);
        QVERIFY(p.waitForFinished(10000));
        QCOMPARE(p.exitCode(), 69);
    }

    // Credentials Redis refuses (a wrong password, none given, a disabled user) cannot get better by
    // retrying: exit 77 as for a missing permission, not 69, in one line that says so, CMD not run
    void refusedCredentialsExit77()
    {
        idem::LocalServerOptions o;
        o.extraArgs = {"--requirepass", "right"};
        idem::LocalServer server(o);
        idem::ConnectionOptions admin = server.connectionOptions();
        admin.password = "right";
        idem::Connection c(admin);
        c.checked({"ACL", "SETUSER", "gone", "off", ">pw", "~*", "+@all"});
        c.checked({"ACL", "SETUSER", "mute", "on", ">pw", "~*", "-@all"});
        const QString marker = tmp.filePath(s("never-refused"));
        const auto url = [&server](const char* userinfo) {
            return s("redis://%1@127.0.0.1:%2/0").arg(s(userinfo)).arg(server.port());
        };
        const auto says = [](const idemtest::ProcessResult& r, const char* what) {
            return r.err.contains(what) ? QByteArray() : "no \"" + QByteArray(what) + "\" in: " + r.err;
        };

        auto r = idemtest::runIdemctl({s("--url"), url("default:wrong"), s("run"), s("--key"), s("k"), s("--"),
                                       s("touch"), marker});
        QCOMPARE(r.exitCode, 77);
        oneLineError(r);
        for (const char* what : {"idemctl run: credentials refused: ", "WRONGPASS", "check the user and password",
                                 "retrying will not help; command not run)"})
            QVERIFY2(says(r, what).isEmpty(), says(r, what).constData());
        QVERIFY(!r.err.contains("wrong")); // the password is never printed
        QVERIFY(!QFile::exists(marker));

        // the operator commands, the same
        r = idemtest::runIdemctl({s("--url"), url("default:wrong"), s("list")});
        QCOMPARE(r.exitCode, 77);
        oneLineError(r);
        QVERIFY2(says(r, "idemctl list: credentials refused: ").isEmpty(), r.err.constData());
        // no password given
        r = idemtest::runIdemctl({s("--url"), s("redis://127.0.0.1:%1/0").arg(server.port()), s("inspect"), s("k")});
        QCOMPARE(r.exitCode, 77);
        oneLineError(r);
        QVERIFY2(says(r, "NOAUTH").isEmpty() && says(r, "credentials refused").isEmpty(), r.err.constData());
        // a disabled user
        r = idemtest::runIdemctl({s("--url"), url("gone:pw"), s("stats")});
        QCOMPARE(r.exitCode, 77);
        oneLineError(r);
        QVERIFY2(says(r, "WRONGPASS").isEmpty(), r.err.constData());
        // a user let in but allowed nothing: the missing permission, in its own words
        r = idemtest::runIdemctl({s("--url"), url("mute:pw"), s("stats")});
        QCOMPARE(r.exitCode, 77);
        oneLineError(r);
        QVERIFY2(says(r, "NOPERM").isEmpty() && !r.err.contains("credentials refused"), r.err.constData());
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

    // A key that is not UTF-8 comes out of list --json exact (key_base64: its bytes; "key" alone
    // has U+FFFD where they were) and goes back in through --key-base64: inspect, purge
    void keysThatAreNotUtf8RoundTrip()
    {
        idem::Connection c(idemtest::sharedRedis());
        const std::string ns = common.at(3).toStdString();
        const std::string raw = ns + "-raw:" + std::string("\xff\xfe\x01id\xff", 6);
        const std::string rec = ns + ":{" + std::string("\xff\xff", 2) + "}"; // an idem-shaped record
        c.checked({"SET", raw, "cache entry", "EX", "600"});
        c.checked({"HSET", rec, "state", "COMPLETED", "token", "t", "fence", "1", "response", "ok"});
        const auto listed = ctl({s("list"), s("--pattern"), QString::fromStdString(ns + "*"), s("--json")});
        QCOMPARE(listed.exitCode, 0);
        std::map<std::string, QString> b64; // the key's bytes, from the JSON
        for (const QByteArray& line : listed.out.split('\n')) {
            const QJsonObject o = QJsonDocument::fromJson(line).object();
            if (o.isEmpty())
                continue;
            QVERIFY2(o.contains(s("key_base64")), line.constData());
            const QString v = o.value(s("key_base64")).toString();
            b64[QByteArray::fromBase64(v.toLatin1()).toStdString()] = v;
        }
        QCOMPARE(b64.size(), std::size_t(2));
        QVERIFY(b64.count(raw) && b64.count(rec));
        auto j = QJsonDocument::fromJson(ctl({s("inspect"), s("--key-base64"), b64[raw], s("--json")}).out).object();
        QCOMPARE(j.value(s("state")).toString(), s("UNKNOWN"));
        QCOMPARE(j.value(s("key_base64")).toString(), b64[raw]);
        QCOMPARE(ctl({s("purge"), s("--key-base64"), b64[raw], s("--reason"), s("stale cache")}).exitCode, 0);
        QCOMPARE(ctl({s("purge"), s("--key-base64"), b64[rec], s("--reason"), s("rerun")}).exitCode, 0);
        QCOMPARE(idem::reply::integer(c.checked({"EXISTS", raw, rec}).get()), std::int64_t(0));
        QCOMPARE(ctl({s("inspect"), s("--key-base64"), b64[rec]}).exitCode, 66);
        // a UTF-8 key is as it was; bad base64, or both forms, is a usage error
        c.checked({"SET", ns + "-plain:\xc3\xa9", "x", "EX", "600"});
        j = QJsonDocument::fromJson(ctl({s("inspect"), s("--key"), QString::fromStdString(ns + "-plain:\xc3\xa9"), s("--json")}).out)
                .object();
        QCOMPARE(j.value(s("key")).toString(), QString::fromStdString(ns + "-plain:\xc3\xa9"));
        QVERIFY(!j.contains(s("key_base64")));
        QCOMPARE(ctl({s("inspect"), s("--key-base64"), s("//8")}).exitCode, 64);
        QCOMPARE(ctl({s("purge"), s("--key"), s("k"), s("--key-base64"), s("aw==")}).exitCode, 64);
    }

    // Keys (and what the records say) with control characters and bytes that are not UTF-8 print as
    // '?' in every text output: one line a key, nothing a terminal would act on, no line forged
    void serverTextIsMadeSafe()
    {
        const std::string ns = common.at(3).toStdString();
        const std::vector<std::string> ids = {
            std::string("nul\0after", 9),                    // a NUL cut the line (JDK-serialized keys)
            "esc\x1b]0;pwned\x07x",                          // sets the terminal's title
            "up\x1b[1A\x1b[2Kx",                             // erases the line above
            "fake}  (idem, FAILED)\nwould purge fake",        // forges a line
            "cr\rx", "del\x7fx", "c1\xc2\x9b" "2Jx", "bad\xff\xfex", "tab\tx",
        };
        idem::ConnectionPool pool(idemtest::sharedRedis(), 1);
        idem::Store store(pool, idem::StoreOptions{.keyNamespace = ns});
        for (const auto& id : ids) {
            const auto a = store.acquire(id);
            QCOMPARE(a.status, idem::AcquireStatus::Acquired);
            QCOMPARE(store.fail(a.ticket, idem::FailPolicy::Retryable, "boom\nstate      COMPLETED\x1b[31m").status,
                     idem::OwnerStatus::Ok);
        }
        const auto plain = store.acquire("plain-\xc3\xa9"); // UTF-8 as it is
        store.fail(plain.ticket, idem::FailPolicy::Retryable, "x");
        idem::Connection c(idemtest::sharedRedis());
        const std::string camel = ns + "-camel:" + std::string("\xac\xed\x00\x05t\x00\x03" "abc", 10);
        c.checked({"SET", camel, "1", "EX", "600"});

        const auto dry = ctl({s("purge"), s("--state"), s("failed"), s("--dry-run")});
        QCOMPARE(dry.exitCode, 0);
        QVERIFY2(unsafeText(dry.out).isEmpty(), unsafeText(dry.out).constData());
        const QList<QByteArray> lines = dry.out.trimmed().split('\n');
        QCOMPARE(lines.size(), qsizetype(ids.size() + 1));
        for (const QByteArray& line : lines)
            QVERIFY2(line.startsWith(QByteArray::fromStdString("would purge " + ns + ":{")) &&
                         line.endsWith("(idem, FAILED)"),
                     line.constData());
        QVERIFY(dry.out.contains(QByteArray::fromStdString("would purge " + ns + ":{nul?after}  (idem, FAILED)")));
        QVERIFY(dry.out.contains(":{plain-\xc3\xa9}"));
        // another library's key, read by a pattern: on one line, with what it is
        const auto other = ctl({s("purge"), s("--pattern"), QString::fromStdString(ns + "-camel:*"), s("--dry-run")});
        QVERIFY2(unsafeText(other.out).isEmpty(), unsafeText(other.out).constData());
        QCOMPARE(other.out.count('\n'), 1);
        QVERIFY2(other.out.contains(QByteArray::fromStdString(" " + ns + "-camel:????t??abc  (")), other.out.constData());
        const auto listed = ctl({s("list")});
        QVERIFY2(unsafeText(listed.out).isEmpty(), unsafeText(listed.out).constData());
        QCOMPARE(listed.out.count('\n'), qsizetype(ids.size() + 2)); // and the header

        for (const auto& id : ids) {
            const QString key = QString::fromLatin1(QByteArray::fromStdString(store.recordKey(id)).toBase64());
            const auto inspected = ctl({s("inspect"), s("--key-base64"), key});
            QCOMPARE(inspected.exitCode, 0);
            QVERIFY2(unsafeText(inspected.out).isEmpty(), unsafeText(inspected.out).constData());
            int keyLines = 0, stateLines = 0;
            for (const QByteArray& line : inspected.out.split('\n')) {
                keyLines += line.startsWith("key ");
                stateLines += line.startsWith("state ");
            }
            QCOMPARE(keyLines, 1);
            QCOMPARE(stateLines, 1); // the error's second line is indented under it, not a state
            const auto failed = ctl({s("force-fail"), s("--key-base64"), key, s("--reason"), s("again\nnow")});
            QCOMPARE(failed.exitCode, 0);
            QVERIFY2(unsafeText(failed.out + failed.err).isEmpty(), unsafeText(failed.out + failed.err).constData());
            QCOMPARE(failed.out.count('\n'), 1);
            const auto purged = ctl({s("purge"), s("--key-base64"), key, s("--reason"), s("x\x1b[2J")});
            QCOMPARE(purged.exitCode, 0);
            QVERIFY2(unsafeText(purged.out + purged.err).isEmpty(), unsafeText(purged.out + purged.err).constData());
            QCOMPARE(purged.out.count('\n'), 1);
            const auto gone = ctl({s("inspect"), s("--key-base64"), key});
            QCOMPARE(gone.exitCode, 66);
            QVERIFY2(unsafeText(gone.err).isEmpty(), unsafeText(gone.err).constData());
            QCOMPARE(gone.err.count('\n'), 1);
        }
        const auto audit = ctl({s("audit")});
        QVERIFY2(unsafeText(audit.out).isEmpty(), unsafeText(audit.out).constData());
        QCOMPARE(audit.out.count('\n'), qsizetype(2 * ids.size()));
    }

    // Unicode bidirectional controls in a key (or in what a record says) print as '?' in text
    // output: a right-to-left override would show "invoice-rcp.exe" reordered as another key (the
    // Trojan Source trick), and the reader would act on a key they did not see
    void bidiControlsAreMasked()
    {
        const std::string ns = common.at(3).toStdString();
        // U+202E, U+2066, U+2069, U+200F, U+061C, U+202A: each shown as '?'; U+00E9 stays
        const std::vector<std::pair<std::string, std::string>> ids = {
            {"inv\xe2\x80\xae" "exe.pdf", "inv?exe.pdf"},
            {"a\xe2\x81\xa6" "b\xe2\x81\xa9" "c", "a?b?c"},
            {"rlm\xe2\x80\x8fx\xd8\x9cy\xe2\x80\xaaz", "rlm?x?y?z"},
            {"caf\xc3\xa9\xe2\x80\x8e", "caf\xc3\xa9?"},
        };
        idem::ConnectionPool pool(idemtest::sharedRedis(), 1);
        idem::Store store(pool, idem::StoreOptions{.keyNamespace = ns});
        for (const auto& [id, shown] : ids) {
            const auto a = store.acquire(id);
            QCOMPARE(a.status, idem::AcquireStatus::Acquired);
            QCOMPARE(store.fail(a.ticket, idem::FailPolicy::Retryable, "boom \xe2\x80\xae" + shown).status,
                     idem::OwnerStatus::Ok);
        }
        const auto bidi = [](const QByteArray& out) {
            for (const char* c : {"\xe2\x80\xae", "\xe2\x81\xa6", "\xe2\x81\xa9", "\xe2\x80\x8f", "\xd8\x9c",
                                  "\xe2\x80\xaa", "\xe2\x80\x8e"})
                if (out.contains(c))
                    return true;
            return false;
        };
        const auto listed = ctl({s("list")});
        QCOMPARE(listed.exitCode, 0);
        QVERIFY2(!bidi(listed.out), listed.out.toPercentEncoding(" /:{}()_,;=.'").constData());
        const auto dry = ctl({s("purge"), s("--state"), s("failed"), s("--dry-run")});
        QVERIFY2(!bidi(dry.out), dry.out.toPercentEncoding(" /:{}()_,;=.'").constData());
        for (const auto& [id, shown] : ids) {
            QVERIFY2(listed.out.contains(QByteArray::fromStdString(shown)), listed.out.constData());
            QVERIFY2(dry.out.contains(QByteArray::fromStdString("would purge " + ns + ":{" + shown + "}  (idem, FAILED)")),
                     dry.out.constData());
            const QString key = QString::fromLatin1(QByteArray::fromStdString(store.recordKey(id)).toBase64());
            const auto inspected = ctl({s("inspect"), s("--key-base64"), key});
            QCOMPARE(inspected.exitCode, 0);
            QVERIFY2(!bidi(inspected.out), inspected.out.toPercentEncoding(" /:{}()_,;=.'").constData());
            QVERIFY2(inspected.out.contains(QByteArray::fromStdString("error      boom ?" + shown)),
                     inspected.out.constData());
        }
        // --json keeps the bytes as they are: it is read by programs, not by eyes
        const auto json = ctl({s("list"), s("--json")});
        QVERIFY(json.out.contains("\xe2\x80\xae"));
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

    void demo()
    {
        auto r = idemtest::runIdemctl({s("demo"), s("--ids"), s("3"), s("--duplicates"), s("3")}, 60000);
        QCOMPARE(r.exitCode, 0);
        QVERIFY(r.out.contains("0 double charges"));
        QVERIFY(r.out.contains("3 executed"));
    }
};

QTEST_GUILESS_MAIN(TestIdemctl)
#include "tst_idemctl.moc"
