#pragma once

#include <QDateTime>
#include <QString>
#include <QVector>
#include <QWidget>

class QLabel;
class QTableWidget;

// One entry of the namespace's audit stream in the store (NAMESPACE:audit): every operator's
// action, from every console and idemctl.
struct StoreAuditRow {
    QString id;     // the stream entry's id
    qint64 atMs = 0; // server time
    QString action, key, by, why, via, was;
};
Q_DECLARE_METATYPE(StoreAuditRow)

// The store's audit stream, newest first. The console's worker reads it (XREVRANGE, off the GUI
// thread) every 2 s while the view is shown and hands the entries to setEntries().
class StoreAuditView : public QWidget {
    Q_OBJECT
public:
    explicit StoreAuditView(QWidget* parent = nullptr);
    void setEntries(const QVector<StoreAuditRow>& rows, qint64 serverNowMs, const QString& error);
    QTableWidget* table() const { return m_table; }
    QString status() const;

Q_SIGNALS:
    void wanted(); // shown, or its poll timer fired: the entries are wanted again

protected:
    void showEvent(QShowEvent* event) override;
    void hideEvent(QHideEvent* event) override;

private:
    QTableWidget* m_table;
    QLabel* m_status;
    class QTimer* m_poll;
};
