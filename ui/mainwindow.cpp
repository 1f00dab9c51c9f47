#include "mainwindow.h"

#include "auditdialog.h"
#include "storeauditview.h"
#include "connectdialog.h"
#include "countschart.h"
#include "credentialstore.h"
#include "elidedlabel.h"
#include "frozentableview.h"
#include "historycontroller.h"
#include "inspectorpanel.h"
#include "keyfilterproxy.h"
#include "keytablemodel.h"
#include "logging.h"
#include "racelabwidget.h"
#include "replaywidget.h"
#include "settings.h"
#include "theme.h"

#include "idem/errors.h"
#include "idem/redis/options.h"

#include <QApplication>
#include <QCloseEvent>
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QStatusBar>
#include <QTextBrowser>
#include <QTimer>

using namespace Qt::StringLiterals;

namespace {

QString describe(const QString& url) { return shownUrl(url); }

std::optional<idem::ConnectionOptions> connectionOf(const ConnectionSettings& settings)
{
    try {
        return connectionOptions(settings);
    } catch (const idem::Error&) {
        return std::nullopt; // settings that cannot be used: the worker says so
    }
}

} // namespace

MainWindow::MainWindow(Options options, QWidget* parent)
    : QMainWindow(parent), m_options(std::move(options)), m_live(new KeyTableModel(this)), m_model(m_live),
      m_proxy(new KeyFilterProxy(this)),
      m_audit(new AuditTrail(m_options.auditPath.isEmpty() ? AuditTrail::defaultPath() : m_options.auditPath, this)),
      m_credentials(new CredentialStore(this))
{
    m_proxy->setSourceModel(m_model);
    // while rows go, the view moves its current row to a neighbour: that is not the operator's
    // choice, and the inspector does not follow it (connected before the view's selection model,
    // which moves the current row in its own handler)
    connect(m_proxy, &QAbstractItemModel::rowsAboutToBeRemoved, this, [this] { m_rowsGoing = true; });
    connect(m_proxy, &QAbstractItemModel::rowsRemoved, this, [this] { m_rowsGoing = false; });
    buildUi();
    buildActions();

    m_reinspectTimer = new QTimer(this);
    m_reinspectTimer->setSingleShot(true);
    m_reinspectTimer->setInterval(150); // bursts of changes to the inspected key: one read
    connect(m_reinspectTimer, &QTimer::timeout, this, &MainWindow::reinspect);
    m_shownCheckTimer = new QTimer(this);
    m_shownCheckTimer->setSingleShot(true);
    m_shownCheckTimer->setInterval(0);
    connect(m_shownCheckTimer, &QTimer::timeout, this, &MainWindow::checkInspectedShown);
    const auto check = [this] { m_shownCheckTimer->start(); };
    connect(m_proxy, &QAbstractItemModel::rowsRemoved, this, check);
    connect(m_proxy, &QAbstractItemModel::layoutChanged, this, check);
    connect(m_proxy, &QAbstractItemModel::modelReset, this, check);

    m_thread.setObjectName(u"idem-redis"_s);
    m_worker = new ConsoleWorker;
    m_worker->moveToThread(&m_thread);
    connect(&m_thread, &QThread::finished, m_worker, &QObject::deleteLater);
    m_history->follow(m_worker);
    connect(m_worker, &ConsoleWorker::rowsArrived, this, [this](const QVector<KeyRow>& rows, qint64 now, quint64 gen) {
        m_live->upsert(rows, now, gen);
        QMetaObject::invokeMethod(m_worker, [w = m_worker] { w->batchConsumed(); });
        heard(now);
        if (!m_inspectedKey.isEmpty()) {
            const QByteArray key = m_inspectedKey.toUtf8();
            for (const KeyRow& r : rows)
                if (r.key == key) {
                    m_reinspectTimer->start();
                    break;
                }
        }
    });
    connect(m_worker, &ConsoleWorker::rowsGone, this, [this](const QStringList& keys) {
        m_live->removeKeys(keys);
        if (keys.contains(m_inspectedKey))
            m_reinspectTimer->start();
    });
    connect(m_worker, &ConsoleWorker::scanStarted, m_live,
            [this](quint64, qint64 keysInDatabase) { m_live->reserveFor(keysInDatabase); });
    connect(m_worker, &ConsoleWorker::scanFinished, this, [this](const ScanSummary& s) {
        m_live->finishGeneration(s.generation);
        if (m_live->needsSort())
            m_live->sortAgain(); // rows that came in or changed since: put them in place
        m_lastScan = tr(" · last full scan %1 ms, %2 page(s)").arg(s.elapsedMs).arg(s.pages);
        if (s.refused > 0) // a namespace this user may not read is not empty: the counts leave them out
            m_lastScan += tr(" · ⚠ %1 key(s) this user may not read (NOPERM), not shown").arg(s.refused);
        m_freshScan = true;
        heard(s.serverNowMs);
        updateFreshness();
        m_reinspectTimer->start();
        Q_EMIT scanCompleted(s);
    });
    connect(m_worker, &ConsoleWorker::heartbeat, this, &MainWindow::heard);
    connect(m_worker, &ConsoleWorker::linkChanged, this, [this](ConsoleWorker::Link link, const QString& detail) {
        const bool wasUp = m_link == ConsoleWorker::Link::Connected;
        m_link = link;
        m_linkDetail = detail;
        if (wasUp && link != ConsoleWorker::Link::Connected) {
            m_lostAt = QDateTime::currentDateTime();
            m_freshScan = false; // what is shown is from before the drop until a scan ends after it
        }
        if (link != ConsoleWorker::Link::Connected)
            m_notLive.clear(); // the banner says more; a reconnect says again whether it is live
        const QString mark = link == ConsoleWorker::Link::Connected    ? u"● "_s
                             : link == ConsoleWorker::Link::Connecting ? u"◌ "_s
                             : detail.startsWith(u"failing over"_s)    ? u"◌ "_s // under way, not broken
                                                                       : u"✖ "_s;
        m_linkLabel->setText(mark + detail);
        updateFreshness();
        Q_EMIT linkStateChanged(link);
    });
    connect(m_worker, &ConsoleWorker::refused, this, [this](const QString& field, const QString& message) {
        // after this event: the dialog opens on a settled window
        QTimer::singleShot(0, this, [this, field, message] { openConnectFor(field, message); });
    });
    connect(m_worker, &ConsoleWorker::writeAccess, this, [this](bool allowed, const QString& why) {
        m_writeRefused = allowed ? QString() : why;
        updateActions();
    });
    // a cluster's nodes: a Node column once rows come from more than one
    connect(m_worker, &ConsoleWorker::nodesChanged, this, [this](const QStringList& nodes) {
        m_live->setNodes(nodes);
        m_table->setColumnHidden(KeyTableModel::Node, nodes.size() < 2);
    });
    connect(m_worker, &ConsoleWorker::liveUpdates, this, [this](bool live, const QString& detail, bool interrupted) {
        m_liveLabel->setText(live ? tr("live: %1").arg(detail) : interrupted ? u"⚠ "_s + detail : detail);
        if (interrupted && m_notLive.isEmpty())
            m_notLiveSince = QDateTime::currentDateTime();
        m_notLive = interrupted ? detail : QString();
        updateFreshness();
    });
    // a cluster's topology changing under the scan: said in the banner for a while, not only logged
    connect(m_worker, &ConsoleWorker::clusterNote, this, [this](const QString& note) {
        m_clusterNotes << QDateTime::currentDateTime().toString(u"HH:mm:ss "_s) + note;
        while (m_clusterNotes.size() > 3)
            m_clusterNotes.removeFirst();
        m_clusterNoteTimer->start();
        updateFreshness();
    });
    m_clusterNoteTimer = new QTimer(this);
    m_clusterNoteTimer->setSingleShot(true);
    m_clusterNoteTimer->setInterval(kClusterNoteMs);
    connect(m_clusterNoteTimer, &QTimer::timeout, this, [this] {
        m_clusterNotes.clear();
        updateFreshness();
    });
    m_liveLabel->setObjectName(u"liveUpdates"_s);
    connect(m_worker, &ConsoleWorker::inspected, this, &MainWindow::showInspection);
    connect(m_worker, &ConsoleWorker::actionDone, this, [this](const ActionResult& r) {
        noteAction(r.error.isEmpty() ? tr("%1: %2 of %3 key(s) changed, %4 left as they were")
                                               .arg(r.action)
                                               .arg(r.changed)
                                               .arg(r.requested)
                                               .arg(r.skipped) +
                                           (r.why.isEmpty() ? QString() : u" ("_s + r.why + u')')
                                     : tr("%1 failed: %2").arg(r.action, r.error));
        Q_EMIT actionCompleted(r);
        reinspect(); // the inspector shows what the action left
    });
    m_thread.start();

    m_readOnly = m_options.readOnly;
    auto* timer = new QTimer(this);
    connect(timer, &QTimer::timeout, this, &MainWindow::tick);
    timer->start(1000);
    restoreState(Settings::instance().windowState());
    placeOnScreen();
    if (m_options.connectNow && !m_options.connection.url.isEmpty())
        connectTo(m_options.connection);
    else
        updateFreshness();
}

MainWindow::~MainWindow()
{
    Settings::instance().setWindowState(saveState());
    Settings::instance().setWindowGeometry(saveGeometry());
    m_worker->abortIo(); // a worker blocked on a hung Redis returns now, not after its timeout
    m_thread.quit();
    m_thread.wait();
}

QTableView* MainWindow::table() const { return m_table; }
ConnectDialog* MainWindow::connectDialog() const { return m_connectDialog; }
QTextBrowser* MainWindow::inspector() const { return m_inspector->browser(); }
QString MainWindow::bannerText() const { return m_banner->isVisible() ? m_bannerText->text() : QString(); }

void MainWindow::closeEvent(QCloseEvent* event)
{
    Settings::instance().setWindowGeometry(saveGeometry());
    QMainWindow::closeEvent(event);
}

void MainWindow::changeEvent(QEvent* event)
{
    QMainWindow::changeEvent(event);
    if (event->type() == QEvent::FontChange || event->type() == QEvent::ApplicationFontChange) {
        sizeColumns();
        fitTableToColumns();
    }
    if (event->type() == QEvent::PaletteChange && m_banner) {
        updateFreshness(); // the banner's colours follow the palette
        if (m_insecureLabel)
            m_insecureLabel->setStyleSheet(theme::noteStyle(theme::Severity::Warning, palette()));
    }
}

void MainWindow::clearFilter()
{
    if (!m_filter->text().isEmpty())
        m_filter->clear();
    else
        m_stateBox->setCurrentIndex(0);
}

void MainWindow::connectTo(const ConnectionSettings& settings)
{
    m_options.connection = settings;
    m_server = describe(settings.url);
    if (!settings.table.isEmpty() && isPostgresUrl(settings.url))
        m_server += u" table "_s + settings.table; // another program's rows: a view, and a history, of their own
    m_live->clear();
    m_live->thaw();
    m_live->setKeyNamespace(settings.keyNamespace);
    // a URL the worker will refuse gets no history directory (Connect corrects it)
    const bool usable = isPostgresUrl(settings.url) || [&] {
        try {
            (void)connectionOptions(settings);
            return true;
        } catch (const idem::Error&) {
            return false;
        }
    }();
    if (usable)
        m_history->openFor(m_server, settings.keyNamespace);
    else
        m_history->openNone();
    m_inspectedKey.clear();
    m_inspector->clear(tr("Select a key to see its record."));
    m_everHeard = false;
    m_freshScan = true; // nothing old to replace: rows are current as they come
    m_lastHeard = {};
    m_lastHeardServerMs = 0;
    m_writeRefused.clear();
    m_lastScan.clear();
    m_notLive.clear();
    m_clusterNotes.clear();
    m_link = ConsoleWorker::Link::Connecting;
    m_linkDetail = tr("connecting to %1").arg(m_server);
    m_chart->setServer(m_server); // that server's own history
    // no verification of the server: first in the title (never elided away) and in the status bar
    setWindowTitle((settings.tlsInsecure ? tr("⚠ TLS NOT VERIFIED — ") : QString()) +
                   tr("idem console — %1%2").arg(m_server, m_options.titleNote.isEmpty() ? QString()
                                                                                       : u" — "_s + m_options.titleNote));
    m_insecureLabel->setVisible(settings.tlsInsecure);
    QMetaObject::invokeMethod(m_worker, [w = m_worker, settings] { w->open(settings); });
    m_raceLab->setConnectedServer(connectionOf(settings), m_server);
    m_replay->setConnectedServer(connectionOf(settings), m_server);
    updateFreshness();
}

void MainWindow::refresh()
{
    QMetaObject::invokeMethod(m_worker, [w = m_worker] { w->rescan(); });
}

QString MainWindow::readOnlyLock() const
{
    if (m_options.readOnly)
        return tr("started with --read-only");
    return m_writeRefused;
}

void MainWindow::setReadOnly(bool on)
{
    const QString lock = readOnlyLock();
    if (!on && !lock.isEmpty()) {
        noteAction(tr("Read-only stays on: %1.").arg(lock));
        updateActions();
        return;
    }
    m_readOnly = on; // for this session only: never kept in the settings
    updateActions();
}

void MainWindow::tick()
{
    const bool live = freshness() == Freshness::Live;
    if (live) {
        // countdowns: data() computes remaining time from deadlines; repainting the viewport
        // repaints the visible rows only
        m_table->repaintRows();
        // leases run out between scans: a stale view follows the clock (cheap below 100k rows;
        // larger tables catch up when rows change or the next scan ends)
        if (m_proxy->stateFilter() == idem::StateFilter::Stale && m_model->rowCount() <= 100'000)
            m_proxy->refilter();
    }
    updateCounters();
    m_scanLabel->setText(freshness() == Freshness::NoData
                             ? tr("no data")
                             : tr("%1 keys · %2 shown").arg(m_model->rowCount()).arg(m_proxy->rowCount()) + m_lastScan);
    if (++m_ticks % 2 == 0) {
        if (live)
            m_chart->addSample(QDateTime::currentDateTime(), m_live->stats());
        else if (m_everHeard)
            m_chart->addOutage(QDateTime::currentDateTime());
    }
}

void MainWindow::currentRowChanged()
{
    const QModelIndex current = m_table->selectionModel()->currentIndex();
    if (!current.isValid() || m_rowsGoing)
        return;
    inspect(m_proxy->data(current, KeyTableModel::KeyRole).toString());
}

void MainWindow::inspect(const QString& key)
{
    if (key != m_inspectedKey || m_inspector->key() != key)
        m_inspector->showReading(key);
    m_inspectedKey = key;
    updateActions();
    if (freshness() == Freshness::AsOf) // the worker has no connection: say what the table knew
        m_inspector->setStaleNote(tr("Not current: the connection to %1 is down, so this record cannot be read now.")
                                      .arg(m_server));
    else if (m_history->isRewound())
        m_inspector->setStaleNote(tr("The table is rewound; this is the record as it is now. Its history is below."));
    QMetaObject::invokeMethod(m_worker, [w = m_worker, key] { w->inspect(key); });
    m_history->requestTimeline(key, m_live->serverNowMs());
}

void MainWindow::reinspect()
{
    if (m_inspectedKey.isEmpty() || freshness() != Freshness::Live)
        return; // while not live the last answer stays, marked as not current
    QMetaObject::invokeMethod(m_worker, [w = m_worker, key = m_inspectedKey] { w->inspect(key); });
    m_history->requestTimeline(m_inspectedKey, m_live->serverNowMs());
}

void MainWindow::showInspection(const QString& key, const QString& html)
{
    if (key != m_inspectedKey) // a late answer for a row no longer selected is dropped
        return;
    m_inspector->showRecord(key, html);
    updateActions();
    Q_EMIT inspected(key);
}

void MainWindow::checkInspectedShown()
{
    if (m_inspectedKey.isEmpty())
        return;
    const int r = m_model->rowOfKey(m_inspectedKey);
    if (r < 0)
        return; // gone from the store: the inspector says so when it reads it again
    if (m_proxy->mapFromSource(m_model->index(r, 0)).isValid())
        return;
    m_inspectedKey.clear(); // the filter hides it: the inspector never shows a row the table does not
    m_inspector->clear(tr("The key you were inspecting is hidden by the filter."));
    m_table->selectionModel()->clearCurrentIndex(); // and no other row looks chosen in its place
    updateActions();
}

void MainWindow::showAuditTrail()
{
    if (!m_auditDialog) {
        m_auditDialog = new AuditDialog(m_audit, this);
        m_auditDialog->setAttribute(Qt::WA_DeleteOnClose);
        StoreAuditView* view = m_auditDialog->storeView();
        // read by the worker, off the GUI thread; a late answer for a closed view is dropped
        connect(view, &StoreAuditView::wanted, m_worker, &ConsoleWorker::readAudit);
        connect(m_worker, &ConsoleWorker::auditRead, view, &StoreAuditView::setEntries);
        m_auditDialog->resize(std::min(1000, width()), std::min(420, height()));
    }
    m_auditDialog->show();
    m_auditDialog->raise();
    m_auditDialog->activateWindow();
}

StoreAuditView* MainWindow::storeAuditView() const
{
    return m_auditDialog ? m_auditDialog->storeView() : nullptr;
}

void MainWindow::openConnectDialog() { openConnectFor(QString(), QString()); }

void MainWindow::openConnectFor(const QString& field, const QString& message)
{
    if (!m_connectDialog) {
        m_connectDialog = new ConnectDialog(m_credentials, this);
        m_connectDialog->setAttribute(Qt::WA_DeleteOnClose);
        m_connectDialog->setSettings(m_options.connection);
        connect(m_connectDialog, &QDialog::accepted, this, [this, dialog = m_connectDialog] {
            const ConnectionSettings s = dialog->settings();
            const QString account = describe(s.url);
            Settings::instance().addRecentUrl(account);
            Settings::instance().rememberConnection(account, s);
            Settings::instance().setKeyNamespace(s.keyNamespace);
            if (dialog->rememberPassword() && !s.password.isEmpty())
                m_credentials->save(account, s.password, [this](const QString& error) {
                    if (!error.isEmpty())
                        noteAction(tr("Password not kept: %1").arg(error));
                });
            else
                m_credentials->forget(account);
            m_options.titleNote.clear();
            connectTo(s);
        });
        m_connectDialog->open(); // window-modal, and the event loop goes on: the console stays live
    }
    if (!field.isEmpty())
        m_connectDialog->highlight(field, message);
}
