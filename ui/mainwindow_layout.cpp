// The main window's widgets: how they are laid out, sized and placed, and the state counters.
#include "mainwindow.h"

#include "countschart.h"
#include "elidedlabel.h"
#include "flowlayout.h"
#include "frozentableview.h"
#include "historycontroller.h"
#include "inspectorpanel.h"
#include "keyfilterproxy.h"
#include "keytablemodel.h"
#include "racelabwidget.h"
#include "replaywidget.h"
#include "rewindbar.h"
#include "settings.h"
#include "theme.h"

#include <QComboBox>
#include <QGuiApplication>
#include <QDateTime>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QScreen>
#include <QShortcut>
#include <QTimer>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QToolButton>
#include <QVBoxLayout>

using namespace Qt::StringLiterals;

namespace {

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
    // always there, so that the width fitTableToColumns() gives the columns stays theirs when the
    // rows grow past the view
    m_table->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOn);
    m_table->setWordWrap(false);
    sizeColumns();
    connect(m_table->selectionModel(), &QItemSelectionModel::currentRowChanged, this, &MainWindow::currentRowChanged);
    connect(m_table->selectionModel(), &QItemSelectionModel::selectionChanged, this, &MainWindow::updateActions);

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
    m_tableSplit = horizontal;
    horizontal->installEventFilter(this); // its resizes: fitted to the columns after each
    connect(horizontal, &QSplitter::splitterMoved, this, [this] { m_tableWidthByHand = true; });
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
    m_scanLabel->setObjectName(u"scanState"_s);
    m_modeLabel = new ElidedLabel(this);
    m_modeLabel->setObjectName(u"modeLabel"_s);
    m_insecureLabel = new QLabel(tr("⚠ TLS not verified"), this);
    m_insecureLabel->setObjectName(u"insecureTls"_s);
    m_insecureLabel->setToolTip(tr("Started with --tls-insecure (or “no verification” in Connect): the server's "
                                   "certificate is not checked, so anyone on the path can read and change what the "
                                   "console sends and shows."));
    m_insecureLabel->setStyleSheet(theme::noteStyle(theme::Severity::Warning, palette()));
    m_insecureLabel->hide();
    // what an action did: the permanent labels leave a passing message no room, so it has its own
    m_noteLabel = new ElidedLabel(this);
    m_noteLabel->setObjectName(u"actionNote"_s);
    m_noteLabel->hide();
    m_noteTimer = new QTimer(this);
    m_noteTimer->setSingleShot(true);
    m_noteTimer->setInterval(15000);
    connect(m_noteTimer, &QTimer::timeout, this, [this] {
        m_noteLabel->setText({});
        m_noteLabel->hide();
    });
    statusBar()->addPermanentWidget(m_noteLabel, 3);
    statusBar()->addPermanentWidget(m_insecureLabel);
    statusBar()->addPermanentWidget(m_modeLabel, 1);
    statusBar()->addPermanentWidget(m_scanLabel, 2);
    statusBar()->addPermanentWidget(m_liveLabel, 1);
    statusBar()->addPermanentWidget(m_linkLabel, 2);
}

bool MainWindow::eventFilter(QObject* watched, QEvent* event)
{
    if (watched == m_tableSplit && event->type() == QEvent::Resize) // (after the splitter's own sharing)
        QMetaObject::invokeMethod(this, &MainWindow::fitTableToColumns, Qt::QueuedConnection);
    return QMainWindow::eventFilter(watched, event);
}

// The table ends at a column's edge, not with a column half behind its scrollbar: its share of the
// width beside the inspector is rounded to whole columns, up while the inspector keeps room for its
// record, else down. Until the operator moves the divider.
void MainWindow::fitTableToColumns()
{
    if (!m_tableSplit || m_tableWidthByHand)
        return;
    const QList<int> sizes = m_tableSplit->sizes();
    const int total = sizes.value(0) + sizes.value(1);
    if (sizes.size() != 2 || total <= 0)
        return;
    const int chrome = m_table->width() - m_table->viewport()->width(); // frame and scrollbar
    const int share = total * 3 / 5; // the stretch factors' split
    const int inspectorMin = fontMetrics().averageCharWidth() * 48;
    const QHeaderView* header = m_table->horizontalHeader();
    int edge = 0, below = 0, above = 0;
    for (int v = 0; v < header->count() && above == 0; ++v) {
        const int c = header->logicalIndex(v);
        if (header->isSectionHidden(c))
            continue;
        edge += header->sectionSize(c);
        if (edge + chrome <= share)
            below = edge; // the last column edge within the share
        else
            above = edge; // the first one past it
    }
    int table = share; // every column fits: the last one stretches
    if (above > 0 && total - above - chrome >= inspectorMin)
        table = above + chrome;
    else if (above > 0 && below > 0)
        table = below + chrome;
    if (table != sizes.at(0))
        m_tableSplit->setSizes({table, total - table});
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

void MainWindow::updateCounters()
{
    if (freshness() == Freshness::NoData) {
        for (int i = 0; i < m_counters.size(); ++i)
            m_counters[i]->setText(u"%1\n—"_s.arg(tr(kFilters[i].label)));
        m_chart->setCounts(std::nullopt);
        return;
    }
    const idem::Stats s = m_model->stats();
    m_chart->setCounts(s); // its legend says these figures too, not its last sample's (every other second)
    const std::size_t values[] = {s.total,   s.started,   s.stale,   s.blocked, s.completed, s.failed,
                                  s.expired, s.malformed, s.foreign, s.unknown, s.noTtl};
    for (int i = 0; i < m_counters.size(); ++i) {
        QString value = QString::number(values[i]);
        if (kFilters[i].filter == idem::StateFilter::Started && s.stale > 0)
            value += tr(" (%1 stale)").arg(s.stale); // Started counts them too: say so
        m_counters[i]->setText(u"%1\n%2"_s.arg(tr(kFilters[i].label), value));
    }
}
