#pragma once

#include "keyrow.h"

#include "idem/monitor.h"

#include <QAbstractTableModel>
#include <QHash>
#include <QVector>

// All keys the worker reported, one row each. Updates merge by key: changed rows emit
// dataChanged, new rows are appended with beginInsertRows, rows not seen by a completed scan
// (or reported gone) are removed in contiguous ranges with beginRemoveRows — never a reset.
// Times are shown against the server's clock (an offset learned from each report), so TTL,
// age and lease countdowns need no Redis round trip: the view repaints and data() recomputes.
class KeyTableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { Id, State, Age, Ttl, Lease, Owner, Attempt, Fence, Format, Note, ColumnCount };
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

    void upsert(const QVector<KeyRow>& rows, qint64 serverNowMs, quint64 generation);
    void removeKeys(const QStringList& keys);
    // A scan of `generation` completed: rows it did not see (and nothing reported since) are gone.
    void finishGeneration(quint64 generation);
    void clear();

    const KeyRow& row(int r) const { return m_rows.at(r); }
    int rowOfKey(const QString& key) const { return m_index.value(key, -1); }
    idem::Stats stats() const;
    qint64 serverNowMs() const;
    void setServerNow(qint64 serverNowMs);
    static bool matches(const KeyRow& row, idem::StateFilter f, qint64 serverNowMs);

private:
    void removeRows(QVector<int> rows);
    void reindex(int from);

    QVector<KeyRow> m_rows;
    QHash<QString, int> m_index;
    qint64 m_clockOffsetMs = 0; // server time - local time
};
