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
    connect(m_recorder, &HistoryRecorder::snapshotReady, this,
            [this](qint64 atMs, const QVector<KeyRow>& rows, quint64 ticket, qint64 elapsedMs) {
                if (ticket != m_ticket || !m_bar->isRewound())
                    return; // a later moment was asked for since, or Live was pressed
                m_past->showSnapshot(rows, atMs);
                show(m_past);
                m_bar->shown(atMs, elapsedMs);
                Q_EMIT snapshotShown(atMs);
            });
    connect(m_bar, &RewindBar::moveTo, this, [this](qint64 ms) {
        const quint64 ticket = ++m_ticket;
        QMetaObject::invokeMethod(m_recorder, [r = m_recorder, ms, ticket] { r->requestSnapshot(ms, ticket); });
    });
    connect(m_bar, &RewindBar::exportRequested, this, [this] {
        const QString path = QFileDialog::getSaveFileName(m_bar, tr("Export the history as an event log"),
                                                          u"history-events.jsonl"_s, tr("Event logs (*.jsonl)"));
        if (!path.isEmpty()) // up to the moment shown when rewound, else all of it
            exportEventLog(path, m_bar->firstMs(), m_bar->isRewound() ? m_bar->atMs() : m_bar->lastMs());
    });
    connect(m_bar, &RewindBar::live, this, [this] {
        ++m_ticket; // a snapshot still being worked out is not shown
        show(m_live);
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

void HistoryController::requestTimeline(const QString& key, qint64 serverNowMs)
{
    QMetaObject::invokeMethod(m_recorder, [r = m_recorder, key, serverNowMs] { r->requestTimeline(key, serverNowMs); });
}

void HistoryController::exportEventLog(const QString& path, qint64 fromMs, qint64 toMs)
{
    QMetaObject::invokeMethod(m_recorder, [r = m_recorder, path, fromMs, toMs] { r->exportEventLog(path, fromMs, toMs); });
}
