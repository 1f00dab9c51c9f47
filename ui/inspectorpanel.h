#pragma once

#include <QWidget>

class QLabel;
class QPushButton;
class QTextBrowser;
class ElidedLabel;

// The selected key's record, read from the server, with the actions for that key alone. It says
// how old what it shows is when the connection is gone, and never shows a record the table
// does not (the main window clears it when the filter hides the row).
class InspectorPanel : public QWidget {
    Q_OBJECT
public:
    explicit InspectorPanel(QWidget* parent = nullptr);

    QTextBrowser* browser() const { return m_browser; }
    QPushButton* forceFailButton() const { return m_forceFail; }
    QPushButton* purgeButton() const { return m_purge; }
    QString key() const { return m_key; }

    void showRecord(const QString& key, const QString& html);
    void showReading(const QString& key);
    // The key's history (HistoryRecorder::timelineReady), below the record; dropped for another key
    void showHistory(const QString& key, const QString& html);
    QTextBrowser* history() const { return m_history; }
    // Empty: the record is current. Otherwise shown above it: how old it is, and why.
    void setStaleNote(const QString& note);
    void clear(const QString& placeholder);
    // Which of the key's actions apply now; `why` is the tooltip when they do not.
    void setActions(bool forceFail, bool purge, const QString& why);

Q_SIGNALS:
    void forceFailRequested(const QString& key);
    void purgeRequested(const QString& key);

private:
    QString m_key;
    ElidedLabel* m_title;
    QLabel* m_stale;
    QPushButton* m_forceFail;
    QPushButton* m_purge;
    QTextBrowser* m_browser;
    QTextBrowser* m_history;
};
