#pragma once

#include "keyrow.h"

#include "idem/monitor/history.h"

#include <QHash>
#include <QObject>
#include <QStringList>
#include <QVector>

#include <memory>
#include <vector>

class ConsoleWorker;
class QTimer;

// The console's history of the keys it watches (issue 17): every transition it observes, from
// keyspace notifications and from rescans (ConsoleWorker::observed / observedGone / scanFinished),
// kept in an idem::HistoryLog under the app's data directory, one directory per server and
// namespace, bounded (24 h or 1 M transitions by default). Lives on a thread of its own
// (moveToThread): observations are diffed against each key's last transition here, and written in
// batches every kFlushMs with one write() and an fdatasync, so a console killed at any moment keeps
// every batch written before; the GUI asks for a key's timeline or the state of every key at a
// past moment and gets the answer back as a queued signal.
class HistoryRecorder : public QObject {
    Q_OBJECT
public:
    static constexpr int kFlushMs = 200;
    // the chart's counts of a rewound moment (requestCounts): its ten minutes, in steps as live
    static constexpr qint64 kCountsStepMs = 2'000;
    static constexpr qint64 kCountsBeforeMs = 600'000;
    static constexpr qint64 kCountsAfterMs = 30'000;

    explicit HistoryRecorder(idem::HistoryLimits limits = {}, QObject* parent = nullptr);
    ~HistoryRecorder() override; // writes what is pending

    // <app data>/history/<server and namespace, as a file name>
    static QString directoryFor(const QString& server, const QString& keyNamespace);
    // The recorder's own state: on its thread only (tests, the benchmark)
    const idem::HistoryIndex& index() const { return m_index; }
    qint64 pending() const { return static_cast<qint64>(m_pending.size()); }
    // Connects what the worker observes to the recorder (queued when they live on different threads).
    static void follow(ConsoleWorker* worker, HistoryRecorder* recorder);
    // The rows as they were at a past moment: what the key table shows while rewound.
    static QVector<KeyRow> rowsOf(const idem::HistoryIndex& index, const std::vector<const idem::HistoryEntry*>& at);
    static KeyRow rowOf(const idem::HistoryIndex& index, const idem::HistoryEntry& e);

public Q_SLOTS:
    void open(const QString& directory, const QString& keyNamespace);
    void close(); // writes what is pending; observations are ignored until the next open()
    // Closed, and nothing of the last history shown (a URL that cannot be used has none).
    void closeAndForget();
    void observe(const QVector<KeyRow>& rows, const QHash<QString, QStringList>& actors, qint64 serverNowMs,
                 quint64 generation, bool notification);
    void observeGone(const QStringList& keys, const QHash<QString, QStringList>& actors, qint64 serverNowMs);
    // A scan of `generation` completed at serverNowMs: keys it did not see are gone.
    void scanFinished(quint64 generation, qint64 serverNowMs);
    void flush();
    void requestTimeline(const QString& key, qint64 serverNowMs);
    // The rows that differ at atMs from the last snapshot sent (all of them when `fresh`): what the
    // rewound table needs to show that moment. Playing forward costs only what happened between.
    void requestSnapshot(qint64 atMs, quint64 ticket, bool fresh);
    // The chart's counts around a rewound moment: steps of kCountsStepMs ending kCountsAfterMs after
    // atMs (and never past the history's end), starting up to the chart's ten minutes before it
    // (never before the history's start: before it there is no data, not zero keys); one step lands
    // on atMs itself.
    void requestCounts(qint64 atMs, quint64 ticket);
    // Every STARTED in [fromMs, toMs] as an event of the log `idemctl replay` reads.
    void exportEventLog(const QString& path, qint64 fromMs, qint64 toMs);

Q_SIGNALS:
    void opened(qint64 transitions, const QString& error);
    // after each batch written: what the history spans now
    void extentChanged(qint64 firstMs, qint64 lastMs, qint64 transitions);
    void timelineReady(const QString& key, const QString& html);
    void snapshotReady(qint64 atMs, const QVector<KeyRow>& rows, const QStringList& gone, quint64 ticket, bool fresh,
                       qint64 elapsedMs);
    void countsReady(qint64 atMs, const std::vector<idem::StateCounts>& counts, quint64 ticket);
    void exported(const QString& path, qint64 events, const QString& error);
    void failed(const QString& error); // writing stopped (disk full, permissions): said once

private:
    void forget(); // the index, what each key was last seen in, where the rewound table stands
    void record(idem::Transition t);

    idem::HistoryLimits m_limits;
    std::unique_ptr<idem::HistoryLog> m_log;
    idem::HistoryIndex m_index;
    std::vector<idem::Transition> m_pending;
    QHash<QByteArray, quint64> m_seenIn; // key -> generation it was last read in (the rows' own bytes, shared)
    idem::HistoryIndex::Cursor m_cursor; // where the rewound table stands
    QString m_namespace;
    QTimer* m_flushTimer;
    bool m_failed = false;
};
