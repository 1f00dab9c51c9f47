#pragma once

#include "idem/monitor/monitor.h"

#include <QChartView>
#include <QDateTime>

class QLineSeries;
class QDateTimeAxis;
class QValueAxis;

// Counts per state over the last minutes (Qt Charts).
class CountsChart : public QChartView {
    Q_OBJECT
public:
    explicit CountsChart(QWidget* parent = nullptr);
    void addSample(const QDateTime& when, const idem::Stats& s);

private:
    QLineSeries* m_started;
    QLineSeries* m_stale;
    QLineSeries* m_completed;
    QLineSeries* m_failed;
    QLineSeries* m_malformed;
    QDateTimeAxis* m_x;
    QValueAxis* m_y;
};
