// The console worker's view of the keys: the SCAN that reads them in batches the GUI takes at its
// pace, the keyspace notifications that mark keys to re-read, and the errors of FAILED rows.
#include "consoleworker.h"

#include "logging.h"
#include "qstd.h"

#include "idem/errors.h"
#include "idem/monitor/monitor.h"
#include "idem/monitor/scanner.h"
#include "idem/engine/store.h"


using namespace Qt::StringLiterals;

namespace {
constexpr int kMaxBatchesInFlight = 4;
constexpr int kMaxErrorShown = 1000; // a FAILED record's error longer than this stays in the inspector
} // namespace

void ConsoleWorker::attachErrors(QVector<KeyRow>& rows)
{
    // by the node each was read from: on a cluster, a key's error is on the node serving it
    std::map<quint8, std::vector<qsizetype>> failedRows;
    for (qsizetype i = 0; i < rows.size(); ++i)
        if (rows[i].state == idem::RecordState::Failed && rows[i].type == KeyRow::Type::Hash &&
            !(rows[i].flags & KeyRow::ForeignStatus))
            failedRows[rows[i].node].push_back(i);
    for (const auto& [node, at] : failedRows) {
        const std::string address = node > 0 && node <= m_nodeNames.size() ? m_nodeNames[node - 1].toStdString()
                                                                            : std::string();
        try {
            attachErrors(rows, at, address);
        } catch (const idem::IoError& e) {
            // what is said beside the rows, not the rows: a node failing over since it was read
            // leaves it out until the next read (the scan follows the failover)
            qCInfo(lcWorker).noquote() << "errors of FAILED records not read from" << qs(address) << ":" << qs(e.what());
        }
    }
}

void ConsoleWorker::attachErrors(QVector<KeyRow>& rows, const std::vector<qsizetype>& failedRows,
                                 const std::string& node)
{
    // the scan never reads `error` (it can be large): its length first, then the short ones
    std::vector<std::string> keys;
    keys.reserve(failedRows.size());
    std::vector<std::vector<std::string_view>> lengths;
    for (const qsizetype i : failedRows)
        keys.push_back(rows[i].key.toStdString());
    for (const std::string& key : keys) // (after the last push_back: the views stay valid)
        lengths.push_back({"HSTRLEN", key, "error"});
    const auto lengthReplies = m_scanner->pipelineAt(node, lengths);
    std::vector<std::vector<std::string_view>> reads;
    std::vector<qsizetype> readRows;
    for (std::size_t k = 0; k < failedRows.size(); ++k) {
        const redisReply* r = lengthReplies[k].get();
        if (idem::reply::isError(r) || !idem::reply::isInteger(r))
            continue;
        const auto n = idem::reply::integer(r);
        if (n > 0 && n <= kMaxErrorShown) {
            reads.push_back({"HGET", keys[k], "error"});
            readRows.push_back(failedRows[k]);
        }
    }
    if (reads.empty())
        return;
    const auto texts = m_scanner->pipelineAt(node, reads);
    for (std::size_t k = 0; k < readRows.size(); ++k)
        if (idem::reply::isString(texts[k].get()))
            rows[readRows[k]].note = qs(idem::reply::str(texts[k].get())).simplified();
}

bool ConsoleWorker::beginScan()
{
    if (m_scanning) {
        m_rescanQueued = true;
        return false;
    }
    m_scanning = true;
    m_rescanQueued = false;
    ++m_generation;
    m_summary = ScanSummary{};
    m_summary.generation = m_generation;
    m_scanClock.start();
    return true;
}

void ConsoleWorker::rescan()
{
    if (onPostgres()) {
        pgRescan();
        return;
    }
    if (!m_monitor)
        return;
    if (!beginScan())
        return;
    try {
        m_scanner->restart();
        if (m_scanner->cluster())
            m_clusterNodes = m_scanner->clusterNodes(); // where to go if the URL's node stops answering
        // notifications first, then the keys: nothing that changes during the scan is missed. Again
        // while not live (a node was lost) and when other nodes serve the slots now (a failover).
        if (!m_live || m_listenedFor != (m_scanner->cluster() ? m_scanner->nodes() : std::vector<std::string>{std::string()}))
            listen();
        if (!m_scanner || m_aborting)
            return; // the node connected through does not answer: lost (reconnecting rescans); or closing
        Q_EMIT scanStarted(m_generation, m_scanner->keyCount()); // DBSIZE of each node: O(1)
    } catch (const idem::Error& e) {
        failed(e);
        return;
    }
    QTimer::singleShot(0, this, &ConsoleWorker::scanStep);
}

void ConsoleWorker::scanStep()
{
    if (onPostgres()) {
        pgScanStep();
        return;
    }
    if (!m_monitor || !m_scanning)
        return;
    try {
        idem::ScanStep step = m_scanner->next(); // a page of every shard, side by side
        for (const auto& note : step.notes) {
            qCInfo(lcWorker).noquote() << "cluster:" << qs(note);
            Q_EMIT clusterNote(qs(note));
        }
        for (const auto& shard : step.pages) {
            const idem::ScanPage& page = shard.page;
            QVector<KeyRow> rows;
            QHash<QString, QStringList> actors;
            rows.reserve(static_cast<qsizetype>(page.records.size()));
            for (const auto& r : page.records) {
                rows.push_back(rowOf(r, page.serverNowMs));
                if (!r.opBy.empty())
                    actors.insert(qs(r.key), {qs(r.op), qs(r.opBy)});
            }
            attachErrors(rows);
            m_summary.keysSeen += static_cast<qint64>(page.keysSeen);
            m_summary.refused += static_cast<qint64>(page.refused);
            ++m_summary.pages;
            m_summary.serverNowMs = page.serverNowMs;
            if (!rows.isEmpty()) {
                ++m_inFlight;
                Q_EMIT rowsArrived(rows, page.serverNowMs, m_generation);
                Q_EMIT observed(rows, actors, page.serverNowMs, m_generation, false);
            }
        }
        if (m_scanner->done()) {
            m_scanning = false;
            m_summary.elapsedMs = m_scanClock.elapsed();
            Q_EMIT scanFinished(m_summary);
            // the scan followed a failover: notifications from the node serving those slots now,
            // and its keys read again after subscribing (rescan() does both), without waiting
            if (m_rescanQueued || (m_scanner->cluster() && m_listenAgain && m_listenedFor != m_scanner->nodes()))
                rescan();
            return;
        }
        if (m_inFlight >= kMaxBatchesInFlight) {
            m_waitingForGui = true; // batchConsumed() resumes
            return;
        }
        QTimer::singleShot(0, this, &ConsoleWorker::scanStep); // let queued requests in between pages
    } catch (const idem::Error& e) {
        failed(e);
    }
}

void ConsoleWorker::batchConsumed()
{
    m_inFlight = std::max(0, m_inFlight - 1);
    if (m_waitingForGui && m_inFlight < kMaxBatchesInFlight) {
        m_waitingForGui = false;
        QTimer::singleShot(0, this, &ConsoleWorker::scanStep);
    }
}

void ConsoleWorker::noteDirty(const QString& key)
{
    m_dirty.insert(key);
    if (!m_dirtyTimer->isActive())
        m_dirtyTimer->start(150); // coalesce bursts
}

void ConsoleWorker::flushDirty()
{
    if (onPostgres()) {
        pgFlushDirty();
        return;
    }
    if (!m_monitor || m_dirty.isEmpty())
        return;
    std::vector<std::string> keys;
    for (const QString& k : std::as_const(m_dirty))
        if (!m_monitor->isMetaKey(k.toStdString()))
            keys.push_back(k.toStdString());
    QSet<QString> gone = m_dirty;
    m_dirty.clear();
    std::int64_t lastNow = 0;
    try {
        for (std::size_t first = 0; first < keys.size(); first += 500) {
            std::vector<std::string> chunk(keys.begin() + static_cast<long>(first),
                                           keys.begin() + static_cast<long>(std::min(keys.size(), first + 500)));
            std::int64_t now = 0;
            const auto records = m_scanner->classify(chunk, &now);
            QVector<KeyRow> rows;
            QHash<QString, QStringList> actors;
            for (const auto& r : records) {
                rows.push_back(rowOf(r, now));
                gone.remove(rows.back().keyText());
                if (!r.opBy.empty())
                    actors.insert(qs(r.key), {qs(r.op), qs(r.opBy)});
            }
            attachErrors(rows);
            if (!rows.isEmpty()) {
                ++m_inFlight;
                Q_EMIT rowsArrived(rows, now, m_generation);
                Q_EMIT observed(rows, actors, now, m_generation, true);
            }
            lastNow = now;
        }
        if (!gone.isEmpty())
            noteGone(gone, lastNow);
    } catch (const idem::IoError& e) {
        if (!m_scanner || !m_scanner->cluster()) {
            failed(e);
            return;
        }
        // On a cluster, a node that died or hangs (its slots not failed over yet) is that node's
        // problem, which its listener's end tells; the connection stands while the node connected
        // through answers, and the keys not read are read again by a scan (none is said gone)
        if (!connectionAnswers())
            return;
        qCInfo(lcWorker).noquote() << "changed keys not read:" << qs(e.what());
        checkListeners(); // a listener that ended: not live, naming its node, and a rescan
        if (m_live)
            rescan();
        return;
    } catch (const idem::Error& e) {
        failed(e);
        return;
    }
    if (!gone.isEmpty())
        Q_EMIT rowsGone(QStringList(gone.begin(), gone.end()));
}

void ConsoleWorker::noteGone(const QSet<QString>& gone, std::int64_t serverNowMs)
{
    // who purged a key is kept in its meta key (lua/purge.lua): read for a few keys, so a mass
    // purge costs no round trip per key
    constexpr int kMaxMetaReads = 50;
    constexpr std::int64_t kRecentMs = 10'000;
    if (serverNowMs == 0)
        m_monitor->classify({}, &serverNowMs);
    QStringList keys;
    QHash<QString, QStringList> actors;
    for (const QString& key : gone) {
        const std::string k = key.toStdString();
        if (m_monitor->isMetaKey(k))
            continue;
        keys << key;
        const std::string id = idem::idFromKey(k, m_settings.keyNamespace.toStdString());
        if (id.empty() || !m_store || actors.size() + keys.size() > kMaxMetaReads)
            continue;
        std::map<std::string, std::string> meta;
        try {
            for (auto& [f, v] : m_store->meta(id))
                meta[f] = v;
        } catch (const idem::ReplyError&) {
            // who removed it is what is said beside it, not the scan's data: a refusal here (a
            // Cluster between a primary's death and its replica's promotion answers CLUSTERDOWN)
            // leaves the key without its actor, the connection stands
            continue;
        }
        const auto at = idem::parseTimestampMs(meta["last_op_at_ms"]);
        if (!meta["last_op_by"].empty() && at && serverNowMs - *at <= kRecentMs)
            actors.insert(key, {qs(meta["last_op"]), qs(meta["last_op_by"])});
    }
    if (!keys.isEmpty())
        Q_EMIT observedGone(keys, actors, serverNowMs);
}
