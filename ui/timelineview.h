#pragma once

#include "idem/lab/racelab.h"

#include <QWidget>

class QTimer;

// The race lab's swimlanes: one lane per worker, a span from each acquire to its outcome,
// markers for executions (red when an event ran more than once), fenced effects and crashes,
// thin links between the deliveries of one event. Revealed over a moment, or step by step.
class TimelineView : public QWidget {
    Q_OBJECT
public:
    explicit TimelineView(QWidget* parent = nullptr);
    void setResult(const idem::RaceResult& result, int workers);
    void setRevealed(int events); // how many trace events are shown (teaching mode); -1: animate all
    int revealed() const { return m_revealed; }
    int eventCount() const { return static_cast<int>(m_result.trace.size()); }
    QSize sizeHint() const override { return {800, 260}; }

protected:
    void paintEvent(QPaintEvent*) override;

private:
    idem::RaceResult m_result;
    int m_workers = 0;
    int m_revealed = 0;
    QTimer* m_animation;
};
