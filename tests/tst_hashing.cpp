// Pure logic: hashes, fingerprints, derived ids, URL and duration parsing.
#include "idem/duration.h"
#include "idem/errors.h"
#include "idem/engine/fingerprint.h"
#include "idem/hash.h"
#include "idem/redis/options.h"

#include <QtTest>

class TestHashing : public QObject {
    Q_OBJECT
private slots:
    void knownVectors()
    {
        QCOMPARE(idem::toHex(idem::sha1("abc")), std::string("a9993e364706816aba3e25717850c26c9cd0d89d"));
        QCOMPARE(idem::toHex(idem::sha256("abc")),
                 std::string("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
        QCOMPARE(idem::toHex(idem::sha256("")),
                 std::string("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
        // two-block message (56 bytes forces a second padding block)
        QCOMPARE(idem::toHex(idem::sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
                 std::string("248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"));
        QCOMPARE(idem::toHex(idem::sha1(std::string(1000000, 'a'))),
                 std::string("34aa973cd4c4daa4f61eeb2bdbad27316534016f"));
    }

    void uuidV5MatchesRfc()
    {
        // uuid.uuid5(uuid.NAMESPACE_DNS, "www.example.com")
        std::string dns;
        for (int b : {0x6b, 0xa7, 0xb8, 0x10, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8})
            dns.push_back(static_cast<char>(b));
        QCOMPARE(idem::uuidV5(dns, "www.example.com"), std::string("2ed6657d-e927-568b-95e1-2665a8aea6a2"));
    }

    void fingerprintIgnoresFieldOrderAndSpacing()
    {
        const auto a = idem::fingerprint(R"({"amount": 100, "currency": "EUR", "items": [1, 2]})");
        const auto b = idem::fingerprint(R"({"items":[1,2],"currency":"EUR","amount":100})");
        const auto c = idem::fingerprint(R"({"amount": 101, "currency": "EUR", "items": [1, 2]})");
        const auto d = idem::fingerprint(R"({"amount": 100, "currency": "EUR", "items": [2, 1]})");
        QVERIFY(a.starts_with("sha256:"));
        QCOMPARE(a, b);
        QVERIFY(a != c);
        QVERIFY(a != d); // array order is data
        QCOMPARE(idem::fingerprint(""), std::string());
        // not JSON: byte for byte
        QVERIFY(idem::fingerprint("a b") != idem::fingerprint("a  b"));
        QCOMPARE(idem::fingerprint("{broken"), "sha256:" + idem::toHex(idem::sha256("{broken")));
    }

    // Payloads that say different things never share a fingerprint, even where the JSON library
    // would read them alike; payloads that say the same thing in other words do share one.
    void fingerprintNeverMergesDifferentPayloads()
    {
        const auto fp = [](const char* json) { return idem::fingerprint(json); };
        // a member named twice: the library keeps the last, a consumer may keep the first
        QVERIFY(fp(R"({"amount":1,"amount":1000})") != fp(R"({"amount":1000})"));
        QCOMPARE(fp(R"({"amount":1,"amount":1000})"), "sha256:" + idem::toHex(idem::sha256(R"({"amount":1,"amount":1000})")));
        QVERIFY(fp(R"({"a":{"x":1,"x":2}})") != fp(R"({"a":{"x":2}})"));
        // numbers a double cannot hold: past 64 bits, more digits than a double keeps
        QVERIFY(fp(R"({"amount":100000000000000000001})") != fp(R"({"amount":100000000000000000000})"));
        QVERIFY(fp(R"({"amount":0.1})") != fp(R"({"amount":0.1000000000000000055511151231257827})"));
        QVERIFY(fp(R"([1e400])") != fp(R"([2e400])"));
        QVERIFY(fp(R"([0.1e-9223372036854775808])") != fp(R"([0.2e-9223372036854775808])")); // (no overflow)
        QVERIFY(fp(R"([1e-99999999999999999999])") != fp(R"([0.0])"));
        // nested deeper than the JSON library's recursion can take: its bytes, no crash
        const std::string deep = std::string(40'000, '[') + std::string(40'000, ']');
        QCOMPARE(idem::fingerprint(deep), "sha256:" + idem::toHex(idem::sha256(deep)));
        // the same numbers written otherwise still agree, floats included
        QCOMPARE(fp(R"({"amount": 12.5, "fx": 0.1})"), fp(R"({"fx":0.10,"amount":1.25e1})"));
        QCOMPARE(fp(R"([100.0])"), fp(R"([1e2])"));
        QCOMPARE(fp(R"({"a":"\u0041", "b": 1.5})"), fp(R"({"b":1.5,"a":"A"})"));
        QVERIFY(fp(R"([12.5])") != fp(R"([12.50001])"));
        // the same name in two objects is no repetition
        QCOMPARE(fp(R"({"a":{"x":1.5},"b":{"x":2.5}})"), fp(R"({"b":{"x":2.5},"a":{"x":1.5}})"));
    }

    void derivedIdsIgnoreFieldOrder()
    {
        const auto a = idem::deriveId("payments", {{"order", "42"}, {"line", "7"}});
        const auto b = idem::deriveId("payments", {{"line", "7"}, {"order", "42"}});
        QCOMPARE(a, b);
        QCOMPARE(a.size(), std::size_t(36));
        QCOMPARE(a[14], '5'); // version 5
        QVERIFY(a != idem::deriveId("refunds", {{"order", "42"}, {"line", "7"}}));
        QVERIFY(a != idem::deriveId("payments", {{"order", "42"}, {"line", "8"}}));
        // no ambiguity between field boundaries
        QVERIFY(idem::deriveId("n", {{"a", "bc"}}) != idem::deriveId("n", {{"ab", "c"}}));
        const auto h1 = idem::deriveId("payments", {{"order", "42"}}, idem::IdScheme::Sha256);
        QVERIFY(h1.starts_with("sha256:"));
        QCOMPARE(h1, idem::deriveId("payments", {{"order", "42"}}, idem::IdScheme::Sha256));
        QVERIFY_THROWS_EXCEPTION(idem::UsageError, idem::deriveId("n", {{"a", "1"}, {"a", "2"}}));
        // binary field values are ids too, and distinct ones stay distinct
        QVERIFY(idem::deriveId("n", {{"a", std::string("\xff\x00", 2)}}) !=
                idem::deriveId("n", {{"a", std::string("\xfe\x00", 2)}}));
    }

    void urls_data()
    {
        QTest::addColumn<QString>("url");
        QTest::addColumn<QString>("host");
        QTest::addColumn<int>("port");
        QTest::addColumn<int>("db");
        QTest::addColumn<QString>("user");
        QTest::addColumn<QString>("password");
        QTest::addColumn<QString>("socket");
        QTest::newRow("plain") << "redis://127.0.0.1:6379/0" << "127.0.0.1" << 6379 << 0 << "" << "" << "";
        QTest::newRow("no port") << "redis://cache" << "cache" << 6379 << 0 << "" << "" << "";
        QTest::newRow("db") << "redis://h:7000/3" << "h" << 7000 << 3 << "" << "" << "";
        QTest::newRow("acl") << "redis://ops:s%40cret@h:1/2" << "h" << 1 << 2 << "ops" << "s@cret" << "";
        QTest::newRow("password only") << "redis://:pw@h" << "h" << 6379 << 0 << "" << "pw" << "";
        QTest::newRow("user only") << "redis://ops@h" << "h" << 6379 << 0 << "ops" << "" << "";
        QTest::newRow("ipv6") << "redis://[::1]:6380" << "::1" << 6380 << 0 << "" << "" << "";
        QTest::newRow("unix") << "unix:///run/redis.sock?db=4" << "127.0.0.1" << 6379 << 4 << "" << ""
                              << "/run/redis.sock";
        QTest::newRow("tls") << "rediss://ops:pw@cache.example:6380/1" << "cache.example" << 6380 << 1 << "ops"
                             << "pw" << "";
        // a password may hold '/' and '@' unescaped: the credentials end at the last '@'
        QTest::newRow("slash in password") << "redis://ops:s3cr/et@h:1/2" << "h" << 1 << 2 << "ops" << "s3cr/et" << "";
        QTest::newRow("at in password") << "redis://ops:a@cret@h" << "h" << 6379 << 0 << "ops" << "a@cret" << "";
    }
    void urls()
    {
        QFETCH(QString, url);
        const auto o = idem::ConnectionOptions::fromUrl(url.toStdString());
        QTEST(QString::fromStdString(o.host), "host");
        QTEST(o.port, "port");
        QTEST(o.db, "db");
        QTEST(QString::fromStdString(o.user), "user");
        QTEST(QString::fromStdString(o.password), "password");
        QTEST(QString::fromStdString(o.unixSocket), "socket");
        QVERIFY(o.describe().find("cret") == std::string::npos); // never shows the password
    }

    // TLS and Sentinel URL forms, and how they print back (never the password)
    void tlsAndSentinelUrls()
    {
        auto o = idem::ConnectionOptions::fromUrl("rediss://cache:6380/2");
        QVERIFY(o.tls.enabled);
        QCOMPARE(o.describe(), std::string("rediss://cache:6380/2"));
        QCOMPARE(idem::ConnectionOptions::fromUrl(o.describe()).describe(), o.describe());
        o = idem::ConnectionOptions::fromUrl("redis-sentinel://svc:s3cret@s1,s2:26380,[::1]:5/3#orders");
        QVERIFY(o.viaSentinel());
        QVERIFY(!o.tls.enabled);
        QCOMPARE(o.sentinel.master, std::string("orders"));
        QCOMPARE(o.sentinel.nodes.size(), std::size_t(3));
        QCOMPARE(o.sentinel.nodes[0].port, 26379);
        QCOMPARE(o.sentinel.nodes[1].host, std::string("s2"));
        QCOMPARE(o.sentinel.nodes[1].port, 26380);
        QCOMPARE(o.sentinel.nodes[2].host, std::string("::1"));
        QCOMPARE(o.user, std::string("svc"));
        QCOMPARE(o.password, std::string("s3cret")); // the data node's
        QCOMPARE(o.db, 3);
        QCOMPARE(o.describe(), std::string("redis-sentinel://svc@s1:26379,s2:26380,[::1]:5/3#orders"));
        o = idem::ConnectionOptions::fromUrl("rediss-sentinel://s1#m%20x");
        QVERIFY(o.tls.enabled && o.viaSentinel());
        QCOMPARE(o.sentinel.master, std::string("m x"));
        // a master's name with what a URL must escape prints back as the same name
        o = idem::ConnectionOptions::fromUrl("redis-sentinel://s1#50%25off%23a%2Fb");
        QCOMPARE(o.sentinel.master, std::string("50%off#a/b"));
        QCOMPARE(o.describe(), std::string("redis-sentinel://s1:26379/0#50%25off%23a%2Fb"));
        QCOMPARE(idem::ConnectionOptions::fromUrl(o.describe()).sentinel.master, o.sentinel.master);
    }

    void badUrls_data()
    {
        QTest::addColumn<QString>("url");
        QTest::newRow("scheme") << "http://h:1";
        QTest::newRow("empty") << "";
        QTest::newRow("port text") << "redis://h:abc";
        QTest::newRow("port range") << "redis://h:70000";
        QTest::newRow("db text") << "redis://h:1/x";
        QTest::newRow("no host") << "redis://:6379";
        QTest::newRow("sentinel without master") << "redis-sentinel://h1,h2";
        QTest::newRow("sentinel bad port") << "redis-sentinel://h1:1,h2:x#m";
        QTest::newRow("master on plain url") << "redis://h:1#m";
        QTest::newRow("several plain hosts") << "redis://h1,h2:1";
        QTest::newRow("bad escape") << "redis://u:%zz@h";
        QTest::newRow("relative socket") << "unix://redis.sock";
        QTest::newRow("bad db, secret") << "redis://ops:s3cr3t@h:1/xyz";
        QTest::newRow("bad port, secret with a slash") << "redis://ops:s3cr3t/x@h:99999/0";
    }
    void badUrls()
    {
        QFETCH(QString, url);
        try {
            idem::ConnectionOptions::fromUrl(url.toStdString());
            QFAIL("accepted a bad URL");
        } catch (const idem::UsageError& e) {
            const std::string msg = e.what();
            QVERIFY(msg.find('\n') == std::string::npos);
            QVERIFY(msg.starts_with("bad URL"));
            QVERIFY2(msg.find("s3cr3t") == std::string::npos, msg.c_str()); // never the password
        }
    }

    void durations()
    {
        QCOMPARE(idem::parseDuration("250ms").count(), 250);
        QCOMPARE(idem::parseDuration("30s").count(), 30000);
        QCOMPARE(idem::parseDuration("1.5s").count(), 1500);
        QCOMPARE(idem::parseDuration("5m").count(), 300000);
        QCOMPARE(idem::parseDuration("2h").count(), 7200000);
        QCOMPARE(idem::parseDuration("1d").count(), 86400000);
        QCOMPARE(idem::parseDuration("10").count(), 10000);
        QVERIFY_THROWS_EXCEPTION(idem::UsageError, idem::parseDuration("ten"));
        QVERIFY_THROWS_EXCEPTION(idem::UsageError, idem::parseDuration("-5s"));
        QVERIFY_THROWS_EXCEPTION(idem::UsageError, idem::parseDuration(""));
        for (const char* bad : {"1e3s", "1E3", "inf", "nan", "1.2.3s", ".s", "0x10s", "+5s"})
            QVERIFY_THROWS_EXCEPTION(idem::UsageError, idem::parseDuration(bad));
        QCOMPARE(idem::parseDuration(".5s").count(), 500);
        QVERIFY_THROWS_EXCEPTION(idem::UsageError, idem::parseSize("1e6"));
        QCOMPARE(idem::formatDuration(idem::Millis(90061000)), std::string("1d1h1m1s"));
        QCOMPARE(idem::parseDuration("1d1h1m1s").count(), 90061000); // what formatDuration prints reads back
        QCOMPARE(idem::parseDuration("1h30m").count(), 5400000);
        QVERIFY_THROWS_EXCEPTION(idem::UsageError, idem::parseDuration("30m1h")); // largest first
        QCOMPARE(idem::parseSize("512KiB"), std::size_t(524288));
        QCOMPARE(idem::parseSize("100"), std::size_t(100));
        QVERIFY_THROWS_EXCEPTION(idem::UsageError, idem::parseSize("lots"));
    }
};

QTEST_GUILESS_MAIN(TestHashing)
#include "tst_hashing.moc"
