#pragma once

#include "idem/lab/racelab.h"

#include <QHash>
#include <QWidget>

class QLabel;
class QTabWidget;
class QTableWidget;
class TimelineView;

// What a replay's consumers are doing, while it runs: the race lab's swimlanes (one lane per
// consumer, over the latest marks) and a table of the event ids it writes - how many times each
// ran, its last state, who touched it last, the fence. Fed from ReplayProgress::trace; reads
// nothing from Redis (the replay's keys live on its own server or under a namespace of its own).
class ReplayLanes : public QWidget {
    Q_OBJECT
public:
    explicit ReplayLanes(QWidget* parent = nullptr);
    void start(int consumers);
    void addMarks(const std::vector<idem::TraceEvent>& marks);
    void setNamespace(const QString& ns); // known when the replay ends
    TimelineView* timeline() const { return m_timeline; }
    QTableWidget* keyTable() const { return m_keys; }
    QTabWidget* tabs() const { return m_tabs; }
    int marks() const { return m_marks; }
    // The lanes (with the legend) as a picture: what PNG export saves.
    QPixmap picture() const;

private:
    struct Row {
        int row = -1;
        int runs = 0;
    };
    void setCell(int row, int column, const QString& text);

    QTabWidget* m_tabs;
    TimelineView* m_timeline;
    QLabel* m_legend;
    QLabel* m_keysNote;
    QTableWidget* m_keys;
    idem::RaceResult m_window; // the latest marks, shown in the lanes
    QHash<QString, Row> m_rows;
    int m_consumers = 0;
    int m_marks = 0;
    int m_unlisted = 0; // ids beyond the table's bound
};
