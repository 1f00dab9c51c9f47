#pragma once

#include "keyrow.h"

#include "idem/monitor/monitor.h"

#include <QAbstractTableModel>
#include <QHash>
#include <QVector>

#include <vector>

// All keys the worker reported, one row each. Updates merge by key: changed rows emit
// dataChanged, new rows are appended with beginInsertRows, rows not seen by a completed scan
// (or reported gone) are removed in contiguous ranges with beginRemoveRows — never a reset.
// Times are shown against the server's clock (an offset learned from each report), so TTL,
// age and lease countdowns need no Redis round trip: the view repaints and data() recomputes.
class KeyTableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { Id, State, Age, Ttl, Lease, Owner, Attempt, Fence, Format, Note, Node, ColumnCount };
    enum Role {
        SortRole = Qt::UserRole + 1, // a value that sorts right (numbers, deadlines)
        StateRole,                   // idem::RecordState as int
        StaleRole,
        NoTtlRole,
        KeyRole,
    };

    explicit KeyTableModel(QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    // Sorts the view order of the rows (one layoutChanged): comparing fields in a tight loop sorts
    // a million rows in a fraction of a second, where a sorting proxy goes through QModelIndex and
    // QVariant for every comparison. Rows stay where they are stored; only the order of their slots
    // changes, so no key index is rebuilt. Rows that arrive or change after a sort stay where they
    // are until sortAgain(), which places just those into the sorted rest (binary search).
    void sort(int column, Qt::SortOrder order = Qt::AscendingOrder) override;
    void sortAgain();
    int sortColumn() const { return m_sortColumn; }
    // a sort is active and some rows arrived or changed since it was made
    bool needsSort() const;

    void upsert(const QVector<KeyRow>& rows, qint64 serverNowMs, quint64 generation);
    // Room for this many rows (the server's DBSIZE, an upper bound), up to kMaxReserve.
    void reserveFor(qint64 expectedRows);
    static constexpr qint64 kMaxReserve = 2'000'000;
    void removeKeys(const QStringList& keys);
    // A scan of `generation` completed: rows it did not see (and nothing reported since) are gone.
    void finishGeneration(quint64 generation);
    void clear();
    // The rewound view (HistoryRecorder): these rows and no others, merged in as upsert does (rows
    // that changed emit dataChanged, new ones are inserted, missing ones removed), with the clock
    // standing at `atMs` so that leases, TTLs and staleness are those of that moment.
    void showSnapshot(const QVector<KeyRow>& rows, qint64 atMs);
    // The same in one step, for a jump that changes much of the table: the rows replace what is
    // shown with one model reset (a proxy and the views rebuild once, instead of a merge of every
    // changed row). `rows` holds each key once (what HistoryRecorder builds off the GUI thread).
    void replaceSnapshot(QVector<KeyRow> rows, qint64 atMs);
    // The same, as changes to what is shown: these rows changed or came, these keys went.
    void applySnapshotChanges(const QVector<KeyRow>& rows, const QStringList& gone, qint64 atMs);

    const KeyRow& row(int r) const { return m_rows.at(m_order.at(r)); }
    int rowOfKey(const QString& key) const;
    // Ids are shown without "<namespace>:{" and "}".
    void setKeyNamespace(const QString& ns) { m_namespaceLength = ns.toUtf8().size(); }
    // The nodes KeyRow::node indexes (from 1): the Node column's text.
    void setNodes(const QStringList& nodes) { m_nodes = nodes; }
    QString nodeOf(const KeyRow& r) const { return r.node > 0 && r.node <= m_nodes.size() ? m_nodes.at(r.node - 1) : QString(); }
    QString idOf(const KeyRow& r) const { return r.id(m_namespaceLength); }
    idem::Stats stats() const;
    qint64 serverNowMs() const;
    void setServerNow(qint64 serverNowMs);
    // The data stopped being current (the connection is gone): the clock stops at `serverMs`, so
    // countdowns stop and nothing turns stale or expired on a guess, and every cell is drawn in the
    // palette's disabled text colour. thaw() goes back to the running clock. Views repaint; no
    // dataChanged is emitted (a million rows would be re-filtered for a colour).
    void freezeAt(qint64 serverMs);
    void thaw();
    bool isFrozen() const { return m_frozenAtMs != 0; }
    qint64 frozenAtMs() const { return m_frozenAtMs; }
    static bool matches(const KeyRow& row, idem::StateFilter f, qint64 serverNowMs);

private:
    void removeRows(QVector<int> rows);
    void gatherAtEnd(const QVector<int>& rows);
    void applyOrder(std::vector<int> order, QAbstractItemModel::LayoutChangeHint hint);
    int takeSlot();
    void renumber(qsizetype from); // m_pos of the rows shown from `from` on
    bool lessSlots(int a, int b) const;
    static qint64 numericKey(const KeyRow& r, int column);
    void sortSlots(std::vector<int>& list) const;

    QVector<KeyRow> m_rows;         // by slot; a removed row's slot is reused
    std::vector<int> m_order;       // the rows shown: row r of the model is m_rows[m_order[r]]
    std::vector<int> m_pos;         // by slot: its row in the model, -1 for a free slot
    std::vector<char> m_moved;      // by slot: changed since the last sort
    std::vector<int> m_free;        // free slots
    QHash<QByteArray, int> m_index; // key -> slot; shares the rows' key bytes
    qsizetype m_sortedRows = 0;     // model rows [0, m_sortedRows) were placed by the last sort
    qsizetype m_movedRows = 0;      // slots marked in m_moved
    qsizetype m_namespaceLength = 0;
    QStringList m_nodes;
    int m_sortColumn = -1;
    Qt::SortOrder m_sortOrder = Qt::AscendingOrder;
    qint64 m_clockOffsetMs = 0; // server time - local time
    qint64 m_frozenAtMs = 0;    // server time the data was last current at, while frozen; 0: live
    qint64 m_pinnedAtMs = 0;    // a snapshot's moment (showSnapshot); 0: the running clock
    quint64 m_snapshots = 0;
};
