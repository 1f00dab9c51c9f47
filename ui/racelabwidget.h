#pragma once

#include "idem/lab/racelab.h"
#include "idem/redis/options.h"

#include <QThread>
#include <QWidget>
#include <optional>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QPushButton;
class QScrollArea;
class QSpinBox;
class QStackedWidget;
class QTableWidget;
class QToolButton;
class LabRunner;
class TimelineView;

// The Race Lab tab: fires synthetic duplicate deliveries through each strategy, draws every
// worker's events as swimlanes, and tabulates what the ledger counted. It runs on a private
// redis-server of its own unless told to use the connected server, and then under its own
// namespace (racelab:, every key expiring within 10 minutes) after saying so - never in the
// namespace the console watches. Teaching mode walks through the trace one step at a time, the
// narration told from the steps so far, the counts shown at the end; projector mode shows one
// strategy large, in a bigger font, with a label on each mark.
class RaceLabWidget : public QWidget {
    Q_OBJECT
public:
    enum class Where { Private, Connected };
    explicit RaceLabWidget(QWidget* parent = nullptr);
    ~RaceLabWidget() override;
    // The server the console is connected to (none: the lab can only use its own).
    void setConnectedServer(const std::optional<idem::ConnectionOptions>& connection, const QString& name);
    // Whether the lab may write there (not while the console is read-only or disconnected).
    void setConnectedWritable(bool writable, const QString& whyNot);

    QComboBox* strategyBox() const { return m_strategy; }
    QComboBox* whereBox() const { return m_where; }
    QCheckBox* forcedBox() const { return m_forced; }
    QCheckBox* teachingBox() const { return m_teaching; }
    QToolButton* projectorButton() const { return m_projectorButton; }
    QPushButton* fireButton() const { return m_fire; }
    QPushButton* nextStepButton() const { return m_next; }
    QTableWidget* resultTable() const { return m_table; }
    bool resultsShown() const;
    TimelineView* timeline() const { return m_timeline; }
    QLabel* stepLabel() const { return m_step; }
    QString lastWhere() const { return m_lastWhere; } // where the last race ran
    const QVector<idem::RaceResult>& results() const { return m_results; }
    bool exportTable(const QString& path) const;
    bool exportTimeline(const QString& path);
    // The sentence that explains one trace event, from what has happened up to it. forced: the
    // workers are A and B of the forced interleaving.
    static QString explain(const idem::TraceEvent& e, idem::Strategy s, int executionsSoFar, bool forced);
    static QString describeStrategy(idem::Strategy s);

public Q_SLOTS:
    void fire();
    void nextStep();
    void setProjector(bool on);

Q_SIGNALS:
    void finished();
    void failed(const QString& message);

private:
    void showResults(const QVector<idem::RaceResult>& results);
    void showTraceOf(int index);
    void fillTable();
    void setResultsShown(bool shown);
    void updateWhere();
    int currentResult() const; // the result the single timeline shows
    QStringList laneNames() const;
    int keysPerRun() const;    // about how many keys a run writes (said before writing on a shared server)

    QThread m_thread;
    LabRunner* m_runner;
    quint64 m_job = 0;
    std::optional<idem::ConnectionOptions> m_connected;
    QString m_connectedName;
    bool m_connectedWritable = false;
    QString m_connectedWhyNot;
    QString m_lastWhere;
    bool m_lastForced = false;
    int m_lastWorkers = 0;
    QFont m_normalFont;

    QScrollArea* m_controls;
    QComboBox* m_where;
    QLabel* m_whereNote;
    QComboBox* m_strategy;
    QSpinBox* m_workers;
    QSpinBox* m_events;
    QSpinBox* m_duplicates;
    QDoubleSpinBox* m_crash;
    QDoubleSpinBox* m_pause;
    QSpinBox* m_seed;
    QCheckBox* m_forced;
    QCheckBox* m_teaching;
    QToolButton* m_projectorButton;
    QPushButton* m_fire;
    QPushButton* m_next;
    QComboBox* m_traceOf;
    TimelineView* m_timeline;
    QStackedWidget* m_views; // one timeline, or the four side by side
    QVector<TimelineView*> m_sideBySide;
    QVector<QLabel*> m_sideTitles;
    QLabel* m_step;
    QStackedWidget* m_resultStack; // the table, or why it is not shown yet
    QTableWidget* m_table;
    QVector<idem::RaceResult> m_results;
};
