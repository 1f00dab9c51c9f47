#include "auditdialog.h"

#include "audittrail.h"
#include "storeauditview.h"

#include <QTabWidget>
#include <QTableWidget>
#include <QVBoxLayout>

using namespace Qt::StringLiterals;

AuditDialog::AuditDialog(const AuditTrail* local, QWidget* parent)
    : QDialog(parent), m_localTrail(local), m_store(new StoreAuditView(this)), m_local(new QTableWidget(this))
{
    setWindowTitle(tr("Audit trail"));
    auto* tabs = new QTabWidget(this);
    tabs->addTab(m_store, tr("Every operator (in the store)"));
    tabs->addTab(m_local, tr("This desktop"));
    tabs->setTabToolTip(1, tr("What this console did, from %1").arg(local->path()));
    const QStringList headers = {tr("When"), tr("Who"), tr("Action"), tr("Keys"), tr("Changed"),
                                 tr("Why"),  tr("Server"), tr("Sample"), tr("Error")};
    m_local->setObjectName(u"localAudit"_s);
    m_local->setColumnCount(static_cast<int>(headers.size()));
    m_local->setHorizontalHeaderLabels(headers);
    m_local->setEditTriggers(QAbstractItemView::NoEditTriggers);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(tabs);
    connect(local, &AuditTrail::appended, this, &AuditDialog::reloadLocal);
    reloadLocal();
}

void AuditDialog::reloadLocal()
{
    const auto entries = m_localTrail->entries();
    m_local->setRowCount(static_cast<int>(entries.size()));
    for (int i = 0; i < entries.size(); ++i) {
        const AuditEntry& e = entries[entries.size() - 1 - i]; // newest first
        const QString cells[] = {e.when.toString(u"yyyy-MM-dd HH:mm:ss"_s), e.who, e.action,
                                 QString::number(e.keys), QString::number(e.changed), e.why, e.server, e.sample, e.error};
        for (int c = 0; c < 9; ++c) {
            auto* item = new QTableWidgetItem(cells[c]);
            item->setToolTip(cells[c]);
            m_local->setItem(i, c, item);
        }
    }
    m_local->resizeColumnsToContents();
}
