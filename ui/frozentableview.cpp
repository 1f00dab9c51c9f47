#include "frozentableview.h"

#include <QEvent>
#include <QHeaderView>
#include <QScrollBar>

FrozenTableView::FrozenTableView(QWidget* parent) : QTableView(parent), m_frozen(new QTableView(this))
{
    m_frozen->setObjectName(QStringLiteral("frozenColumn"));
    m_frozen->setFocusPolicy(Qt::NoFocus);
    m_frozen->verticalHeader()->hide();
    m_frozen->horizontalHeader()->setSectionResizeMode(QHeaderView::Fixed);
    m_frozen->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    m_frozen->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    m_frozen->setVerticalScrollMode(ScrollPerPixel);
    m_frozen->setFrameShape(QFrame::NoFrame);
    m_frozen->setWordWrap(false);
    // the frozen column is the id: cut in the middle, so that ids with one long prefix (a
    // gateway's credential digest, a namespace) still show where they differ, at their end
    m_frozen->setTextElideMode(Qt::ElideMiddle);
    // a line on its right edge says where the frozen column ends
    m_frozen->setStyleSheet(QStringLiteral("QTableView#frozenColumn { border-right: 1px solid palette(mid); }"));
    viewport()->stackUnder(m_frozen);
    setHorizontalScrollMode(ScrollPerPixel);
    setVerticalScrollMode(ScrollPerPixel);

    connect(horizontalHeader(), &QHeaderView::sectionResized, this, [this](int section, int, int size) {
        if (section == 0) {
            m_frozen->setColumnWidth(0, size);
            updateFrozenGeometry();
        }
    });
    connect(m_frozen->verticalScrollBar(), &QAbstractSlider::valueChanged, verticalScrollBar(), &QAbstractSlider::setValue);
    connect(verticalScrollBar(), &QAbstractSlider::valueChanged, m_frozen->verticalScrollBar(), &QAbstractSlider::setValue);
    // the frozen header sorts like the main one: ascending, descending, then (clearable) unsorted
    connect(m_frozen->horizontalHeader(), &QHeaderView::sectionClicked, this, [this](int section) {
        QHeaderView* h = horizontalHeader();
        if (!isSortingEnabled())
            return;
        if (h->sortIndicatorSection() != section)
            h->setSortIndicator(section, Qt::AscendingOrder);
        else if (h->sortIndicatorOrder() == Qt::AscendingOrder)
            h->setSortIndicator(section, Qt::DescendingOrder);
        else if (h->isSortIndicatorClearable())
            h->setSortIndicator(-1, Qt::AscendingOrder);
        else
            h->setSortIndicator(section, Qt::AscendingOrder);
    });
    connect(horizontalHeader(), &QHeaderView::sortIndicatorChanged, this, [this](int section, Qt::SortOrder order) {
        m_frozen->horizontalHeader()->setSortIndicatorShown(section == 0);
        m_frozen->horizontalHeader()->setSortIndicator(section == 0 ? 0 : -1, order);
    });
}

void FrozenTableView::setModel(QAbstractItemModel* model)
{
    QTableView::setModel(model);
    m_frozen->setModel(model);
    m_frozen->setSelectionModel(selectionModel());
    syncFrozen();
    updateFrozenGeometry();
}

void FrozenTableView::syncFrozen()
{
    if (!model())
        return;
    for (int c = 1; c < model()->columnCount(); ++c)
        if (!m_frozen->isColumnHidden(c))
            m_frozen->setColumnHidden(c, true);
    QHeaderView* rows = m_frozen->verticalHeader();
    if (rows->sectionResizeMode(0) != QHeaderView::Fixed || rows->count() == 0)
        rows->setSectionResizeMode(QHeaderView::Fixed);
    if (rows->defaultSectionSize() != verticalHeader()->defaultSectionSize())
        rows->setDefaultSectionSize(verticalHeader()->defaultSectionSize());
    if (m_frozen->selectionBehavior() != selectionBehavior())
        m_frozen->setSelectionBehavior(selectionBehavior());
    if (m_frozen->selectionMode() != selectionMode())
        m_frozen->setSelectionMode(selectionMode());
    if (m_frozen->alternatingRowColors() != alternatingRowColors())
        m_frozen->setAlternatingRowColors(alternatingRowColors());
    if (m_frozen->font() != font())
        m_frozen->setFont(font());
}

void FrozenTableView::changeEvent(QEvent* event)
{
    QTableView::changeEvent(event);
    if (event->type() == QEvent::FontChange || event->type() == QEvent::StyleChange ||
        event->type() == QEvent::PaletteChange)
        syncFrozen();
}

void FrozenTableView::updateGeometries()
{
    QTableView::updateGeometries();
    syncFrozen(); // settings made on the main view after setModel() (selection, colours) follow
    updateFrozenGeometry();
}

void FrozenTableView::repaintRows()
{
    viewport()->update();
    m_frozen->viewport()->update();
}

void FrozenTableView::resizeEvent(QResizeEvent* event)
{
    QTableView::resizeEvent(event);
    updateFrozenGeometry();
}

void FrozenTableView::updateFrozenGeometry()
{
    if (m_frozen->columnWidth(0) != columnWidth(0))
        m_frozen->setColumnWidth(0, columnWidth(0));
    if (m_frozen->verticalHeader()->defaultSectionSize() != verticalHeader()->defaultSectionSize())
        m_frozen->verticalHeader()->setDefaultSectionSize(verticalHeader()->defaultSectionSize());
    if (m_frozen->horizontalHeader()->height() != horizontalHeader()->height())
        m_frozen->horizontalHeader()->setFixedHeight(horizontalHeader()->height());
    m_frozen->setGeometry(verticalHeader()->width() + frameWidth(), frameWidth(), columnWidth(0),
                          viewport()->height() + horizontalHeader()->height());
}

QModelIndex FrozenTableView::moveCursor(CursorAction cursorAction, Qt::KeyboardModifiers modifiers)
{
    const QModelIndex current = QTableView::moveCursor(cursorAction, modifiers);
    if (cursorAction == MoveLeft && current.column() > 0 && visualRect(current).topLeft().x() < m_frozen->columnWidth(0))
        horizontalScrollBar()->setValue(horizontalScrollBar()->value() + visualRect(current).topLeft().x() -
                                        m_frozen->columnWidth(0));
    return current;
}

void FrozenTableView::scrollTo(const QModelIndex& index, ScrollHint hint)
{
    if (index.column() > 0)
        QTableView::scrollTo(index, hint);
    else if (const int shown = columnAt(m_frozen->columnWidth(0) + 1); index.isValid() && shown > 0)
        QTableView::scrollTo(index.siblingAtColumn(shown), hint); // vertically only: column 0 is always in view
}
