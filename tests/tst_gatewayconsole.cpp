// The gateway's records in the console: the HTTP demo (an upstream, an idem-gateway and a client
// on loopback, as idem-console runs it beside its embedded server) answers 201, replays, 409 and
// 422 for real, its records are listed under the demo's namespace, and the inspector shows their
// method, route, status and headers as fields with the body pretty-printed, as text or as hex.
#include "httpdemo.h"
#include "inspectorpanel.h"
#include "keytablemodel.h"
#include "keyfilterproxy.h"
#include "mainwindow.h"
#include "testsupport.h"

#include "idem/format/httpanswer.h"
#include "idem/redis/connection.h"
#include "idem/redis/reply.h"

#include <QApplication>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTableView>
#include <QTemporaryDir>
#include <QTextBrowser>
#include <QtTest>

#include <map>

using namespace Qt::StringLiterals;

class TestGatewayConsole : public QObject {
    Q_OBJECT
    QTemporaryDir tmp;

    // The demo's records: key -> the stored answer (records still in flight or released have none).
    static std::map<std::string, std::optional<idem::HttpAnswer>> records(const std::string& ns)
    {
        idem::Connection c(idemtest::sharedRedis());
        std::map<std::string, std::optional<idem::HttpAnswer>> out;
        std::string cursor = "0";
        do {
            auto r = c.checked({"SCAN", cursor, "MATCH", ns + ":*", "COUNT", "500"});
            cursor = idem::reply::str(idem::reply::element(r.get(), 0));
            const redisReply* list = idem::reply::element(r.get(), 1);
            for (std::size_t i = 0; i < idem::reply::arraySize(list); ++i) {
                const std::string key = idem::reply::str(idem::reply::element(list, i));
                auto v = c.checked({"HGET", key, "response"});
                out[key] = idem::reply::isString(v.get()) ? idem::decodeHttpAnswer(idem::reply::str(v.get()))
                                                        : std::nullopt;
            }
        } while (cursor != "0");
        return out;
    }

    static QString keyOf(const std::map<std::string, std::optional<idem::HttpAnswer>>& recs, const char* route)
    {
        for (const auto& [key, a] : recs)
            if (a && a->route == route)
                return QString::fromStdString(key);
        return {};
    }

    static void select(MainWindow& w, const QString& key)
    {
        const int source = w.model()->rowOfKey(key);
        QVERIFY2(source >= 0, qPrintable(key));
        const QModelIndex i = w.proxy()->mapFromSource(w.model()->index(source, 0));
        w.table()->selectionModel()->setCurrentIndex(i, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    }

private slots:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

    void demoTrafficThroughTheGatewayShownInTheInspector()
    {
        const std::string ns = idemtest::uniqueNamespace("httpdemo");
        idem::gateway::HttpDemo::Options o;
        o.redis = idemtest::sharedRedis();
        o.keyNamespace = ns;
        o.tickMs = 120;
        o.upstreamDelayMs = 400;
        {
            idem::gateway::HttpDemo demo(o);
            QString error;
            QVERIFY2(demo.start(&error), qPrintable(error));
            QVERIFY(demo.gatewayPort() != 0 && demo.upstreamPort() != 0 && demo.gatewayPort() != demo.upstreamPort());
            // two rounds: every kind of answer, from the gateway in front of a real upstream
            QTRY_VERIFY_WITH_TIMEOUT(demo.counts().sent >= 20, 20000);
            const auto c = demo.counts();
            QVERIFY2(c.created >= 2 && c.replayed >= 2 && c.conflicts >= 1 && c.mismatches >= 1 &&
                         c.clientErrors >= 1 && c.serverErrors >= 1,
                     qPrintable(u"created %1 replayed %2 409 %3 422 %4 4xx %5 5xx %6 other %7"_s.arg(c.created)
                                    .arg(c.replayed).arg(c.conflicts).arg(c.mismatches).arg(c.clientErrors)
                                    .arg(c.serverErrors).arg(c.other)));
            QCOMPARE(c.other, 0);
        }

        const auto recs = records(ns);
        QVERIFY(recs.size() >= 6);
        for (const char* route : {"/orders", "/payments", "/receipts", "/labels"})
            QVERIFY2(!keyOf(recs, route).isEmpty(), route);
        QVERIFY(keyOf(recs, "/refunds").isEmpty()); // a 500 releases its key: nothing stored

        MainWindow::Options mo;
        mo.connection.url = QString::fromStdString(idemtest::sharedRedisUrl());
        mo.connection.keyNamespace = QString::fromStdString(ns);
        mo.auditPath = tmp.filePath(u"audit.jsonl"_s);
        MainWindow w(mo);
        QSignalSpy scans(&w, &MainWindow::scanCompleted);
        w.show();
        QVERIFY(scans.wait(10000));
        for (const auto& [key, a] : recs)
            QVERIFY2(w.model()->rowOfKey(QString::fromStdString(key)) >= 0, key.c_str());
        // a gateway's ids share long prefixes (credential digest, method): the id column cuts them in
        // the middle, so that their ends (route and key) stay in sight
        auto* ids = w.findChild<QTableView*>(u"frozenColumn"_s);
        QVERIFY(ids);
        QCOMPARE(ids->textElideMode(), Qt::ElideMiddle);

        QTextBrowser* inspector = w.inspector();
        // an order: fields, the headers kept (never Set-Cookie), the JSON body indented
        select(w, keyOf(recs, "/orders"));
        QTRY_VERIFY_WITH_TIMEOUT(inspector->toPlainText().contains(u"HTTP answer stored by idem-gateway"_s), 5000);
        QString text = inspector->toPlainText();
        QVERIFY2(text.contains(QRegularExpression(u"method\\s+POST\\s+route\\s+/orders\\s+status\\s+201 \\(success"_s)),
                 qPrintable(text));
        QVERIFY2(text.contains(u"Content-Type: application/json"_s), qPrintable(text));
        QVERIFY2(text.contains(u"Location: /orders/"_s), qPrintable(text));
        QVERIFY2(!text.contains(u"Set-Cookie"_s), qPrintable(text));
        QVERIFY2(text.contains(u"body (JSON"_s), qPrintable(text));
        QVERIFY2(text.contains(u"\n  \"status\": \"created\""_s), qPrintable(text));
        // a declined payment: a 4xx, stored and replayed, problem+json pretty too
        select(w, keyOf(recs, "/payments"));
        QTRY_VERIFY_WITH_TIMEOUT(inspector->toPlainText().contains(u"Card declined"_s), 5000);
        text = inspector->toPlainText();
        QVERIFY2(text.contains(u"402"_s) && text.contains(u"client error"_s), qPrintable(text));
        QVERIFY2(text.contains(u"\n  \"title\": \"Card declined\""_s), qPrintable(text));
        // a receipt: text as it is
        select(w, keyOf(recs, "/receipts"));
        QTRY_VERIFY_WITH_TIMEOUT(inspector->toPlainText().contains(u"body (text"_s), 5000);
        QVERIFY2(inspector->toPlainText().contains(u"2 × widget     19.90 €"_s), qPrintable(inspector->toPlainText()));
        // a label: PNG bytes as a hex dump
        select(w, keyOf(recs, "/labels"));
        QTRY_VERIFY_WITH_TIMEOUT(inspector->toPlainText().contains(u"body (stored as base64) (binary"_s), 5000);
        QVERIFY2(inspector->toPlainText().contains(u"00000000  89 50 4e 47 0d 0a 1a 0a"_s),
                 qPrintable(inspector->toPlainText()));
    }

    void demoThreadStartsAndStops()
    {
        // as idem-console runs it: on a thread of its own, stopped by the destructor
        const std::string ns = idemtest::uniqueNamespace("httpdemo");
        idem::gateway::HttpDemo::Options o;
        o.redis = idemtest::sharedRedis();
        o.keyNamespace = ns;
        o.tickMs = 100;
        {
            idem::gateway::HttpDemoThread demo(o);
            QString error;
            QVERIFY2(demo.start(&error), qPrintable(error));
            QTRY_VERIFY_WITH_TIMEOUT(!records(ns).empty(), 10000);
        }
        const auto before = records(ns).size();
        QTest::qWait(500);
        QCOMPARE(records(ns).size(), before); // stopped: nothing more is written
    }
};

QTEST_MAIN(TestGatewayConsole)
#include "tst_gatewayconsole.moc"
