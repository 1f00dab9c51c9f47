// What the suites on other programs' keys share (tst_peers*.cpp): the corpus of records the real
// libraries wrote (tests/data/peers, captured by tools/peers/capture.sh), loaded as captured, and a
// redis-server of the suite's own (the keys keep their libraries' names, and tests FLUSHALL).
#pragma once

#include "testsupport.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace peerstest {

inline const QString kCorpus = QStringLiteral(IDEM_PEERS_DIR);

struct Capture {
    QString profile;
    QString caseName;
    std::string key, type;
    std::string value;                    // strings
    std::vector<std::string> members;     // sets
    std::vector<std::pair<std::string, std::string>> hash;
    qint64 pttlMs = -1;
    qint64 capturedAtMs = 0;
    QString status, nextCall, response, client;
};

inline std::string bytes(const QJsonValue& v) { return v.toString().toStdString(); }
inline std::string base64(const QJsonValue& v) { return QByteArray::fromBase64(v.toString().toLatin1()).toStdString(); }

inline std::string expand(std::string text, const QJsonObject& elided)
{
    if (elided.isEmpty())
        return text;
    const std::string marker = bytes(elided.value(QStringLiteral("marker")));
    const std::string fill(static_cast<std::size_t>(elided.value(QStringLiteral("count")).toInteger()),
                           bytes(elided.value(QStringLiteral("char"))).at(0));
    for (auto p = text.find(marker); p != std::string::npos; p = text.find(marker, p + fill.size()))
        text.replace(p, marker.size(), fill);
    return text;
}

struct Profile {
    QString name;
    QJsonObject settings;
    std::vector<Capture> records;
};

inline Profile load(const QString& file)
{
    QFile f(file);
    if (!f.open(QIODevice::ReadOnly))
        qFatal("cannot read %s", qPrintable(file));
    const QJsonObject doc = QJsonDocument::fromJson(f.readAll()).object();
    Profile p;
    p.name = doc.value(QStringLiteral("profile")).toString();
    p.settings = doc.value(QStringLiteral("settings")).toObject();
    for (const QJsonValue& v : doc.value(QStringLiteral("records")).toArray()) {
        const QJsonObject o = v.toObject();
        Capture c;
        c.profile = p.name;
        c.caseName = o.value(QStringLiteral("case")).toString();
        c.key = o.contains(QStringLiteral("key_base64")) ? base64(o.value(QStringLiteral("key_base64")))
                                                          : bytes(o.value(QStringLiteral("key")));
        c.type = bytes(o.value(QStringLiteral("type")));
        const QJsonObject elided = o.value(QStringLiteral("elided")).toObject();
        if (c.type == "string") {
            c.value = o.contains(QStringLiteral("value_base64")) ? base64(o.value(QStringLiteral("value_base64")))
                                                                  : expand(bytes(o.value(QStringLiteral("value"))), elided);
        } else if (c.type == "set") {
            const bool b64 = o.contains(QStringLiteral("value_base64"));
            for (const QJsonValue& m : o.value(b64 ? QStringLiteral("value_base64") : QStringLiteral("value")).toArray())
                c.members.push_back(b64 ? base64(m) : bytes(m));
        } else if (c.type == "hash") {
            const QJsonObject h = o.value(QStringLiteral("value")).toObject();
            for (auto it = h.begin(); it != h.end(); ++it)
                c.hash.emplace_back(it.key().toStdString(), bytes(it.value()));
        }
        c.pttlMs = o.value(QStringLiteral("pttl_ms")).toInteger();
        c.capturedAtMs = o.value(QStringLiteral("captured_at_ms")).toInteger();
        const QJsonObject lib = o.value(QStringLiteral("library")).toObject();
        c.status = lib.value(QStringLiteral("status")).toString();
        c.nextCall = lib.value(QStringLiteral("next_call")).toString();
        c.response = QString::fromStdString(expand(bytes(lib.value(QStringLiteral("response"))), elided));
        c.client = o.value(QStringLiteral("redis_client")).toString();
        p.records.push_back(std::move(c));
    }
    return p;
}

inline std::vector<Profile> corpus()
{
    std::vector<Profile> all;
    for (const QString& f : QDir(kCorpus).entryList({QStringLiteral("*.json")}, QDir::Files, QDir::Name))
        all.push_back(load(kCorpus + u'/' + f));
    return all;
}

inline void put(idem::Connection& c, const Capture& r)
{
    c.checked({"DEL", r.key});
    if (r.type == "string") {
        c.checked({"SET", r.key, r.value});
    } else if (r.type == "set") {
        for (const auto& m : r.members)
            c.checked({"SADD", r.key, m});
    } else if (r.type == "hash") {
        for (const auto& [f, v] : r.hash)
            c.checked({"HSET", r.key, f, v});
    }
    if (r.pttlMs > 0)
        c.checked({"PEXPIRE", r.key, std::to_string(r.pttlMs)});
}

inline void requireCorpus() { QVERIFY2(corpus().size() >= 6, "tests/data/peers: the corpus is missing"); }

} // namespace peerstest

class PeersTest : public QObject {
protected:
    std::unique_ptr<idem::LocalServer> server; // a server of its own: the keys keep their libraries' names
    std::unique_ptr<idem::Connection> conn;

    void setUp()
    {
        server = std::make_unique<idem::LocalServer>();
        conn = std::make_unique<idem::Connection>(server->connectionOptions());
    }
};
