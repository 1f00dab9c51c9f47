#pragma once

#include "audittrail.h"
#include "consoleworker.h"

#include <QDateTime>
#include <QMainWindow>
#include <QPointer>
#include <QThread>

class AuditDialog;
class StoreAuditView;
class QAction;
class QComboBox;
class QFrame;
class QLabel;
class QLineEdit;
class QPushButton;
class QSplitter;
class QTableView;
class QTextBrowser;
class QTimer;
class QToolButton;
class ConnectDialog;
class CountsChart;
class CredentialStore;
class ElidedLabel;
class FrozenTableView;
class InspectorPanel;
class KeyFilterProxy;
class HistoryController;
class KeyTableModel;
class QTabWidget;
class RaceLabWidget;
class ReplayWidget;

// The operator console: counters and a chart per state, the live key table with countdowns,
// an inspector, and force-fail / purge with confirmation and an audit trail. Every Redis
// conversation happens in a ConsoleWorker on the "idem-redis" thread.
//
// It says how current what it shows is: with no data yet the counters read "—", not 0; when the
// connection goes, a banner says since when, the table and counters turn grey, countdowns stop at
// the moment the data was last read, the chart leaves a gap and the actions are off until the
// server is back. A refusal that retrying cannot fix stops the retries and opens Connect.
class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    struct Options {
        ConnectionSettings connection;
        bool readOnly = false; // --read-only: for the whole session, whatever the toggle says
        QString titleNote;     // e.g. "embedded demo redis-server"
        QString auditPath;     // default: AuditTrail::defaultPath()
        bool connectNow = true;
    };
    // How current the data shown is
    enum class Freshness { NoData, Live, AsOf };
    Q_ENUM(Freshness)

    explicit MainWindow(Options options, QWidget* parent = nullptr);
    ~MainWindow() override;

    KeyTableModel* model() const { return m_model; }
    KeyTableModel* liveModel() const { return m_live; }
    HistoryController* history() const { return m_history; }
    KeyFilterProxy* proxy() const { return m_proxy; }
    QTableView* table() const;
    QTextBrowser* inspector() const;
    InspectorPanel* inspectorPanel() const { return m_inspector; }
    QLineEdit* filterEdit() const { return m_filter; }
    QComboBox* stateBox() const { return m_stateBox; }
    AuditTrail* auditTrail() const { return m_audit; }
    StoreAuditView* storeAuditView() const; // the audit view's store tab, once Ctrl+L opened it
    RaceLabWidget* raceLab() const { return m_raceLab; }
    ReplayWidget* replay() const { return m_replay; }
    CountsChart* chart() const { return m_chart; }
    QTabWidget* tabs() const { return m_tabs; }
    QFrame* banner() const { return m_banner; }
    QString bannerText() const;
    QToolButton* counter(int i) const { return m_counters.value(i); }
    QAction* forceFailAction() const { return m_forceFail; }
    QAction* purgeAction() const { return m_purge; }
    QAction* forceFailAllAction() const { return m_forceFailAll; }
    QAction* purgeAllAction() const { return m_purgeAll; }
    QAction* readOnlyAction() const { return m_readOnlyAction; }
    bool isReadOnly() const { return m_readOnly; }
    // why read-only cannot be switched off now (--read-only, the user may not write); empty if it can
    QString readOnlyLock() const;
    // What the last action, or refusal to act, said in the status bar ("" once it has gone, 15 s on)
    QString actionNote() const;
    Freshness freshness() const;
    QDateTime dataAsOf() const { return m_lastHeard; } // when the server last answered
    QString server() const { return m_server; }
    // Rows shown, with raw values (ISO 8601 times, numbers, full tokens) and when they were read.
    bool exportTo(const QString& path, QString* error = nullptr) const; // .csv or .json
    // The open Connect dialog, if any (tests; after a refusal it opens by itself)
    ConnectDialog* connectDialog() const;

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
    void clearFilter(); // Esc: the text first, then the state
    void showShortcuts();

Q_SIGNALS:
    void scanCompleted(const ScanSummary& summary);
    void actionCompleted(const ActionResult& result);
    void linkStateChanged(ConsoleWorker::Link link);
    void freshnessChanged(MainWindow::Freshness freshness);
    void inspected(const QString& key); // the inspector shows what the server answered for key

protected:
    void closeEvent(QCloseEvent* event) override;
    void changeEvent(QEvent* event) override;
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void buildUi();
    void buildActions();
    void placeOnScreen();
    void sizeColumns();
    void fitTableToColumns();
    QVector<KeyRow> rowsFor(bool selectedOnly) const;
    void runAction(bool forceFail, const QVector<KeyRow>& rows, bool selection);
    void actOnKey(bool forceFail, const QString& key);
    void tick();
    void updateCounters();
    void updateFreshness(); // banner, greying, frozen clock, actions, after any change of link or data
    void updateActions();
    bool selectionHasForceFailable() const; // a selected row force-fail would take
    void heard(qint64 serverNowMs);
    void inspect(const QString& key);
    void reinspect(); // the inspected key again, after an action, a scan or a reconnect
    void showInspection(const QString& key, const QString& html);
    void checkInspectedShown(); // cleared when the filter hides its row
    void currentRowChanged();
    void noteAction(const QString& text);
    void openConnectFor(const QString& field, const QString& message);

    Options m_options;
    QThread m_thread;
    QPointer<ConsoleWorker> m_worker;
    KeyTableModel* m_live;  // what the worker reports
    KeyTableModel* m_model; // what the table shows: m_live, or the history's rewound moment
    KeyFilterProxy* m_proxy;
    HistoryController* m_history = nullptr;
    FrozenTableView* m_table = nullptr;
    QSplitter* m_tableSplit = nullptr; // the table beside the inspector
    bool m_tableWidthByHand = false;   // the operator moved the divider: it stays where they put it
    InspectorPanel* m_inspector = nullptr;
    QTabWidget* m_tabs = nullptr;
    RaceLabWidget* m_raceLab = nullptr;
    ReplayWidget* m_replay = nullptr;
    QLineEdit* m_filter = nullptr;
    QComboBox* m_stateBox = nullptr;
    CountsChart* m_chart = nullptr;
    QWidget* m_counterBox = nullptr;
    QVector<QToolButton*> m_counters;
    QFrame* m_banner = nullptr;
    QLabel* m_bannerText = nullptr;
    QPushButton* m_bannerConnect = nullptr;
    ElidedLabel* m_linkLabel = nullptr;
    ElidedLabel* m_liveLabel = nullptr;
    ElidedLabel* m_scanLabel = nullptr;
    ElidedLabel* m_modeLabel = nullptr;
    ElidedLabel* m_noteLabel = nullptr; // the last action's outcome, for 15 s (a passing message had no room)
    QTimer* m_noteTimer = nullptr;
    QLabel* m_insecureLabel = nullptr; // TLS without verification
    QAction* m_forceFail = nullptr;
    QAction* m_purge = nullptr;
    QAction* m_forceFailAll = nullptr;
    QAction* m_purgeAll = nullptr;
    QAction* m_readOnlyAction = nullptr;
    AuditTrail* m_audit;
    QPointer<AuditDialog> m_auditDialog;
    CredentialStore* m_credentials;
    QPointer<ConnectDialog> m_connectDialog;
    QTimer* m_reinspectTimer = nullptr;
    QTimer* m_shownCheckTimer = nullptr;
    QString m_inspectedKey;
    QString m_server; // URL without password
    QString m_lastScan;
    bool m_readOnly = false;
    bool m_rowsGoing = false; // the proxy is removing rows
    QString m_writeRefused; // why the server will not take changes from this user; empty: it will
    ConsoleWorker::Link m_link = ConsoleWorker::Link::Disconnected;
    QString m_linkDetail;
    bool m_everHeard = false;  // this server has answered since connectTo
    bool m_freshScan = false;  // a scan has completed since the link last came up
    QDateTime m_lastHeard;     // local time of the server's last answer
    qint64 m_lastHeardServerMs = 0;
    QDateTime m_lostAt;        // when the link last went down
    Freshness m_freshness = Freshness::NoData;
    // Live updates interrupted (a cluster node's notifications stopped): why, and since when
    QString m_notLive;
    QDateTime m_notLiveSince;
    QStringList m_clusterNotes; // the cluster's recent topology notes, each with its time
    QTimer* m_clusterNoteTimer = nullptr;
    static constexpr int kClusterNoteMs = 30'000; // how long a note stays in the banner
    int m_ticks = 0;
};
