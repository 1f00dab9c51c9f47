#include "replaylanes.h"

#include "timelineview.h"

#include <QHeaderView>
#include <QLabel>
#include <QPainter>
#include <QTabWidget>
#include <QTableWidget>
#include <QVBoxLayout>

using namespace Qt::StringLiterals;

namespace {
constexpr std::size_t kLaneMarks = 240; // the lanes show the latest marks: more would be a smear
constexpr int kMaxKeyRows = 20'000;     // beyond, ids are counted, not listed
enum Column { Id, Runs, State, Consumer, Fence };

QString stateOf(idem::TraceKind k)
{
    using K = idem::TraceKind;
    switch (k) {
    case K::Acquired: return QObject::tr("STARTED");
    case K::TakenOver: return QObject::tr("taken over");
    case K::Executed: return QObject::tr("ran");
    case K::Completed: return QObject::tr("COMPLETED");
    case K::Replayed: return QObject::tr("replayed (done)");
    case K::InProgress: return QObject::tr("busy: redelivered later");
    case K::Crashed: return QObject::tr("consumer died holding it");
    case K::Fenced: return QObject::tr("fenced");
    case K::LeaseLost: return QObject::tr("lease lost");
    default: break;
    }
    return {};
}
} // namespace

ReplayLanes::ReplayLanes(QWidget* parent)
    : QWidget(parent), m_tabs(new QTabWidget(this)), m_timeline(new TimelineView(this)), m_legend(new QLabel(this)),
      m_keysNote(new QLabel(this)), m_keys(new QTableWidget(0, 5, this))
{
    m_timeline->setObjectName(u"replayLanes"_s);
    m_legend->setText(TimelineView::legendHtml());
    m_legend->setWordWrap(true);
    m_timeline->setLegendShown(false);
    auto* lanesPage = new QWidget(this);
    auto* lanesLayout = new QVBoxLayout(lanesPage);
    lanesLayout->setContentsMargins(0, 0, 0, 0);
    lanesLayout->addWidget(m_timeline, 1);
    lanesLayout->addWidget(m_legend);

    m_keys->setObjectName(u"replayKeys"_s);
    m_keys->setHorizontalHeaderLabels({tr("event id"), tr("ran"), tr("last seen"), tr("by"), tr("fence")});
    m_keys->verticalHeader()->hide();
    m_keys->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_keys->horizontalHeader()->setStretchLastSection(true);
    m_keys->setWordWrap(false);
    m_keysNote->setWordWrap(true);
    m_keysNote->setText(tr("The ids the replay writes, as its consumers report them."));
    auto* keysPage = new QWidget(this);
    auto* keysLayout = new QVBoxLayout(keysPage);
    keysLayout->setContentsMargins(0, 0, 0, 0);
    keysLayout->addWidget(m_keysNote);
    keysLayout->addWidget(m_keys, 1);

    m_tabs->addTab(lanesPage, tr("Swimlanes"));
    m_tabs->addTab(keysPage, tr("Keys it writes"));
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_tabs);
}

void ReplayLanes::start(int consumers)
{
    m_consumers = consumers;
    m_window = {};
    m_window.strategy = idem::Strategy::Lua;
    m_rows.clear();
    m_marks = m_unlisted = 0;
    m_keys->setRowCount(0);
    m_keysNote->setText(tr("The ids the replay writes, as its consumers report them."));
    QStringList names;
    for (int i = 0; i < consumers; ++i)
        names << tr("consumer %1").arg(i);
    m_timeline->setResult(m_window, consumers, names);
    m_timeline->setRevealed(0);
}

void ReplayLanes::setNamespace(const QString& ns)
{
    QString note = tr("Keys under %1: (on the server the replay ran on), as its consumers reported them.").arg(ns);
    if (m_unlisted > 0)
        note += u' ' + tr("%n more id(s) not listed.", nullptr, m_unlisted);
    m_keysNote->setText(note);
}

void ReplayLanes::setCell(int row, int column, const QString& text)
{
    if (auto* item = m_keys->item(row, column)) {
        item->setText(text);
        return;
    }
    auto* item = new QTableWidgetItem(text);
    if (column == Runs || column == Fence)
        item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    m_keys->setItem(row, column, item);
}

void ReplayLanes::addMarks(const std::vector<idem::TraceEvent>& marks)
{
    if (marks.empty())
        return;
    m_marks += static_cast<int>(marks.size());
    auto& trace = m_window.trace;
    trace.insert(trace.end(), marks.begin(), marks.end());
    if (trace.size() > kLaneMarks)
        trace.erase(trace.begin(), trace.end() - static_cast<std::ptrdiff_t>(kLaneMarks));
    QStringList names;
    for (int i = 0; i < m_consumers; ++i)
        names << tr("consumer %1").arg(i);
    m_timeline->setResult(m_window, m_consumers, names);
    m_timeline->setRevealed(m_timeline->eventCount());

    m_keys->setUpdatesEnabled(false);
    for (const auto& m : marks) {
        const QString id = QString::fromStdString(m.eventId);
        auto it = m_rows.find(id);
        if (it == m_rows.end()) {
            if (m_rows.size() >= kMaxKeyRows) {
                ++m_unlisted;
                continue;
            }
            it = m_rows.insert(id, Row{m_keys->rowCount(), 0});
            m_keys->insertRow(it->row);
            setCell(it->row, Id, id);
        }
        if (m.kind == idem::TraceKind::Executed)
            ++it->runs;
        setCell(it->row, Runs, QString::number(it->runs));
        if (it->runs > 1 && m_keys->item(it->row, Runs))
            m_keys->item(it->row, Runs)->setForeground(QColor(231, 76, 60));
        const QString state = stateOf(m.kind);
        if (!state.isEmpty())
            setCell(it->row, State, state);
        setCell(it->row, Consumer, tr("consumer %1").arg(m.worker));
        if (m.fence > 0)
            setCell(it->row, Fence, QString::number(m.fence));
    }
    m_keys->setUpdatesEnabled(true);
}

QPixmap ReplayLanes::picture() const
{
    return m_tabs->currentWidget()->grab();
}
