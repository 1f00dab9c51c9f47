#include "audittrail.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QStandardPaths>

using namespace Qt::StringLiterals;

AuditTrail::AuditTrail(QString path, QObject* parent) : QObject(parent), m_path(std::move(path)) {}

QString AuditTrail::defaultPath()
{
    return QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) + u"/audit.jsonl"_s;
}

bool AuditTrail::append(const AuditEntry& e)
{
    QDir().mkpath(QFileInfo(m_path).absolutePath());
    QFile f(m_path);
    if (!f.open(QIODevice::Append | QIODevice::Text)) {
        m_lastError = f.errorString();
        return false;
    }
    const QJsonObject o{{u"when"_s, e.when.toString(Qt::ISODateWithMs)},
                        {u"who"_s, e.who},
                        {u"action"_s, e.action},
                        {u"server"_s, e.server},
                        {u"why"_s, e.why},
                        {u"keys"_s, e.keys},
                        {u"changed"_s, e.changed},
                        {u"sample"_s, e.sample},
                        {u"error"_s, e.error}};
    f.write(QJsonDocument(o).toJson(QJsonDocument::Compact) + '\n');
    Q_EMIT appended(e);
    return true;
}

QVector<AuditEntry> AuditTrail::entries() const
{
    QVector<AuditEntry> out;
    QFile f(m_path);
    if (!f.open(QIODevice::ReadOnly | QIODevice::Text))
        return out;
    while (!f.atEnd()) {
        const QJsonObject o = QJsonDocument::fromJson(f.readLine()).object();
        if (o.isEmpty())
            continue;
        AuditEntry e;
        e.when = QDateTime::fromString(o.value(u"when"_s).toString(), Qt::ISODateWithMs);
        e.who = o.value(u"who"_s).toString();
        e.action = o.value(u"action"_s).toString();
        e.server = o.value(u"server"_s).toString();
        e.why = o.value(u"why"_s).toString();
        e.keys = o.value(u"keys"_s).toInt();
        e.changed = o.value(u"changed"_s).toInt();
        e.sample = o.value(u"sample"_s).toString();
        e.error = o.value(u"error"_s).toString();
        out.push_back(e);
    }
    return out;
}
