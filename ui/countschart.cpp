#include "countschart.h"

#include <QChart>
#include <QDateTimeAxis>
#include <QLineSeries>
#include <QValueAxis>

using namespace Qt::StringLiterals;

namespace {
constexpr int kWindowSeconds = 600;
}

// The chart is handed to the QChartView constructor: setChart() would release (and leak) the
// default chart the view creates for itself.
CountsChart::CountsChart(QWidget* parent) : QChartView(new QChart, parent)
{
    QChart* chart = this->chart();
    chart->legend()->setAlignment(Qt::AlignRight);
    chart->setMargins(QMargins(4, 4, 4, 4));
    chart->setBackgroundRoundness(0);
    chart->setTheme(palette().color(QPalette::Window).lightness() < 128 ? QChart::ChartThemeDark
                                                                         : QChart::ChartThemeLight);
    auto series = [chart](const QString& name, const QColor& c) {
        auto* s = new QLineSeries;
        s->setName(name);
        QPen pen(c);
        pen.setWidth(2);
        s->setPen(pen);
        chart->addSeries(s);
        return s;
    };
    m_started = series(tr("started"), QColor(52, 152, 219));
    m_stale = series(tr("stale"), QColor(230, 126, 34));
    m_completed = series(tr("completed"), QColor(39, 174, 96));
    m_failed = series(tr("failed"), QColor(192, 57, 43));
    m_malformed = series(tr("malformed"), QColor(142, 68, 173));
    m_x = new QDateTimeAxis;
    m_x->setFormat(u"HH:mm:ss"_s);
    m_x->setTickCount(5);
    m_y = new QValueAxis;
    m_y->setLabelFormat(u"%d"_s);
    m_y->setRange(0, 10);
    chart->addAxis(m_x, Qt::AlignBottom);
    chart->addAxis(m_y, Qt::AlignLeft);
    for (auto* s : {m_started, m_stale, m_completed, m_failed, m_malformed}) {
        s->attachAxis(m_x);
        s->attachAxis(m_y);
    }
    const QDateTime now = QDateTime::currentDateTime();
    m_x->setRange(now.addSecs(-60), now);
    setRenderHint(QPainter::Antialiasing);
    setMinimumHeight(150);
}

void CountsChart::addSample(const QDateTime& when, const idem::Stats& s)
{
    const qreal x = static_cast<qreal>(when.toMSecsSinceEpoch());
    const qreal cutoff = static_cast<qreal>(when.addSecs(-kWindowSeconds).toMSecsSinceEpoch());
    qreal top = 10;
    const std::pair<QLineSeries*, std::size_t> values[] = {{m_started, s.started - s.stale},
                                                             {m_stale, s.stale},
                                                             {m_completed, s.completed},
                                                             {m_failed, s.failed},
                                                             {m_malformed, s.malformed}};
    for (const auto& [series, value] : values) {
        series->append(x, static_cast<qreal>(value));
        while (series->count() > 2 && series->at(0).x() < cutoff)
            series->remove(0);
        for (const QPointF& p : series->points())
            top = std::max(top, p.y());
    }
    QDateTime first = QDateTime::fromMSecsSinceEpoch(static_cast<qint64>(m_started->at(0).x()));
    if (first.secsTo(when) < 60)
        first = when.addSecs(-60);
    m_x->setRange(first, when);
    m_y->setRange(0, top * 1.1);
}
