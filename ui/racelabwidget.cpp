#include "racelabwidget.h"

#include "timelineview.h"

#include "idem/errors.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFile>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMap>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QStackedWidget>
#include <QGridLayout>
#include <QTableWidget>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

using namespace Qt::StringLiterals;

RaceLabWidget::RaceLabWidget(QWidget* parent) : QWidget(parent)
{
    m_strategy = new QComboBox(this);
    m_strategy->setObjectName(u"strategy"_s);
    m_strategy->addItem(tr("All four, side by side"), -1);
    for (auto s : {idem::Strategy::Naive, idem::Strategy::SetNx, idem::Strategy::Watch, idem::Strategy::Lua})
        m_strategy->addItem(QString::fromUtf8(idem::nameOf(s).data()), static_cast<int>(s));
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
    m_pause = rate(0.05);
    m_forced = new QCheckBox(tr("Forced interleaving (A reads, B reads, A writes, B writes)"), this);
    m_forced->setObjectName(u"forced"_s);
    m_teaching = new QCheckBox(tr("Teaching mode: one step at a time"), this);
    m_teaching->setObjectName(u"teaching"_s);
    m_fire = new QPushButton(tr("Fire"), this);
    m_fire->setObjectName(u"fire"_s);
    m_next = new QPushButton(tr("Next step ▸"), this);
    m_next->setObjectName(u"nextStep"_s);
    m_next->setEnabled(false);
    m_traceOf = new QComboBox(this);
    auto* exportPng = new QPushButton(tr("Timeline as PNG…"), this);
    auto* exportCsv = new QPushButton(tr("Table as CSV…"), this);

    auto* form = new QFormLayout;
    form->addRow(tr("Strategy:"), m_strategy);
    form->addRow(tr("Workers:"), m_workers);
    form->addRow(tr("Events:"), m_events);
    form->addRow(tr("Deliveries per event:"), m_duplicates);
    form->addRow(tr("Crash rate:"), m_crash);
    form->addRow(tr("Pause rate:"), m_pause);
    form->addRow(tr("Seed:"), m_seed);
    form->addRow(m_forced);
    form->addRow(m_teaching);
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(m_fire);
    buttons->addWidget(m_next);
    form->addRow(buttons);
    form->addRow(tr("Timeline of:"), m_traceOf);
    auto* exports = new QHBoxLayout;
    exports->addWidget(exportPng);
    exports->addWidget(exportCsv);
    form->addRow(exports);
    auto* controls = new QWidget(this);
    controls->setLayout(form);
    controls->setMaximumWidth(380);

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
        auto* view = new TimelineView(grid);
        view->setMinimumHeight(120);
        cell->addWidget(title);
        cell->addWidget(view, 1);
        gridLayout->addLayout(cell, i / 2, i % 2);
        m_sideBySide.push_back(view);
    }
    m_views->addWidget(grid);
    m_step = new QLabel(this);
    m_step->setObjectName(u"step"_s);
    m_step->setWordWrap(true);
    m_step->setMinimumHeight(40);
    m_table = new QTableWidget(0, 10, this);
    m_table->setObjectName(u"results"_s);
    m_table->setHorizontalHeaderLabels({tr("strategy"), tr("events"), tr("deliveries"), tr("executions"),
                                        tr("double"), tr("fenced"), tr("lost"), tr("per second"), tr("p50 ms"),
                                        tr("p99 ms")});
    m_table->verticalHeader()->hide();
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    m_table->setMaximumHeight(160);

    auto* right = new QVBoxLayout;
    right->addWidget(m_views, 1);
    right->addWidget(m_step);
    right->addWidget(m_table);
    auto* layout = new QHBoxLayout(this);
    layout->addWidget(controls);
    layout->addLayout(right, 1);

    connect(m_fire, &QPushButton::clicked, this, &RaceLabWidget::fire);
    connect(m_next, &QPushButton::clicked, this, &RaceLabWidget::nextStep);
    connect(m_traceOf, &QComboBox::currentIndexChanged, this, &RaceLabWidget::showTraceOf);
    connect(m_forced, &QCheckBox::toggled, this, [this](bool on) {
        for (QWidget* w : std::initializer_list<QWidget*>{m_workers, m_events, m_duplicates, m_crash, m_pause})
            w->setEnabled(!on);
    });
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
    connect(&m_watcher, &QFutureWatcher<QVector<idem::RaceResult>>::finished, this, [this] {
        m_fire->setEnabled(true);
        try {
            showResults(m_watcher.result());
            Q_EMIT finished();
        } catch (const idem::Error& e) {
            m_step->setText(tr("The race could not run: %1").arg(QString::fromUtf8(e.what())));
            Q_EMIT failed(m_step->text());
        }
    });
}

void RaceLabWidget::setTarget(const idem::ConnectionOptions& connection, const QString& keyNamespace)
{
    m_connection = connection;
    m_namespace = keyNamespace;
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
    w.keyNamespace = m_namespace.toStdString();
    QVector<idem::Strategy> strategies;
    const int chosen = m_strategy->currentData().toInt();
    if (chosen < 0)
        strategies = {idem::Strategy::Naive, idem::Strategy::SetNx, idem::Strategy::Watch, idem::Strategy::Lua};
    else
        strategies = {static_cast<idem::Strategy>(chosen)};
    m_fire->setEnabled(false);
    m_step->setText(tr("Racing…"));
    const idem::ConnectionOptions conn = m_connection;
    // the engine talks to Redis and sleeps: never on the GUI thread
    m_watcher.setFuture(QtConcurrent::run([conn, w, strategies] {
        QVector<idem::RaceResult> out;
        for (auto s : strategies)
            out.push_back(idem::runRace(conn, s, w));
        return out;
    }));
}

void RaceLabWidget::showResults(const QVector<idem::RaceResult>& results)
{
    m_results = results;
    m_table->setRowCount(static_cast<int>(results.size()));
    for (int i = 0; i < results.size(); ++i) {
        const auto& r = results[i];
        const QString cells[] = {QString::fromUtf8(idem::nameOf(r.strategy).data()),
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
            if ((c == 4 && r.doubleExecutions > 0) || (c == 6 && r.lost > 0))
                item->setForeground(QColor(231, 76, 60));
            m_table->setItem(i, c, item);
        }
    }
    QSignalBlocker block(m_traceOf);
    m_traceOf->clear();
    for (const auto& r : results)
        m_traceOf->addItem(QString::fromUtf8(idem::nameOf(r.strategy).data()));
    const int workers = m_forced->isChecked() ? 2 : m_workers->value();
    for (int i = 0; i < m_sideBySide.size() && i < results.size(); ++i) {
        m_sideBySide[i]->setResult(results[i], workers);
        const auto& r = results[i];
        findChild<QLabel*>(u"sideTitle%1"_s.arg(i))
            ->setText(u"<b>%1</b> — %2 executions for %3 events, <span style='color:%4'>%5 twice</span>, %6 fenced, "
                      "<span style='color:%7'>%8 lost</span>"_s.arg(QString::fromUtf8(idem::nameOf(r.strategy).data()))
                          .arg(r.executions)
                          .arg(r.events)
                          .arg(r.doubleExecutions ? u"#e74c3c"_s : u"inherit"_s)
                          .arg(r.doubleExecutions)
                          .arg(r.fenced)
                          .arg(r.lost ? u"#e74c3c"_s : u"inherit"_s)
                          .arg(r.lost));
    }
    if (results.size() > 1 && !m_teaching->isChecked()) {
        m_traceOf->insertItem(0, tr("all four, side by side"));
        m_traceOf->setCurrentIndex(0);
        m_views->setCurrentIndex(1);
        m_next->setEnabled(false);
        m_step->setText(tr("The same deliveries through each strategy; pick one under “Timeline of” to see it alone."));
        return;
    }
    showTraceOf(0);
}

void RaceLabWidget::showTraceOf(int index)
{
    const bool sideBySide = m_traceOf->count() > m_results.size(); // item 0 is "side by side"
    if (sideBySide) {
        if (index == 0) {
            m_views->setCurrentIndex(1);
            return;
        }
        --index;
    }
    if (index < 0 || index >= m_results.size())
        return;
    m_views->setCurrentIndex(0);
    const int workers = m_forced->isChecked() ? 2 : m_workers->value();
    m_timeline->setResult(m_results[index], workers);
    const bool teach = m_teaching->isChecked();
    m_next->setEnabled(teach);
    if (teach) {
        m_timeline->setRevealed(0);
        m_step->setText(tr("%1: press “Next step” to walk through what happened.")
                            .arg(QString::fromUtf8(idem::nameOf(m_results[index].strategy).data())));
    } else {
        const auto& r = m_results[index];
        m_step->setText(tr("%1: %2 executions for %3 events, %4 twice, %5 fenced, %6 lost.")
                            .arg(QString::fromUtf8(idem::nameOf(r.strategy).data()))
                            .arg(r.executions)
                            .arg(r.events)
                            .arg(r.doubleExecutions)
                            .arg(r.fenced)
                            .arg(r.lost));
    }
}

QString RaceLabWidget::explain(const idem::TraceEvent& e, idem::Strategy s, int executionsOfEvent)
{
    const QString who = u"Worker %1"_s.arg(e.worker);
    const QString id = QString::fromStdString(e.eventId);
    const bool lua = s == idem::Strategy::Lua;
    switch (e.kind) {
    case idem::TraceKind::Acquired:
        if (s == idem::Strategy::Naive)
            return tr("%1 reads %2 and finds nothing there, so it goes ahead.").arg(who, id);
        if (s == idem::Strategy::SetNx)
            return tr("%1 sets %2 with SET NX: it owns the event (there are no states beyond that).").arg(who, id);
        if (s == idem::Strategy::Watch)
            return tr("%1 marks %2 “processing” in a WATCHed transaction that went through.").arg(who, id);
        return tr("%1 acquires %2: STARTED, with a lease and fencing number %3.").arg(who, id).arg(e.fence);
    case idem::TraceKind::TakenOver:
        return tr("%1 takes %2 over: the previous owner's lease ran out; fence %3 is higher than theirs.")
            .arg(who, id)
            .arg(e.fence);
    case idem::TraceKind::InProgress:
        return tr("%1 finds %2 in progress and gives it back; the broker redelivers it later.").arg(who, id);
    case idem::TraceKind::Replayed:
        return s == idem::Strategy::SetNx
                   ? tr("%1 finds %2 taken and skips it — done, or lost if its owner died.").arg(who, id)
                   : tr("%1 finds %2 done and replays the result instead of running it.").arg(who, id);
    case idem::TraceKind::Crashed:
        return tr("%1 dies holding %2; the delivery was never acknowledged.").arg(who, id);
    case idem::TraceKind::Paused:
        return tr("%1 stalls (a GC pause) while it holds %2, past its lease.").arg(who, id);
    case idem::TraceKind::Executed:
        if (executionsOfEvent > 1)
            return tr("%1 runs the side effect for %2 — and so did another worker: %2 ran twice.").arg(who, id);
        return lua ? tr("%1 runs the side effect for %2; the sink accepts fence %3.").arg(who, id).arg(e.fence)
                   : tr("%1 runs the side effect for %2.").arg(who, id);
    case idem::TraceKind::Fenced:
        return tr("%1 wakes up and tries the side effect for %2, but the sink refuses fence %3: a newer owner "
                  "has it.")
            .arg(who, id)
            .arg(e.fence);
    case idem::TraceKind::LeaseLost:
        return tr("%1 tries to complete %2 and is told its lease was lost: nothing is overwritten.").arg(who, id);
    case idem::TraceKind::Completed:
        return tr("%1 records %2 as done.").arg(who, id);
    case idem::TraceKind::Read:
        return tr("%1 reads %2 and finds nothing there, so it goes ahead.").arg(who, id);
    case idem::TraceKind::Aborted:
        return tr("%1's transaction is refused: %2 changed since it was watched.").arg(who, id);
    }
    return {};
}

void RaceLabWidget::nextStep()
{
    const int index = std::max(0, m_traceOf->currentIndex() - (m_traceOf->count() > m_results.size() ? 1 : 0));
    if (index >= m_results.size())
        return;
    const auto& r = m_results[index];
    const int next = m_timeline->revealed() + 1;
    if (next > m_timeline->eventCount()) {
        m_step->setText(tr("Done: %1 execution(s) for %2 event(s) — %3.")
                            .arg(r.executions)
                            .arg(r.events)
                            .arg(r.doubleExecutions ? tr("an event ran twice") : tr("each event ran once")));
        m_next->setEnabled(false);
        return;
    }
    m_timeline->setRevealed(next);
    const auto& e = r.trace[static_cast<std::size_t>(next - 1)];
    int executions = 0;
    for (const auto& t : r.trace)
        executions += t.eventId == e.eventId && t.kind == idem::TraceKind::Executed;
    m_step->setText(tr("Step %1 of %2. %3").arg(next).arg(m_timeline->eventCount()).arg(explain(e, r.strategy, executions)));
}

bool RaceLabWidget::exportTable(const QString& path) const
{
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate))
        return false;
    f.write("strategy,events,deliveries,executions,double_executions,fenced,lost,throughput_per_s,p50_ms,p99_ms\n");
    for (const auto& r : m_results)
        f.write(u"%1,%2,%3,%4,%5,%6,%7,%8,%9,%10\n"_s.arg(QString::fromUtf8(idem::nameOf(r.strategy).data()))
                    .arg(r.events)
                    .arg(r.deliveries)
                    .arg(r.executions)
                    .arg(r.doubleExecutions)
                    .arg(r.fenced)
                    .arg(r.lost)
                    .arg(r.throughputPerS, 0, 'f', 1)
                    .arg(r.p50Ms, 0, 'f', 2)
                    .arg(r.p99Ms, 0, 'f', 2)
                    .toUtf8());
    return true;
}

bool RaceLabWidget::exportTimeline(const QString& path)
{
    return m_views->currentWidget()->grab().save(path, "PNG");
}
