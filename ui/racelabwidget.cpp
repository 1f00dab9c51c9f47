#include "racelabwidget.h"

#include "labrunner.h"
#include "theme.h"
#include "timelineview.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QShortcut>
#include <QSpinBox>
#include <QStackedWidget>
#include <QStandardItemModel>
#include <QTableWidget>
#include <QToolButton>
#include <QVBoxLayout>

using namespace Qt::StringLiterals;

namespace {
QString strategyName(idem::Strategy s) { return QString::fromUtf8(idem::nameOf(s).data()); }
constexpr double kProjectorScale = 1.5;
} // namespace

QString RaceLabWidget::describeStrategy(idem::Strategy s)
{
    switch (s) {
    case idem::Strategy::Naive:
        return tr("naive — GET, then SET: look whether the event was done, run it, mark it done. Two workers that "
                  "both read before either writes both run it.");
    case idem::Strategy::SetNx:
        return tr("setnx — SET NX PX: whoever sets the key first owns the event. No states: a worker that dies after "
                  "its SET NX leaves the key behind, and every redelivery skips the event — it is lost.");
    case idem::Strategy::Watch:
        return tr("watch — WATCH, GET, then MULTI / SET / EXEC: the claim is a transaction that fails if the key "
                  "changed. Safe while every worker finishes within the key's expiry; one that stalls past it runs "
                  "beside the worker that took over.");
    case idem::Strategy::Lua:
        break;
    }
    return tr("lua — idem: one Lua script moves the record through STARTED, COMPLETED and FAILED, with a lease and a "
              "fencing number that the side effect checks, so an owner that stalled and wakes up is refused.");
}

RaceLabWidget::RaceLabWidget(QWidget* parent) : QWidget(parent), m_runner(new LabRunner)
{
    m_thread.setObjectName(u"idem-lab"_s);
    m_runner->moveToThread(&m_thread);
    connect(&m_thread, &QThread::finished, m_runner, &QObject::deleteLater);
    m_thread.start();
    m_normalFont = font();

    m_where = new QComboBox(this);
    m_where->setObjectName(u"where"_s);
    m_where->addItem(tr("Private redis-server"), static_cast<int>(Where::Private));
    m_where->addItem(tr("Connected server (racelab:)"), static_cast<int>(Where::Connected));
    m_where->setItemData(0, tr("A redis-server of the lab's own, started on first use and stopped with the console: "
                               "nothing else sees its keys."),
                         Qt::ToolTipRole);
    m_whereNote = new QLabel(this);
    m_whereNote->setObjectName(u"whereNote"_s);
    m_whereNote->setWordWrap(true);
    m_strategy = new QComboBox(this);
    m_strategy->setObjectName(u"strategy"_s);
    m_strategy->addItem(tr("All four, side by side"), -1);
    m_strategy->setItemData(0, tr("The same deliveries through each strategy, one after the other."), Qt::ToolTipRole);
    for (auto s : {idem::Strategy::Naive, idem::Strategy::SetNx, idem::Strategy::Watch, idem::Strategy::Lua}) {
        m_strategy->addItem(strategyName(s), static_cast<int>(s));
        m_strategy->setItemData(m_strategy->count() - 1, describeStrategy(s), Qt::ToolTipRole);
    }
    auto spin = [this](int lo, int hi, int v) {
        auto* s = new QSpinBox(this);
        s->setRange(lo, hi);
        s->setValue(v);
        return s;
    };
    m_workers = spin(1, 64, 8);
    m_events = spin(1, 10000, 40);
    m_duplicates = spin(1, 20, 3);
    m_seed = spin(0, 1'000'000, 1);
    auto rate = [this](double v) {
        auto* s = new QDoubleSpinBox(this);
        s->setRange(0, 1);
        s->setSingleStep(0.05);
        s->setValue(v);
        return s;
    };
    m_crash = rate(0.1);
    m_crash->setToolTip(tr("A worker dies after claiming, before completing; the broker redelivers later."));
    m_pause = rate(0.05);
    m_pause->setToolTip(tr("A worker stalls past its lease after claiming (a GC pause), then carries on."));
    m_forced = new QCheckBox(tr("Forced interleaving"), this);
    m_forced->setObjectName(u"forced"_s);
    m_forced->setToolTip(tr("Two workers, one event, four turns that never overlap: A reads, B reads, A writes, "
                            "B writes."));
    auto* forcedNote = new QLabel(tr("A reads, B reads, A writes, B writes."), this);
    forcedNote->setWordWrap(true);
    forcedNote->setIndent(20);
    m_teaching = new QCheckBox(tr("Teaching mode: one step at a time"), this);
    m_teaching->setObjectName(u"teaching"_s);
    m_teaching->setToolTip(tr("The timeline fills one trace event at a time, each told in a sentence; the counts "
                              "appear after the last step."));
    m_fire = new QPushButton(tr("Fire"), this);
    m_fire->setObjectName(u"fire"_s);
    m_next = new QPushButton(tr("Next step ▸"), this);
    m_next->setObjectName(u"nextStep"_s);
    m_next->setEnabled(false);
    m_next->setToolTip(tr("The next step (→ or Page Down: what a presenter's clicker sends)"));
    m_projectorButton = new QToolButton(this);
    m_projectorButton->setObjectName(u"projector"_s);
    m_projectorButton->setText(tr("Projector"));
    m_projectorButton->setCheckable(true);
    m_projectorButton->setToolTip(tr("One strategy, large: a bigger font, bigger marks with a label on each, the "
                                     "settings out of the way (F11)"));
    m_traceOf = new QComboBox(this);
    m_traceOf->setObjectName(u"traceOf"_s);
    m_traceOf->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_traceOf->setMinimumContentsLength(8);
    auto* exportPng = new QPushButton(tr("Timeline as PNG…"), this);
    auto* exportCsv = new QPushButton(tr("Table as CSV…"), this);

    auto* form = new QFormLayout;
    form->setRowWrapPolicy(QFormLayout::WrapLongRows);
    form->addRow(tr("Where:"), m_where);
    form->addRow(m_whereNote);
    form->addRow(tr("Strategy:"), m_strategy);
    form->addRow(tr("Workers:"), m_workers);
    form->addRow(tr("Events:"), m_events);
    form->addRow(tr("Deliveries each:"), m_duplicates);
    form->addRow(tr("Crash rate:"), m_crash);
    form->addRow(tr("Pause rate:"), m_pause);
    form->addRow(tr("Seed:"), m_seed);
    form->addRow(m_forced);
    form->addRow(forcedNote);
    form->addRow(m_teaching);
    auto* exports = new QVBoxLayout;
    exports->addWidget(exportPng);
    exports->addWidget(exportCsv);
    form->addRow(exports);
    auto* controls = new QWidget(this);
    controls->setLayout(form);
    m_controls = new QScrollArea(this);
    m_controls->setObjectName(u"labControls"_s);
    m_controls->setWidget(controls);
    m_controls->setWidgetResizable(true);
    m_controls->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    m_controls->setFrameShape(QFrame::NoFrame);

    // always there, also in projector mode: what a teacher presses
    auto* bar = new QHBoxLayout;
    bar->addWidget(m_fire);
    bar->addWidget(m_next);
    bar->addWidget(new QLabel(tr("Timeline of:"), this));
    bar->addWidget(m_traceOf, 1);
    bar->addWidget(m_projectorButton);

    m_timeline = new TimelineView(this);
    m_views = new QStackedWidget(this);
    m_views->addWidget(m_timeline);
    auto* grid = new QWidget(this);
    auto* gridLayout = new QGridLayout(grid);
    gridLayout->setContentsMargins(0, 0, 0, 0);
    for (int i = 0; i < 4; ++i) {
        auto* cell = new QVBoxLayout;
        auto* title = new QLabel(grid);
        title->setObjectName(u"sideTitle%1"_s.arg(i));
        title->setWordWrap(true);
        auto* view = new TimelineView(grid);
        view->setMinimumHeight(100);
        view->setLegendShown(false); // one legend under the four
        cell->addWidget(title);
        cell->addWidget(view, 1);
        gridLayout->addLayout(cell, i / 2, i % 2);
        m_sideBySide.push_back(view);
        m_sideTitles.push_back(title);
    }
    auto* sharedLegend = new QLabel(TimelineView::legendHtml(), grid);
    sharedLegend->setWordWrap(true);
    gridLayout->addWidget(sharedLegend, 2, 0, 1, 2);
    m_views->addWidget(grid);
    m_step = new QLabel(this);
    m_step->setObjectName(u"step"_s);
    m_step->setWordWrap(true);
    m_step->setTextFormat(Qt::PlainText);
    m_step->setMinimumHeight(fontMetrics().height() * 2 + 8);
    m_table = new QTableWidget(0, 10, this);
    m_table->setObjectName(u"results"_s);
    m_table->setHorizontalHeaderLabels({tr("strategy"), tr("events"), tr("deliveries"), tr("executions"),
                                        tr("double"), tr("fenced"), tr("lost"), tr("per second"), tr("p50 ms"),
                                        tr("p99 ms")});
    m_table->verticalHeader()->hide();
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents); // scrolls, never widens
    m_table->horizontalHeader()->setStretchLastSection(true);
    auto* pending = new QLabel(tr("The counts appear after the last step."), this);
    pending->setObjectName(u"resultsPending"_s);
    pending->setAlignment(Qt::AlignCenter);
    m_resultStack = new QStackedWidget(this);
    m_resultStack->addWidget(m_table);
    m_resultStack->addWidget(pending);
    m_resultStack->setMaximumHeight(fontMetrics().height() * 9);

    auto* rightSide = new QVBoxLayout;
    rightSide->addLayout(bar);
    rightSide->addWidget(m_views, 1);
    rightSide->addWidget(m_step);
    rightSide->addWidget(m_resultStack);
    auto* layout = new QHBoxLayout(this);
    layout->addWidget(m_controls);
    layout->addLayout(rightSide, 1);
    m_controls->setFixedWidth(std::max(controls->minimumSizeHint().width(), fontMetrics().averageCharWidth() * 30) +
                              m_controls->verticalScrollBar()->sizeHint().width());

    connect(m_fire, &QPushButton::clicked, this, &RaceLabWidget::fire);
    connect(m_next, &QPushButton::clicked, this, &RaceLabWidget::nextStep);
    for (const QKeySequence& key : {QKeySequence(Qt::Key_Right), QKeySequence(Qt::Key_PageDown)}) {
        auto* shortcut = new QShortcut(key, this);
        shortcut->setContext(Qt::WidgetWithChildrenShortcut);
        connect(shortcut, &QShortcut::activated, this, [this] {
            if (m_next->isEnabled())
                nextStep();
        });
    }
    auto* projectorKey = new QShortcut(QKeySequence(Qt::Key_F11), this);
    projectorKey->setContext(Qt::WidgetWithChildrenShortcut);
    connect(projectorKey, &QShortcut::activated, m_projectorButton, &QToolButton::toggle);
    connect(m_projectorButton, &QToolButton::toggled, this, &RaceLabWidget::setProjector);
    connect(m_traceOf, &QComboBox::currentIndexChanged, this, &RaceLabWidget::showTraceOf);
    connect(m_where, &QComboBox::currentIndexChanged, this, &RaceLabWidget::updateWhere);
    connect(m_forced, &QCheckBox::toggled, this, [this](bool on) {
        for (QWidget* w : std::initializer_list<QWidget*>{m_workers, m_events, m_duplicates, m_crash, m_pause})
            w->setEnabled(!on);
        updateWhere();
    });
    for (QSpinBox* s : {m_events, m_duplicates})
        connect(s, &QSpinBox::valueChanged, this, &RaceLabWidget::updateWhere);
    connect(m_strategy, &QComboBox::currentIndexChanged, this, &RaceLabWidget::updateWhere);
    connect(exportPng, &QPushButton::clicked, this, [this] {
        const QString p = QFileDialog::getSaveFileName(this, tr("Timeline as PNG"), u"race-timeline.png"_s,
                                                       tr("PNG (*.png)"));
        if (!p.isEmpty())
            exportTimeline(p);
    });
    connect(exportCsv, &QPushButton::clicked, this, [this] {
        const QString p = QFileDialog::getSaveFileName(this, tr("Results as CSV"), u"race-results.csv"_s,
                                                       tr("CSV (*.csv)"));
        if (!p.isEmpty())
            exportTable(p);
    });
    connect(m_runner, &LabRunner::finished, this,
            [this](quint64 id, const QVector<idem::RaceResult>& results, const QString& where) {
                if (id != m_job)
                    return; // a run this view no longer waits for
                m_fire->setEnabled(true);
                m_lastWhere = where;
                showResults(results);
                Q_EMIT finished();
            });
    connect(m_runner, &LabRunner::failed, this, [this](quint64 id, const QString& message) {
        if (id != m_job)
            return;
        m_fire->setEnabled(true);
        m_step->setText(tr("The race could not run: %1").arg(message));
        Q_EMIT failed(m_step->text());
    });
    updateWhere();
    setResultsShown(true);
}

RaceLabWidget::~RaceLabWidget()
{
    m_runner->cancel(); // a race under way ends at its next delivery
    m_thread.quit();
    m_thread.wait();
}

void RaceLabWidget::setConnectedServer(const std::optional<idem::ConnectionOptions>& connection, const QString& name)
{
    m_connected = connection;
    m_connectedName = name;
    updateWhere();
}

void RaceLabWidget::setConnectedWritable(bool writable, const QString& whyNot)
{
    if (writable == m_connectedWritable && whyNot == m_connectedWhyNot)
        return;
    m_connectedWritable = writable;
    m_connectedWhyNot = whyNot;
    updateWhere();
}

int RaceLabWidget::keysPerRun() const
{
    const int events = m_forced->isChecked() ? 1 : m_events->value();
    int keys = 0;
    const int chosen = m_strategy->currentData().toInt();
    for (int s = 0; s < 4; ++s)
        if (chosen < 0 || chosen == s)
            keys += events * idem::labKeysPerEvent(static_cast<idem::Strategy>(s));
    return keys;
}

void RaceLabWidget::updateWhere()
{
    const bool usable = m_connected && m_connectedWritable;
    auto* model = qobject_cast<QStandardItemModel*>(m_where->model());
    if (QStandardItem* item = model ? model->item(1) : nullptr) {
        item->setEnabled(usable);
        item->setToolTip(usable ? tr("Under racelab: on %1; each key the lab writes expires within 10 minutes.")
                                      .arg(m_connectedName)
                                : tr("Not available: %1").arg(m_connectedWhyNot.isEmpty() ? tr("not connected")
                                                                                          : m_connectedWhyNot));
    }
    if (!usable && m_where->currentIndex() == 1)
        m_where->setCurrentIndex(0);
    const bool connected = m_where->currentData().toInt() == static_cast<int>(Where::Connected);
    m_whereNote->setText(
        connected ? tr("Writes up to %1 keys under %2: on %3, each expiring within 10 minutes. Nothing in the "
                       "namespace the console watches is written or changed.")
                        .arg(keysPerRun())
                        .arg(QString::fromUtf8(idem::kLabNamespace.data()), m_connectedName)
                  : tr("On a redis-server of its own: nothing else sees its keys."));
}

void RaceLabWidget::fire()
{
    idem::Workload w;
    w.workers = m_workers->value();
    w.events = m_events->value();
    w.duplicates = m_duplicates->value();
    w.crashRate = m_crash->value();
    w.pauseRate = m_pause->value();
    w.seed = static_cast<std::uint64_t>(m_seed->value());
    w.forcedInterleaving = m_forced->isChecked();
    w.lease = idem::Millis(150);
    w.pause = idem::Millis(450);
    w.redeliverAfter = idem::Millis(225);
    w.keyNamespace = std::string(idem::kLabNamespace); // never the namespace the console watches
    LabJob job;
    job.id = ++m_job;
    job.workload = w;
    const int chosen = m_strategy->currentData().toInt();
    if (chosen < 0)
        job.strategies = {idem::Strategy::Naive, idem::Strategy::SetNx, idem::Strategy::Watch, idem::Strategy::Lua};
    else
        job.strategies = {static_cast<idem::Strategy>(chosen)};
    if (m_where->currentData().toInt() == static_cast<int>(Where::Connected)) {
        if (!m_connected || !m_connectedWritable) {
            m_step->setText(tr("The connected server cannot be used: %1").arg(m_connectedWhyNot));
            return;
        }
        // said before anything is written there
        QMessageBox ask(QMessageBox::Question, tr("Race on the connected server"),
                        tr("The race lab will write up to %1 keys under %2: on %3. Each of them expires within 10 "
                           "minutes; nothing in the namespace the console watches is written or changed.\n\nRace "
                           "there?")
                            .arg(keysPerRun())
                            .arg(QString::fromUtf8(idem::kLabNamespace.data()), m_connectedName),
                        QMessageBox::Yes | QMessageBox::Cancel, this);
        ask.setObjectName(u"labWhereConfirm"_s);
        ask.setDefaultButton(QMessageBox::Cancel);
        if (ask.exec() != QMessageBox::Yes)
            return;
        job.server = m_connected;
    }
    m_fire->setEnabled(false);
    m_next->setEnabled(false);
    m_step->setText(tr("Racing…"));
    m_lastForced = w.forcedInterleaving;
    m_lastWorkers = w.forcedInterleaving ? 2 : w.workers;
    QMetaObject::invokeMethod(m_runner, [runner = m_runner, job] { runner->run(job); });
}

QStringList RaceLabWidget::laneNames() const
{
    if (m_lastForced)
        return {tr("A (worker 0)"), tr("B (worker 1)")};
    return {};
}

void RaceLabWidget::fillTable()
{
    m_table->setRowCount(static_cast<int>(m_results.size()));
    const QColor alert = theme::alertText(palette());
    for (int i = 0; i < m_results.size(); ++i) {
        const auto& r = m_results[i];
        const QString cells[] = {strategyName(r.strategy),
                                 QString::number(r.events),
                                 QString::number(r.deliveries),
                                 QString::number(r.executions),
                                 QString::number(r.doubleExecutions),
                                 QString::number(r.fenced),
                                 QString::number(r.lost),
                                 QString::number(r.throughputPerS, 'f', 0),
                                 QString::number(r.p50Ms, 'f', 1),
                                 QString::number(r.p99Ms, 'f', 1)};
        for (int c = 0; c < 10; ++c) {
            auto* item = new QTableWidgetItem(cells[c]);
            if ((c == 4 && r.doubleExecutions > 0) || (c == 6 && r.lost > 0)) {
                item->setForeground(alert);
                QFont f = item->font();
                f.setBold(true);
                item->setFont(f);
            }
            if (c == 0)
                item->setToolTip(describeStrategy(r.strategy));
            m_table->setItem(i, c, item);
        }
    }
}

void RaceLabWidget::setResultsShown(bool shown) { m_resultStack->setCurrentIndex(shown ? 0 : 1); }
bool RaceLabWidget::resultsShown() const { return m_resultStack->currentIndex() == 0; }

void RaceLabWidget::showResults(const QVector<idem::RaceResult>& results)
{
    m_results = results;
    fillTable();
    const bool teach = m_teaching->isChecked();
    setResultsShown(!teach); // teaching: the counts are the end of the story, not its start
    QSignalBlocker block(m_traceOf);
    m_traceOf->clear();
    for (const auto& r : results) {
        m_traceOf->addItem(strategyName(r.strategy));
        m_traceOf->setItemData(m_traceOf->count() - 1, describeStrategy(r.strategy), Qt::ToolTipRole);
    }
    const QString alert = theme::alertText(palette()).name();
    for (int i = 0; i < m_sideBySide.size() && i < results.size(); ++i) {
        m_sideBySide[i]->setResult(results[i], m_lastWorkers, laneNames());
        const auto& r = results[i];
        // a count that says something went wrong in red; the others in the palette's own colour
        const auto count = [&](int n, const QString& what) {
            const QString t = u"%1 %2"_s.arg(n).arg(what);
            return n > 0 ? u"<span style='color:%1'><b>%2</b></span>"_s.arg(alert, t) : t;
        };
        m_sideTitles[i]->setText(u"<b>%1</b> — %2 executions for %3 events, %4, %5 fenced, %6"_s.arg(strategyName(r.strategy))
                                     .arg(r.executions)
                                     .arg(r.events)
                                     .arg(count(r.doubleExecutions, tr("twice")))
                                     .arg(r.fenced)
                                     .arg(count(r.lost, tr("lost"))));
        m_sideTitles[i]->setToolTip(describeStrategy(r.strategy));
    }
    if (results.size() > 1 && !teach && !m_projectorButton->isChecked()) {
        m_traceOf->insertItem(0, tr("all four, side by side"));
        m_traceOf->setCurrentIndex(0);
        m_views->setCurrentIndex(1);
        m_next->setEnabled(false);
        m_step->setText(tr("The same deliveries through each strategy (on %1); pick one under “Timeline of” to see it "
                           "alone.")
                            .arg(m_lastWhere));
        return;
    }
    m_traceOf->setCurrentIndex(0);
    showTraceOf(0);
}

int RaceLabWidget::currentResult() const
{
    const bool sideBySide = m_traceOf->count() > m_results.size(); // item 0 is "side by side"
    return m_traceOf->currentIndex() - (sideBySide ? 1 : 0);
}

void RaceLabWidget::setProjector(bool on)
{
    QSignalBlocker block(m_projectorButton);
    m_projectorButton->setChecked(on);
    m_controls->setVisible(!on);
    QFont f = m_normalFont;
    if (on)
        f.setPointSizeF(m_normalFont.pointSizeF() * kProjectorScale);
    setFont(f);
    QFont stepFont = f;
    stepFont.setPointSizeF(f.pointSizeF() * (on ? 1.15 : 1.0));
    stepFont.setBold(on);
    m_step->setFont(stepFont);
    m_step->setMinimumHeight(QFontMetrics(stepFont).height() * (on ? 3 : 2) + 8);
    m_resultStack->setMaximumHeight(fontMetrics().height() * 9);
    m_timeline->setProjector(on);
    if (on && m_views->currentIndex() == 1 && !m_results.isEmpty()) // one strategy, large
        m_traceOf->setCurrentIndex(m_traceOf->count() > m_results.size() ? 1 : 0);
    else if (!on)
        showTraceOf(m_traceOf->currentIndex());
}
