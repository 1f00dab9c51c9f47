#pragma once

#include "consoleworker.h"

#include <QDialog>

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class CredentialStore;

// A connection URL as the console shows and remembers it (the recent list, the keychain's account,
// the window's title): a Redis URL as idem reads it, without its password; a PostgreSQL URL with
// its password cut out; a URL that cannot be read with whatever could be a password cut out.
QString shownUrl(const QString& url);
// The URL's text with the password of its credentials ("user:password@") cut out, the rest as
// typed; `password` (if given) gets what was cut, %-escapes decoded. Unchanged without one.
QString withoutPassword(const QString& url, QString* password = nullptr);

// Where to connect: URL (recent ones offered), ACL user and password (kept in the system
// keychain when asked, never in the settings), the Sentinel password (redis-sentinel:// URLs),
// TLS files and names (rediss:// URLs: CA, client certificate and key with file pickers, server
// name, and no verification at all), namespace and pattern. Opened after a refusal retrying
// cannot fix, it says why above the form and marks the field to correct.
class ConnectDialog : public QDialog {
    Q_OBJECT
public:
    ConnectDialog(CredentialStore* credentials, QWidget* parent = nullptr);
    // QDialog's destructor hides the dialog, and the URL field losing focus then says
    // editingFinished: no field's signal reaches this half-destroyed dialog's slots
    ~ConnectDialog() override;
    ConnectionSettings settings() const;
    bool rememberPassword() const;
    // The settings in use (the password too: the one that was refused, or none).
    void setSettings(const ConnectionSettings& s);
    // Marks the field to correct (idem::ConfigError's field: "password", "user", "url", "tls-ca",
    // "tls-cert", "tls-key", "tls-server-name", "tls-insecure", "sentinel-password"; anything
    // else: the URL) and says why.
    void highlight(const QString& field, const QString& message);
    QWidget* fieldWidget(const QString& field) const;

    void accept() override; // a password in a Redis URL goes to the Password field first
    // What the keychain answered for `url` (the load it asks for when a URL is chosen): fills an
    // empty Password field and ticks "keep" while the URL is still `url`. Moving to another
    // account takes both back (a password the user typed stays, the tick goes): a kept password
    // is neither sent to nor saved for another server.
    void keychainAnswered(const QString& url, const QString& password);

private:
    void urlChosen(const QString& url);
    void takePasswordFromUrl();
    void dropFilledPassword(); // what the keychain filled in, unless the user has made it theirs
    void updateEnabled(); // TLS fields for TLS URLs, the Sentinel password for Sentinel URLs
    QLineEdit* fileField(const QString& name, const QString& what, const QString& filter, QWidget** row);

    CredentialStore* m_credentials;
    QComboBox* m_url;
    QLineEdit* m_user;
    QLineEdit* m_password;
    QCheckBox* m_remember;
    QLineEdit* m_namespace;
    QLineEdit* m_pattern;
    QComboBox* m_format;
    QLineEdit* m_table;
    QComboBox* m_readFrom;
    bool m_applying = false; // setSettings() from a remembered URL under way
    QString m_filledFor;      // the account the keychain filled the password in for, if any
    QString m_filledPassword; // what it filled in
    bool m_keepTickedByFill = false;
    QLineEdit* m_sentinelPassword;
    QWidget* m_tlsBox;
    QLineEdit* m_tlsCa;
    QLineEdit* m_tlsCert;
    QLineEdit* m_tlsKey;
    QLineEdit* m_tlsServerName;
    QCheckBox* m_tlsInsecure;
    QLabel* m_problem;
};
