// What idemctl prints of keys and text that are not plain, against the fixture's redis-server:
// keys that are not UTF-8 round-trip through key_base64 (and a record's values keep their bytes in
// <field>_base64), and control characters, bytes that are not UTF-8 and bidirectional controls
// print as '?'. tst_idemctlops.cpp has the operator commands.
#include "idem/engine/store.h"
#include "idem/redis/pool.h"
#include "idem/utf8.h"
#include "idemctltestsupport.h"

#include <QJsonDocument>
#include <QJsonObject>

#include <map>

namespace {
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

class TestIdemctlText : public IdemctlTest {
    Q_OBJECT

private slots:
    void init() { setUp(); }

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

    // What a record holds that is not UTF-8 (a binary response, a fingerprint, an error) comes out of
    // inspect --json whole: <field>_base64 beside the field, whose JSON string cannot hold the bytes
    void valuesThatAreNotUtf8KeepTheirBytes()
    {
        idem::Connection c(idemtest::sharedRedis());
        const std::string ns = common.at(3).toStdString();
        const std::string response("\x00\xff" "A", 3), fp("\xfe" "fp", 3);
        c.checked({"HSET", ns + ":{bin}", "state", "COMPLETED", "token", "t", "fence", "1", "response", response, "fp", fp});
        const auto shown = ctl({s("inspect"), s("bin"), s("--json")});
        QCOMPARE(shown.exitCode, 0);
        const QJsonObject j = QJsonDocument::fromJson(shown.out).object();
        QCOMPARE(QByteArray::fromBase64(j.value(s("response_base64")).toString().toLatin1()),
                 QByteArray(response.data(), 3));
        QCOMPARE(QByteArray::fromBase64(j.value(s("fingerprint_base64")).toString().toLatin1()), QByteArray(fp.data(), 3));
        QVERIFY(!j.contains(s("owner_base64"))); // UTF-8 as it is: the field alone
        QCOMPARE(j.value(s("owner")).toString(), s("t"));
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
};

QTEST_GUILESS_MAIN(TestIdemctlText)
#include "tst_idemctltext.moc"
