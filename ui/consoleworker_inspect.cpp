// ConsoleWorker: what the inspector shows of a key (the record, its meta, its last operator
// action) and the store's audit view. On the worker thread, as the rest.
#include "consoleworker.h"

#include "logging.h"
#include "qstd.h"
#include "responseview.h"

#include "idem/duration.h"
#include "idem/errors.h"
#include "idem/monitor/keyspacelistener.h"
#include "idem/monitor/monitor.h"
#include "idem/monitor/scanner.h"
#include "idem/engine/store.h"
#include "idem/format/record.h"
#include "idem/pg/pgstore.h"
#include "idem/pg/pgtable.h"
#include "idem/pg/pgwatch.h"

#include <QDateTime>
#include <QTimeZone>
#include <QLocale>

using namespace Qt::StringLiterals;

namespace {
constexpr int kAuditShown = 200; // the store's audit view: the newest entries

// (line breaks and tabs kept: values are shown as written; the rest as shownText() masks them)
QString html(const std::string& s)
{
    QString out = qs(s).toHtmlEscaped();
    for (QChar& c : out)
        if (c != u'\n' && c != u'\t' && shownText(QString(c)) != QString(c))
            c = u'\uFFFD';
    return out;
}

QString when(std::int64_t serverMs, std::int64_t nowMs)
{
    // UTC, as the history, the audit trail and idemctl say times
    const QString at =
        QDateTime::fromMSecsSinceEpoch(serverMs, QTimeZone::utc()).toString(u"yyyy-MM-dd HH:mm:ss.zzz 'UTC'"_s);
    const qint64 delta = nowMs - serverMs;
    const QString rel = QString::fromStdString(idem::formatDuration(idem::Millis(delta < 0 ? -delta : delta)));
    return at + (delta >= 0 ? u" (%1 ago)"_s : u" (in %1)"_s).arg(rel);
}
} // namespace

void ConsoleWorker::readAudit()
{
    if (onPostgres()) {
        pgReadAudit();
        return;
    }
    if (!m_store || m_link != Link::Connected) {
        Q_EMIT auditRead({}, 0, u"not connected"_s);
        return;
    }
    try {
        // XREVRANGE of the newest entries: bounded, never blocks the server
        const auto entries = m_store->audit(kAuditShown);
        QVector<StoreAuditRow> rows;
        rows.reserve(static_cast<qsizetype>(entries.size()));
        for (const auto& e : entries)
            rows.push_back({qs(e.id), e.atMs, qs(e.action), qs(e.key), qs(e.by), qs(e.why), qs(e.via), qs(e.was)});
        const auto t = m_conn->checked({"TIME"});
        Q_EMIT auditRead(rows, idem::reply::timeMs(t.get()), {});
    } catch (const idem::Error& e) {
        Q_EMIT auditRead({}, 0, qs(e.what()));
    }
}

QString ConsoleWorker::lastAction(const QString& key, std::int64_t nowMs)
{
    // an idem record's meta key keeps the last purge (who, when, why, from where), also after it
    const std::string ns = m_settings.keyNamespace.toStdString(), k = key.toStdString();
    if (!k.starts_with(ns + ":{") || k.ends_with("}:meta"))
        return {};
    std::map<std::string, std::string> m;
    for (auto& [f, v] : m_store->meta(idem::idFromKey(k, ns)))
        m[f] = v;
    if (m["last_op"].empty())
        return {};
    const QString verb = m["last_op"] == "purge" ? u"purged"_s : qs(m["last_op"]);
    return u"%1 by <b>%2</b> %3 via %4 (was %5): %6"_s.arg(
        verb, html(m["last_op_by"]), when(std::atoll(m["last_op_at_ms"].c_str()), nowMs), html(m["last_op_via"]),
        html(m["last_op_prev_state"]), html(m["last_op_reason"]));
}


void ConsoleWorker::inspect(const QString& key)
{
    if (onPostgres()) {
        pgInspect(key);
        return;
    }
    if (!m_store) {
        Q_EMIT inspected(key, u"<p>Not connected.</p>"_s);
        return;
    }
    try {
        const auto rec = m_store->inspectKey(key.toStdString(), m_monitor->decodeOptions(0));
        std::int64_t now = 0;
        m_monitor->classify({}, &now);
        const QString last = lastAction(key, now);
        if (!rec) {
            Q_EMIT inspected(key, u"<p><b>%1</b> is gone (expired or deleted).</p>%2"_s.arg(
                                      shownText(key).toHtmlEscaped(), last.isEmpty() ? QString() : u"<p>%1</p>"_s.arg(last)));
            return;
        }
        Q_EMIT inspected(key, recordHtml(*rec, now, last));
    } catch (const idem::Error& e) {
        Q_EMIT inspected(key, u"<p style='color:#c0392b'>%1</p>"_s.arg(qs(e.what()).toHtmlEscaped()));
    }
}

QString recordHtml(const idem::Record& rec, std::int64_t now, const QString& last)
{
    QString out = u"<h3>%1</h3><table cellspacing='0' cellpadding='2'>"_s.arg(html(rec.id));
    auto row = [&out](const QString& name, const QString& value) {
        out += u"<tr><td><b>%1</b>&nbsp;</td><td>%2</td></tr>"_s.arg(name, value);
    };
    row(u"key"_s, html(rec.key));
    // what follows is as of this read (the table's countdowns go on; this is read again when the
    // key changes, or when it is selected again)
    row(u"read at"_s, u"%1 <i>(the TTL and times below are as of then)</i>"_s.arg(
                       QDateTime::fromMSecsSinceEpoch(now, QTimeZone::utc()).toString(u"HH:mm:ss 'UTC'"_s)));
    QString state = qs(std::string(idem::nameOf(rec.state)));
    if (rec.stale)
        state += u" <span style='color:#d35400'>⚠ stale: %1</span>"_s.arg(html(rec.staleWhy));
    else if (rec.blocked)
        state += u" <span style='color:#d35400'>no lease: blocked until TTL</span>"_s;
    row(u"state"_s, state);
    row(u"written by"_s, qs(std::string(idem::libraryOf(rec.format))) +
                             u" <i>(format %1, a %2)</i>"_s.arg(qs(std::string(idem::nameOf(rec.format))),
                                                                qs(rec.keyType)));
    if (!rec.rawStatus.empty())
        row(u"status as written"_s, html(rec.rawStatus));
    if (!rec.reason.empty())
        row(idem::notARecord(rec.state) ? u"why"_s : u"note"_s, html(rec.reason));
    if (rec.partial)
        row(u"read"_s, u"the first and last bytes of %1 (the value is not read whole)"_s.arg(
                           QLocale().formattedDataSize(rec.valueBytes)));
    row(u"TTL"_s, rec.ttlMs == -1 ? u"<span style='color:#c0392b'>none — this key never expires</span>"_s
                                   : QString::fromStdString(idem::formatDuration(idem::Millis(rec.ttlMs))));
    if (rec.createdMs)
        row(u"created"_s, when(*rec.createdMs, now));
    if (rec.startedMs && rec.startedMs != rec.createdMs)
        row(u"started"_s, when(*rec.startedMs, now));
    if (rec.leaseUntilMs && rec.state == idem::RecordState::Started)
        row(u"lease until"_s, when(*rec.leaseUntilMs, now));
    if (rec.expiresMs)
        row(u"expires"_s, when(*rec.expiresMs, now) + u" <i>(the library's own expiry)</i>"_s);
    if (rec.finishedMs)
        row(u"finished"_s, when(*rec.finishedMs, now));
    if (!rec.owner.empty())
        row(u"owner"_s, html(rec.owner));
    if (rec.fence)
        row(u"fence"_s, QString::number(rec.fence));
    if (rec.attempt)
        row(u"attempt"_s, QString::number(rec.attempt));
    if (!rec.fingerprint.empty())
        row(u"payload"_s, html(rec.fingerprint));
    if (rec.state == idem::RecordState::Failed)
        row(u"failure"_s, rec.terminal ? u"terminal"_s : u"retryable"_s);
    if (!rec.error.empty())
        row(u"error"_s, html(rec.error.substr(0, 2000)));
    if (!rec.op.empty())
        row(u"operator"_s, html(rec.op + " by " + rec.opBy + ": " + rec.opReason) +
                              (rec.opAtMs ? u", "_s + when(*rec.opAtMs, now) : QString()));
    if (!last.isEmpty())
        row(u"last action"_s, last);
    out += u"</table>"_s;
    if (rec.response)
        out += storedResponseHtml(*rec.response);
    QString fields; // (a plain string record has none: no header over nothing)
    for (const auto& [k, v] : rec.fields) {
        if (k == "response")
            continue;
        // what the field means for the library that wrote it, and a time shown as one
        QString value = html(v.substr(0, 2000));
        QString meaning;
        if (const idem::FieldDoc* doc = idem::fieldDoc(rec.format, k)) {
            meaning = u"<br><i>%1</i>"_s.arg(qs(std::string(doc->meaning)).toHtmlEscaped());
            std::optional<std::int64_t> t;
            switch (doc->time) {
            case idem::FieldTime::None: break;
            case idem::FieldTime::Seconds:
            case idem::FieldTime::Millis:
            case idem::FieldTime::Any: t = idem::parseTimestampMs(v); break;
            case idem::FieldTime::Micros: // the milliseconds are all but the last three digits
                if (v.size() > 3)
                    t = idem::parseTimestampMs(v.substr(0, v.size() - 3));
                break;
            }
            if (t)
                value += u" = "_s + when(*t, now);
        }
        fields += u"<tr><td valign='top'><tt>%1</tt>&nbsp;</td><td><tt>%2</tt>%3</td></tr>"_s.arg(html(k), value,
                                                                                                  meaning);
    }
    if (!fields.isEmpty())
        out += u"<h4>all fields</h4><table cellspacing='0' cellpadding='1'>"_s + fields + u"</table>"_s;
    return out;
}

