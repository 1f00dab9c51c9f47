#pragma once

#include "replayrunner.h"

#include <QElapsedTimer>
#include <QPointer>
#include <QThread>
#include <QWidget>
#include <optional>

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTableWidget;
class ReplayLanes;
class StreamPickerDialog;

// The Replay tab: an event log - opened from a file, or captured from a stream of the connected
// server (read-only) - replayed through idem at its logged pace or faster, with duplicates,
// reordering, crashing consumers, directly or through a Redis Stream consumer group; play, pause,
// step one delivery, stop; a progress bar with events per second, live counts, per-consumer
// swimlanes and the ids it writes, the result exportable as JSON, CSV or PNG. It replays on a private
// redis-server of its own unless told to use the connected server, and then only after a
// confirmation that names the server and the namespace of its own it writes under; never while
// the console is read-only. The replay runs on the "idem-replay" thread.
class ReplayWidget : public QWidget {
    Q_OBJECT
public:
    enum class Where { Private, Connected };
    explicit ReplayWidget(QWidget* parent = nullptr);
    ~ReplayWidget() override;
    // The server the console is connected to (none: only the private server and files).
    void setConnectedServer(const std::optional<idem::ConnectionOptions>& connection, const QString& name);
    // Whether a replay may write there (not while the console is read-only or disconnected).
    void setConnectedWritable(bool writable, const QString& whyNot);

    // An event log from a file; false (and why, in the status line) when it is none.
    bool openLog(const QString& path);
    void setLog(const EventLog& events, const QString& source);
    bool saveLog(const QString& path) const;
    bool exportJson(const QString& path) const;
    bool exportCsv(const QString& path) const;
    bool exportPng(const QString& path) const; // the counts and the swimlanes, as shown
    bool running() const { return m_running; }
    bool paused() const { return m_paused; }
    std::optional<idem::ReplayResult> result() const { return m_result; }
    QString lastWhere() const { return m_lastWhere; }

    QComboBox* whereBox() const { return m_where; }
    QComboBox* speedBox() const { return m_speed; }
    QComboBox* deliveryBox() const { return m_delivery; }
    QSpinBox* duplicatesBox() const { return m_duplicates; }
    QSpinBox* consumersBox() const { return m_consumers; }
    QSpinBox* reorderBox() const { return m_reorder; }
    QSpinBox* seedBox() const { return m_seed; }
    ReplayLanes* lanes() const { return m_lanes; }
    QDoubleSpinBox* crashBox() const { return m_crash; }
    QPushButton* playButton() const { return m_play; }
    QPushButton* stopButton() const { return m_stop; }
    QPushButton* pauseButton() const { return m_pause; }
    QPushButton* stepButton() const { return m_step; }
    QPushButton* captureButton() const { return m_capture; }
    QProgressBar* progressBar() const { return m_progress; }
    QLabel* statusLabel() const { return m_status; }
    QLabel* countLabel(const QString& name) const; // executed, twice, lost, claimed, deliveries, crashes

public Q_SLOTS:
    void play(); // starts, or resumes a paused replay
    void pause();
    void step(); // while paused: the next delivery, now; idle: starts paused and delivers one
    void stop();
    void captureFromStream();

Q_SIGNALS:
    void finished();
    void failed(const QString& message);
    void captured();

private:
    static QString seconds(double s); // a duration as people read it: s, min or h
    void updateWhere();
    void updateButtons();
    void showProgress(const idem::ReplayProgress& p);
    void showResult(const idem::ReplayResult& r);
    void start(bool paused);
    void setCount(const QString& name, const QString& value, bool alert = false);
    idem::ReplayOptions chosenOptions() const;

    QThread m_thread;
    ReplayRunner* m_runner;
    quint64 m_job = 0;
    bool m_running = false;
    bool m_paused = false;
    bool m_capturing = false;
    std::optional<idem::ConnectionOptions> m_connected;
    QString m_connectedName;
    bool m_connectedWritable = false;
    QString m_connectedWhyNot;
    EventLog m_events;
    QString m_source;
    std::optional<idem::ReplayResult> m_result;
    idem::ReplayOptions m_lastOptions;
    QString m_lastWhere;
    QElapsedTimer m_rateClock;
    int m_rateDeliveries = 0;
    double m_rate = 0;
    QPointer<StreamPickerDialog> m_picker;

    QComboBox* m_where;
    QLabel* m_whereNote;
    QLabel* m_logLabel;
    QComboBox* m_speed;
    QSpinBox* m_duplicates;
    QDoubleSpinBox* m_crash;
    QSpinBox* m_consumers;
    QComboBox* m_delivery;
    QSpinBox* m_seed;
    QSpinBox* m_reorder;
    QPushButton* m_open;
    QPushButton* m_capture;
    QPushButton* m_save;
    QPushButton* m_play;
    QPushButton* m_stop;
    QPushButton* m_pause;
    QPushButton* m_step;
    QPushButton* m_exportPng;
    QWidget* m_resultView;
    ReplayLanes* m_lanes;
    QPushButton* m_exportJson;
    QPushButton* m_exportCsv;
    QProgressBar* m_progress;
    QLabel* m_status;
    QTableWidget* m_preview;
    QHash<QString, QLabel*> m_counts;
};
