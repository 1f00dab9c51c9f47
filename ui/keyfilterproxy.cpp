#include "keyfilterproxy.h"

#include "keytablemodel.h"

KeyFilterProxy::KeyFilterProxy(QObject* parent) : QSortFilterProxyModel(parent)
{
    setSortRole(KeyTableModel::SortRole);
    setDynamicSortFilter(true);
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
    return r.id.contains(m_text, Qt::CaseInsensitive) || r.owner.contains(m_text, Qt::CaseInsensitive) ||
           r.note.contains(m_text, Qt::CaseInsensitive);
}
