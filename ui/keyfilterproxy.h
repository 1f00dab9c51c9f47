#pragma once

#include "idem/monitor/monitor.h"

#include <QSortFilterProxyModel>

// Filters the key table by state and by text (id, owner, note), sorts by KeyTableModel::SortRole.
class KeyFilterProxy : public QSortFilterProxyModel {
    Q_OBJECT
public:
    explicit KeyFilterProxy(QObject* parent = nullptr);
    void setStateFilter(idem::StateFilter f);
    idem::StateFilter stateFilter() const { return m_state; }
    void setText(const QString& text);
    // Filters again: stale is a matter of time, so a "stale" view changes with no data change.
    void refilter() { invalidateFilter(); }
    QString text() const { return m_text; }

protected:
    bool filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const override;

public:
    // Sorting is the source model's (KeyTableModel::sort): the proxy keeps its order and filters.
    void sort(int column, Qt::SortOrder order = Qt::AscendingOrder) override;

private:
    idem::StateFilter m_state = idem::StateFilter::Any;
    QString m_text;
};
