#pragma once

#include <QObject>
#include <QStringList>

// The console's settings over QSettings: one getter, setter and change signal each.
// Passwords are never kept here (see CredentialStore).
class Settings : public QObject {
    Q_OBJECT
public:
    static Settings& instance();

    QStringList recentUrls() const;
    void addRecentUrl(const QString& urlWithoutPassword);
    QString keyNamespace() const;
    void setKeyNamespace(const QString& ns);
    bool readOnly() const;
    void setReadOnly(bool on);
    QByteArray windowState() const;
    void setWindowState(const QByteArray& state);

Q_SIGNALS:
    void recentUrlsChanged();
    void keyNamespaceChanged(const QString& ns);
    void readOnlyChanged(bool on);

private:
    Settings() = default;
};
