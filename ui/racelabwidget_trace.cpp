// The race lab's step-by-step trace: each event explained in the server's order, and the exports.
#include "racelabwidget.h"

#include "timelineview.h"

#include <QCheckBox>
#include <QFileDialog>
#include <QLabel>
#include <QPushButton>
#include <QStackedWidget>
#include <QToolButton>

using namespace Qt::StringLiterals;

namespace {
QString strategyName(idem::Strategy s) { return QString::fromUtf8(idem::nameOf(s).data()); }
} // namespace

void RaceLabWidget::showTraceOf(int)
{
    const int index = currentResult();
    if (index < 0) {
        if (!m_projectorButton->isChecked()) {
            m_views->setCurrentIndex(1);
            return;
        }
    }
    const int shown = std::max(0, index);
    if (shown >= m_results.size())
        return;
    m_views->setCurrentIndex(0);
    const auto& r = m_results[shown];
    m_timeline->setResult(r, m_lastWorkers, laneNames());
    const bool teach = m_teaching->isChecked();
    m_next->setEnabled(teach);
    m_timeline->setLabels(teach);
    if (teach) {
        setResultsShown(false);
        m_timeline->setRevealed(0);
        m_step->setText(m_lastForced
                            ? tr("%1, forced interleaving: A and B each get a delivery of ev-0, and take turns — A "
                                 "reads, B reads, A writes, B writes. Press “Next step” (→) to see each step as the "
                                 "server ran it.")
                                  .arg(strategyName(r.strategy))
                            : tr("%1: press “Next step” (→) to walk through what happened, in the order the server "
                                 "answered.")
                                  .arg(strategyName(r.strategy)));
        return;
    }
    m_step->setText(tr("%1: %2 executions for %3 events, %4 twice, %5 fenced, %6 lost.")
                        .arg(strategyName(r.strategy))
                        .arg(r.executions)
                        .arg(r.events)
                        .arg(r.doubleExecutions)
                        .arg(r.fenced)
                        .arg(r.lost));
}

QString RaceLabWidget::explain(const idem::TraceEvent& e, idem::Strategy s, int executionsSoFar, bool forced)
{
    const QString who = forced ? (e.worker == 0 ? u"A"_s : u"B"_s) : tr("Worker %1").arg(e.worker);
    const QString id = QString::fromStdString(e.eventId);
    using K = idem::TraceKind;
    using S = idem::Strategy;
    switch (e.kind) {
    case K::Read:
        return s == S::Watch ? tr("%1 watches %2 and reads it (WATCH, GET): nothing there yet.").arg(who, id)
                             : tr("%1 reads %2 (GET): nothing there, so %1 will run it.").arg(who, id);
    case K::Acquired:
        if (s == S::SetNx)
            return tr("%1 sets %2 with SET NX: the key was free, so %1 owns the event. (SET NX keeps no states: the "
                      "key only says “taken”.)")
                .arg(who, id);
        if (s == S::Watch)
            return tr("%1's transaction goes through (MULTI, SET %2 processing, EXEC): nobody changed %2 since %1 "
                      "watched it.")
                .arg(who, id);
        return tr("%1 acquires %2 in one script: STARTED, with a lease and fencing number %3.").arg(who, id).arg(e.fence);
    case K::TakenOver:
        return tr("%1 takes %2 over: the previous owner's lease ran out; fence %3 is higher than theirs.")
            .arg(who, id)
            .arg(e.fence);
    case K::InProgress:
        return s == S::Lua ? tr("%1 tries to acquire %2: it is STARTED by someone else and their lease holds, so %1 "
                                "gives the delivery back; the broker brings it again later.")
                                 .arg(who, id)
                           : tr("%1 reads %2: “processing” — someone else holds it; the delivery goes back to the "
                                "broker.")
                                 .arg(who, id);
    case K::Replayed:
        if (s == S::SetNx)
            return tr("%1's SET NX finds %2 taken, so %1 skips it — done by the owner, or lost if the owner died.")
                .arg(who, id);
        if (s == S::Lua)
            return tr("%1 finds %2 COMPLETED and gets the stored result back instead of running it.").arg(who, id);
        return tr("%1 reads %2 and finds it done: nothing to run.").arg(who, id);
    case K::Aborted:
        return tr("%1's transaction is refused (EXEC answers nil): %2 changed after %1 watched it. %1 reads it again.")
            .arg(who, id);
    case K::Crashed: return tr("%1 dies holding %2; the delivery was never acknowledged.").arg(who, id);
    case K::Paused: return tr("%1 stalls (a GC pause) while it holds %2, past its lease.").arg(who, id);
    case K::Executed:
        if (executionsSoFar > 1)
            return tr("%1 runs the side effect for %2 too: %2 has now run %3 times — the duplicate got through.")
                .arg(who, id)
                .arg(executionsSoFar);
        return s == S::Lua ? tr("%1 runs the side effect for %2; the sink accepts fence %3.").arg(who, id).arg(e.fence)
                           : tr("%1 runs the side effect for %2.").arg(who, id);
    case K::Fenced:
        return tr("%1 wakes up and tries the side effect for %2, but the sink refuses fence %3: a newer owner has it.")
            .arg(who, id)
            .arg(e.fence);
    case K::LeaseLost:
        return tr("%1 tries to complete %2 and is told its lease was lost: nothing is overwritten.").arg(who, id);
    case K::Completed:
        if (s == S::Lua)
            return tr("%1 completes %2: COMPLETED, the result stored for duplicates.").arg(who, id);
        if (s == S::SetNx)
            return tr("%1 is done with %2; its SET NX key stays as the only trace.").arg(who, id);
        return tr("%1 writes “done” for %2 (SET).").arg(who, id);
    }
    return {};
}

void RaceLabWidget::nextStep()
{
    const int index = std::max(0, currentResult());
    if (index >= m_results.size())
        return;
    const auto& r = m_results[index];
    const int next = m_timeline->revealed() + 1;
    if (next > m_timeline->eventCount()) {
        m_step->setText(tr("Done: %1 execution(s) for %2 event(s) — %3.")
                            .arg(r.executions)
                            .arg(r.events)
                            .arg(r.doubleExecutions ? tr("an event ran twice")
                                 : r.lost           ? tr("an event never ran")
                                                    : tr("each event ran once")));
        m_next->setEnabled(false);
        setResultsShown(true);
        return;
    }
    m_timeline->setRevealed(next);
    const auto& e = r.trace[static_cast<std::size_t>(next - 1)];
    int executions = 0; // up to this step: the narration never runs ahead of the trace
    for (int i = 0; i < next; ++i) {
        const auto& t = r.trace[static_cast<std::size_t>(i)];
        executions += t.eventId == e.eventId && t.kind == idem::TraceKind::Executed;
    }
    m_step->setText(tr("Step %1 of %2. %3")
                        .arg(next)
                        .arg(m_timeline->eventCount())
                        .arg(explain(e, r.strategy, executions, m_lastForced)));
}

bool RaceLabWidget::exportTable(const QString& path) const
{
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate))
        return false;
    f.write("strategy,events,deliveries,executions,double_executions,fenced,lost,throughput_per_s,p50_ms,p99_ms\n");
    for (const auto& r : m_results)
        f.write(u"%1,%2,%3,%4,%5,%6,%7,%8,%9,%10\n"_s.arg(strategyName(r.strategy))
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
