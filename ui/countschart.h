#pragma once

#include "idem/monitor/history.h"
#include "idem/monitor/monitor.h"

#include <QDateTime>
#include <QHash>
#include <QStringList>
#include <QVector>
#include <QWidget>
#include <array>
#include <optional>

// Counts per state over the last ten minutes, drawn with the palette's colours and font. Each
// server has its own history (switching servers never draws a line from one server's count to
// another's); time without a connection is a gap under a hatched band, and no data is said in
// words, never drawn as a line at zero. The y axis steps 1, 2 or 5 times a power of ten.
class CountsChart : public QWidget {
    Q_OBJECT
public:
    enum Series { Started, Stale, Completed, Failed, Malformed, SeriesCount };

    explicit CountsChart(QWidget* parent = nullptr);
    // Shows `server`'s history (kept while the console runs) from now on.
    void setServer(const QString& server);
    QString server() const { return m_server; }
    void addSample(const QDateTime& when, const idem::Stats& s);
    // The figures the legend says: the counters' (MainWindow::updateCounters), which change every
    // second and as data arrives, while a sample is drawn every other second; none: "—"
    void setCounts(const std::optional<idem::Stats>& s);
    QStringList legend() const; // its lines, as drawn
    void addOutage(const QDateTime& when); // no data at `when`: the lines break here
    // The moment the table is rewound to (local time, ms; 0: live): a line across the chart, or a
    // note when it is older than the chart's window.
    void setMarker(qint64 localMs);
    qint64 markerMs() const { return m_markerMs; }
    // While rewound: the counts the history had around the moment (HistoryRecorder::requestCounts,
    // server clock; `serverMinusLocalMs` puts them on the chart's local time) instead of the live
    // samples, which go on being kept for showLive().
    void showPast(const std::vector<idem::StateCounts>& counts, qint64 serverMinusLocalMs);
    void showLive();
    bool showsPast() const { return m_showsPast; }
    // What the empty chart says ("Not connected", "Connecting…").
    void setEmptyText(const QString& text);

    // Of the current server: samples with data, and the runs of them between outages.
    int sampleCount() const;
    int segmentCount() const;
    // the latest sample with data (shown past: the one at the marker); -1 without one
    double lastValue(Series s) const;
    qint64 firstSampleMs() const; // local time; 0 without samples
    // 0 and steps of 1, 2 or 5 times a power of ten, up to the first at or above `max`, at most
    // `maxTicks` + 1 of them
    static QVector<double> niceTicks(double max, int maxTicks);

    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

protected:
    void paintEvent(QPaintEvent*) override;

private:
    struct Sample {
        qint64 ms = 0;
        bool outage = false;
        std::array<double, SeriesCount> v{};
    };
    QVector<Sample>& history() { return m_history[m_server]; }
    const QVector<Sample> shown() const { return m_showsPast ? m_past : m_history.value(m_server); }
    void trim(QVector<Sample>& h, qint64 nowMs);
    static std::array<double, SeriesCount> valuesOf(const idem::Stats& s);

    QHash<QString, QVector<Sample>> m_history;
    QVector<Sample> m_past;
    bool m_showsPast = false;
    QString m_server;
    QString m_emptyText;
    std::optional<std::array<double, SeriesCount>> m_counts;
    qint64 m_markerMs = 0;
};
