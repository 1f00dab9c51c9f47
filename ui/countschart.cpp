#include "countschart.h"

#include <QPainter>
#include <QPainterPath>
#include <cmath>

using namespace Qt::StringLiterals;

namespace {
constexpr qint64 kWindowMs = 600'000;
constexpr qint64 kMinSpanMs = 60'000;

const std::array<QColor, CountsChart::SeriesCount> kColors = {QColor(52, 152, 219), QColor(230, 126, 34),
                                                              QColor(39, 174, 96), QColor(231, 76, 60),
                                                              QColor(155, 89, 182)};
// "started" in the counters counts stale locks too; here they are a series of their own, so the
// other is named for what it is: STARTED with its lease running (or no lease)
const char* const kNames[] = {QT_TRANSLATE_NOOP("CountsChart", "live locks"), QT_TRANSLATE_NOOP("CountsChart", "stale"),
                              QT_TRANSLATE_NOOP("CountsChart", "completed"),
                              QT_TRANSLATE_NOOP("CountsChart", "failed"),
                              QT_TRANSLATE_NOOP("CountsChart", "malformed")};
} // namespace

CountsChart::CountsChart(QWidget* parent) : QWidget(parent), m_emptyText(tr("No data yet"))
{
    setObjectName(u"countsChart"_s);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Preferred);
}

// tall enough for the legend's five lines and the time axis
QSize CountsChart::sizeHint() const { return {600, (fontMetrics().height() + 2) * 7 + 12}; }
QSize CountsChart::minimumSizeHint() const { return {200, (fontMetrics().height() + 2) * 6 + 8}; }

void CountsChart::setServer(const QString& server)
{
    m_server = server;
    update();
}

void CountsChart::setEmptyText(const QString& text)
{
    if (text == m_emptyText)
        return;
    m_emptyText = text;
    update();
}

void CountsChart::setMarker(qint64 localMs)
{
    m_markerMs = localMs;
    update();
}

void CountsChart::showPast(const std::vector<idem::StateCounts>& counts, qint64 serverMinusLocalMs)
{
    m_past.clear();
    m_past.reserve(static_cast<qsizetype>(counts.size()));
    for (const idem::StateCounts& c : counts) {
        Sample x;
        x.ms = c.atMs - serverMinusLocalMs;
        x.v = {double(c.started), double(c.stale), double(c.completed), double(c.failed), double(c.malformed)};
        m_past.push_back(x);
    }
    m_showsPast = true;
    update();
}

void CountsChart::showLive()
{
    m_past.clear();
    m_showsPast = false;
    update();
}

void CountsChart::trim(QVector<Sample>& h, qint64 nowMs)
{
    qsizetype drop = 0;
    while (drop + 1 < h.size() && h[drop + 1].ms < nowMs - kWindowMs)
        ++drop;
    h.remove(0, drop);
    while (!h.isEmpty() && h.first().outage) // a history starts with data
        h.removeFirst();
}

std::array<double, CountsChart::SeriesCount> CountsChart::valuesOf(const idem::Stats& s)
{
    return {double(s.started - s.stale), double(s.stale), double(s.completed), double(s.failed), double(s.malformed)};
}

void CountsChart::addSample(const QDateTime& when, const idem::Stats& s)
{
    Sample x;
    x.ms = when.toMSecsSinceEpoch();
    x.v = valuesOf(s);
    QVector<Sample>& h = history();
    h.push_back(x);
    trim(h, x.ms);
    update();
}

void CountsChart::setCounts(const std::optional<idem::Stats>& s)
{
    std::optional<std::array<double, SeriesCount>> counts;
    if (s)
        counts = valuesOf(*s);
    if (counts == m_counts)
        return;
    m_counts = counts;
    update();
}

QStringList CountsChart::legend() const
{
    QStringList lines;
    for (int s = 0; s < SeriesCount; ++s) {
        const double v = m_counts ? (*m_counts)[static_cast<std::size_t>(s)] : -1;
        lines << u"%1 %2"_s.arg(tr(kNames[s])).arg(v < 0 ? u"—"_s : QString::number(qint64(v)));
    }
    return lines;
}

void CountsChart::addOutage(const QDateTime& when)
{
    QVector<Sample>& h = history();
    if (h.isEmpty())
        return; // nothing to break: "no data" says it
    Sample x;
    x.ms = when.toMSecsSinceEpoch();
    x.outage = true;
    if (h.size() >= 2 && h.last().outage && h[h.size() - 2].outage)
        h.last() = x; // an outage is its first and its latest moment
    else
        h.push_back(x);
    trim(h, x.ms);
    update();
}

int CountsChart::sampleCount() const
{
    int n = 0;
    for (const Sample& x : shown())
        n += x.outage ? 0 : 1;
    return n;
}

int CountsChart::segmentCount() const
{
    int n = 0;
    bool in = false;
    for (const Sample& x : shown()) {
        if (!x.outage && !in)
            ++n;
        in = !x.outage;
    }
    return n;
}

double CountsChart::lastValue(Series s) const
{
    const auto h = shown();
    // the past runs on a little after the moment: the sample at the moment
    const bool atMarker = m_showsPast && m_markerMs != 0;
    for (auto it = h.crbegin(); it != h.crend(); ++it)
        if (!it->outage && !(atMarker && it->ms > m_markerMs))
            return it->v[static_cast<std::size_t>(s)];
    return -1;
}

qint64 CountsChart::firstSampleMs() const
{
    const auto h = shown();
    return h.isEmpty() ? 0 : h.first().ms;
}

QVector<double> CountsChart::niceTicks(double max, int maxTicks)
{
    maxTicks = std::max(1, maxTicks);
    max = std::max(max, 1.0);
    double step = 1;
    for (double magnitude = 1;; magnitude *= 10) {
        bool found = false;
        for (const double m : {1.0, 2.0, 5.0})
            if (std::ceil(max / (m * magnitude)) <= maxTicks) {
                step = m * magnitude;
                found = true;
                break;
            }
        if (found)
            break;
    }
    QVector<double> ticks;
    for (double t = 0; t < max + step; t += step) {
        ticks.push_back(t);
        if (t >= max)
            break;
    }
    return ticks;
}

void CountsChart::paintEvent(QPaintEvent*)
{
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    p.fillRect(rect(), palette().base());
    const QFontMetrics fm = fontMetrics();
    const auto h = shown();
    const QColor text = palette().color(QPalette::Text);
    const QColor faint = palette().color(QPalette::PlaceholderText);
    if (sampleCount() == 0) {
        p.setPen(faint);
        p.drawText(rect(), Qt::AlignCenter | Qt::TextWordWrap, m_emptyText);
        return;
    }

    const qint64 now = m_showsPast ? h.last().ms : std::max(h.last().ms, QDateTime::currentMSecsSinceEpoch());
    const qint64 t1 = now, t0 = std::min(h.first().ms, t1 - kMinSpanMs);
    double top = 1;
    for (const Sample& x : h)
        for (const double v : x.v)
            top = std::max(top, v);
    const int lineH = fm.height();
    const int plotH0 = height() - lineH * 2 - 8;
    const QVector<double> ticks = niceTicks(top, std::max(1, plotH0 / (lineH * 2)));
    const double yMax = ticks.last();

    // legend on the right: each series' count, as the counters say it now (the line's last sample
    // may be a second older)
    int legendW = 0;
    const QStringList legend = this->legend();
    for (const QString& line : legend)
        legendW = std::max(legendW, fm.horizontalAdvance(line));
    legendW += 22;
    const bool legendShown = width() > legendW * 3;
    int yLabelW = 0;
    for (const double t : ticks)
        yLabelW = std::max(yLabelW, fm.horizontalAdvance(QString::number(qint64(t))));
    const QRectF plot(yLabelW + 10, lineH / 2 + 4, width() - yLabelW - 10 - (legendShown ? legendW + 12 : 8),
                      height() - lineH / 2 - 4 - lineH - 8);
    if (plot.width() < 20 || plot.height() < 10)
        return;
    const auto x = [&](qint64 ms) { return plot.left() + double(ms - t0) * plot.width() / double(t1 - t0); };
    const auto y = [&](double v) { return plot.bottom() - v * plot.height() / yMax; };

    // grid and y labels
    QColor grid = palette().color(QPalette::Mid);
    grid.setAlpha(90);
    for (const double t : ticks) {
        p.setPen(grid);
        p.drawLine(QPointF(plot.left(), y(t)), QPointF(plot.right(), y(t)));
        p.setPen(text);
        p.drawText(QRectF(0, y(t) - lineH / 2.0, yLabelW + 4, lineH), Qt::AlignRight | Qt::AlignVCenter,
                   QString::number(qint64(t)));
    }
    // x labels at a round number of seconds, as many as fit
    const int labelW = fm.horizontalAdvance(u"00:00:00"_s) + fm.averageCharWidth() * 3;
    qint64 stepMs = 5'000;
    for (const qint64 s : {5'000LL, 10'000LL, 15'000LL, 30'000LL, 60'000LL, 120'000LL, 300'000LL, 600'000LL}) {
        stepMs = s;
        if (double(s) * plot.width() / double(t1 - t0) >= labelW)
            break;
    }
    for (qint64 t = (t0 / stepMs + 1) * stepMs; t <= t1; t += stepMs) {
        p.setPen(grid);
        p.drawLine(QPointF(x(t), plot.top()), QPointF(x(t), plot.bottom()));
        const double cx = x(t);
        if (cx - labelW / 2.0 < plot.left() - yLabelW || cx + labelW / 2.0 > width())
            continue;
        p.setPen(text);
        p.drawText(QRectF(cx - labelW / 2.0, plot.bottom() + 3, labelW, lineH), Qt::AlignCenter,
                   QDateTime::fromMSecsSinceEpoch(t).toString(u"HH:mm:ss"_s));
    }

    // outages: a hatched band from the last sample before to the first after (or now)
    for (qsizetype i = 0; i < h.size(); ++i) {
        if (!h[i].outage)
            continue;
        qsizetype j = i;
        while (j + 1 < h.size() && h[j + 1].outage)
            ++j;
        const qint64 from = i > 0 ? h[i - 1].ms : h[i].ms;
        const qint64 to = j + 1 < h.size() ? h[j + 1].ms : now;
        const QRectF band(x(from), plot.top(), std::max(2.0, x(to) - x(from)), plot.height());
        QColor hatch = palette().color(QPalette::Mid);
        p.fillRect(band, QBrush(hatch, Qt::BDiagPattern));
        if (band.width() > fm.horizontalAdvance(tr("no connection")) + 8) {
            p.setPen(faint);
            p.drawText(band, Qt::AlignCenter, tr("no connection"));
        }
        i = j;
    }

    // the lines, broken at outages
    for (int s = 0; s < SeriesCount; ++s) {
        QPen pen(kColors[static_cast<std::size_t>(s)], 2);
        p.setPen(pen);
        QPainterPath path;
        bool open = false;
        for (const Sample& sample : h) {
            if (sample.outage) {
                open = false;
                continue;
            }
            const QPointF pt(x(sample.ms), y(sample.v[static_cast<std::size_t>(s)]));
            if (open)
                path.lineTo(pt);
            else
                path.moveTo(pt);
            open = true;
        }
        p.drawPath(path);
    }
    p.setPen(palette().color(QPalette::Mid));
    p.drawLine(plot.bottomLeft(), plot.bottomRight());

    if (m_markerMs != 0) { // rewound: where the table stands
        QPen pen(palette().color(QPalette::Highlight), 2, Qt::DashLine);
        p.setPen(pen);
        const QString at = tr("rewound to %1").arg(QDateTime::fromMSecsSinceEpoch(m_markerMs).toString(u"HH:mm:ss"_s));
        if (m_markerMs >= t0 && m_markerMs <= t1) {
            p.drawLine(QPointF(x(m_markerMs), plot.top()), QPointF(x(m_markerMs), plot.bottom()));
            const double w = fm.horizontalAdvance(at) + 8;
            const bool right = x(m_markerMs) + 4 + w <= plot.right(); // else on its left, clear of the legend
            p.drawText(QRectF(right ? x(m_markerMs) + 4 : x(m_markerMs) - 4 - w, plot.top(), w, lineH),
                       (right ? Qt::AlignLeft : Qt::AlignRight) | Qt::AlignVCenter, at);
        } else {
            p.drawText(plot.adjusted(4, 0, 0, 0), Qt::AlignLeft | Qt::AlignTop, tr("◀ %1 (before this chart)").arg(at));
        }
    }

    if (legendShown) {
        const double lx = plot.right() + 12;
        for (int s = 0; s < SeriesCount; ++s) {
            const double ly = plot.top() + s * (lineH + 2);
            p.fillRect(QRectF(lx, ly + lineH / 2.0 - 2, 14, 4), kColors[static_cast<std::size_t>(s)]);
            p.setPen(text);
            p.drawText(QRectF(lx + 20, ly, legendW, lineH), Qt::AlignLeft | Qt::AlignVCenter, legend[s]);
        }
    }
}
