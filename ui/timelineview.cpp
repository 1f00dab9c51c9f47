#include "timelineview.h"

#include "theme.h"

#include <QMap>
#include <QPainter>
#include <QPainterPath>
#include <QTimer>
#include <algorithm>

using namespace Qt::StringLiterals;

namespace {
using K = idem::TraceKind;

const QColor kRead(52, 152, 219), kTaken(142, 68, 173), kGood(39, 174, 96), kTwice(231, 76, 60),
    kWaiting(241, 196, 15), kPaused(230, 126, 34), kRefused(211, 84, 0), kCrashed(127, 140, 141);

QColor colourOf(K kind, bool twice)
{
    switch (kind) {
    case K::Read:
    case K::Acquired: return kRead;
    case K::TakenOver: return kTaken;
    case K::Replayed:
    case K::Completed: return kGood;
    case K::Executed: return twice ? kTwice : kGood;
    case K::InProgress:
    case K::Aborted: return kWaiting;
    case K::Paused: return kPaused;
    case K::Fenced:
    case K::LeaseLost: return kRefused;
    case K::Crashed: break;
    }
    return kCrashed;
}

const std::pair<QColor, const char*> kLegend[] = {
    {kRead, QT_TRANSLATE_NOOP("TimelineView", "reads / claims")},
    {kTaken, QT_TRANSLATE_NOOP("TimelineView", "takes over")},
    {kGood, QT_TRANSLATE_NOOP("TimelineView", "runs / done")},
    {kTwice, QT_TRANSLATE_NOOP("TimelineView", "runs a second time")},
    {kWaiting, QT_TRANSLATE_NOOP("TimelineView", "busy / refused")},
    {kPaused, QT_TRANSLATE_NOOP("TimelineView", "stalls")},
    {kRefused, QT_TRANSLATE_NOOP("TimelineView", "fenced / lease lost")},
    {kCrashed, QT_TRANSLATE_NOOP("TimelineView", "crashes")}};

bool endsSpan(K kind)
{
    return kind == K::Completed || kind == K::Crashed || kind == K::LeaseLost || kind == K::Fenced ||
           kind == K::Replayed || kind == K::InProgress;
}
} // namespace

TimelineView::TimelineView(QWidget* parent) : QWidget(parent), m_animation(new QTimer(this))
{
    setMinimumHeight(120);
    m_animation->setInterval(30);
    connect(m_animation, &QTimer::timeout, this, [this] {
        m_revealed = std::min(eventCount(), m_revealed + std::max(1, eventCount() / 60));
        if (m_revealed >= eventCount())
            m_animation->stop();
        update();
    });
}

QSize TimelineView::minimumSizeHint() const { return {200, fontMetrics().height() * 6}; }

void TimelineView::setResult(const idem::RaceResult& result, int workers, const QStringList& laneNames)
{
    m_result = result;
    m_workers = workers;
    m_laneNames = laneNames;
    setRevealed(-1);
}

void TimelineView::setRevealed(int events)
{
    m_animation->stop();
    if (events < 0) {
        m_revealed = 0;
        m_animation->start();
    } else {
        m_revealed = std::clamp(events, 0, eventCount());
    }
    update();
}

void TimelineView::setProjector(bool on)
{
    m_projector = on;
    update();
}

void TimelineView::setLabels(bool on)
{
    m_labels = on;
    update();
}

void TimelineView::setLegendShown(bool on)
{
    m_legend = on;
    update();
}

QString TimelineView::legendHtml()
{
    QStringList parts;
    for (const auto& [c, t] : kLegend)
        parts << u"<span style='color:%1'>●</span>&nbsp;%2"_s.arg(c.name(), tr(t));
    return parts.join(u" &nbsp; "_s);
}

TimelineView::Axis TimelineView::layoutAxis(const std::vector<idem::TraceEvent>& trace, double left, double right,
                                            double minStep)
{
    Axis a;
    const std::size_t n = trace.size();
    if (n == 0)
        return a;
    std::vector<qint64> gaps(n, 0);
    std::vector<qint64> positive;
    for (std::size_t i = 1; i < n; ++i) {
        gaps[i] = std::max<qint64>(0, trace[i].serverMs - trace[i - 1].serverMs);
        if (gaps[i] > 0)
            positive.push_back(gaps[i]);
    }
    // a wait longer than this is cut out of the axis: three times the usual long gap, at least 8 ms
    qint64 cap = 8;
    if (!positive.empty()) {
        std::sort(positive.begin(), positive.end());
        cap = std::max<qint64>(cap, 3 * positive[positive.size() * 3 / 4]);
    }
    std::vector<double> units(n, 0);
    for (std::size_t i = 1; i < n; ++i)
        units[i] = units[i - 1] + double(std::min(gaps[i], cap));
    const double width = std::max(1.0, right - left);
    const double step = n > 1 ? std::min(minStep, width / double(n - 1)) : 0; // marks never overlap in order
    const double total = units.back();
    const double scale = total > 0 ? std::max(0.0, width - step * double(n - 1)) / total : 0;
    a.x.resize(n);
    for (std::size_t i = 0; i < n; ++i)
        a.x[i] = left + units[i] * scale + step * double(i);
    if (total <= 0 && n > 1) // all at one millisecond: spread evenly
        for (std::size_t i = 0; i < n; ++i)
            a.x[i] = left + width * double(i) / double(n - 1);
    for (std::size_t i = 1; i < n; ++i)
        if (gaps[i] > cap)
            a.breaks.emplace_back((a.x[i - 1] + a.x[i]) / 2, gaps[i] - cap);
    return a;
}

QString TimelineView::markLabel(idem::TraceKind kind, idem::Strategy strategy, int executionsSoFar)
{
    switch (kind) {
    case K::Read: return tr("reads: nothing");
    case K::Acquired:
        return strategy == idem::Strategy::SetNx   ? tr("SET NX: mine")
               : strategy == idem::Strategy::Watch ? tr("EXEC: mine")
                                                   : tr("acquires");
    case K::TakenOver: return tr("takes over");
    case K::InProgress: return tr("busy: gives back");
    case K::Replayed: return strategy == idem::Strategy::SetNx ? tr("taken: skips") : tr("done: replays");
    case K::Aborted: return tr("EXEC refused");
    case K::Crashed: return tr("crashes");
    case K::Paused: return tr("stalls");
    case K::Executed: return executionsSoFar > 1 ? tr("runs it AGAIN") : tr("runs it");
    case K::Fenced: return tr("fenced off");
    case K::LeaseLost: return tr("lease lost");
    case K::Completed: return strategy == idem::Strategy::Lua ? tr("completes") : tr("marks done");
    }
    return {};
}

void TimelineView::paintEvent(QPaintEvent*)
{
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    p.fillRect(rect(), palette().base());
    const auto& trace = m_result.trace;
    const QFontMetrics fm = fontMetrics();
    const QColor text = palette().color(QPalette::Text);
    if (trace.empty() || m_workers <= 0) {
        p.setPen(palette().color(QPalette::PlaceholderText));
        p.drawText(rect().adjusted(8, 8, -8, -8), Qt::AlignCenter | Qt::TextWordWrap,
                   tr("Press Fire to race duplicate deliveries."));
        return;
    }
    const int shown = std::min<int>(m_revealed, static_cast<int>(trace.size()));
    const bool labels = m_labels || m_projector;
    const double markR = m_projector ? 8 : labels ? 6 : 3;
    const double ringR = markR * 1.4 + 7; // the largest ring drawn around a mark
    const int lineH = fm.height();

    // lane names, then the legend flowed over as many lines as the width needs
    const auto laneName = [&](int w) {
        return w < m_laneNames.size() ? m_laneNames[w] : tr("worker %1").arg(w);
    };
    int left = 0;
    for (int w = 0; w < m_workers; ++w)
        left = std::max(left, fm.horizontalAdvance(laneName(w)));
    left += 12;
    QFont bold = font();
    bold.setBold(true);
    // room for a label centred on the last mark, in bold (the red one is)
    const int right = 14 + (labels ? QFontMetrics(bold).horizontalAdvance(markLabel(K::Executed, m_result.strategy, 2)) / 2 + 4
                                   : 0);
    QVector<QPair<QPointF, std::pair<QColor, QString>>> legend;
    int legendLines = m_legend ? 1 : 0;
    if (m_legend) {
        double lx = left;
        for (const auto& [c, t] : kLegend) {
            const QString label = tr(t);
            const double w = fm.horizontalAdvance(label) + 24;
            if (lx > left && lx + w > width() - 8) {
                lx = left;
                ++legendLines;
            }
            legend.push_back({QPointF(lx, (legendLines - 1) * (lineH + 2)), {c, label}});
            lx += w;
        }
    }
    const int top = lineH + 6; // the axis' total, and the breaks' labels
    const int bottom = (lineH + 2) * (legendLines + 1) + (m_legend ? 8 : 2);
    for (auto& item : legend)
        item.first.setY(height() - (lineH + 2) * legendLines - 4 + lineH / 2.0 + item.first.y());
    // every lane fits, however many: narrower lanes get a smaller font for their names
    const double laneH = std::max(4.0, double(height() - top - bottom) / m_workers);
    const auto y = [&](int worker) { return top + laneH * worker + laneH / 2; };
    QFont laneFont = font();
    if (laneH < lineH + 2)
        laneFont.setPixelSize(std::max(6, int(laneH) - 2));
    const Axis axis = layoutAxis(trace, left + markR + 2, width() - right, markR * 2 + (labels ? 10 : 3));

    // lanes and the time axis: its start, its total, and the waits cut out of it
    for (int w = 0; w < m_workers; ++w) {
        p.setPen(text);
        p.setFont(laneFont);
        p.drawText(QRectF(0, top + laneH * w, left - 8, laneH), Qt::AlignRight | Qt::AlignVCenter, laneName(w));
        p.setFont(font());
        p.setPen(palette().color(QPalette::Mid));
        p.drawLine(QPointF(left, y(w)), QPointF(width() - right, y(w)));
    }
    const double axisY = top + laneH * m_workers + 4;
    p.setPen(palette().color(QPalette::Mid));
    p.drawLine(QPointF(left, axisY), QPointF(width() - right, axisY));
    p.setPen(text);
    p.drawText(QRectF(left, axisY + 2, 200, lineH), Qt::AlignLeft | Qt::AlignTop, tr("0 ms"));
    const qint64 total = trace.back().serverMs - trace.front().serverMs;
    p.drawText(QRectF(left, 0, width() - left - right, lineH + 2), Qt::AlignRight | Qt::AlignTop,
               tr("%1 ms in all").arg(total));
    double labelsEnd = left + fm.horizontalAdvance(tr("0 ms")) + 6; // break labels never overlap
    for (const auto& [bx, skipped] : axis.breaks) {
        QPen dashed(palette().color(QPalette::Mid), 1, Qt::DashLine);
        p.setPen(dashed);
        p.drawLine(QPointF(bx, top), QPointF(bx, axisY));
        p.setPen(QPen(text, 1.5));
        for (const double dx : {-3.0, 3.0}) // the break: two slanted strokes across the axis
            p.drawLine(QPointF(bx + dx - 3, axisY + 5), QPointF(bx + dx + 3, axisY - 5));
        const QString cut = tr("+%1 ms").arg(skipped);
        const double w = fm.horizontalAdvance(cut) + 4;
        if (bx - w / 2 < labelsEnd || bx + w / 2 > width())
            continue;
        labelsEnd = bx + w / 2 + 4;
        p.setPen(palette().color(QPalette::PlaceholderText));
        p.drawText(QRectF(bx - w / 2, axisY + 2, w, lineH), Qt::AlignCenter, cut);
    }

    // legend
    for (const auto& [pos, item] : legend) {
        p.setPen(Qt::NoPen);
        p.setBrush(item.first);
        p.drawEllipse(pos, 5, 5);
        p.setPen(text);
        p.drawText(QRectF(pos.x() + 9, pos.y() - lineH / 2.0, fm.horizontalAdvance(item.second) + 4, lineH),
                   Qt::AlignVCenter, item.second);
    }

    // executions so far, per event: a second one is red from the moment it happens
    QMap<QString, int> executions;
    QMap<QPair<int, QString>, double> open, paused;
    QMap<QString, QPointF> lastOfEvent;
    QVector<QRectF> labelRects;
    for (int i = 0; i < shown; ++i) {
        const auto& e = trace[static_cast<std::size_t>(i)];
        const QString id = QString::fromStdString(e.eventId);
        const QPointF at(axis.x[static_cast<std::size_t>(i)], y(e.worker));
        const int runs = e.kind == K::Executed ? ++executions[id] : executions.value(id);
        const bool twice = e.kind == K::Executed && runs > 1;
        if (auto it = lastOfEvent.find(id); it != lastOfEvent.end() && it->y() != at.y()) {
            p.setPen(QPen(palette().color(QPalette::Mid), 1, Qt::DotLine));
            p.drawLine(*it, at);
        }
        lastOfEvent[id] = at;
        const auto key = qMakePair(e.worker, id);
        if (e.kind == K::Read || e.kind == K::Acquired || e.kind == K::TakenOver) {
            if (!open.contains(key))
                open[key] = at.x();
        }
        const double h = std::min(laneH * 0.55, m_projector ? 18.0 : 12.0);
        if (paused.contains(key) && e.kind != K::Paused) { // the stall: hatched, up to what came next
            const double x0 = paused.take(key);
            p.fillRect(QRectF(x0, at.y() - h / 2, std::max(2.0, at.x() - x0), h), QBrush(kPaused, Qt::BDiagPattern));
        }
        if (e.kind == K::Paused)
            paused[key] = at.x();
        if (endsSpan(e.kind) && open.contains(key)) {
            const double x0 = open.take(key);
            QColor span = e.kind == K::Completed ? kRead : QColor(149, 165, 166);
            if (executions.value(id) > 1)
                span = kTwice;
            span.setAlpha(90);
            p.fillRect(QRectF(x0, at.y() - h / 2, std::max(2.0, at.x() - x0), h), span);
        }
        const QColor c = colourOf(e.kind, twice);
        const double r = e.kind == K::Executed ? markR * 1.4 : markR;
        if (twice) { // every double execution ringed in red
            p.setPen(QPen(kTwice, m_projector ? 3 : 2));
            p.setBrush(Qt::NoBrush);
            p.drawEllipse(at, r + 4, r + 4);
        }
        if (i == shown - 1 && shown < eventCount()) { // teaching: the step just taken
            p.setPen(QPen(palette().color(QPalette::Highlight), 2));
            p.setBrush(Qt::NoBrush);
            p.drawEllipse(at, r + 7, r + 7);
        }
        p.setPen(QPen(palette().color(QPalette::Base), 1));
        p.setBrush(c);
        p.drawEllipse(at, r, r);
        if (labels) {
            const QString label = markLabel(e.kind, m_result.strategy, runs);
            const double w = QFontMetrics(twice ? bold : font()).horizontalAdvance(label) + 8;
            // above the mark and its rings, or below when that spot is taken
            QRectF box(at.x() - w / 2, at.y() - ringR - lineH, w, lineH);
            for (const QRectF& taken : std::as_const(labelRects))
                if (taken.intersects(box)) {
                    box.moveTop(at.y() + ringR);
                    break;
                }
            labelRects.push_back(box);
            p.setPen(twice ? theme::alertText(palette()) : text);
            p.setFont(twice ? bold : font());
            p.drawText(box, Qt::AlignCenter, label);
            p.setFont(font());
        }
    }
}
