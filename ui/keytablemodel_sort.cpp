// KeyTableModel's order: sorting by a column, keeping it as rows change, and showing a new order
// with the selection following its rows.
#include "keytablemodel.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>

void KeyTableModel::sort(int column, Qt::SortOrder order)
{
    m_sortColumn = column;
    m_sortOrder = order;
    m_sortedRows = 0; // everything anew
    sortAgain();
}

bool KeyTableModel::needsSort() const
{
    return m_sortColumn >= 0 && (m_sortedRows < rowCount() || m_movedRows > 0);
}

// a before b in ascending order of the sort column (the comparisons of a merge: few, any order)
bool KeyTableModel::lessSlots(int a, int b) const
{
    const KeyRow& x = m_rows.at(a);
    const KeyRow& y = m_rows.at(b);
    switch (m_sortColumn) {
    case Id: return x.idBytes(m_namespaceLength) < y.idBytes(m_namespaceLength); // as shown
    case Owner: return x.ownerBytes() < y.ownerBytes();
    case Note: return x.note < y.note;
    default: break;
    }
    return numericKey(x, m_sortColumn) < numericKey(y, m_sortColumn);
}

// the sort key of the numeric columns: deadlines and start times, not remaining times, so the
// order does not drift as time passes
qint64 KeyTableModel::numericKey(const KeyRow& r, int column)
{
    using L = std::numeric_limits<qint64>;
    switch (column) {
    case State: return static_cast<qint64>(r.state);
    case Age: return r.createdMs > 0 ? -r.createdMs : L::max(); // unknown last
    case Ttl: return r.noTtl() ? L::max() : r.noExpiryKept() ? L::max() - 1 : r.expiresAtMs;
    case Lease: return r.state == idem::RecordState::Started ? r.leaseUntilMs : 0;
    case Attempt: return r.attempt;
    case Fence: return r.fence;
    case Format: return static_cast<qint64>(r.format);
    case Node: return r.node; // in the order the nodes were first seen
    default: return 0;
    }
}

// Sorts slots in the sort order (stable). Many slots: keys are taken out first and compared in a
// tight loop (a 16-byte prefix next to the slot for ids, cache-friendly).
void KeyTableModel::sortSlots(std::vector<int>& list) const
{
    if (m_sortColumn == Id || m_sortColumn == Owner) {
        struct Entry {
            std::array<char, 16> prefix;
            int slot;
        };
        std::vector<Entry> entries(list.size());
        for (std::size_t i = 0; i < entries.size(); ++i) {
            const KeyRow& r = m_rows.at(list[i]);
            const QByteArrayView v = m_sortColumn == Owner ? r.ownerBytes() : r.idBytes(m_namespaceLength);
            entries[i].prefix.fill(0);
            std::memcpy(entries[i].prefix.data(), v.data(), static_cast<std::size_t>(std::min<qsizetype>(16, v.size())));
            entries[i].slot = list[i];
        }
        std::stable_sort(entries.begin(), entries.end(), [&](const Entry& a, const Entry& b) {
            const int c = std::memcmp(a.prefix.data(), b.prefix.data(), 16);
            if (c != 0)
                return c < 0;
            return lessSlots(a.slot, b.slot);
        });
        for (std::size_t i = 0; i < entries.size(); ++i)
            list[i] = entries[i].slot;
    } else if (m_sortColumn == Note) {
        std::stable_sort(list.begin(), list.end(), [this](int a, int b) { return lessSlots(a, b); });
    } else {
        std::vector<std::pair<qint64, int>> keyed(list.size());
        for (std::size_t i = 0; i < list.size(); ++i)
            keyed[i] = {numericKey(m_rows.at(list[i]), m_sortColumn), list[i]};
        std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
        for (std::size_t i = 0; i < list.size(); ++i)
            list[i] = keyed[i].second;
    }
    if (m_sortOrder == Qt::DescendingOrder)
        std::reverse(list.begin(), list.end());
}

void KeyTableModel::sortAgain()
{
    if (m_sortColumn < 0 || m_sortColumn >= ColumnCount)
        return;
    const std::size_t n = m_order.size();
    // settled: rows the last sort placed that have not changed since, still in sorted order;
    // moving: rows that arrived or changed after it
    std::vector<int> settled, moving;
    settled.reserve(std::min(n, static_cast<std::size_t>(m_sortedRows)));
    for (std::size_t r = 0; r < n; ++r) {
        const int slot = m_order[r];
        if (static_cast<qsizetype>(r) < m_sortedRows && !m_moved[static_cast<std::size_t>(slot)])
            settled.push_back(slot);
        else
            moving.push_back(slot);
    }
    for (const int slot : moving)
        m_moved[static_cast<std::size_t>(slot)] = 0;
    m_movedRows = 0;
    m_sortedRows = static_cast<qsizetype>(n);
    if (moving.empty())
        return;

    std::vector<int> order;
    if (moving.size() * 8 > n) { // many: sort them all
        order = std::move(settled);
        order.insert(order.end(), moving.begin(), moving.end());
        sortSlots(order);
    } else { // few: sort them, then find each one's place in the sorted rest
        sortSlots(moving);
        const bool descending = m_sortOrder == Qt::DescendingOrder;
        const auto before = [&](int a, int b) { return descending ? lessSlots(b, a) : lessSlots(a, b); };
        order.reserve(n);
        auto from = settled.cbegin();
        for (const int slot : moving) {
            const auto at = std::upper_bound(from, settled.cend(), slot, before); // after its equals
            order.insert(order.end(), from, at);
            order.push_back(slot);
            from = at;
        }
        order.insert(order.end(), from, settled.cend());
    }
    if (order == m_order)
        return;

    applyOrder(std::move(order), QAbstractItemModel::VerticalSortHint);
}

// Shows the rows in a new order (slots): one layout change, persistent indexes (selections)
// following their rows.
void KeyTableModel::applyOrder(std::vector<int> order, QAbstractItemModel::LayoutChangeHint hint)
{
    Q_EMIT layoutAboutToBeChanged({}, hint);
    const QModelIndexList before = persistentIndexList();
    std::vector<int> slotsBefore;
    slotsBefore.reserve(static_cast<std::size_t>(before.size()));
    for (const QModelIndex& i : before)
        slotsBefore.push_back(m_order[static_cast<std::size_t>(i.row())]);
    m_order = std::move(order);
    renumber(0);
    QModelIndexList after;
    after.reserve(before.size());
    for (qsizetype k = 0; k < before.size(); ++k)
        after.push_back(index(m_pos[static_cast<std::size_t>(slotsBefore[static_cast<std::size_t>(k)])],
                              before[k].column()));
    changePersistentIndexList(before, after);
    Q_EMIT layoutChanged({}, hint);
}
