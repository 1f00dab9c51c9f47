#pragma once

#include <QObject>
#include <QStringList>

#include <optional>

struct ConnectionSettings;

// The console's settings over QSettings: one getter, setter and change signal each.
// Passwords are never kept here (see CredentialStore).
class Settings : public QObject {
    Q_OBJECT
public:
    static Settings& instance();

    QStringList recentUrls() const;
    void addRecentUrl(const QString& urlWithoutPassword);
    // What Connect was given for a recent URL besides the URL (user, namespace, pattern, format,
    // read-from, TLS files and server name) - never a password, never "insecure"
    void rememberConnection(const QString& urlWithoutPassword, const ConnectionSettings& s);
    std::optional<ConnectionSettings> rememberedConnection(const QString& urlWithoutPassword) const;
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
