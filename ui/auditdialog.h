#pragma once

#include <QDialog>

class AuditTrail;
class StoreAuditView;
class QTableWidget;

// Ctrl+L: what every operator did, from the store's audit stream (live), and what this desktop did,
// from its local file (also when the store was unreachable).
class AuditDialog : public QDialog {
    Q_OBJECT
public:
    AuditDialog(const AuditTrail* local, QWidget* parent = nullptr);
    StoreAuditView* storeView() const { return m_store; }
    void reloadLocal();

private:
    const AuditTrail* m_localTrail;
    StoreAuditView* m_store;
    QTableWidget* m_local;
};
