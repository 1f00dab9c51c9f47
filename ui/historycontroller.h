#pragma once

#include "idem/monitor/history.h"

#include <QObject>
#include <QPointer>
#include <QThread>

class ConsoleWorker;
class HistoryRecorder;
class KeyFilterProxy;
class KeyTableModel;
class RewindBar;

// The console's side of the history: runs a HistoryRecorder on a thread of its own fed by the
// worker, and the rewind: while the RewindBar is away from Live, the key table's proxy shows a
// model of its own holding the snapshot of the chosen moment (computed on the recorder's thread;
// only the newest request is shown), and the live model goes on taking the worker's updates, so
// Live is back at once. Once the slider rests, the chart's counts around the moment are worked out
// there too (countsShown), so the whole view is of the past.
class HistoryController : public QObject {
    Q_OBJECT
public:
    HistoryController(KeyTableModel* live, KeyFilterProxy* proxy, QWidget* barParent);
    ~HistoryController() override; // the recorder writes what is pending, then its thread ends

    void follow(ConsoleWorker* worker); // records what it observes
    RewindBar* bar() const { return m_bar; }
    KeyTableModel* shown() const; // the live model, or the rewound one
    bool isRewound() const;
    HistoryRecorder* recorder() const { return m_recorder; } // lives on its own thread

    // The history of this server and namespace from now on (nothing is rewound any more).
    void openFor(const QString& server, const QString& keyNamespace);
    // No history: a URL that cannot be used gets no directory of its own.
    void openNone();
    void requestTimeline(const QString& key, qint64 serverNowMs);
    // Writes the history in [fromMs, toMs] as an event log; exported() says how it went.
    void exportEventLog(const QString& path, qint64 fromMs, qint64 toMs);

Q_SIGNALS:
    void timelineReady(const QString& key, const QString& html);
    void shownChanged(KeyTableModel* model); // the table switched between live and rewound
    void snapshotShown(qint64 atMs);
    // The chart's counts around the moment shown (HistoryRecorder::requestCounts), server clock.
    void countsShown(qint64 atMs, const std::vector<idem::StateCounts>& counts);
    void exported(const QString& path, qint64 events, const QString& error);
    void failed(const QString& error);

private:
    void show(KeyTableModel* model);
    void request(); // the wanted moment, unless an answer is awaited
    void requestCounts(); // the same for the chart's counts, at the moment last shown

    QThread m_thread;
    HistoryRecorder* m_recorder;
    KeyTableModel* m_live;
    KeyTableModel* m_past;
    KeyFilterProxy* m_proxy;
    RewindBar* m_bar;
    quint64 m_epoch = 0;     // a new one each time Live is pressed
    qint64 m_wantedMs = 0;   // the moment the bar asks for
    bool m_inFlight = false; // a request is being answered
    bool m_pastValid = false; // m_past holds the recorder's last answer (changes apply to it)
    qint64 m_countsWantedMs = 0;     // the moment shown, whose counts the chart wants
    bool m_countsInFlight = false;
};
