#include "historycontroller.h"

#include "historyrecorder.h"
#include "keyfilterproxy.h"
#include "keytablemodel.h"
#include "rewindbar.h"

#include <QDir>
#include <QFileDialog>

using namespace Qt::StringLiterals;

HistoryController::HistoryController(KeyTableModel* live, KeyFilterProxy* proxy, QWidget* barParent)
    : QObject(barParent), m_recorder(new HistoryRecorder), m_live(live), m_past(new KeyTableModel(this)), m_proxy(proxy),
      m_bar(new RewindBar(barParent))
{
    m_thread.setObjectName(u"idem-history"_s);
    m_recorder->moveToThread(&m_thread);
    connect(&m_thread, &QThread::finished, m_recorder, &QObject::deleteLater);
    connect(m_recorder, &HistoryRecorder::extentChanged, m_bar, &RewindBar::setExtent);
    connect(m_recorder, &HistoryRecorder::timelineReady, this, &HistoryController::timelineReady);
    connect(m_recorder, &HistoryRecorder::exported, this, &HistoryController::exported);
    connect(m_recorder, &HistoryRecorder::failed, this, &HistoryController::failed);
    connect(m_recorder, &HistoryRecorder::opened, this, [this](qint64, const QString& error) {
        if (!error.isEmpty())
            Q_EMIT failed(error);
    });
    // One request at a time, each answered with the changes since the one before (so every answer
    // is applied, in order); a moment asked for meanwhile is sent when the answer comes.
    connect(m_recorder, &HistoryRecorder::snapshotReady, this,
            [this](qint64 atMs, const QVector<KeyRow>& rows, const QStringList& gone, quint64 epoch, bool fresh,
                   qint64 elapsedMs) {
                m_inFlight = false;
                if (epoch != m_epoch || !m_bar->isRewound()) { // Live was pressed since: start over
                    m_pastValid = false;
                    if (m_bar->isRewound())
                        request();
                    return;
                }
                if (fresh) // the whole state (a first or a far jump): swapped in with one reset
                    m_past->replaceSnapshot(rows, atMs);
                else
                    m_past->applySnapshotChanges(rows, gone, atMs);
                m_pastValid = true;
                show(m_past);
                m_bar->shown(atMs, elapsedMs);
                Q_EMIT snapshotShown(atMs);
                if (m_wantedMs != atMs) {
                    request();
                } else { // the slider rests here: the chart's counts too (not at every step of a drag)
                    m_countsWantedMs = atMs;
                    requestCounts();
                }
            });
    // The chart's counts take longer than a step of the table (the whole window from the state
    // before it): one request at a time as well, and an answer for a moment no longer shown (the
    // slider moved on, or Live was pressed) is dropped, never drawn over a newer one.
    connect(m_recorder, &HistoryRecorder::countsReady, this,
            [this](qint64 atMs, const std::vector<idem::StateCounts>& counts, quint64 epoch) {
                m_countsInFlight = false;
                if (epoch != m_epoch || !m_bar->isRewound() || atMs != m_countsWantedMs) {
                    if (m_bar->isRewound() && m_countsWantedMs != 0)
                        requestCounts();
                    return;
                }
                Q_EMIT countsShown(atMs, counts);
            });
    connect(m_bar, &RewindBar::moveTo, this, [this](qint64 ms) {
        m_wantedMs = ms;
        request();
    });
    connect(m_bar, &RewindBar::live, this, [this] {
        ++m_epoch; // an answer still being worked out is not shown
        m_pastValid = false;
        m_countsWantedMs = 0;
        show(m_live);
    });
    connect(m_bar, &RewindBar::exportRequested, this, [this] {
        const QString path = QFileDialog::getSaveFileName(m_bar, tr("Export the history as an event log"),
                                                          u"history-events.jsonl"_s, tr("Event logs (*.jsonl)"));
        if (!path.isEmpty()) // up to the moment shown when rewound, else all of it
            exportEventLog(path, m_bar->firstMs(), m_bar->isRewound() ? m_bar->atMs() : m_bar->lastMs());
    });
    m_thread.start();
}

HistoryController::~HistoryController()
{
    // a local file, at shutdown: waiting for it costs the GUI nothing it would notice
    QMetaObject::invokeMethod(m_recorder, [r = m_recorder] { r->close(); }, Qt::BlockingQueuedConnection);
    m_thread.quit();
    m_thread.wait();
}

void HistoryController::request()
{
    if (m_inFlight)
        return;
    m_inFlight = true;
    QMetaObject::invokeMethod(m_recorder, [r = m_recorder, ms = m_wantedMs, epoch = m_epoch, fresh = !m_pastValid] {
        r->requestSnapshot(ms, epoch, fresh);
    });
}

void HistoryController::requestCounts()
{
    if (m_countsInFlight)
        return;
    m_countsInFlight = true;
    QMetaObject::invokeMethod(m_recorder, [r = m_recorder, ms = m_countsWantedMs, epoch = m_epoch] {
        r->requestCounts(ms, epoch);
    });
}

void HistoryController::follow(ConsoleWorker* worker) { HistoryRecorder::follow(worker, m_recorder); }

KeyTableModel* HistoryController::shown() const
{
    return qobject_cast<KeyTableModel*>(m_proxy->sourceModel());
}

bool HistoryController::isRewound() const { return shown() == m_past; }

void HistoryController::show(KeyTableModel* model)
{
    if (m_proxy->sourceModel() == model)
        return;
    m_proxy->setSourceModel(model);
    Q_EMIT shownChanged(model);
}

void HistoryController::openFor(const QString& server, const QString& keyNamespace)
{
    if (m_bar->isRewound())
        m_bar->goLive();
    m_past->clear();
    m_past->setKeyNamespace(keyNamespace);
    const QString dir = HistoryRecorder::directoryFor(server, keyNamespace);
    m_bar->setDirectory(QDir::toNativeSeparators(dir));
    QMetaObject::invokeMethod(m_recorder, [r = m_recorder, dir, keyNamespace] { r->open(dir, keyNamespace); });
}

void HistoryController::openNone()
{
    if (m_bar->isRewound())
        m_bar->goLive();
    m_past->clear();
    m_bar->setDirectory({});
    QMetaObject::invokeMethod(m_recorder, [r = m_recorder] { r->closeAndForget(); });
}

void HistoryController::requestTimeline(const QString& key, qint64 serverNowMs)
{
    QMetaObject::invokeMethod(m_recorder, [r = m_recorder, key, serverNowMs] { r->requestTimeline(key, serverNowMs); });
}

void HistoryController::exportEventLog(const QString& path, qint64 fromMs, qint64 toMs)
{
    QMetaObject::invokeMethod(m_recorder, [r = m_recorder, path, fromMs, toMs] { r->exportEventLog(path, fromMs, toMs); });
}
