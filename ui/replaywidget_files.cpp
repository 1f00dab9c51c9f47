// The Replay tab's files: an event log opened or saved, and a finished run exported as JSON, CSV
// or PNG.
#include "replaywidget.h"

#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>

#include <fstream>
#include <sstream>

using namespace Qt::StringLiterals;

bool ReplayWidget::openLog(const QString& path)
{
    std::ifstream in(QFile::encodeName(path).toStdString(), std::ios::binary);
    if (!in) {
        m_status->setText(tr("Cannot read %1").arg(path));
        return false;
    }
    try {
        auto events = std::make_shared<const std::vector<idem::ReplayEvent>>(idem::parseEventLog(in));
        if (events->empty()) {
            m_status->setText(tr("%1 holds no events.").arg(QFileInfo(path).fileName()));
            return false;
        }
        setLog(events, QFileInfo(path).fileName());
        m_status->setText(tr("Opened %1.").arg(path));
        return true;
    } catch (const std::exception& e) {
        m_status->setText(tr("%1 is no event log: %2").arg(QFileInfo(path).fileName(), QString::fromUtf8(e.what())));
        return false;
    }
}

bool ReplayWidget::saveLog(const QString& path) const
{
    if (!m_events)
        return false;
    std::ostringstream out;
    idem::writeEventLog(out, *m_events);
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate))
        return false;
    const std::string text = out.str();
    return f.write(text.data(), static_cast<qint64>(text.size())) == static_cast<qint64>(text.size());
}

bool ReplayWidget::exportJson(const QString& path) const
{
    if (!m_result)
        return false;
    const auto& r = *m_result;
    const QJsonObject o{{u"events"_s, r.events},
                        {u"deliveries"_s, r.deliveries},
                        {u"executions"_s, r.executions},
                        {u"double_executions"_s, r.doubleExecutions},
                        {u"lost"_s, r.lost},
                        {u"crashes"_s, r.crashes},
                        {u"claimed"_s, r.claimed},
                        {u"timed_out"_s, r.timedOut},
                        {u"cancelled"_s, r.cancelled},
                        {u"seconds"_s, r.seconds},
                        {u"via_stream"_s, m_lastOptions.viaStream},
                        {u"speed"_s, m_lastOptions.speed},
                        {u"duplicates"_s, m_lastOptions.duplicates},
                        {u"reorder_ms"_s, static_cast<qint64>(m_lastOptions.reorder.count())},
                        {u"crash_rate"_s, m_lastOptions.crashRate},
                        {u"consumers"_s, m_lastOptions.consumers},
                        {u"seed"_s, static_cast<qint64>(m_lastOptions.seed)},
                        {u"where"_s, m_lastWhere},
                        {u"namespace"_s, QString::fromStdString(r.keyNamespace)},
                        {u"source"_s, m_source}};
    QFile f(path);
    return f.open(QIODevice::WriteOnly | QIODevice::Truncate) && f.write(QJsonDocument(o).toJson()) > 0;
}

bool ReplayWidget::exportCsv(const QString& path) const
{
    if (!m_result)
        return false;
    const auto& r = *m_result;
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate))
        return false;
    f.write("events,deliveries,executions,double_executions,lost,crashes,claimed,timed_out,cancelled,seconds,"
            "via_stream,speed,duplicates,crash_rate,consumers,seed,reorder_ms\n");
    f.write(u"%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17\n"_s.arg(r.events)
                .arg(r.deliveries)
                .arg(r.executions)
                .arg(r.doubleExecutions)
                .arg(r.lost)
                .arg(r.crashes)
                .arg(r.claimed)
                .arg(r.timedOut ? 1 : 0)
                .arg(r.cancelled ? 1 : 0)
                .arg(r.seconds, 0, 'f', 3)
                .arg(m_lastOptions.viaStream ? 1 : 0)
                .arg(m_lastOptions.speed)
                .arg(m_lastOptions.duplicates)
                .arg(m_lastOptions.crashRate)
                .arg(m_lastOptions.consumers)
                .arg(m_lastOptions.seed)
                .arg(m_lastOptions.reorder.count())
                .toUtf8());
    return true;
}

bool ReplayWidget::exportPng(const QString& path) const
{
    return m_resultView->grab().save(path, "PNG");
}
