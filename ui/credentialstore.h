#pragma once

#include <QObject>
#include <QString>
#include <functional>

// Passwords in the system keychain (qtkeychain), keyed by the URL without its password.
// Asynchronous: the callbacks run on the GUI thread. Without a keychain, nothing is kept and
// the error says why.
class CredentialStore : public QObject {
    Q_OBJECT
public:
    explicit CredentialStore(QObject* parent = nullptr);
    void save(const QString& account, const QString& password, std::function<void(QString error)> done);
    void load(const QString& account, std::function<void(QString password, QString error)> done);
    void forget(const QString& account);
};
