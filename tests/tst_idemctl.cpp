// idemctl run end to end against the fixture's redis-server: runs once and replays, payloads,
// work in progress, failure policies, the command line's mistakes, a server it cannot reach or
// that refuses its credentials, the demo. tst_idemctlops.cpp has list, inspect, force-fail and
// purge; tst_idemctltext.cpp keys and text that are not plain.
#include "idem/redis/localserver.h"
#include "idemctltestsupport.h"

#include <QProcess>

class TestIdemctl : public IdemctlTest {
    Q_OBJECT

private slots:
    void init() { setUp(); }

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
