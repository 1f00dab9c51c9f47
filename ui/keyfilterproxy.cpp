#include "keyfilterproxy.h"

#include "keytablemodel.h"

KeyFilterProxy::KeyFilterProxy(QObject* parent) : QSortFilterProxyModel(parent)
{
    setSortRole(KeyTableModel::SortRole);
    setDynamicSortFilter(true); // re-filters changed rows; it never sorts (sort() is the model's)
}

void KeyFilterProxy::setStateFilter(idem::StateFilter f)
{
    if (f == m_state)
        return;
    m_state = f;
    invalidateFilter();
}

void KeyFilterProxy::setText(const QString& text)
{
    if (text == m_text)
        return;
    m_text = text;
    invalidateFilter();
}

bool KeyFilterProxy::filterAcceptsRow(int sourceRow, const QModelIndex&) const
{
    const auto* model = static_cast<const KeyTableModel*>(sourceModel());
    const KeyRow& r = model->row(sourceRow);
    if (!KeyTableModel::matches(r, m_state, model->serverNowMs()))
        return false;
    if (m_text.isEmpty())
        return true;
    return model->idOf(r).contains(m_text, Qt::CaseInsensitive) || r.owner().contains(m_text, Qt::CaseInsensitive) ||
           r.note.contains(m_text, Qt::CaseInsensitive);
}

void KeyFilterProxy::sort(int column, Qt::SortOrder order)
{
    static_cast<KeyTableModel*>(sourceModel())->sort(column, order);
}
