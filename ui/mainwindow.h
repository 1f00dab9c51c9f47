#pragma once

#include "audittrail.h"
#include "consoleworker.h"

#include <QMainWindow>
#include <QPointer>
#include <QThread>

class QAction;
class QComboBox;
class QLabel;
class QLineEdit;
class QTableView;
class QTextBrowser;
class QToolButton;
class CountsChart;
class CredentialStore;
class KeyFilterProxy;
class KeyTableModel;
class QTabWidget;
class RaceLabWidget;

// The operator console: counters and a chart per state, the live key table with countdowns,
// an inspector, and force-fail / purge with confirmation and an audit trail. Every Redis
// conversation happens in a ConsoleWorker on the "idem-redis" thread.
class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    struct Options {
        ConnectionSettings connection;
        bool readOnly = false;
        QString titleNote;  // e.g. "embedded demo redis-server"
        QString auditPath;  // default: AuditTrail::defaultPath()
        bool connectNow = true;
    };

    explicit MainWindow(Options options, QWidget* parent = nullptr);
    ~MainWindow() override;

    KeyTableModel* model() const { return m_model; }
    KeyFilterProxy* proxy() const { return m_proxy; }
    QTableView* table() const { return m_table; }
    QTextBrowser* inspector() const { return m_inspector; }
    QLineEdit* filterEdit() const { return m_filter; }
    QComboBox* stateBox() const { return m_stateBox; }
    AuditTrail* auditTrail() const { return m_audit; }
    RaceLabWidget* raceLab() const { return m_raceLab; }
    QTabWidget* tabs() const { return m_tabs; }
    QAction* forceFailAction() const { return m_forceFail; }
    QAction* purgeAction() const { return m_purge; }
    QAction* readOnlyAction() const { return m_readOnlyAction; }
    bool isReadOnly() const { return m_readOnly; }
    bool exportTo(const QString& path, QString* error = nullptr) const; // .csv or .json

public Q_SLOTS:
    void connectTo(const ConnectionSettings& settings);
    void refresh();
    void forceFailSelected();
    void purgeSelected();
    void forceFailFiltered();
    void purgeFiltered();
    void setReadOnly(bool on);
    void showAuditTrail();
    void exportView();
    void openConnectDialog();

Q_SIGNALS:
    void scanCompleted(const ScanSummary& summary);
    void actionCompleted(const ActionResult& result);
    void linkStateChanged(ConsoleWorker::Link link);

private:
    void buildUi();
    void buildActions();
    QVector<KeyRow> rowsFor(bool selectedOnly) const;
    void runAction(bool forceFail, const QVector<KeyRow>& rows, bool selection);
    void tick();
    void updateCounters();
    void showInspection(const QString& key, const QString& html);
    void currentRowChanged();

    Options m_options;
    QThread m_thread;
    QPointer<ConsoleWorker> m_worker;
    KeyTableModel* m_model;
    KeyFilterProxy* m_proxy;
    QTableView* m_table = nullptr;
    QTextBrowser* m_inspector = nullptr;
    QTabWidget* m_tabs = nullptr;
    RaceLabWidget* m_raceLab = nullptr;
    QLineEdit* m_filter = nullptr;
    QComboBox* m_stateBox = nullptr;
    CountsChart* m_chart = nullptr;
    QVector<QToolButton*> m_counters;
    QLabel* m_linkLabel = nullptr;
    QLabel* m_liveLabel = nullptr;
    QLabel* m_scanLabel = nullptr;
    QLabel* m_coverageLabel = nullptr;
    QAction* m_forceFail = nullptr;
    QAction* m_purge = nullptr;
    QAction* m_forceFailAll = nullptr;
    QAction* m_purgeAll = nullptr;
    QAction* m_readOnlyAction = nullptr;
    AuditTrail* m_audit;
    CredentialStore* m_credentials;
    QString m_inspectedKey;
    QString m_server; // URL without password
    QString m_lastScan;
    bool m_readOnly = false;
    int m_ticks = 0;
};
