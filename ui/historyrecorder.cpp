#include "historyrecorder.h"

#include "consoleworker.h"
#include "logging.h"
#include "qstd.h"

#include "idem/errors.h"
#include "idem/lab/capture.h"

#include <QCryptographicHash>
#include <QDateTime>
#include <QDir>
#include <QElapsedTimer>
#include <QStandardPaths>
#include <QTimeZone>
#include <QTimer>

#include <algorithm>
#include <fstream>

using namespace Qt::StringLiterals;

namespace {

QString timeText(qint64 ms)
{
    return QDateTime::fromMSecsSinceEpoch(ms, QTimeZone::utc()).toString(u"yyyy-MM-dd HH:mm:ss.zzz"_s);
}
} // namespace

HistoryRecorder::HistoryRecorder(idem::HistoryLimits limits, QObject* parent)
    : QObject(parent), m_limits(limits), m_index(limits), m_flushTimer(new QTimer(this))
{
    m_flushTimer->setSingleShot(true);
    connect(m_flushTimer, &QTimer::timeout, this, &HistoryRecorder::flush);
}

HistoryRecorder::~HistoryRecorder() { close(); }

QString HistoryRecorder::directoryFor(const QString& server, const QString& keyNamespace)
{
    // readable (host_port_db), and a hash of the whole so that two URLs never share a directory
    QString readable = server + u'_' + keyNamespace;
    for (QChar& c : readable)
        if (!c.isLetterOrNumber() && c != u'-' && c != u'.')
            c = u'_';
    const QString hash = QString::fromLatin1(
        QCryptographicHash::hash((server + u'\n' + keyNamespace).toUtf8(), QCryptographicHash::Sha1).toHex().left(10));
    return QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) + u"/history/"_s + readable.left(80) +
           u'-' + hash;
}

void HistoryRecorder::follow(ConsoleWorker* worker, HistoryRecorder* recorder)
{
    connect(worker, &ConsoleWorker::observed, recorder, &HistoryRecorder::observe);
    connect(worker, &ConsoleWorker::observedGone, recorder, &HistoryRecorder::observeGone);
    connect(worker, &ConsoleWorker::scanFinished, recorder,
            [recorder](const ScanSummary& s) { recorder->scanFinished(s.generation, s.serverNowMs); });
}

void HistoryRecorder::open(const QString& directory, const QString& keyNamespace)
{
    close();
    m_namespace = keyNamespace;
    forget();
    m_failed = false;
    try {
        m_log = std::make_unique<idem::HistoryLog>(QDir::toNativeSeparators(directory).toStdString(), m_limits);
        for (const idem::Transition& t : m_log->open())
            m_index.add(t);
        m_index.trim();
        m_log->trim(m_index.lastMs());
    } catch (const idem::Error& e) {
        m_log.reset();
        Q_EMIT opened(0, qs(e.what()));
        return;
    }
    qCInfo(lcConsole).noquote() << "history:" << m_index.size() << "transitions in" << directory;
    Q_EMIT opened(static_cast<qint64>(m_index.size()), {});
    Q_EMIT extentChanged(m_index.firstMs(), m_index.lastMs(), static_cast<qint64>(m_index.size()));
}

void HistoryRecorder::close()
{
    flush();
    m_log.reset();
}

void HistoryRecorder::closeAndForget()
{
    close();
    forget();
    Q_EMIT extentChanged(0, 0, 0);
}

void HistoryRecorder::forget()
{
    m_index = idem::HistoryIndex(m_limits);
    m_seenIn.clear();
    m_cursor = {};
}

void HistoryRecorder::record(idem::Transition t)
{
    if (!m_log)
        return;
    const idem::Transition* last = m_index.latest(t.key);
    if (last && !idem::differs(*last, t))
        return;
    if (!last && t.gone())
        return; // never seen: nothing went
    m_index.add(t);
    m_pending.push_back(std::move(t));
    if (!m_flushTimer->isActive())
        m_flushTimer->start(kFlushMs);
}

void HistoryRecorder::observe(const QVector<KeyRow>& rows, const QHash<QString, QStringList>& actors, qint64 serverNowMs,
                              quint64 generation, bool notification)
{
    if (!m_log)
        return;
    for (const KeyRow& r : rows) {
        idem::Transition t;
        t.atMs = serverNowMs;
        t.key = r.key.toStdString();
        t.state = r.state;
        t.format = r.format;
        t.flags = r.terminal() ? idem::Transition::Terminal : 0;
        t.source = notification ? idem::Transition::Notification : idem::Transition::Scan;
        t.keyType = static_cast<std::uint8_t>(r.type);
        t.attempt = r.attempt;
        t.createdMs = r.createdMs;
        t.fence = r.fence;
        t.leaseUntilMs = r.leaseUntilMs;
        t.expiresAtMs = r.expiresAtMs;
        if (r.type == KeyRow::Type::Hash)
            t.owner = r.ownerBytes().toByteArray().toStdString();
        const QString key = r.keyText();
        if (const auto who = actors.constFind(key); who != actors.constEnd() && who->size() == 2) {
            t.op = who->at(0).toStdString();
            t.actor = who->at(1).toStdString();
        }
        m_seenIn.insert(r.key, generation);
        record(std::move(t));
    }
}

void HistoryRecorder::observeGone(const QStringList& keys, const QHash<QString, QStringList>& actors, qint64 serverNowMs)
{
    for (const QString& key : keys) {
        idem::Transition t;
        t.atMs = serverNowMs;
        t.key = key.toStdString();
        t.flags = idem::Transition::Gone;
        t.source = idem::Transition::Notification;
        if (const auto who = actors.constFind(key); who != actors.constEnd() && who->size() == 2) {
            t.op = who->at(0).toStdString();
            t.actor = who->at(1).toStdString();
        }
        m_seenIn.remove(key.toUtf8());
        record(std::move(t));
    }
}

void HistoryRecorder::scanFinished(quint64 generation, qint64 serverNowMs)
{
    if (!m_log)
        return;
    for (const std::string& key : m_index.presentKeys()) {
        if (m_seenIn.value(QByteArray::fromStdString(key), 0) >= generation)
            continue;
        idem::Transition t;
        t.atMs = serverNowMs;
        t.key = key;
        t.flags = idem::Transition::Gone;
        t.source = idem::Transition::Scan;
        record(std::move(t));
    }
}

void HistoryRecorder::flush()
{
    m_flushTimer->stop();
    if (!m_log || m_pending.empty() || m_failed) {
        m_pending.clear();
        return;
    }
    try {
        m_log->append(m_pending);
        m_log->sync();
        m_index.trim();
        m_log->trim(m_index.lastMs());
    } catch (const idem::Error& e) {
        m_failed = true; // said once: a full disk would say it 5 times a second
        qCWarning(lcConsole).noquote() << "history:" << e.what();
        Q_EMIT failed(qs(e.what()));
    }
    m_pending.clear();
    Q_EMIT extentChanged(m_index.firstMs(), m_index.lastMs(), static_cast<qint64>(m_index.size()));
}

void HistoryRecorder::requestTimeline(const QString& key, qint64 serverNowMs)
{
    const auto lines = idem::describeTimeline(m_index.timeline(key.toStdString()), serverNowMs);
    QString out = u"<h4>history</h4>"_s;
    if (lines.empty())
        out += u"<p><i>No transition recorded for this key yet.</i></p>"_s;
    else
        out += u"<table cellspacing='0' cellpadding='1'>"_s;
    for (const auto& l : lines)
        out += u"<tr><td valign='top'><tt>%1</tt>&nbsp;</td><td>%2%3</td></tr>"_s.arg(
            timeText(l.atMs), qs(l.text).toHtmlEscaped(), l.derived ? u" <i>(from its deadline)</i>"_s : QString());
    if (!lines.empty())
        out += u"</table><p><i>Server times (UTC), as the console saw them.</i></p>"_s;
    Q_EMIT timelineReady(key, out);
}

KeyRow HistoryRecorder::rowOf(const idem::HistoryIndex& index, const idem::HistoryEntry& e)
{
    KeyRow r;
    const std::string& key = index.keyName(e.key);
    r.key = QByteArray(key.data(), static_cast<qsizetype>(key.size()));
    r.state = e.state;
    r.format = e.format;
    r.type = static_cast<KeyRow::Type>(e.keyType);
    r.flags = (e.flags & idem::Transition::Terminal) ? KeyRow::Terminal : 0;
    r.attempt = e.attempt;
    r.fence = e.fence;
    r.leaseUntilMs = e.leaseUntilMs;
    r.changesAtMs = e.state == idem::RecordState::Started ? e.leaseUntilMs : 0;
    r.expiresAtMs = e.expiresAtMs;
    r.createdMs = e.createdMs;
    if (r.type == KeyRow::Type::Hash) // no digest of what a scan read then: no purge guard matches it
        r.guard = QByteArray(KeyRow::kDigestBytes, '\0');
    if (e.owner)
        r.guard += QByteArray::fromStdString(index.text(e.owner));
    return r;
}

QVector<KeyRow> HistoryRecorder::rowsOf(const idem::HistoryIndex& index, const std::vector<const idem::HistoryEntry*>& at)
{
    QVector<KeyRow> rows;
    rows.reserve(static_cast<qsizetype>(at.size()));
    for (const idem::HistoryEntry* e : at)
        rows.push_back(rowOf(index, *e));
    return rows;
}

void HistoryRecorder::requestSnapshot(qint64 atMs, quint64 ticket, bool fresh)
{
    QElapsedTimer clock;
    clock.start();
    if (fresh)
        m_cursor = {};
    QVector<KeyRow> rows;
    QStringList gone;
    const std::vector<std::uint32_t> changed = m_index.seek(m_cursor, atMs);
    // A jump that changes a quarter of the keys or more is sent whole, to be swapped in with one
    // model reset: merging tens of thousands of changed rows is what would stall the GUI thread.
    constexpr std::size_t kWholeAbove = 1000;
    if (!fresh && changed.size() > kWholeAbove && changed.size() * 4 >= m_cursor.last.size())
        fresh = true;
    if (fresh) {
        rows.reserve(static_cast<qsizetype>(m_cursor.last.size()));
        for (const std::int64_t sequence : m_cursor.last) {
            const idem::HistoryEntry* e = sequence < 0 ? nullptr : m_index.bySequence(sequence);
            if (e && !(e->flags & idem::Transition::Gone))
                rows.push_back(rowOf(m_index, *e));
        }
    } else {
        for (const std::uint32_t k : changed) {
            const idem::HistoryEntry* e = m_index.bySequence(m_cursor.last[k]);
            if (!e || (e->flags & idem::Transition::Gone))
                gone << qs(m_index.keyName(k));
            else
                rows.push_back(rowOf(m_index, *e));
        }
    }
    Q_EMIT snapshotReady(atMs, rows, gone, ticket, fresh, clock.elapsed());
}

void HistoryRecorder::requestCounts(qint64 atMs, quint64 ticket)
{
    std::vector<idem::StateCounts> counts;
    if (m_index.size() > 0 && atMs >= m_index.firstMs()) {
        const qint64 steps =
            std::clamp<qint64>((atMs - m_index.firstMs()) / kCountsStepMs, 0, kCountsBeforeMs / kCountsStepMs);
        const qint64 to = std::max<qint64>(atMs, std::min<qint64>(atMs + kCountsAfterMs, m_index.lastMs()));
        counts = m_index.countsOver(atMs - steps * kCountsStepMs, to, kCountsStepMs);
    }
    Q_EMIT countsReady(atMs, counts, ticket);
}

void HistoryRecorder::exportEventLog(const QString& path, qint64 fromMs, qint64 toMs)
{
    const auto events = idem::eventsFromHistory(m_index.between(fromMs, toMs), m_namespace.toStdString());
    std::ofstream out(QDir::toNativeSeparators(path).toStdString(), std::ios::binary | std::ios::trunc);
    if (out)
        idem::writeEventLog(out, events);
    out.flush();
    Q_EMIT exported(path, static_cast<qint64>(events.size()),
                    out ? QString() : u"cannot write %1"_s.arg(QDir::toNativeSeparators(path)));
}
