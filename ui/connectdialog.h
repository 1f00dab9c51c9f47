#pragma once

#include "consoleworker.h"

#include <QDialog>

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class CredentialStore;

// Where to connect: URL (recent ones offered), ACL user and password (kept in the system
// keychain when asked, never in the settings), namespace and pattern. Opened after the server
// refused the settings, it says why above the form and marks the field to correct.
class ConnectDialog : public QDialog {
    Q_OBJECT
public:
    ConnectDialog(CredentialStore* credentials, QWidget* parent = nullptr);
    ConnectionSettings settings() const;
    bool rememberPassword() const;
    // The settings in use (the password too: the one that was refused, or none).
    void setSettings(const ConnectionSettings& s);
    // Marks the field to correct ("password", "user", "url"; anything else: the URL) and says why.
    void highlight(const QString& field, const QString& message);
    QWidget* fieldWidget(const QString& field) const;

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
    QLabel* m_problem;
};
