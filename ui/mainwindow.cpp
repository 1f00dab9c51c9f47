#include "mainwindow.h"

#include "confirmdialog.h"
#include "connectdialog.h"
#include "countschart.h"
#include "credentialstore.h"
#include "keyfilterproxy.h"
#include "keytablemodel.h"
#include "racelabwidget.h"
#include "logging.h"
#include "settings.h"

#include "idem/errors.h"
#include "idem/redis/options.h"

#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QFile>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QMessageBox>
#include <QSplitter>
#include <QStatusBar>
#include <QTableView>
#include <QTabWidget>
#include <QTableWidget>
#include <QTextBrowser>
#include <QTimer>
#include <QToolBar>
#include <QToolButton>
#include <QVBoxLayout>
#include <unistd.h>

using namespace Qt::StringLiterals;

namespace {

QString whoAmI()
{
    const QString user = qEnvironmentVariable("USER", u"operator"_s);
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    return user + u'@' + QString::fromLocal8Bit(host) + u" (idem-console)"_s;
}

QString describe(const QString& url)
{
    try {
        return QString::fromStdString(idem::ConnectionOptions::fromUrl(url.toStdString()).describe());
    } catch (...) {
        return url;
    }
}

struct FilterChoice {
    const char* label;
    idem::StateFilter filter;
};
const FilterChoice kFilters[] = {
    {"All", idem::StateFilter::Any},           {"Started", idem::StateFilter::Started},
    {"Stale", idem::StateFilter::Stale},       {"No lease", idem::StateFilter::Blocked},
    {"Completed", idem::StateFilter::Completed}, {"Failed", idem::StateFilter::Failed},
    {"Expired", idem::StateFilter::Expired},   {"Malformed", idem::StateFilter::Malformed},
    {"Foreign", idem::StateFilter::Foreign},   {"Unknown", idem::StateFilter::Unknown},
    {"No TTL", idem::StateFilter::NoTtl},
};

} // namespace

MainWindow::MainWindow(Options options, QWidget* parent)
    : QMainWindow(parent), m_options(std::move(options)), m_model(new KeyTableModel(this)),
      m_proxy(new KeyFilterProxy(this)),
      m_audit(new AuditTrail(m_options.auditPath.isEmpty() ? AuditTrail::defaultPath() : m_options.auditPath, this)),
      m_credentials(new CredentialStore(this))
{
    m_proxy->setSourceModel(m_model);
    buildUi();
    buildActions();

    m_thread.setObjectName(u"idem-redis"_s);
    m_worker = new ConsoleWorker;
    m_worker->moveToThread(&m_thread);
    connect(&m_thread, &QThread::finished, m_worker, &QObject::deleteLater);
    connect(m_worker, &ConsoleWorker::rowsArrived, this, [this](const QVector<KeyRow>& rows, qint64 now, quint64 gen) {
        m_model->upsert(rows, now, gen);
        QMetaObject::invokeMethod(m_worker, [w = m_worker] { w->batchConsumed(); });
    });
    connect(m_worker, &ConsoleWorker::rowsGone, m_model, &KeyTableModel::removeKeys);
    connect(m_worker, &ConsoleWorker::scanStarted, m_model,
            [this](quint64, qint64 keysInDatabase) { m_model->reserveFor(keysInDatabase); });
    connect(m_worker, &ConsoleWorker::scanFinished, this, [this](const ScanSummary& s) {
        m_model->finishGeneration(s.generation);
        if (m_model->needsSort())
            m_model->sortAgain(); // rows that came in or changed since: put them in place
        m_lastScan = tr(" · last full scan %1 ms, %2 page(s)").arg(s.elapsedMs).arg(s.pages);
        updateCounters();
        Q_EMIT scanCompleted(s);
    });
    connect(m_worker, &ConsoleWorker::linkChanged, this, [this](ConsoleWorker::Link link, const QString& detail) {
        const char* dot = link == ConsoleWorker::Link::Connected    ? "#27ae60"
                          : link == ConsoleWorker::Link::Connecting ? "#f1c40f"
                                                                    : "#c0392b";
        m_linkLabel->setText(u"<span style='color:%1'>●</span> %2"_s.arg(QLatin1String(dot), detail.toHtmlEscaped()));
        Q_EMIT linkStateChanged(link);
    });
    connect(m_worker, &ConsoleWorker::coverageChanged, this, [this](const QString& warning) {
        m_coverageLabel->setText(u"⚠ "_s + warning);
        m_coverageLabel->setVisible(!warning.isEmpty());
    });
    connect(m_worker, &ConsoleWorker::liveUpdates, this, [this](bool live, const QString& detail) {
        m_liveLabel->setText(live ? tr("live: %1").arg(detail) : detail);
        m_liveLabel->setToolTip(detail);
    });
    connect(m_worker, &ConsoleWorker::inspected, this, &MainWindow::showInspection);
    connect(m_worker, &ConsoleWorker::actionDone, this, [this](const ActionResult& r) {
        statusBar()->showMessage(r.error.isEmpty()
                                     ? tr("%1: %2 of %3 key(s) changed, %4 left as they were")
                                           .arg(r.action).arg(r.changed).arg(r.requested).arg(r.skipped)
                                     : tr("%1 failed: %2").arg(r.action, r.error),
                                 8000);
        Q_EMIT actionCompleted(r);
    });
    m_thread.start();

    setReadOnly(m_options.readOnly || Settings::instance().readOnly());
    auto* timer = new QTimer(this);
    connect(timer, &QTimer::timeout, this, &MainWindow::tick);
    timer->start(1000);
    if (m_options.connectNow && !m_options.connection.url.isEmpty())
        connectTo(m_options.connection);
    restoreState(Settings::instance().windowState());
}

MainWindow::~MainWindow()
{
    Settings::instance().setWindowState(saveState());
    m_worker->abortIo(); // a worker blocked on a hung Redis returns now, not after its timeout
    m_thread.quit();
    m_thread.wait();
}

void MainWindow::buildUi()
{
    auto* central = new QWidget(this);
    auto* layout = new QVBoxLayout(central);
    layout->setContentsMargins(6, 6, 6, 0);

    auto* counters = new QHBoxLayout;
    for (const auto& f : kFilters) {
        auto* b = new QToolButton(central);
        b->setCheckable(true);
        b->setAutoExclusive(true);
        b->setToolButtonStyle(Qt::ToolButtonTextOnly);
        b->setMinimumWidth(72);
        b->setObjectName(u"counter-"_s + QString::fromLatin1(f.label).toLower().replace(u' ', u'-'));
        b->setToolTip(tr("Show only %1 keys").arg(QString::fromLatin1(f.label).toLower()));
        connect(b, &QToolButton::clicked, this, [this, filter = f.filter] {
            for (int i = 0; i < m_stateBox->count(); ++i)
                if (m_stateBox->itemData(i).toInt() == static_cast<int>(filter))
                    m_stateBox->setCurrentIndex(i);
        });
        counters->addWidget(b);
        m_counters.push_back(b);
    }
    m_counters.front()->setChecked(true);
    counters->addStretch();
    layout->addLayout(counters);

    auto* filterBar = new QHBoxLayout;
    m_stateBox = new QComboBox(central);
    m_stateBox->setObjectName(u"stateFilter"_s);
    for (const auto& f : kFilters)
        m_stateBox->addItem(tr(f.label), static_cast<int>(f.filter));
    m_filter = new QLineEdit(central);
    m_filter->setObjectName(u"textFilter"_s);
    m_filter->setPlaceholderText(tr("Filter by id, owner or note (Ctrl+F)"));
    m_filter->setClearButtonEnabled(true);
    filterBar->addWidget(new QLabel(tr("State:"), central));
    filterBar->addWidget(m_stateBox);
    filterBar->addWidget(m_filter, 1);
    layout->addLayout(filterBar);
    // shown only when the scan cannot see every key (a node of a multi-primary Redis Cluster)
    m_coverageLabel = new QLabel(central);
    m_coverageLabel->setObjectName(u"coverageWarning"_s);
    m_coverageLabel->setWordWrap(true);
    m_coverageLabel->setStyleSheet(u"QLabel { background: #fdf2d0; color: #7a5200; border: 1px solid #e0b44c;"
                                   " border-radius: 3px; padding: 4px 8px; }"_s);
    m_coverageLabel->hide();
    layout->addWidget(m_coverageLabel);
    connect(m_filter, &QLineEdit::textChanged, m_proxy, &KeyFilterProxy::setText);
    connect(m_stateBox, &QComboBox::currentIndexChanged, this, [this](int i) {
        const auto f = static_cast<idem::StateFilter>(m_stateBox->itemData(i).toInt());
        m_proxy->setStateFilter(f);
        if (i >= 0 && i < m_counters.size())
            m_counters[i]->setChecked(true);
    });

    m_chart = new CountsChart(central);
    m_table = new QTableView(central);
    m_table->setObjectName(u"keyTable"_s);
    m_table->setModel(m_proxy);
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
    m_table->verticalHeader()->setDefaultSectionSize(m_table->fontMetrics().height() + 6);
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->setWordWrap(false);
    const int widths[] = {220, 130, 70, 80, 110, 100, 70, 140, 70};
    for (int c = 0; c < 9; ++c)
        m_table->setColumnWidth(c, widths[c]);
    connect(m_table->selectionModel(), &QItemSelectionModel::currentRowChanged, this, &MainWindow::currentRowChanged);

    m_inspector = new QTextBrowser(central);
    m_inspector->setObjectName(u"inspector"_s);
    m_inspector->setPlaceholderText(tr("Select a key to see its record."));

    auto* horizontal = new QSplitter(Qt::Horizontal, central);
    horizontal->addWidget(m_table);
    horizontal->addWidget(m_inspector);
    horizontal->setStretchFactor(0, 3);
    horizontal->setStretchFactor(1, 2);
    auto* vertical = new QSplitter(Qt::Vertical, central);
    vertical->addWidget(m_chart);
    vertical->addWidget(horizontal);
    vertical->setStretchFactor(0, 1);
    vertical->setStretchFactor(1, 4);
    layout->addWidget(vertical, 1);
    m_raceLab = new RaceLabWidget(this);
    m_tabs = new QTabWidget(this);
    m_tabs->addTab(central, tr("Keys"));
    m_tabs->addTab(m_raceLab, tr("Race lab"));
    setCentralWidget(m_tabs);

    m_linkLabel = new QLabel(tr("not connected"), this);
    m_liveLabel = new QLabel(this);
    m_scanLabel = new QLabel(this);
    statusBar()->addWidget(m_linkLabel);
    statusBar()->addWidget(m_liveLabel);
    statusBar()->addPermanentWidget(m_scanLabel);
    resize(1280, 800);
}

void MainWindow::buildActions()
{
    auto* toolbar = addToolBar(tr("Actions"));
    toolbar->setObjectName(u"actions"_s);
    toolbar->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    auto* file = menuBar()->addMenu(tr("&File"));
    auto* keys = menuBar()->addMenu(tr("&Keys"));
    auto* view = menuBar()->addMenu(tr("&View"));

    auto* connectAct = file->addAction(style()->standardIcon(QStyle::SP_DriveNetIcon), tr("&Connect…"), this,
                                       &MainWindow::openConnectDialog);
    connectAct->setShortcut(QKeySequence::Open);
    auto* exportAct = file->addAction(style()->standardIcon(QStyle::SP_DialogSaveButton), tr("&Export view…"), this,
                                      &MainWindow::exportView);
    exportAct->setShortcut(Qt::CTRL | Qt::Key_E);
    file->addSeparator();
    auto* quit = file->addAction(tr("&Quit"), qApp, &QApplication::closeAllWindows);
    quit->setShortcut(QKeySequence::Quit);

    auto* refreshAct = view->addAction(style()->standardIcon(QStyle::SP_BrowserReload), tr("&Refresh"), this,
                                       &MainWindow::refresh);
    refreshAct->setShortcut(QKeySequence::Refresh);
    auto* find = view->addAction(tr("&Filter"), this, [this] {
        m_filter->setFocus();
        m_filter->selectAll();
    });
    find->setShortcut(QKeySequence::Find);
    auto* audit = view->addAction(style()->standardIcon(QStyle::SP_FileDialogDetailedView), tr("&Audit trail…"),
                                  this, &MainWindow::showAuditTrail);
    audit->setShortcut(Qt::CTRL | Qt::Key_L);

    m_forceFail = keys->addAction(style()->standardIcon(QStyle::SP_MessageBoxWarning), tr("&Force-fail selected…"),
                                  this, &MainWindow::forceFailSelected);
    m_forceFail->setShortcut(Qt::CTRL | Qt::SHIFT | Qt::Key_F);
    m_purge = keys->addAction(style()->standardIcon(QStyle::SP_TrashIcon), tr("&Purge selected…"), this,
                              &MainWindow::purgeSelected);
    m_purge->setShortcut(QKeySequence::Delete);
    keys->addSeparator();
    m_forceFailAll = keys->addAction(tr("Force-fail all &filtered…"), this, &MainWindow::forceFailFiltered);
    m_purgeAll = keys->addAction(tr("Purge all f&iltered…"), this, &MainWindow::purgeFiltered);
    keys->addSeparator();
    m_readOnlyAction = keys->addAction(tr("&Read-only"), this, &MainWindow::setReadOnly);
    m_readOnlyAction->setCheckable(true);

    toolbar->addAction(connectAct);
    toolbar->addAction(refreshAct);
    toolbar->addSeparator();
    toolbar->addAction(m_forceFail);
    toolbar->addAction(m_purge);
    toolbar->addSeparator();
    toolbar->addAction(exportAct);
    toolbar->addAction(audit);
    toolbar->addAction(m_readOnlyAction);
}

void MainWindow::connectTo(const ConnectionSettings& settings)
{
    m_options.connection = settings;
    m_server = describe(settings.url);
    m_model->clear();
    m_model->setKeyNamespace(settings.keyNamespace);
    m_inspector->clear();
    setWindowTitle(tr("idem console — %1%2").arg(m_server, m_options.titleNote.isEmpty() ? QString()
                                                                                       : u" — "_s + m_options.titleNote));
    QMetaObject::invokeMethod(m_worker, [w = m_worker, settings] { w->open(settings); });
    try { // the race lab writes under the console's namespace, so its keys show in the table
        auto o = idem::ConnectionOptions::fromUrl(settings.url.toStdString());
        if (o.user.empty())
            o.user = settings.user.toStdString();
        if (o.password.empty())
            o.password = settings.password.toStdString();
        m_raceLab->setTarget(o, settings.keyNamespace);
    } catch (const idem::Error&) {
        // a bad URL: the worker reports it in the status bar
    }
}

void MainWindow::refresh()
{
    QMetaObject::invokeMethod(m_worker, [w = m_worker] { w->rescan(); });
}

void MainWindow::setReadOnly(bool on)
{
    m_readOnly = on;
    for (QAction* a : {m_forceFail, m_purge, m_forceFailAll, m_purgeAll})
        a->setEnabled(!on);
    m_readOnlyAction->setChecked(on);
    Settings::instance().setReadOnly(on);
}

QVector<KeyRow> MainWindow::rowsFor(bool selectedOnly) const
{
    QVector<KeyRow> rows;
    if (selectedOnly) {
        for (const QModelIndex& i : m_table->selectionModel()->selectedRows())
            rows.push_back(m_model->row(m_proxy->mapToSource(i).row()));
    } else {
        for (int r = 0; r < m_proxy->rowCount(); ++r)
            rows.push_back(m_model->row(m_proxy->mapToSource(m_proxy->index(r, 0)).row()));
    }
    return rows;
}

void MainWindow::forceFailSelected() { runAction(true, rowsFor(true), true); }
void MainWindow::purgeSelected() { runAction(false, rowsFor(true), true); }
void MainWindow::forceFailFiltered() { runAction(true, rowsFor(false), false); }
void MainWindow::purgeFiltered() { runAction(false, rowsFor(false), false); }

void MainWindow::runAction(bool forceFail, const QVector<KeyRow>& rows, bool selection)
{
    if (m_readOnly) {
        statusBar()->showMessage(tr("Read-only: operator actions are disabled"), 5000);
        return;
    }
    if (rows.isEmpty()) {
        statusBar()->showMessage(tr("No keys selected"), 5000);
        return;
    }
    const qint64 now = m_model->serverNowMs();
    QMap<QString, int> byState, byFormat;
    QVector<KeyRow> target;
    int notRecords = 0;
    for (const KeyRow& r : rows) {
        const idem::RecordState state = r.stateAt(now);
        if (forceFail && state != idem::RecordState::Started && state != idem::RecordState::Failed)
            continue; // only work in progress (or failed) can be force-failed
        if (idem::notARecord(state) && !selection) {
            ++notRecords; // keys idem cannot read are never taken by a filter: select them by hand
            continue;
        }
        QString s = QString::fromUtf8(idem::nameOf(state).data());
        if (r.isStale(now))
            s = u"stale STARTED"_s;
        ++byState[s];
        ++byFormat[QString::fromUtf8(idem::nameOf(r.format).data())];
        target.push_back(r);
    }
    if (target.isEmpty()) {
        statusBar()->showMessage(forceFail ? tr("Nothing to force-fail: only STARTED and FAILED records can be")
                                           : tr("Nothing to purge: keys that are not records are only purged when "
                                                "selected by hand"),
                                 6000);
        return;
    }
    // what an operator must not miss: work still running, and results that will run again
    QStringList warnings;
    int live = 0, completed = 0;
    for (const KeyRow& r : target) {
        live += r.stateAt(now) == idem::RecordState::Started && !r.isStale(now) ? 1 : 0;
        completed += r.stateAt(now) == idem::RecordState::Completed ? 1 : 0;
    }
    if (live > 0)
        warnings << tr("%n live lock(s): the worker holding it is still running, and a duplicate delivered now "
                       "would run beside it.", nullptr, live);
    if (completed > 0 && !forceFail)
        warnings << tr("%n COMPLETED record(s): the stored result goes, and the next delivery of the id runs "
                       "the work again.", nullptr, completed);
    ConfirmDialog dialog(forceFail ? ConfirmDialog::Kind::ForceFail : ConfirmDialog::Kind::Purge,
                         static_cast<int>(target.size()), byState, byFormat, notRecords, warnings, this);
    if (dialog.exec() != QDialog::Accepted)
        return;
    const QString reason = dialog.reason();
    const bool terminal = dialog.terminal();
    const QString who = whoAmI();

    AuditEntry entry;
    entry.when = QDateTime::currentDateTime();
    entry.who = who;
    entry.action = forceFail ? (terminal ? u"force-fail (terminal)"_s : u"force-fail (retryable)"_s) : u"purge"_s;
    entry.server = m_server;
    entry.why = reason;
    entry.keys = static_cast<int>(target.size());
    QStringList sample;
    for (int i = 0; i < std::min<int>(5, static_cast<int>(target.size())); ++i)
        sample << m_model->idOf(target[i]);
    entry.sample = sample.join(u", "_s) + (target.size() > 5 ? u", …"_s : QString());
    // the entry is written when the worker reports what changed
    auto conn = std::make_shared<QMetaObject::Connection>();
    *conn = connect(this, &MainWindow::actionCompleted, this, [this, entry, conn](const ActionResult& r) mutable {
        disconnect(*conn);
        entry.changed = r.changed;
        entry.error = r.error;
        if (!m_audit->append(entry))
            QMessageBox::warning(this, tr("Audit trail"),
                                 tr("Could not write the audit trail %1: %2").arg(m_audit->path(), m_audit->lastError()));
    });
    if (forceFail)
        QMetaObject::invokeMethod(m_worker, [w = m_worker, target, reason, terminal, who] {
            w->forceFail(target, reason, terminal, who);
        });
    else
        QMetaObject::invokeMethod(m_worker, [w = m_worker, target, reason, who] { w->purge(target, reason, who); });
}

void MainWindow::tick()
{
    // countdowns: data() computes remaining time from deadlines; repainting the viewport
    // repaints the visible rows only
    m_table->viewport()->update();
    // leases run out between scans: a stale view follows the clock (cheap below 100k rows;
    // larger tables catch up when rows change or the next scan ends)
    if (m_proxy->stateFilter() == idem::StateFilter::Stale && m_model->rowCount() <= 100'000)
        m_proxy->refilter();
    updateCounters();
    m_scanLabel->setText(tr("%1 keys · %2 shown").arg(m_model->rowCount()).arg(m_proxy->rowCount()) +
                         m_lastScan);
    if (++m_ticks % 2 == 0 && m_model->rowCount() >= 0)
        m_chart->addSample(QDateTime::currentDateTime(), m_model->stats());
}

void MainWindow::updateCounters()
{
    const idem::Stats s = m_model->stats();
    const std::size_t values[] = {s.total,   s.started,   s.stale,   s.blocked, s.completed, s.failed,
                                  s.expired, s.malformed, s.foreign, s.unknown, s.noTtl};
    for (int i = 0; i < m_counters.size(); ++i)
        m_counters[i]->setText(u"%1\n%2"_s.arg(tr(kFilters[i].label)).arg(values[i]));
}

void MainWindow::currentRowChanged()
{
    const QModelIndex current = m_table->selectionModel()->currentIndex();
    if (!current.isValid())
        return;
    m_inspectedKey = m_proxy->data(current, KeyTableModel::KeyRole).toString();
    m_inspector->setHtml(tr("<p>Reading %1…</p>").arg(m_inspectedKey.toHtmlEscaped()));
    QMetaObject::invokeMethod(m_worker, [w = m_worker, key = m_inspectedKey] { w->inspect(key); });
}

void MainWindow::showInspection(const QString& key, const QString& html)
{
    if (key == m_inspectedKey) // a late answer for a row no longer selected is dropped
        m_inspector->setHtml(html);
}

bool MainWindow::exportTo(const QString& path, QString* error) const
{
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate)) {
        if (error)
            *error = f.errorString();
        return false;
    }
    const int columns = m_proxy->columnCount();
    if (path.endsWith(u".json"_s, Qt::CaseInsensitive)) {
        QJsonArray rows;
        for (int r = 0; r < m_proxy->rowCount(); ++r) {
            QJsonObject o;
            o[u"key"_s] = m_proxy->data(m_proxy->index(r, 0), KeyTableModel::KeyRole).toString();
            for (int c = 0; c < columns; ++c)
                o[m_proxy->headerData(c, Qt::Horizontal).toString().toLower().replace(u' ', u'_')] =
                    m_proxy->data(m_proxy->index(r, c)).toString();
            rows.append(o);
        }
        f.write(QJsonDocument(rows).toJson(QJsonDocument::Indented));
        return true;
    }
    auto csv = [](QString s) {
        if (s.contains(u',') || s.contains(u'"') || s.contains(u'\n'))
            s = u'"' + s.replace(u"\""_s, u"\"\""_s) + u'"';
        return s;
    };
    QStringList header{u"key"_s};
    for (int c = 0; c < columns; ++c)
        header << csv(m_proxy->headerData(c, Qt::Horizontal).toString());
    f.write(header.join(u',').toUtf8() + '\n');
    for (int r = 0; r < m_proxy->rowCount(); ++r) {
        QStringList line{csv(m_proxy->data(m_proxy->index(r, 0), KeyTableModel::KeyRole).toString())};
        for (int c = 0; c < columns; ++c)
            line << csv(m_proxy->data(m_proxy->index(r, c)).toString());
        f.write(line.join(u',').toUtf8() + '\n');
    }
    return true;
}

void MainWindow::exportView()
{
    const QString path = QFileDialog::getSaveFileName(this, tr("Export the current view"), u"idem-keys.csv"_s,
                                                      tr("CSV (*.csv);;JSON (*.json)"));
    if (path.isEmpty())
        return;
    QString error;
    if (!exportTo(path, &error))
        QMessageBox::warning(this, tr("Export"), tr("Could not write %1: %2").arg(path, error));
    else
        statusBar()->showMessage(tr("Exported %1 rows to %2").arg(m_proxy->rowCount()).arg(path), 6000);
}

void MainWindow::showAuditTrail()
{
    QDialog dialog(this);
    dialog.setWindowTitle(tr("Audit trail — %1").arg(m_audit->path()));
    auto* table = new QTableWidget(&dialog);
    const QStringList headers = {tr("When"), tr("Who"), tr("Action"), tr("Keys"), tr("Changed"),
                                 tr("Why"),  tr("Server"), tr("Sample"), tr("Error")};
    table->setColumnCount(static_cast<int>(headers.size()));
    table->setHorizontalHeaderLabels(headers);
    const auto entries = m_audit->entries();
    table->setRowCount(static_cast<int>(entries.size()));
    for (int i = 0; i < entries.size(); ++i) {
        const AuditEntry& e = entries[entries.size() - 1 - i]; // newest first
        const QString cells[] = {e.when.toString(u"yyyy-MM-dd HH:mm:ss"_s), e.who, e.action,
                                 QString::number(e.keys), QString::number(e.changed), e.why, e.server, e.sample, e.error};
        for (int c = 0; c < 9; ++c)
            table->setItem(i, c, new QTableWidgetItem(cells[c]));
    }
    table->resizeColumnsToContents();
    table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    auto* layout = new QVBoxLayout(&dialog);
    layout->addWidget(table);
    dialog.resize(1000, 400);
    dialog.exec();
}

void MainWindow::openConnectDialog()
{
    ConnectDialog dialog(m_credentials, this);
    if (dialog.exec() != QDialog::Accepted)
        return;
    const ConnectionSettings s = dialog.settings();
    const QString account = describe(s.url);
    Settings::instance().addRecentUrl(account);
    Settings::instance().setKeyNamespace(s.keyNamespace);
    if (dialog.rememberPassword() && !s.password.isEmpty())
        m_credentials->save(account, s.password, [this](const QString& error) {
            if (!error.isEmpty())
                statusBar()->showMessage(tr("Password not kept: %1").arg(error), 8000);
        });
    else
        m_credentials->forget(account);
    m_options.titleNote.clear();
    connectTo(s);
}
