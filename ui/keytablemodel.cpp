#include "keytablemodel.h"

#include "idem/duration.h"

#include <QApplication>
#include <QColor>
#include <QDateTime>
#include <QIcon>
#include <QPalette>
#include <QStyle>
#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
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
    switch (r.state) {
    case idem::RecordState::Started: return r.isStale(now) ? u"STALE"_s : u"STARTED"_s;
    case idem::RecordState::Completed: return u"COMPLETED"_s;
    case idem::RecordState::Failed: return r.terminal() ? u"FAILED (terminal)"_s : u"FAILED"_s;
    case idem::RecordState::Malformed: break;
    }
    return u"MALFORMED"_s;
}

} // namespace

KeyTableModel::KeyTableModel(QObject* parent) : QAbstractTableModel(parent) {}

int KeyTableModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(m_rows.size());
}

int KeyTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

qint64 KeyTableModel::serverNowMs() const { return QDateTime::currentMSecsSinceEpoch() + m_clockOffsetMs; }

void KeyTableModel::setServerNow(qint64 serverNowMs)
{
    m_clockOffsetMs = serverNowMs - QDateTime::currentMSecsSinceEpoch();
}

bool KeyTableModel::matches(const KeyRow& r, idem::StateFilter f, qint64 serverNowMs)
{
    switch (f) {
    case idem::StateFilter::Any: return true;
    case idem::StateFilter::Started: return r.state == idem::RecordState::Started;
    case idem::StateFilter::Stale: return r.isStale(serverNowMs);
    case idem::StateFilter::Completed: return r.state == idem::RecordState::Completed;
    case idem::StateFilter::Failed: return r.state == idem::RecordState::Failed;
    case idem::StateFilter::Malformed: return r.state == idem::RecordState::Malformed;
    case idem::StateFilter::NoTtl: return r.noTtl();
    }
    return false;
}

QVariant KeyTableModel::data(const QModelIndex& index, int role) const
{
    if (!index.isValid() || index.row() >= m_rows.size())
        return {};
    const KeyRow& r = m_rows.at(index.row());
    const qint64 now = serverNowMs();
    const bool stale = r.isStale(now);
    switch (role) {
    case Qt::DisplayRole:
        switch (index.column()) {
        case Id: return idOf(r);
        case State: return stateName(r, now);
        case Age: return r.createdMs > 0 ? duration(now - r.createdMs) : QString();
        case Ttl: return r.noTtl() ? u"∞ no TTL"_s : duration(std::max<qint64>(0, r.expiresAtMs - now));
        case Lease:
            if (r.leaseUntilMs <= 0 || r.state != idem::RecordState::Started)
                return QString();
            return r.leaseUntilMs > now ? duration(r.leaseUntilMs - now)
                                        : u"expired %1 ago"_s.arg(duration(now - r.leaseUntilMs));
        case Owner: return r.owner().left(12);
        case Attempt: return r.attempt > 0 ? QVariant(r.attempt) : QVariant();
        case Fence: return r.fence > 0 ? QVariant(r.fence) : QVariant();
        case Format: return QString::fromUtf8(idem::nameOf(r.format).data());
        case Note:
            if (stale && r.leaseUntilMs > 0)
                return u"lease expired %1 ago"_s.arg(duration(now - r.leaseUntilMs));
            return r.note;
        }
        break;
    case SortRole: // KeyFilterProxy::lessThan compares rows directly; this serves other views
        switch (index.column()) {
        // deadlines and start times, not remaining times: the order does not drift as time passes
        case Age: return r.createdMs > 0 ? -r.createdMs : std::numeric_limits<qint64>::max(); // unknown last
        case Ttl: return r.noTtl() ? std::numeric_limits<qint64>::max() : r.expiresAtMs; // deadline order
        case Lease: return r.state == idem::RecordState::Started ? r.leaseUntilMs : 0;
        case Attempt: return r.attempt;
        case Fence: return r.fence;
        case State: return static_cast<int>(r.state) * 2 + (stale ? 1 : 0);
        default: return data(index, Qt::DisplayRole);
        }
    case StateRole: return static_cast<int>(r.state);
    case StaleRole: return stale;
    case NoTtlRole: return r.noTtl();
    case KeyRole: return r.keyText();
    case Qt::ToolTipRole:
        if (stale)
            return u"Stale lock: %1. The worker that held it is gone or paused; force-fail or purge it "
                   "so the id can run again."_s.arg(data(index.siblingAtColumn(Note), Qt::DisplayRole).toString());
        if (r.state == idem::RecordState::Malformed)
            return u"Not a record idem can read: %1"_s.arg(r.note);
        if (index.column() == Ttl && r.noTtl())
            return u"This key has no TTL: it will never expire by itself."_s;
        if (index.column() == Id)
            return r.keyText();
        break;
    case Qt::DecorationRole:
        if (index.column() == State && stale)
            return QApplication::style()->standardIcon(QStyle::SP_MessageBoxWarning);
        if (index.column() == State && r.state == idem::RecordState::Malformed)
            return QApplication::style()->standardIcon(QStyle::SP_MessageBoxCritical);
        break;
    case Qt::BackgroundRole:
        if (stale)
            return QColor(230, 126, 34, 70); // translucent orange: readable on light and dark palettes
        if (r.state == idem::RecordState::Malformed)
            return QColor(192, 57, 43, 45);
        break;
    case Qt::ForegroundRole:
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
                                    u"Owner"_s, u"Attempts"_s, u"Fence"_s, u"Format"_s, u"Note"_s};
    return section >= 0 && section < ColumnCount ? names[section] : QVariant();
}

namespace {
// What the table shows and sorts by; a TTL deadline that moved by less than a second is the same
// deadline read a little later (PTTL is relative), not a change.
bool sameRow(const KeyRow& a, const KeyRow& b)
{
    const bool sameDeadline = a.noTtl() == b.noTtl() && std::abs(a.expiresAtMs - b.expiresAtMs) < 1000;
    return sameDeadline && a.state == b.state && a.format == b.format && a.flags == b.flags &&
           a.leaseUntilMs == b.leaseUntilMs && a.createdMs == b.createdMs && a.fence == b.fence &&
           a.attempt == b.attempt && a.guard == b.guard && a.note == b.note;
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
            fresh.push_back(in);
            fresh.back().seenInGeneration = static_cast<quint32>(generation);
            continue;
        }
        KeyRow& row = m_rows[it.value()];
        if (!sameRow(row, in)) {
            const QByteArray key = row.key; // keep sharing the index's bytes
            row = in;
            row.key = key;
            changed.push_back(it.value());
        }
        row.seenInGeneration = static_cast<quint32>(generation);
    }
    // one dataChanged per contiguous run of changed rows: a range spanning the whole table would
    // make a sorting proxy look at every row
    std::sort(changed.begin(), changed.end());
    for (qsizetype i = 0; i < changed.size();) {
        qsizetype j = i;
        while (j + 1 < changed.size() && changed[j + 1] == changed[j] + 1)
            ++j;
        Q_EMIT dataChanged(index(changed[i], 0), index(changed[j], ColumnCount - 1));
        i = j + 1;
    }
    if (!fresh.isEmpty()) {
        const int first = static_cast<int>(m_rows.size());
        beginInsertRows({}, first, first + static_cast<int>(fresh.size()) - 1);
        for (KeyRow& r : fresh) {
            m_index.insert(r.key, static_cast<int>(m_rows.size()));
            m_rows.push_back(std::move(r));
        }
        endInsertRows();
    }
}

void KeyTableModel::reserveFor(qint64 expectedRows)
{
    // growing a hash of a million keys rehashes them all at once: a stall the GUI would feel
    const qsizetype n = static_cast<qsizetype>(std::min<qint64>(expectedRows, kMaxReserve));
    if (n > m_index.capacity())
        m_index.reserve(n);
    if (n > m_rows.capacity())
        m_rows.reserve(n);
}

void KeyTableModel::sort(int column, Qt::SortOrder order)
{
    m_sortColumn = column;
    m_sortOrder = order;
    sortAgain();
}

void KeyTableModel::sortAgain()
{
    if (m_sortColumn < 0 || m_sortColumn >= ColumnCount || m_rows.size() < 2)
        return;
    using L = std::numeric_limits<qint64>;
    const auto key64 = [this](const KeyRow& r) -> qint64 {
        const bool started = r.state == idem::RecordState::Started;
        switch (m_sortColumn) {
        case State: return static_cast<qint64>(r.state);
        case Age: return r.createdMs > 0 ? -r.createdMs : L::max(); // start times: no drift
        case Ttl: return r.noTtl() ? L::max() : r.expiresAtMs;      // deadlines: no drift
        case Lease: return started ? r.leaseUntilMs : 0;
        case Attempt: return r.attempt;
        case Fence: return r.fence;
        case Format: return static_cast<qint64>(r.format);
        default: return 0;
        }
    };
    std::vector<int> order(static_cast<std::size_t>(m_rows.size()));
    std::iota(order.begin(), order.end(), 0);
    if (m_sortColumn == Note) {
        std::stable_sort(order.begin(), order.end(), [this](int a, int b) { return m_rows[a].note < m_rows[b].note; });
    } else if (m_sortColumn == Id || m_sortColumn == Owner) {
        // compare a 16-byte prefix kept next to the row number (cache-friendly), the whole bytes
        // only on a tie; ids are compared without the "<namespace>:{" every key shares
        struct Entry {
            std::array<char, 16> prefix;
            int row;
        };
        const qsizetype skip = m_sortColumn == Id ? m_namespaceLength + 2 : 0;
        const auto bytesOf = [&](const KeyRow& r) {
            const QByteArray& b = m_sortColumn == Owner ? r.guard : r.key;
            return b.size() > skip ? QByteArrayView(b).sliced(skip) : QByteArrayView();
        };
        std::vector<Entry> entries(order.size());
        for (std::size_t i = 0; i < entries.size(); ++i) {
            const QByteArrayView v = bytesOf(m_rows[static_cast<int>(i)]);
            entries[i].prefix.fill(0);
            std::memcpy(entries[i].prefix.data(), v.data(), static_cast<std::size_t>(std::min<qsizetype>(16, v.size())));
            entries[i].row = static_cast<int>(i);
        }
        std::stable_sort(entries.begin(), entries.end(), [&](const Entry& a, const Entry& b) {
            const int c = std::memcmp(a.prefix.data(), b.prefix.data(), 16);
            if (c != 0)
                return c < 0;
            return bytesOf(m_rows[a.row]) < bytesOf(m_rows[b.row]);
        });
        for (std::size_t i = 0; i < entries.size(); ++i)
            order[i] = entries[i].row;
    } else {
        std::vector<qint64> keys(order.size());
        for (std::size_t i = 0; i < keys.size(); ++i)
            keys[i] = key64(m_rows[static_cast<int>(i)]);
        std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return keys[a] < keys[b]; });
    }
    if (m_sortOrder == Qt::DescendingOrder)
        std::reverse(order.begin(), order.end());

    Q_EMIT layoutAboutToBeChanged({}, QAbstractItemModel::VerticalSortHint);
    const QModelIndexList before = persistentIndexList();
    QVector<KeyRow> sorted;
    sorted.reserve(m_rows.size());
    std::vector<int> newPos(order.size());
    for (std::size_t i = 0; i < order.size(); ++i) {
        sorted.push_back(std::move(m_rows[order[i]]));
        newPos[static_cast<std::size_t>(order[i])] = static_cast<int>(i);
    }
    m_rows = std::move(sorted);
    reindex(0);
    QModelIndexList after;
    after.reserve(before.size());
    for (const QModelIndex& i : before)
        after.push_back(index(newPos[static_cast<std::size_t>(i.row())], i.column()));
    changePersistentIndexList(before, after);
    Q_EMIT layoutChanged({}, QAbstractItemModel::VerticalSortHint);
}

void KeyTableModel::removeKeys(const QStringList& keys)
{
    QVector<int> rows;
    for (const QString& k : keys)
        if (const int r = m_index.value(k.toUtf8(), -1); r >= 0)
            rows.push_back(r);
    removeRows(std::move(rows));
}

void KeyTableModel::finishGeneration(quint64 generation)
{
    QVector<int> rows;
    for (int i = 0; i < m_rows.size(); ++i)
        if (m_rows.at(i).seenInGeneration < static_cast<quint32>(generation))
            rows.push_back(i);
    removeRows(std::move(rows));
}

void KeyTableModel::removeRows(QVector<int> rows)
{
    if (rows.isEmpty())
        return;
    std::sort(rows.begin(), rows.end());
    rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
    // from the end, one contiguous range at a time, so earlier indexes stay valid
    int i = static_cast<int>(rows.size()) - 1;
    while (i >= 0) {
        int j = i;
        while (j > 0 && rows[j - 1] == rows[j] - 1)
            --j;
        beginRemoveRows({}, rows[j], rows[i]);
        for (int k = rows[j]; k <= rows[i]; ++k)
            m_index.remove(m_rows.at(k).key);
        m_rows.remove(rows[j], rows[i] - rows[j] + 1);
        endRemoveRows();
        i = j - 1;
    }
    reindex(rows.first());
}

void KeyTableModel::reindex(int from)
{
    for (int i = from; i < m_rows.size(); ++i)
        m_index[m_rows.at(i).key] = i;
}

void KeyTableModel::clear()
{
    if (m_rows.isEmpty())
        return;
    beginRemoveRows({}, 0, static_cast<int>(m_rows.size()) - 1);
    m_rows.clear();
    m_index.clear();
    endRemoveRows();
}

idem::Stats KeyTableModel::stats() const
{
    const qint64 now = serverNowMs();
    idem::Stats s;
    for (const KeyRow& r : m_rows) {
        ++s.total;
        switch (r.state) {
        case idem::RecordState::Started:
            ++s.started;
            s.stale += r.isStale(now) ? 1 : 0;
            break;
        case idem::RecordState::Completed: ++s.completed; break;
        case idem::RecordState::Failed: ++s.failed; break;
        case idem::RecordState::Malformed: ++s.malformed; break;
        }
        s.noTtl += r.noTtl() ? 1 : 0;
    }
    return s;
}
