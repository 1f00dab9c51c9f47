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
    // (read-only is never kept: a session is read-only because it was started so, or because the
    // server says its user may not write - not because an earlier session was)
    QByteArray windowState() const;
    void setWindowState(const QByteArray& state);
    QByteArray windowGeometry() const;
    void setWindowGeometry(const QByteArray& geometry);

Q_SIGNALS:
    void recentUrlsChanged();
    void keyNamespaceChanged(const QString& ns);

private:
    Settings() = default;
};
