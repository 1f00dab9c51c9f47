#pragma once

#include <QDateTime>
#include <QObject>
#include <QString>
#include <QVector>

struct AuditEntry {
    QDateTime when;
    QString who;
    QString action; // "force-fail (retryable)", "purge", ...
    QString server; // URL without password
    QString why;
    int keys = 0;
    int changed = 0;
    QString sample; // the first few keys
    QString error;
};

// Every operator action of the console, appended as one JSON line to a file (who, when, what,
// why, on which server, how many keys changed). The console shows it; nothing is ever rewritten.
class AuditTrail : public QObject {
    Q_OBJECT
public:
    explicit AuditTrail(QString path, QObject* parent = nullptr);
    static QString defaultPath();
    bool append(const AuditEntry& e); // false (and lastError) when the file cannot be written
    QVector<AuditEntry> entries() const;
    QString path() const { return m_path; }
    QString lastError() const { return m_lastError; }

Q_SIGNALS:
    void appended(const AuditEntry& e);

private:
    QString m_path;
    QString m_lastError;
};
