#include "keytablemodel.h"

#include "theme.h"

#include "idem/duration.h"

#include <QApplication>
#include <QColor>
#include <QDateTime>
#include <QIcon>
#include <QPalette>
#include <QStyle>
#include <algorithm>
#include <numeric>

using namespace Qt::StringLiterals;

namespace {

QString duration(qint64 ms)
{
    if (ms < 0)
        return u"-"_s + QString::fromStdString(idem::formatDuration(idem::Millis(-ms / 1000 * 1000)));
    return QString::fromStdString(idem::formatDuration(idem::Millis(ms < 1000 ? ms : ms / 1000 * 1000)));
}

QString stateName(const KeyRow& r, qint64 now)
{
    switch (r.stateAt(now)) {
    case idem::RecordState::Started:
        return r.isStale(now) ? u"STALE"_s : r.blocked() ? u"STARTED (no lease)"_s : u"STARTED"_s;
    case idem::RecordState::Completed: return u"COMPLETED"_s;
    case idem::RecordState::Failed: return r.terminal() ? u"FAILED (terminal)"_s : u"FAILED"_s;
    case idem::RecordState::Expired: return u"EXPIRED"_s;
    case idem::RecordState::Malformed: return u"MALFORMED"_s;
    case idem::RecordState::Foreign: return u"FOREIGN"_s;
    case idem::RecordState::Unknown: break;
    }
    return u"UNKNOWN"_s;
}

// the note a row shows: what changes with the clock first, then what the decoder said
QString noteOf(const KeyRow& r, qint64 now)
{
    if (r.isStale(now) && r.leaseUntilMs > 0 && !r.blocked())
        return u"lease expired %1 ago"_s.arg(duration(now - r.leaseUntilMs));
    if (r.isStale(now) && r.blocked() && r.createdMs > 0)
        return u"in progress for %1 with no lease: blocked until its TTL ends"_s.arg(duration(now - r.createdMs));
    if (r.state == idem::RecordState::Completed && r.stateAt(now) == idem::RecordState::Expired)
        return u"past its expiration %1 ago: its library runs the next call"_s.arg(duration(now - r.changesAtMs));
    if (r.flags & KeyRow::ForeignStatus)
        return u"status %1"_s.arg(r.note);
    return r.note;
}

} // namespace

KeyTableModel::KeyTableModel(QObject* parent) : QAbstractTableModel(parent) {}

int KeyTableModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(m_order.size());
}

int KeyTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

qint64 KeyTableModel::serverNowMs() const
{
    if (m_frozenAtMs != 0)
        return m_frozenAtMs;
    return m_pinnedAtMs != 0 ? m_pinnedAtMs : QDateTime::currentMSecsSinceEpoch() + m_clockOffsetMs;
}

void KeyTableModel::freezeAt(qint64 serverMs) { m_frozenAtMs = serverMs > 0 ? serverMs : serverNowMs(); }

void KeyTableModel::thaw() { m_frozenAtMs = 0; }

void KeyTableModel::setServerNow(qint64 serverNowMs)
{
    m_clockOffsetMs = serverNowMs - QDateTime::currentMSecsSinceEpoch();
}

bool KeyTableModel::matches(const KeyRow& r, idem::StateFilter f, qint64 serverNowMs)
{
    // "all" touches no row: after a sort the rows are visited in a random order, and reading a
    // million of them is a million cache misses on every layout change
    if (f == idem::StateFilter::Any)
        return true;
    const idem::RecordState s = r.stateAt(serverNowMs);
    switch (f) {
    case idem::StateFilter::Any: return true;
    case idem::StateFilter::Started: return s == idem::RecordState::Started;
    case idem::StateFilter::Stale: return r.isStale(serverNowMs);
    case idem::StateFilter::Blocked: return s == idem::RecordState::Started && r.blocked();
    case idem::StateFilter::Completed: return s == idem::RecordState::Completed;
    case idem::StateFilter::Failed: return s == idem::RecordState::Failed;
    case idem::StateFilter::Expired: return s == idem::RecordState::Expired;
    case idem::StateFilter::Malformed: return s == idem::RecordState::Malformed;
    case idem::StateFilter::Foreign: return s == idem::RecordState::Foreign;
    case idem::StateFilter::Unknown: return s == idem::RecordState::Unknown;
    case idem::StateFilter::NoTtl: return r.noTtl();
    }
    return false;
}

QVariant KeyTableModel::data(const QModelIndex& index, int role) const
{
    if (!index.isValid() || index.row() >= rowCount())
        return {};
    const KeyRow& r = row(index.row());
    const qint64 now = serverNowMs();
    const bool stale = r.isStale(now);
    switch (role) {
    case Qt::DisplayRole:
        switch (index.column()) {
        case Id: return shownText(idOf(r));
        case State: return stateName(r, now);
        case Age: return r.createdMs > 0 ? duration(now - r.createdMs) : QString();
        case Ttl:
            return r.noTtl()          ? u"∞ no TTL"_s
                   : r.noExpiryKept() ? u"—"_s
                                      : duration(std::max<qint64>(0, r.expiresAtMs - now));
        case Lease:
            if (r.leaseUntilMs <= 0 || r.state != idem::RecordState::Started)
                return QString();
            return r.leaseUntilMs > now ? duration(r.leaseUntilMs - now)
                                        : u"expired %1 ago"_s.arg(duration(now - r.leaseUntilMs));
        case Owner: return r.owner(); // elided by the view; the tooltip and exports hold all of it
        case Attempt: return r.attempt > 0 ? QVariant(r.attempt) : QVariant();
        case Fence: return r.fence > 0 ? QVariant(r.fence) : QVariant();
        case Format: return QString::fromUtf8(idem::nameOf(r.format).data());
        case Note: return noteOf(r, now);
        case Node: return nodeOf(r);
        }
        break;
    case SortRole: // KeyFilterProxy::lessThan compares rows directly; this serves other views
        switch (index.column()) {
        case Age:
        case Ttl:
        case Lease:
        case Attempt:
        case Fence: return numericKey(r, index.column()); // what the model's own sort compares
        case State: return static_cast<int>(r.state) * 2 + (stale ? 1 : 0);
        default: return data(index, Qt::DisplayRole);
        }
    case StateRole: return static_cast<int>(r.stateAt(now));
    case StaleRole: return stale;
    case NoTtlRole: return r.noTtl();
    case KeyRole: return r.keyText();
    case Qt::ToolTipRole:
        // a cell's whole text where the column may cut it, then what the row's state means
        if (index.column() == Id)
            return shownText(r.keyText());
        if (index.column() == Owner && !r.owner().isEmpty())
            return r.owner();
        if (index.column() == Note && !noteOf(r, now).isEmpty() && !stale)
            return noteOf(r, now);
        if (r.lab())
            return u"Written by the race lab (idem-console or idemctl race) under its own namespace; every lab "
                   "key expires by itself within 10 minutes. Bulk actions by state never take it."_s;
        if (stale)
            return u"Stale lock: %1. The worker that held it is gone or paused; force-fail or purge it "
                   "so the id can run again."_s.arg(noteOf(r, now));
        if (r.state == idem::RecordState::Malformed)
            return u"A %1 record idem cannot read: %2. Bulk actions by state never take it."_s.arg(
                QString::fromUtf8(idem::libraryOf(r.format).data()), r.note);
        if (r.state == idem::RecordState::Foreign)
            return u"Not an idempotency record: %1. Bulk actions by state never take it."_s.arg(r.note);
        if (r.state == idem::RecordState::Unknown)
            return u"No known library writes this: %1. Bulk actions by state never take it."_s.arg(noteOf(r, now));
        if (index.column() == Format)
            return QString(QString::fromUtf8(idem::libraryOf(r.format).data()) +
                           (r.flags & KeyRow::Partial ? u" (read from the first and last bytes of a large value)"_s
                                                      : QString()));
        if (index.column() == Ttl && r.noTtl())
            return u"This key has no TTL: it will never expire by itself."_s;
        if (index.column() == Ttl && r.noExpiryKept())
            return u"This table keeps no expiry idem can read: the row stays until the program that writes it "
                   u"deletes it."_s;
        if (index.column() == State)
            return stateName(r, now);
        break;
    case Qt::DecorationRole:
        if (index.column() == State && stale)
            return QApplication::style()->standardIcon(QStyle::SP_MessageBoxWarning);
        if (index.column() == State && r.state == idem::RecordState::Malformed)
            return QApplication::style()->standardIcon(QStyle::SP_MessageBoxCritical);
        if (index.column() == State && (r.state == idem::RecordState::Unknown || r.state == idem::RecordState::Foreign))
            return QApplication::style()->standardIcon(QStyle::SP_MessageBoxQuestion);
        break;
    case Qt::BackgroundRole:
        // translucent tints: the text keeps the palette's colour, readable on light and dark
        if (stale)
            return QColor(230, 126, 34, 70); // orange
        if (r.state == idem::RecordState::Failed)
            return QColor(231, 76, 60, 50); // red
        if (r.state == idem::RecordState::Malformed)
            return QColor(142, 68, 173, 55); // purple, as in the chart
        if (r.stateAt(now) == idem::RecordState::Expired)
            return QColor(127, 140, 141, 45); // grey: present, but its library treats it as absent
        break;
    case Qt::ForegroundRole:
        if (m_frozenAtMs != 0) // not current: every cell says so
            return theme::staleText(QApplication::palette());
        if (index.column() == Ttl && r.noTtl())
            return QColor(231, 76, 60);
        break;
    case Qt::TextAlignmentRole:
        if (index.column() == Age || index.column() == Ttl || index.column() == Lease || index.column() == Attempt ||
            index.column() == Fence)
            return QVariant(Qt::AlignRight | Qt::AlignVCenter);
        break;
    default: break;
    }
    return {};
}

QVariant KeyTableModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    static const QString names[] = {u"ID"_s,    u"State"_s,    u"Age"_s,   u"TTL"_s,    u"Lease left"_s,
                                    u"Owner"_s, u"Attempts"_s, u"Fence"_s, u"Format"_s, u"Note"_s,
                                    u"Node"_s};
    return section >= 0 && section < ColumnCount ? names[section] : QVariant();
}

namespace {
// What the table shows and sorts by; a TTL deadline that moved by less than a second is the same
// deadline read a little later (PTTL is relative), not a change.
bool sameRow(const KeyRow& a, const KeyRow& b)
{
    const bool sameDeadline = a.noTtl() == b.noTtl() && std::abs(a.expiresAtMs - b.expiresAtMs) < 1000;
    // a start derived from the TTL moves as PTTL is read later: within a second it is the same
    return sameDeadline && a.state == b.state && a.format == b.format && a.flags == b.flags &&
           a.leaseUntilMs == b.leaseUntilMs && std::abs(a.createdMs - b.createdMs) < 1000 &&
           std::abs(a.changesAtMs - b.changesAtMs) < 1000 && a.fence == b.fence && a.attempt == b.attempt &&
           a.guard == b.guard && a.valueBytes == b.valueBytes && a.note == b.note && a.node == b.node;
}
} // namespace

void KeyTableModel::upsert(const QVector<KeyRow>& rows, qint64 serverNowMs, quint64 generation)
{
    setServerNow(serverNowMs);
    QVector<KeyRow> fresh;
    QVector<int> changed;
    for (const KeyRow& in : rows) {
        const auto it = m_index.constFind(in.key);
        if (it == m_index.constEnd()) {
            // indexed at once (a negative number: its place in `fresh`), so a key twice in one
            // report (SCAN may return a key more than once) is one row, the later report winning
            m_index.insert(in.key, -1 - static_cast<int>(fresh.size()));
            fresh.push_back(in);
            fresh.back().seenInGeneration = static_cast<quint32>(generation);
            continue;
        }
        if (it.value() < 0) {
            KeyRow& again = fresh[-1 - it.value()];
            again = in;
            again.seenInGeneration = static_cast<quint32>(generation);
            continue;
        }
        const int slot = it.value();
        KeyRow& row = m_rows[slot];
        if (!sameRow(row, in)) {
            const QByteArray key = row.key; // keep sharing the index's bytes
            row = in;
            row.key = key;
            changed.push_back(m_pos[static_cast<std::size_t>(slot)]);
            if (!m_moved[static_cast<std::size_t>(slot)]) { // its sort position may have changed
                m_moved[static_cast<std::size_t>(slot)] = 1;
                ++m_movedRows;
            }
        }
        row.seenInGeneration = static_cast<quint32>(generation);
    }
    // one dataChanged per contiguous run of changed rows: a range spanning the whole table would
    // make a sorting proxy look at every row. A snapshot that changes a quarter of the rows or more
    // (a rewind to another moment) is one range: the proxy looks at them all anyway, once.
    if (m_pinnedAtMs != 0 && changed.size() * 4 >= rowCount() && !changed.isEmpty()) {
        Q_EMIT dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1));
        changed.clear();
    }
    std::sort(changed.begin(), changed.end());
    for (qsizetype i = 0; i < changed.size();) {
        qsizetype j = i;
        while (j + 1 < changed.size() && changed[j + 1] == changed[j] + 1)
            ++j;
        Q_EMIT dataChanged(index(changed[i], 0), index(changed[j], ColumnCount - 1));
        i = j + 1;
    }
    if (!fresh.isEmpty()) {
        const int first = rowCount();
        beginInsertRows({}, first, first + static_cast<int>(fresh.size()) - 1);
        for (KeyRow& r : fresh) {
            const int slot = takeSlot();
            m_rows[slot] = std::move(r);
            m_index.insert(m_rows[slot].key, slot); // replaces the placeholder
            m_pos[static_cast<std::size_t>(slot)] = static_cast<int>(m_order.size());
            m_order.push_back(slot);
        }
        endInsertRows();
    }
}

int KeyTableModel::takeSlot()
{
    if (!m_free.empty()) {
        const int slot = m_free.back();
        m_free.pop_back();
        return slot;
    }
    m_rows.push_back(KeyRow());
    m_pos.push_back(-1);
    m_moved.push_back(0);
    return static_cast<int>(m_rows.size()) - 1;
}

int KeyTableModel::rowOfKey(const QString& key) const
{
    const int slot = m_index.value(key.toUtf8(), -1);
    return slot < 0 ? -1 : m_pos[static_cast<std::size_t>(slot)];
}

void KeyTableModel::reserveFor(qint64 expectedRows)
{
    // growing a hash of a million keys rehashes them all at once: a stall the GUI would feel
    const qsizetype n = static_cast<qsizetype>(std::clamp<qint64>(expectedRows, 0, kMaxReserve)); // < 0: unknown
    if (n > m_index.capacity())
        m_index.reserve(n);
    if (n > m_rows.capacity())
        m_rows.reserve(n);
    const auto un = static_cast<std::size_t>(n);
    m_order.reserve(un);
    m_pos.reserve(un);
    m_moved.reserve(un);
}

void KeyTableModel::removeKeys(const QStringList& keys)
{
    QVector<int> rows;
    for (const QString& k : keys)
        if (const int r = rowOfKey(k); r >= 0)
            rows.push_back(r);
    removeRows(std::move(rows));
}

void KeyTableModel::showSnapshot(const QVector<KeyRow>& rows, qint64 atMs)
{
    ++m_snapshots;
    m_pinnedAtMs = atMs;
    upsert(rows, atMs, m_snapshots);
    finishGeneration(m_snapshots);
}

void KeyTableModel::replaceSnapshot(QVector<KeyRow> rows, qint64 atMs)
{
    ++m_snapshots;
    m_pinnedAtMs = atMs;
    beginResetModel();
    setServerNow(atMs);
    m_rows = std::move(rows);
    const auto n = static_cast<std::size_t>(m_rows.size());
    m_order.resize(n);
    std::iota(m_order.begin(), m_order.end(), 0);
    m_pos = m_order;
    m_moved.assign(n, 0);
    m_free.clear();
    m_index.clear();
    m_index.reserve(m_rows.size());
    for (qsizetype i = 0; i < m_rows.size(); ++i) {
        KeyRow& r = m_rows[i];
        r.seenInGeneration = static_cast<quint32>(m_snapshots);
        m_index.insert(r.key, static_cast<int>(i));
    }
    m_sortedRows = 0; // sorted again as after any change (needsSort)
    m_movedRows = 0;
    endResetModel();
}

void KeyTableModel::applySnapshotChanges(const QVector<KeyRow>& rows, const QStringList& gone, qint64 atMs)
{
    m_pinnedAtMs = atMs;
    upsert(rows, atMs, ++m_snapshots);
    removeKeys(gone);
}

void KeyTableModel::finishGeneration(quint64 generation)
{
    QVector<int> rows;
    for (int i = 0; i < rowCount(); ++i)
        if (row(i).seenInGeneration < static_cast<quint32>(generation))
            rows.push_back(i);
    removeRows(std::move(rows));
}

void KeyTableModel::removeRows(QVector<int> rows)
{
    if (rows.isEmpty())
        return;
    std::sort(rows.begin(), rows.end());
    rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
    qsizetype ranges = 1;
    for (qsizetype k = 1; k < rows.size(); ++k)
        ranges += rows[k] != rows[k - 1] + 1 ? 1 : 0;
    // Each removed range costs the views and a filter proxy a pass over all rows (~6 ms at a
    // million): thousands of scattered rows (keys that expired between two scans) would stall the
    // GUI for a minute. Many ranges: the rows to go are first moved to the end (one layout change,
    // selections kept), then removed as one range.
    constexpr qsizetype kMaxRanges = 8;
    if (ranges > kMaxRanges) {
        gatherAtEnd(rows);
        std::iota(rows.begin(), rows.end(), rowCount() - static_cast<int>(rows.size())); // now the last rows
    }
    // from the end, one contiguous range at a time, so earlier indexes stay valid
    int i = static_cast<int>(rows.size()) - 1;
    while (i >= 0) {
        int j = i;
        while (j > 0 && rows[j - 1] == rows[j] - 1)
            --j;
        const int from = rows[j], to = rows[i];
        beginRemoveRows({}, from, to);
        for (int k = from; k <= to; ++k) {
            const int slot = m_order[static_cast<std::size_t>(k)];
            const auto us = static_cast<std::size_t>(slot);
            m_index.remove(m_rows.at(slot).key);
            m_rows[slot] = KeyRow(); // its memory goes now
            m_pos[us] = -1;
            m_movedRows -= m_moved[us];
            m_moved[us] = 0;
            m_free.push_back(slot);
        }
        m_order.erase(m_order.begin() + from, m_order.begin() + to + 1);
        // what stays of the sorted rows is still sorted: fewer of them
        m_sortedRows -= std::max<qsizetype>(0, std::min<qsizetype>(to + 1, m_sortedRows) - from);
        endRemoveRows();
        i = j - 1;
    }
    renumber(rows.first()); // once: in between, rows are found through m_order, not m_pos
}

// Moves the given rows (sorted, unique) to the end, in their order, the others keeping theirs.
void KeyTableModel::gatherAtEnd(const QVector<int>& rows)
{
    const std::size_t n = m_order.size();
    std::vector<char> going(n, 0);
    for (const int r : rows)
        going[static_cast<std::size_t>(r)] = 1;
    std::vector<int> order;
    order.reserve(n);
    qsizetype sortedKept = 0;
    for (std::size_t r = 0; r < n; ++r)
        if (!going[r]) {
            order.push_back(m_order[r]);
            sortedKept += static_cast<qsizetype>(r) < m_sortedRows ? 1 : 0;
        }
    for (const int r : rows)
        order.push_back(m_order[static_cast<std::size_t>(r)]);

    m_sortedRows = sortedKept; // the kept rows of the sorted part come first, in their order
    applyOrder(std::move(order), QAbstractItemModel::NoLayoutChangeHint);
}

void KeyTableModel::renumber(qsizetype from)
{
    for (std::size_t r = static_cast<std::size_t>(from); r < m_order.size(); ++r)
        m_pos[static_cast<std::size_t>(m_order[r])] = static_cast<int>(r);
}

void KeyTableModel::clear()
{
    if (m_order.empty())
        return;
    beginRemoveRows({}, 0, rowCount() - 1);
    m_rows.clear();
    m_order.clear();
    m_pos.clear();
    m_moved.clear();
    m_free.clear();
    m_index.clear();
    m_sortedRows = 0;
    m_movedRows = 0;
    endRemoveRows();
}

idem::Stats KeyTableModel::stats() const
{
    const qint64 now = serverNowMs();
    idem::Stats s;
    for (const int slot : m_order) {
        const KeyRow& r = m_rows.at(slot);
        ++s.total;
        switch (r.stateAt(now)) {
        case idem::RecordState::Started:
            ++s.started;
            s.stale += r.isStale(now) ? 1 : 0;
            s.blocked += r.blocked() ? 1 : 0;
            break;
        case idem::RecordState::Completed: ++s.completed; break;
        case idem::RecordState::Failed: ++s.failed; break;
        case idem::RecordState::Expired: ++s.expired; break;
        case idem::RecordState::Malformed: ++s.malformed; break;
        case idem::RecordState::Foreign: ++s.foreign; break;
        case idem::RecordState::Unknown: ++s.unknown; break;
        }
        s.noTtl += r.noTtl() ? 1 : 0;
    }
    return s;
}
