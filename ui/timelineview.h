#pragma once

#include "idem/lab/racelab.h"

#include <QStringList>
#include <QWidget>

class QTimer;

// The race lab's swimlanes: one lane per worker, a span from each read or claim to its outcome,
// a mark for every trace event in the trace's order, thin links between the deliveries of one
// event. Long waits (a paused worker, a redelivery's delay) are cut out of the time axis and
// marked as breaks with the time they skip, so the rest is not packed into a corner. Revealed
// over a moment, or step by step; a second execution is red only once it has happened.
// Projector mode: bigger marks and a label on each.
class TimelineView : public QWidget {
    Q_OBJECT
public:
    explicit TimelineView(QWidget* parent = nullptr);
    // laneNames: one per worker ("A", "B"); empty: "worker N"
    void setResult(const idem::RaceResult& result, int workers, const QStringList& laneNames = {});
    void setRevealed(int events); // how many trace events are shown (teaching mode); -1: animate all
    int revealed() const { return m_revealed; }
    int eventCount() const { return static_cast<int>(m_result.trace.size()); }
    void setProjector(bool on);
    bool projector() const { return m_projector; }
    void setLabels(bool on); // a word on each mark (teaching and projector modes)
    void setLegendShown(bool on); // off where several views share one legend
    // What the colours mean, as rich text for a label under several views
    static QString legendHtml();
    // The x of each trace event in a plot from `left` to `right`; breaks are where long waits were
    // cut out: (x, milliseconds cut).
    struct Axis {
        std::vector<double> x;
        std::vector<std::pair<double, qint64>> breaks;
    };
    static Axis layoutAxis(const std::vector<idem::TraceEvent>& trace, double left, double right, double minStep);
    static QString markLabel(idem::TraceKind kind, idem::Strategy strategy, int executionsSoFar);
    QSize sizeHint() const override { return {800, 260}; }
    QSize minimumSizeHint() const override;

protected:
    void paintEvent(QPaintEvent*) override;

private:
    idem::RaceResult m_result;
    int m_workers = 0;
    QStringList m_laneNames;
    int m_revealed = 0;
    bool m_projector = false;
    bool m_labels = false;
    bool m_legend = true;
    QTimer* m_animation;
};
