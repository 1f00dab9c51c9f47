#include "mainwindow.h"

#include "auditdialog.h"
#include "storeauditview.h"
#include "connectdialog.h"
#include "countschart.h"
#include "credentialstore.h"
#include "elidedlabel.h"
#include "flowlayout.h"
#include "frozentableview.h"
#include "historycontroller.h"
#include "rewindbar.h"
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
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QScreen>
#include <QShortcut>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QTextBrowser>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>

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


struct FilterChoice {
    const char* label;
    idem::StateFilter filter;
    const char* tip;
};
const FilterChoice kFilters[] = {
    {QT_TRANSLATE_NOOP("MainWindow", "All"), idem::StateFilter::Any, QT_TRANSLATE_NOOP("MainWindow", "Every key read")},
    {QT_TRANSLATE_NOOP("MainWindow", "Started"), idem::StateFilter::Started,
     QT_TRANSLATE_NOOP("MainWindow", "STARTED records, stale ones included (their number is in brackets)")},
    {QT_TRANSLATE_NOOP("MainWindow", "Stale"), idem::StateFilter::Stale,
     QT_TRANSLATE_NOOP("MainWindow", "STARTED records whose lease or in-progress window has passed")},
    {QT_TRANSLATE_NOOP("MainWindow", "No lease"), idem::StateFilter::Blocked,
     QT_TRANSLATE_NOOP("MainWindow", "STARTED records of libraries that write no deadline: blocked until the TTL")},
    {QT_TRANSLATE_NOOP("MainWindow", "Completed"), idem::StateFilter::Completed,
     QT_TRANSLATE_NOOP("MainWindow", "COMPLETED records: duplicates get their stored result")},
    {QT_TRANSLATE_NOOP("MainWindow", "Failed"), idem::StateFilter::Failed,
     QT_TRANSLATE_NOOP("MainWindow", "FAILED records, retryable and terminal")},
    {QT_TRANSLATE_NOOP("MainWindow", "Expired"), idem::StateFilter::Expired,
     QT_TRANSLATE_NOOP("MainWindow", "Records past their library's own expiry")},
    {QT_TRANSLATE_NOOP("MainWindow", "Malformed"), idem::StateFilter::Malformed,
     QT_TRANSLATE_NOOP("MainWindow", "A known format, broken")},
    {QT_TRANSLATE_NOOP("MainWindow", "Foreign"), idem::StateFilter::Foreign,
     QT_TRANSLATE_NOOP("MainWindow", "Valid keys of something else (a mutex, a queue, the race lab)")},
    {QT_TRANSLATE_NOOP("MainWindow", "Unknown"), idem::StateFilter::Unknown,
     QT_TRANSLATE_NOOP("MainWindow", "Keys no known library writes")},
    {QT_TRANSLATE_NOOP("MainWindow", "No TTL"), idem::StateFilter::NoTtl,
     QT_TRANSLATE_NOOP("MainWindow", "Keys that never expire by themselves")},
};

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
    connect(m_worker, &ConsoleWorker::liveUpdates, this, [this](bool live, const QString& detail) {
        m_liveLabel->setText(live ? tr("live: %1").arg(detail) : detail);
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
    if (event->type() == QEvent::FontChange || event->type() == QEvent::ApplicationFontChange)
        sizeColumns();
    if (event->type() == QEvent::PaletteChange && m_banner) {
        updateFreshness(); // the banner's colours follow the palette
        if (m_insecureLabel)
            m_insecureLabel->setStyleSheet(theme::noteStyle(theme::Severity::Warning, palette()));
    }
}

// The first size fits the screen the window opens on (status bar included); a size the user gave
// it before comes back, moved onto the screen if it no longer fits.
void MainWindow::placeOnScreen()
{
    const QScreen* screen = this->screen() ? this->screen() : QGuiApplication::primaryScreen();
    if (!screen)
        return;
    const QRect avail = screen->availableGeometry();
    const QByteArray saved = Settings::instance().windowGeometry();
    if (!saved.isEmpty() && restoreGeometry(saved)) {
        if (frameGeometry().width() <= avail.width() && frameGeometry().height() <= avail.height() &&
            avail.contains(frameGeometry().topLeft()))
            return;
    }
    const QSize frame = frameGeometry().size() - geometry().size(); // the title bar and borders, if any
    const QSize size(std::min(1480, avail.width() * 94 / 100) - frame.width(),
                     std::min(940, avail.height() * 94 / 100) - frame.height());
    resize(size.expandedTo(minimumSizeHint()).boundedTo(avail.size() - frame));
    move(avail.center() - QPoint(width() / 2, height() / 2));
}

void MainWindow::buildUi()
{
    auto* central = new QWidget(this);
    auto* layout = new QVBoxLayout(central);
    layout->setContentsMargins(6, 6, 6, 0);

    m_banner = new QFrame(central);
    m_banner->setObjectName(u"banner"_s);
    auto* bannerLayout = new QHBoxLayout(m_banner);
    bannerLayout->setContentsMargins(6, 4, 6, 4);
    m_bannerText = new QLabel(m_banner);
    m_bannerText->setObjectName(u"bannerText"_s);
    m_bannerText->setWordWrap(true);
    m_bannerText->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_bannerConnect = new QPushButton(tr("Connect…"), m_banner);
    m_bannerConnect->setObjectName(u"bannerConnect"_s);
    connect(m_bannerConnect, &QPushButton::clicked, this, &MainWindow::openConnectDialog);
    bannerLayout->addWidget(m_bannerText, 1);
    bannerLayout->addWidget(m_bannerConnect, 0, Qt::AlignTop);
    m_banner->hide();
    layout->addWidget(m_banner);

    m_counterBox = new QWidget(central);
    m_counterBox->setObjectName(u"counters"_s);
    auto* counters = new FlowLayout(m_counterBox, 4);
    for (const auto& f : kFilters) {
        auto* b = new QToolButton(m_counterBox);
        b->setCheckable(true);
        b->setAutoExclusive(true);
        b->setToolButtonStyle(Qt::ToolButtonTextOnly);
        b->setObjectName(u"counter-"_s + QString::fromLatin1(f.label).toLower().replace(u' ', u'-'));
        b->setToolTip(tr(f.tip));
        connect(b, &QToolButton::clicked, this, [this, filter = f.filter] {
            for (int i = 0; i < m_stateBox->count(); ++i)
                if (m_stateBox->itemData(i).toInt() == static_cast<int>(filter))
                    m_stateBox->setCurrentIndex(i);
        });
        counters->addWidget(b);
        m_counters.push_back(b);
    }
    m_counters.front()->setChecked(true);
    layout->addWidget(m_counterBox);

    auto* filterBar = new QHBoxLayout;
    m_stateBox = new QComboBox(central);
    m_stateBox->setObjectName(u"stateFilter"_s);
    for (const auto& f : kFilters)
        m_stateBox->addItem(tr(f.label), static_cast<int>(f.filter));
    m_filter = new QLineEdit(central);
    m_filter->setObjectName(u"textFilter"_s);
    m_filter->setPlaceholderText(tr("Filter by id, owner, error or note (Ctrl+F; Esc clears)"));
    m_filter->setClearButtonEnabled(true);
    filterBar->addWidget(new QLabel(tr("State:"), central));
    filterBar->addWidget(m_stateBox);
    filterBar->addWidget(m_filter, 1);
    layout->addLayout(filterBar);
    // shown only when the scan cannot see every key (a node of a multi-primary Redis Cluster)
    connect(m_filter, &QLineEdit::textChanged, m_proxy, &KeyFilterProxy::setText);
    connect(m_stateBox, &QComboBox::currentIndexChanged, this, [this](int i) {
        const auto f = static_cast<idem::StateFilter>(m_stateBox->itemData(i).toInt());
        m_proxy->setStateFilter(f);
        if (i >= 0 && i < m_counters.size())
            m_counters[i]->setChecked(true);
    });
    auto* esc = new QShortcut(QKeySequence(Qt::Key_Escape), this);
    esc->setContext(Qt::WindowShortcut);
    connect(esc, &QShortcut::activated, this, &MainWindow::clearFilter);

    m_chart = new CountsChart(central);
    m_history = new HistoryController(m_live, m_proxy, central);
    connect(m_history, &HistoryController::shownChanged, this, [this](KeyTableModel* model) {
        m_model = model;
        if (model == m_live) {
            m_chart->setMarker(0);
            m_chart->showLive();
        }
        updateCounters();
        updateActions();
    });
    connect(m_history, &HistoryController::snapshotShown, this, [this](qint64 atMs) {
        updateCounters();
        m_table->viewport()->update(); // leases and TTLs of unchanged rows count from the new moment
        // the chart runs on local time: the server's moment, less the clock offset the table knows
        m_chart->setMarker(atMs - (m_live->serverNowMs() - QDateTime::currentMSecsSinceEpoch()));
    });
    // the whole view rewinds: the chart draws the history's counts around the moment, the counters' too
    connect(m_history, &HistoryController::countsShown, this,
            [this](qint64 atMs, const std::vector<idem::StateCounts>& counts) {
                const qint64 offset = m_live->serverNowMs() - QDateTime::currentMSecsSinceEpoch();
                m_chart->showPast(counts, offset);
                m_chart->setMarker(atMs - offset);
            });
    connect(m_history, &HistoryController::timelineReady, this, [this](const QString& key, const QString& html) {
        m_inspector->showHistory(key, html);
    });
    connect(m_history, &HistoryController::exported, this, [this](const QString& path, qint64 events, const QString& error) {
        noteAction(error.isEmpty() ? tr("History exported: %n event(s) to %1", nullptr, int(events)).arg(path)
                                   : tr("History not exported: %1").arg(error));
    });
    connect(m_history, &HistoryController::failed, this,
            [this](const QString& error) { noteAction(tr("History not recorded: %1").arg(error)); });
    m_table = new FrozenTableView(central);
    m_table->setObjectName(u"keyTable"_s);
    m_table->setModel(m_proxy);
    m_table->setColumnHidden(KeyTableModel::Node, true); // shown when rows come from several nodes
    // unsorted (scan order) until the operator clicks a header: keeping a million rows sorted
    // while they stream in would cost more than it shows
    m_table->horizontalHeader()->setSortIndicatorClearable(true);
    m_table->horizontalHeader()->setSortIndicator(-1, Qt::AscendingOrder);
    m_table->setSortingEnabled(true);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::ExtendedSelection);
    m_table->setAlternatingRowColors(true);
    m_table->verticalHeader()->hide();
    m_table->verticalHeader()->setSectionResizeMode(QHeaderView::Fixed);
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->setWordWrap(false);
    sizeColumns();
    connect(m_table->selectionModel(), &QItemSelectionModel::currentRowChanged, this, &MainWindow::currentRowChanged);

    m_inspector = new InspectorPanel(central);
    connect(m_inspector, &InspectorPanel::forceFailRequested, this, [this](const QString& key) { actOnKey(true, key); });
    connect(m_inspector, &InspectorPanel::purgeRequested, this, [this](const QString& key) { actOnKey(false, key); });

    auto* horizontal = new QSplitter(Qt::Horizontal, central);
    horizontal->setObjectName(u"tableAndInspector"_s);
    horizontal->addWidget(m_table);
    horizontal->addWidget(m_inspector);
    horizontal->setStretchFactor(0, 3);
    horizontal->setStretchFactor(1, 2);
    horizontal->setChildrenCollapsible(false);
    auto* vertical = new QSplitter(Qt::Vertical, central);
    vertical->setObjectName(u"chartAndTable"_s);
    vertical->addWidget(m_chart);
    vertical->addWidget(horizontal);
    vertical->setStretchFactor(0, 1);
    vertical->setStretchFactor(1, 4);
    vertical->setChildrenCollapsible(false);
    vertical->setSizes({m_chart->sizeHint().height(), 4 * m_chart->sizeHint().height()});
    layout->addWidget(m_history->bar());
    layout->addWidget(vertical, 1);
    m_raceLab = new RaceLabWidget(this);
    m_tabs = new QTabWidget(this);
    m_tabs->addTab(central, tr("Keys"));
    m_tabs->addTab(m_raceLab, tr("Race lab"));
    m_replay = new ReplayWidget(this);
    m_tabs->addTab(m_replay, tr("Replay"));
    setCentralWidget(m_tabs);

    // permanent widgets: a passing message never hides the state of the connection
    m_linkLabel = new ElidedLabel(this);
    m_linkLabel->setObjectName(u"linkState"_s);
    m_linkLabel->setText(tr("not connected"));
    m_liveLabel = new ElidedLabel(this);
    m_scanLabel = new ElidedLabel(this);
    m_modeLabel = new ElidedLabel(this);
    m_modeLabel->setObjectName(u"modeLabel"_s);
    m_insecureLabel = new QLabel(tr("⚠ TLS not verified"), this);
    m_insecureLabel->setObjectName(u"insecureTls"_s);
    m_insecureLabel->setToolTip(tr("Started with --tls-insecure (or “no verification” in Connect): the server's "
                                   "certificate is not checked, so anyone on the path can read and change what the "
                                   "console sends and shows."));
    m_insecureLabel->setStyleSheet(theme::noteStyle(theme::Severity::Warning, palette()));
    m_insecureLabel->hide();
    statusBar()->addPermanentWidget(m_insecureLabel);
    statusBar()->addPermanentWidget(m_modeLabel, 1);
    statusBar()->addPermanentWidget(m_scanLabel, 2);
    statusBar()->addPermanentWidget(m_liveLabel, 1);
    statusBar()->addPermanentWidget(m_linkLabel, 2);
}

void MainWindow::sizeColumns()
{
    if (!m_table)
        return;
    // from the font: what each column has to show in full at its usual longest
    const QFontMetrics fm = m_table->fontMetrics();
    const QFontMetrics hfm = m_table->horizontalHeader()->fontMetrics();
    const int pad = fm.averageCharWidth() * 2 + 10;
    const int icon = m_table->style()->pixelMetric(QStyle::PM_SmallIconSize) + 6;
    const auto w = [&](std::initializer_list<QString> texts, int column, int extra = 0) {
        int width = hfm.horizontalAdvance(m_model->headerData(column, Qt::Horizontal).toString()) + 28;
        for (const QString& t : texts)
            width = std::max(width, fm.horizontalAdvance(t) + pad + extra);
        m_table->setColumnWidth(column, width);
    };
    w({u"order-0000000000-0000-00"_s}, KeyTableModel::Id);
    w({u"FAILED (terminal)"_s, u"STARTED (no lease)"_s, u"COMPLETED"_s, u"MALFORMED"_s}, KeyTableModel::State, icon);
    w({u"23h59m59s"_s}, KeyTableModel::Age);
    w({u"23h59m59s"_s, u"∞ no TTL"_s}, KeyTableModel::Ttl);
    w({u"expired 59m59s ago"_s}, KeyTableModel::Lease);
    w({u"0123456789abcdef"_s}, KeyTableModel::Owner);
    w({u"999"_s}, KeyTableModel::Attempt);
    w({u"1795000000000000"_s}, KeyTableModel::Fence);
    w({u"express-idempotency"_s}, KeyTableModel::Format);
    w({u"lease expired 10m ago"_s}, KeyTableModel::Note);
    m_table->verticalHeader()->setDefaultSectionSize(fm.height() + 6);
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
    m_history->openFor(m_server, settings.keyNamespace);
    m_inspectedKey.clear();
    m_inspector->clear(tr("Select a key to see its record."));
    m_everHeard = false;
    m_freshScan = true; // nothing old to replace: rows are current as they come
    m_lastHeard = {};
    m_lastHeardServerMs = 0;
    m_writeRefused.clear();
    m_lastScan.clear();
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

void MainWindow::updateCounters()
{
    if (freshness() == Freshness::NoData) {
        for (int i = 0; i < m_counters.size(); ++i)
            m_counters[i]->setText(u"%1\n—"_s.arg(tr(kFilters[i].label)));
        return;
    }
    const idem::Stats s = m_model->stats();
    const std::size_t values[] = {s.total,   s.started,   s.stale,   s.blocked, s.completed, s.failed,
                                  s.expired, s.malformed, s.foreign, s.unknown, s.noTtl};
    for (int i = 0; i < m_counters.size(); ++i) {
        QString value = QString::number(values[i]);
        if (kFilters[i].filter == idem::StateFilter::Started && s.stale > 0)
            value += tr(" (%1 stale)").arg(s.stale); // Started counts them too: say so
        m_counters[i]->setText(u"%1\n%2"_s.arg(tr(kFilters[i].label), value));
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
