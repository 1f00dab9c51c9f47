// The gateway's stored answer as core decodes it (the console's inspector and the gateway's
// replays read it through decodeHttpAnswer), and how a body is shown: JSON pretty-printed, text
// as text, binary as a hex dump. Pure decoding: no server.
#include "idem/format/httpanswer.h"
#include "idem/format/jsonscan.h"

#include <QtTest>

namespace json = idem::json;

class TestHttpAnswer : public QObject {
    Q_OBJECT
private slots:
    void decodesWhatTheGatewayStores()
    {
        const std::string stored =
            "{\"gateway\":1,\"method\":\"POST\",\"route\":\"/orders\",\"status\":201,"
            "\"headers\":[[\"Content-Type\",\"application/json\"],[\"Location\",\"/orders/7\"]],\"body\":\"{\\\"id\\\":7,\\\"\\u00e9\\\":[]}\"}";
        const auto a = idem::decodeHttpAnswer(stored);
        QVERIFY(a);
        QCOMPARE(a->method, std::string("POST"));
        QCOMPARE(a->route, std::string("/orders"));
        QCOMPARE(a->status, 201);
        QCOMPARE(a->headers.size(), std::size_t(2));
        QCOMPARE(a->headers[1].second, std::string("/orders/7"));
        QCOMPARE(*a->header("content-type"), std::string("application/json"));
        QVERIFY(!a->header("Set-Cookie"));
        QCOMPARE(a->body, std::string("{\"id\":7,\"\xc3\xa9\":[]}"));
        QVERIFY(!a->bodyBase64);
    }

    void binaryBodyFromBase64()
    {
        const auto a = idem::decodeHttpAnswer(
            "{\"gateway\":1,\"method\":\"PUT\",\"route\":\"/b\",\"status\":200,\"headers\":[],\"body_base64\":\"AAH/YWJj\"}");
        QVERIFY(a);
        QVERIFY(a->bodyBase64);
        QCOMPARE(a->body, std::string("\x00\x01\xff" "abc", 6));
        // padding of one and two
        QCOMPARE(idem::decodeHttpAnswer("{\"gateway\":1,\"status\":200,\"body_base64\":\"YWI=\"}")->body, std::string("ab"));
        QCOMPARE(idem::decodeHttpAnswer("{\"gateway\":1,\"status\":200,\"body_base64\":\"YQ==\"}")->body, std::string("a"));
        QCOMPARE(idem::decodeHttpAnswer("{\"gateway\":1,\"status\":204}")->body, std::string());
    }

    void notAnAnswer_data()
    {
        QTest::addColumn<QByteArray>("stored");
        QTest::newRow("other response") << QByteArray("{\"status\":200,\"body\":\"x\"}");
        QTest::newRow("plain text") << QByteArray("done");
        QTest::newRow("version 2") << QByteArray("{\"gateway\":2,\"status\":200}");
        QTest::newRow("status text") << QByteArray("{\"gateway\":1,\"status\":\"200\"}");
        QTest::newRow("status 99") << QByteArray("{\"gateway\":1,\"status\":99}");
        QTest::newRow("status 600") << QByteArray("{\"gateway\":1,\"status\":600}");
        QTest::newRow("status fraction") << QByteArray("{\"gateway\":1,\"status\":200.5}");
        QTest::newRow("cut") << QByteArray("{\"gateway\":1,\"status\":200,\"body\":\"ab");
        QTest::newRow("bad base64") << QByteArray("{\"gateway\":1,\"status\":200,\"body_base64\":\"YW*=\"}");
        QTest::newRow("base64 length") << QByteArray("{\"gateway\":1,\"status\":200,\"body_base64\":\"YWI\"}");
        QTest::newRow("base64 number") << QByteArray("{\"gateway\":1,\"status\":200,\"body_base64\":12}");
        QTest::newRow("headers broken") << QByteArray("{\"gateway\":1,\"status\":200,\"headers\":[[\"a\",\"b\"] 1]}");
    }
    void notAnAnswer()
    {
        QFETCH(QByteArray, stored);
        QVERIFY(!idem::decodeHttpAnswer(stored.toStdString()));
    }

    void prettyJson()
    {
        QCOMPARE(*json::pretty(" {\"a\":[1, 2,{}],\"b\":{\"c\":\"x,y:{[\\\"]\"},\"d\":[ ]} "),
                 std::string("{\n  \"a\": [\n    1,\n    2,\n    {}\n  ],\n  \"b\": {\n    \"c\": \"x,y:{[\\\"]\"\n  },\n"
                             "  \"d\": []\n}"));
        QCOMPARE(*json::pretty("42"), std::string("42"));
        QVERIFY(!json::pretty("{\"a\":}"));
        QVERIFY(!json::pretty("{} x"));
        const auto items = json::arrayElements("[ \"a\", {\"b\":[1]} ,3]");
        QVERIFY(items);
        QCOMPARE(items->size(), std::size_t(3));
        QCOMPARE(std::string((*items)[1]), std::string("{\"b\":[1]}"));
        QVERIFY(!json::arrayElements("{}"));
        QVERIFY(!json::arrayElements("[1,]"));
    }

    void bodyViews()
    {
        auto v = idem::viewBody("{\"id\":7}", "application/json");
        QCOMPARE(v.kind, idem::BodyKind::Json);
        QCOMPARE(v.text, std::string("{\n  \"id\": 7\n}"));
        QCOMPARE(v.bytes, std::size_t(8));
        // JSON without a type is still JSON; text/plain is shown as written
        QCOMPARE(idem::viewBody("[1,2]").kind, idem::BodyKind::Json);
        QCOMPARE(idem::viewBody("[1,2]", "text/plain; charset=utf-8").kind, idem::BodyKind::Text);
        v = idem::viewBody("created\norder 7 \xc3\xa9", "text/plain");
        QCOMPARE(v.kind, idem::BodyKind::Text);
        QCOMPARE(v.text, std::string("created\norder 7 \xc3\xa9"));
        QCOMPARE(idem::viewBody("").kind, idem::BodyKind::Empty);
        // cut on a character boundary, never inside é
        v = idem::viewBody("ab\xc3\xa9", {}, 3);
        QVERIFY(v.cut);
        QCOMPARE(v.text, std::string("ab"));

        const std::string binary("\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR\x00\x01", 18);
        v = idem::viewBody(binary, "image/png");
        QCOMPARE(v.kind, idem::BodyKind::Binary);
        QVERIFY(!v.cut);
        QCOMPARE(v.text, std::string("00000000  89 50 4e 47 0d 0a 1a 0a  00 00 00 0d 49 48 44 52  |.PNG........IHDR|\n"
                                     "00000010  00 01                                             |..|\n"));
        v = idem::viewBody(std::string(1000, '\x01'), {}, 64 * 1024, 32);
        QCOMPARE(v.kind, idem::BodyKind::Binary);
        QVERIFY(v.cut);
        QCOMPARE(std::count(v.text.begin(), v.text.end(), '\n'), 2L);
    }

    void utf8_data()
    {
        QTest::addColumn<QByteArray>("text");
        QTest::addColumn<bool>("ok");
        QTest::newRow("ascii") << QByteArray("abc") << true;
        QTest::newRow("4 bytes") << QByteArray("\xf0\x9f\x98\x80") << true;
        QTest::newRow("cut") << QByteArray("\xf0\x9f\x98") << false;
        QTest::newRow("overlong") << QByteArray("\xc0\xaf") << false;
        QTest::newRow("surrogate") << QByteArray("\xed\xa0\x80") << false;
        QTest::newRow("above U+10FFFF") << QByteArray("\xf4\x90\x80\x80") << false;
        QTest::newRow("lone continuation") << QByteArray("a\x80") << false;
    }
    void utf8()
    {
        QFETCH(QByteArray, text);
        QFETCH(bool, ok);
        QCOMPARE(idem::isUtf8(text.toStdString()), ok);
    }
};

QTEST_GUILESS_MAIN(TestHttpAnswer)
#include "tst_httpanswer.moc"
