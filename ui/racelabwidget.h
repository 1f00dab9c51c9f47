#pragma once

#include "idem/redis/options.h"
#include "idem/lab/racelab.h"

#include <QFutureWatcher>
#include <QWidget>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QPushButton;
class QSpinBox;
class QTableWidget;
class QStackedWidget;
class TimelineView;

// The Race Lab tab: fires synthetic duplicate deliveries through each strategy on the connected
// Redis (on a worker thread), draws every worker's events as swimlanes, and tabulates what the
// ledger counted. Teaching mode walks through the forced interleaving one step at a time.
class RaceLabWidget : public QWidget {
    Q_OBJECT
public:
    explicit RaceLabWidget(QWidget* parent = nullptr);
    // Where to race, and under which namespace (the console's, so the live key table shows them).
    void setTarget(const idem::ConnectionOptions& connection, const QString& keyNamespace);

    QComboBox* strategyBox() const { return m_strategy; }
    QCheckBox* forcedBox() const { return m_forced; }
    QCheckBox* teachingBox() const { return m_teaching; }
    QPushButton* fireButton() const { return m_fire; }
    QPushButton* nextStepButton() const { return m_next; }
    QTableWidget* resultTable() const { return m_table; }
    TimelineView* timeline() const { return m_timeline; }
    QLabel* stepLabel() const { return m_step; }
    const QVector<idem::RaceResult>& results() const { return m_results; }
    bool exportTable(const QString& path) const;
    bool exportTimeline(const QString& path);
    // The sentence that explains one trace event.
    static QString explain(const idem::TraceEvent& e, idem::Strategy s, int executionsOfEvent);

public Q_SLOTS:
    void fire();
    void nextStep();

Q_SIGNALS:
    void finished();
    void failed(const QString& message);

private:
    void showResults(const QVector<idem::RaceResult>& results);
    void showTraceOf(int index);

    idem::ConnectionOptions m_connection;
    QString m_namespace = QStringLiteral("racelab");
    QComboBox* m_strategy;
    QSpinBox* m_workers;
    QSpinBox* m_events;
    QSpinBox* m_duplicates;
    QDoubleSpinBox* m_crash;
    QDoubleSpinBox* m_pause;
    QSpinBox* m_seed;
    QCheckBox* m_forced;
    QCheckBox* m_teaching;
    QPushButton* m_fire;
    QPushButton* m_next;
    QComboBox* m_traceOf;
    TimelineView* m_timeline;
    QStackedWidget* m_views;              // one timeline, or the four side by side
    QVector<TimelineView*> m_sideBySide;
    QLabel* m_step;
    QTableWidget* m_table;
    QFutureWatcher<QVector<idem::RaceResult>> m_watcher;
    QVector<idem::RaceResult> m_results;
};
