#include "timelineview.h"

#include <QMap>
#include <QPainter>
#include <QPainterPath>
#include <QTimer>

using namespace Qt::StringLiterals;

TimelineView::TimelineView(QWidget* parent) : QWidget(parent), m_animation(new QTimer(this))
{
    setMinimumHeight(160);
    m_animation->setInterval(30);
    connect(m_animation, &QTimer::timeout, this, [this] {
        m_revealed = std::min(eventCount(), m_revealed + std::max(1, eventCount() / 60));
        if (m_revealed >= eventCount())
            m_animation->stop();
        update();
    });
}

void TimelineView::setResult(const idem::RaceResult& result, int workers)
{
    m_result = result;
    m_workers = workers;
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

void TimelineView::paintEvent(QPaintEvent*)
{
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    p.fillRect(rect(), palette().base());
    const auto& trace = m_result.trace;
    if (trace.empty() || m_workers <= 0) {
        p.setPen(palette().color(QPalette::PlaceholderText));
        p.drawText(rect(), Qt::AlignCenter, tr("Press Fire to race duplicate deliveries."));
        return;
    }
    const int left = 70, right = 12, top = 8;
    static const std::pair<QColor, const char*> kLegend[] = {
        {QColor(52, 152, 219), QT_TR_NOOP("acquired")},   {QColor(142, 68, 173), QT_TR_NOOP("taken over")},
        {QColor(39, 174, 96), QT_TR_NOOP("ran / replayed / done")}, {QColor(231, 76, 60), QT_TR_NOOP("ran twice")},
        {QColor(241, 196, 15), QT_TR_NOOP("in progress")}, {QColor(230, 126, 34), QT_TR_NOOP("paused")},
        {QColor(211, 84, 0), QT_TR_NOOP("fenced / lease lost")}, {QColor(127, 140, 141), QT_TR_NOOP("crashed")}};
    const double lineH = 16, legendLeft = left + 60, legendRight = width() - right;
    QVector<QPair<QPointF, std::pair<QColor, QString>>> legend;
    int lines = 1;
    {
        double lx = legendLeft;
        for (const auto& [c, text] : kLegend) {
            const QString label = tr(text);
            const double w = fontMetrics().horizontalAdvance(label) + 24;
            if (lx > legendLeft && lx + w - 12 > legendRight) {
                lx = legendLeft;
                ++lines;
            }
            legend.push_back({QPointF(lx, (lines - 1) * lineH), {c, label}});
            lx += w;
        }
    }
    const int bottom = 24 + int(lineH) * (lines - 1);
    for (auto& item : legend) // rows counted from the bottom edge's first line
        item.first.setY(height() - bottom + 12 + 2 + item.first.y());
    const double laneH = std::max(14.0, double(height() - top - bottom) / m_workers);
    const qint64 t0 = trace.front().serverMs, t1 = std::max<qint64>(trace.back().serverMs, t0 + 1);
    auto x = [&](qint64 t) { return left + double(t - t0) * (width() - left - right) / double(t1 - t0); };
    auto y = [&](int worker) { return top + laneH * worker + laneH / 2; };

    // lanes
    for (int w = 0; w < m_workers; ++w) {
        p.setPen(palette().color(QPalette::Text));
        p.drawText(QRectF(0, top + laneH * w, left - 6, laneH), Qt::AlignRight | Qt::AlignVCenter,
                   tr("worker %1").arg(w));
        p.setPen(palette().color(QPalette::Mid));
        p.drawLine(QPointF(left, y(w)), QPointF(width() - right, y(w)));
    }
    p.setPen(palette().color(QPalette::Text));
    p.drawText(QRectF(left, height() - bottom + 4, 50, bottom - 4), Qt::AlignLeft, tr("0 ms"));
    p.drawText(QRectF(left, 0, width() - left - right, top + 10), Qt::AlignRight | Qt::AlignTop,
               tr("%1 ms").arg(t1 - t0));

    // legend, flowed onto as many lines as the width needs
    for (const auto& [pos, item] : legend) {
        p.setPen(Qt::NoPen);
        p.setBrush(item.first);
        p.drawEllipse(pos, 4, 4);
        p.setPen(palette().color(QPalette::Text));
        p.drawText(QRectF(pos.x() + 7, pos.y() - 8, fontMetrics().horizontalAdvance(item.second) + 4, 16),
                   Qt::AlignVCenter, item.second);
    }

    QMap<QString, int> executions;
    for (const auto& e : trace)
        if (e.kind == idem::TraceKind::Executed)
            ++executions[QString::fromStdString(e.eventId)];

    const int shown = std::min<int>(m_revealed, static_cast<int>(trace.size()));
    // spans: from acquiring to the outcome, per worker and event
    QMap<QPair<int, QString>, qint64> open;
    QMap<QString, QPointF> lastOfEvent;
    for (int i = 0; i < shown; ++i) {
        const auto& e = trace[static_cast<std::size_t>(i)];
        const QString id = QString::fromStdString(e.eventId);
        const QPointF at(x(e.serverMs), y(e.worker));
        // link the deliveries of one event
        if (auto it = lastOfEvent.find(id); it != lastOfEvent.end() && it->y() != at.y()) {
            p.setPen(QPen(palette().color(QPalette::Mid), 1, Qt::DotLine));
            p.drawLine(*it, at);
        }
        lastOfEvent[id] = at;
        const auto key = qMakePair(e.worker, id);
        QColor c;
        switch (e.kind) {
        case idem::TraceKind::Read:
        case idem::TraceKind::Acquired:
        case idem::TraceKind::TakenOver:
            open[key] = e.serverMs;
            c = e.kind == idem::TraceKind::TakenOver ? QColor(142, 68, 173) : QColor(52, 152, 219);
            break;
        case idem::TraceKind::Replayed: c = QColor(39, 174, 96); break;
        case idem::TraceKind::Aborted: c = QColor(241, 196, 15); break;
        case idem::TraceKind::InProgress: c = QColor(241, 196, 15); break;
        case idem::TraceKind::Crashed: c = QColor(127, 140, 141); break;
        case idem::TraceKind::Paused: c = QColor(230, 126, 34); break;
        case idem::TraceKind::Fenced: c = QColor(211, 84, 0); break;
        case idem::TraceKind::LeaseLost: c = QColor(211, 84, 0); break;
        case idem::TraceKind::Executed: c = executions.value(id) > 1 ? QColor(231, 76, 60) : QColor(39, 174, 96); break;
        case idem::TraceKind::Completed: c = QColor(39, 174, 96); break;
        }
        const bool ends = e.kind == idem::TraceKind::Completed || e.kind == idem::TraceKind::Crashed ||
                          e.kind == idem::TraceKind::LeaseLost || e.kind == idem::TraceKind::Fenced;
        if (ends && open.contains(key)) {
            const double x0 = x(open.take(key));
            QColor span = e.kind == idem::TraceKind::Completed ? QColor(52, 152, 219) : QColor(149, 165, 166);
            if (executions.value(id) > 1)
                span = QColor(231, 76, 60);
            span.setAlpha(110);
            const double h = std::min(laneH * 0.6, 12.0);
            p.fillRect(QRectF(x0, at.y() - h / 2, std::max(2.0, at.x() - x0), h), span);
        }
        p.setPen(Qt::NoPen);
        p.setBrush(c);
        const double r = e.kind == idem::TraceKind::Executed ? std::min(laneH * 0.28, 5.0) : std::min(laneH * 0.18, 3.0);
        if (e.kind == idem::TraceKind::Executed && executions.value(id) > 1) {
            p.setPen(QPen(QColor(231, 76, 60), 2));
            p.setBrush(Qt::NoBrush);
            p.drawEllipse(at, r + 3, r + 3); // every double execution marked in red
            p.setPen(Qt::NoPen);
            p.setBrush(c);
        }
        p.drawEllipse(at, r, r);
    }
}
