// MainWindow: exporting the view (CSV or JSON) as it is shown.
#include "mainwindow.h"

#include "keyfilterproxy.h"
#include "keytablemodel.h"

#include <QDateTime>
#include <QFile>
#include <QFileDialog>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMessageBox>
#include <QTableView>
#include <QTimeZone>

using namespace Qt::StringLiterals;

namespace {

QString iso(qint64 ms)
{
    return ms > 0 ? QDateTime::fromMSecsSinceEpoch(ms, QTimeZone::utc()).toString(Qt::ISODateWithMs) : QString();
}

} // namespace

bool MainWindow::exportTo(const QString& path, QString* error) const
{
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate)) {
        if (error)
            *error = f.errorString();
        return false;
    }
    // raw values as of the moment the data was read: ISO 8601 times (UTC), milliseconds, full tokens
    const qint64 now = m_model->serverNowMs();
    const QString capturedAt = iso(m_model->isFrozen() ? m_model->frozenAtMs() : now);
    struct Field {
        const char* name;
        std::function<QJsonValue(const KeyRow&)> value;
    };
    const auto ms = [](qint64 v) { return QJsonValue(static_cast<double>(v)); };
    const auto time = [](qint64 v) { return v > 0 ? QJsonValue(iso(v)) : QJsonValue(QJsonValue::Null); };
    const std::vector<Field> fields = {
        {"key", [](const KeyRow& r) { return QJsonValue(r.keyText()); }},
        {"id", [this](const KeyRow& r) { return QJsonValue(m_model->idOf(r)); }},
        {"state", [now](const KeyRow& r) { return QJsonValue(QString::fromUtf8(idem::nameOf(r.stateAt(now)).data())); }},
        {"stale", [now](const KeyRow& r) { return QJsonValue(r.isStale(now)); }},
        {"no_lease", [](const KeyRow& r) { return QJsonValue(r.blocked()); }},
        {"terminal", [](const KeyRow& r) { return QJsonValue(r.terminal()); }},
        {"format", [](const KeyRow& r) { return QJsonValue(QString::fromUtf8(idem::nameOf(r.format).data())); }},
        {"type", [](const KeyRow& r) { return QJsonValue(QString::fromLatin1(r.typeName())); }},
        {"ttl_ms",
         [&](const KeyRow& r) {
             return r.noExpiryKept() ? QJsonValue(QJsonValue::Null)
                                     : ms(r.noTtl() ? -1 : std::max<qint64>(0, r.expiresAtMs - now));
         }},
        {"expires_at", [&](const KeyRow& r) { return time(r.expiresAtMs < 0 ? 0 : r.expiresAtMs); }},
        {"created_at", [&](const KeyRow& r) { return time(r.createdMs); }},
        {"age_ms", [&](const KeyRow& r) { return r.createdMs > 0 ? ms(now - r.createdMs) : QJsonValue(QJsonValue::Null); }},
        {"lease_until", [&](const KeyRow& r) {
             return time(r.state == idem::RecordState::Started ? r.leaseUntilMs : 0);
         }},
        {"lease_remaining_ms", [&](const KeyRow& r) {
             return r.state == idem::RecordState::Started && r.leaseUntilMs > 0 ? ms(r.leaseUntilMs - now)
                                                                                 : QJsonValue(QJsonValue::Null);
         }},
        {"owner", [](const KeyRow& r) { return QJsonValue(r.owner()); }},
        {"attempt", [&](const KeyRow& r) { return ms(r.attempt); }},
        {"fence", [&](const KeyRow& r) { return ms(r.fence); }},
        {"note", [](const KeyRow& r) { return QJsonValue(r.note); }},
    };
    const auto rowAt = [this](int r) -> const KeyRow& {
        return m_model->row(m_proxy->mapToSource(m_proxy->index(r, 0)).row());
    };
    if (path.endsWith(u".json"_s, Qt::CaseInsensitive)) {
        QJsonArray rows;
        for (int r = 0; r < m_proxy->rowCount(); ++r) {
            QJsonObject o;
            for (const Field& field : fields)
                o[QLatin1String(field.name)] = field.value(rowAt(r));
            rows.append(o);
        }
        const QJsonObject doc{{u"captured_at"_s, capturedAt},
                              {u"exported_at"_s, iso(QDateTime::currentMSecsSinceEpoch())},
                              {u"live"_s, freshness() == Freshness::Live},
                              {u"server"_s, m_server},
                              {u"namespace"_s, m_options.connection.keyNamespace},
                              {u"filter"_s, QJsonObject{{u"state"_s, QString::fromUtf8(idem::nameOf(m_proxy->stateFilter()).data())},
                                                        {u"text"_s, m_proxy->text()}}},
                              {u"rows"_s, rows}};
        f.write(QJsonDocument(doc).toJson(QJsonDocument::Indented));
        return true;
    }
    auto csv = [](QString s) {
        if (s.contains(u',') || s.contains(u'"') || s.contains(u'\n'))
            s = u'"' + s.replace(u"\""_s, u"\"\""_s) + u'"';
        return s;
    };
    QStringList header;
    for (const Field& field : fields)
        header << QLatin1String(field.name);
    header << u"captured_at"_s;
    f.write(header.join(u',').toUtf8() + '\n');
    for (int r = 0; r < m_proxy->rowCount(); ++r) {
        QStringList line;
        for (const Field& field : fields) {
            const QJsonValue v = field.value(rowAt(r));
            line << csv(v.isBool() ? (v.toBool() ? u"true"_s : u"false"_s)
                        : v.isDouble() ? QString::number(static_cast<qint64>(v.toDouble()))
                                       : v.toString());
        }
        line << capturedAt;
        f.write(line.join(u',').toUtf8() + '\n');
    }
    return true;
}

void MainWindow::exportView()
{
    const QString path = QFileDialog::getSaveFileName(this, tr("Export the current view"), u"idem-keys.csv"_s,
                                                      tr("CSV (*.csv);;JSON (*.json)"));
    if (path.isEmpty())
        return;
    QString error;
    if (!exportTo(path, &error))
        QMessageBox::warning(this, tr("Export"), tr("Could not write %1: %2").arg(path, error));
    else
        noteAction(tr("Exported %1 rows to %2").arg(m_proxy->rowCount()).arg(path));
}
