#pragma once

#include "consoleworker.h"

#include <QDialog>

class QCheckBox;
class QComboBox;
class QLineEdit;
class CredentialStore;

// Where to connect: URL (recent ones offered), ACL user and password (kept in the system
// keychain when asked, never in the settings), namespace and pattern.
class ConnectDialog : public QDialog {
    Q_OBJECT
public:
    ConnectDialog(CredentialStore* credentials, QWidget* parent = nullptr);
    ConnectionSettings settings() const;
    bool rememberPassword() const;

private:
    void urlChosen(const QString& url);

    CredentialStore* m_credentials;
    QComboBox* m_url;
    QLineEdit* m_user;
    QLineEdit* m_password;
    QCheckBox* m_remember;
    QLineEdit* m_namespace;
    QLineEdit* m_pattern;
    QComboBox* m_format;
};
