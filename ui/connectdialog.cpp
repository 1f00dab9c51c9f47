#include "connectdialog.h"

#include "credentialstore.h"
#include "settings.h"

#include "idem/errors.h"
#include "idem/format/record.h"
#include "idem/redis/options.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QToolButton>
#include <QUrl>
#include <QVBoxLayout>

#include "theme.h"

#include <utility>

using namespace Qt::StringLiterals;

ConnectDialog::ConnectDialog(CredentialStore* credentials, QWidget* parent)
    : QDialog(parent), m_credentials(credentials)
{
    setWindowTitle(tr("Connect to Redis"));
    m_url = new QComboBox(this);
    m_url->setEditable(true);
    m_url->setInsertPolicy(QComboBox::NoInsert); // Return does not add what was typed (a password) to the list
    m_url->addItems(Settings::instance().recentUrls());
    if (m_url->count() == 0)
        m_url->addItem(u"redis://127.0.0.1:6379/0"_s);
    m_url->setObjectName(u"url"_s);
    m_url->setToolTip(tr("redis://[user:password@]host[:port][/db], rediss://… (TLS), unix:///path.sock, "
                         "redis-sentinel://[user:password@]host1[:port1],host2[:port2][/db]#PRIMARY or "
                         "rediss-sentinel://… (TLS to the data nodes); a PostgreSQL store: postgresql://[user[:password]@]host[:port]/db "
                         "or libpq's key=value pairs (host=… dbname=…)"));
    m_url->setMinimumWidth(std::min(360, fontMetrics().averageCharWidth() * 40));
    m_user = new QLineEdit(this);
    m_user->setObjectName(u"user"_s);
    m_user->setPlaceholderText(tr("default"));
    m_password = new QLineEdit(this);
    m_password->setObjectName(u"password"_s);
    m_password->setEchoMode(QLineEdit::Password);
    m_problem = new QLabel(this);
    m_problem->setObjectName(u"problem"_s);
    m_problem->setWordWrap(true);
    m_problem->hide();
    m_remember = new QCheckBox(tr("Keep the password in the system keychain"), this);
    m_remember->setObjectName(u"remember"_s);
    connect(m_remember, &QCheckBox::clicked, this, [this] { m_keepTickedByFill = false; }); // the user's choice now
    m_namespace = new QLineEdit(Settings::instance().keyNamespace(), this);
    m_pattern = new QLineEdit(this);
    m_pattern->setPlaceholderText(tr("namespace:*"));
    m_table = new QLineEdit(this);
    m_table->setObjectName(u"table"_s);
    m_table->setPlaceholderText(tr("idem.records"));
    m_table->setToolTip(tr("PostgreSQL only: a table of idempotency keys another program writes ([schema.]name: "
                           "seed-style idempotency_keys, Brandur Leach's, ...), read along its key every few seconds. "
                           "Purge deletes only rows whose work is over; nothing else is written to it."));
    m_format = new QComboBox(this);
    m_format->setObjectName(u"format"_s);
    m_format->addItem(tr("Each key's own (detected)"), QString());
    for (int f = 0; f < idem::kRecordFormats; ++f) {
        const auto format = static_cast<idem::RecordFormat>(f);
        if (idem::isRedisFormat(format))
            m_format->addItem(QString::fromUtf8(idem::libraryOf(format).data()),
                              QString::fromUtf8(idem::nameOf(format).data()));
    }
    m_format->setToolTip(tr("When a namespace is known to hold one library's records, read every key as that "
                            "library's: what it cannot read is then malformed, not someone else's."));
    m_readFrom = new QComboBox(this);
    m_readFrom->setObjectName(u"read-from"_s);
    m_readFrom->addItem(tr("Primaries"), false);
    m_readFrom->addItem(tr("Replicas (Redis Cluster: one per shard)"), true);
    m_readFrom->setToolTip(tr("On a Redis Cluster, read the keys from one replica of each shard (READONLY), so that "
                              "watching adds no load to the primaries; a shard without a replica is read from its "
                              "primary. Force-fail and purge always go to the primaries. No effect on a single "
                              "server."));
    m_sentinelPassword = new QLineEdit(this);
    m_sentinelPassword->setObjectName(u"sentinel-password"_s);
    m_sentinelPassword->setEchoMode(QLineEdit::Password);
    m_sentinelPassword->setPlaceholderText(tr("the sentinels' own, if they have one"));
    m_sentinelPassword->setToolTip(tr("For redis-sentinel:// URLs: the password of the sentinels themselves (the "
                                      "user and password above are the data nodes'). Never kept."));

    auto* tlsGroup = new QGroupBox(tr("TLS (rediss:// and rediss-sentinel:// URLs)"), this);
    m_tlsBox = tlsGroup;
    QWidget *caRow = nullptr, *certRow = nullptr, *keyRow = nullptr;
    m_tlsCa = fileField(u"tls-ca"_s, tr("the CA bundle that verifies the server"),
                        tr("Certificates (*.pem *.crt *.cer);;All files (*)"), &caRow);
    m_tlsCa->setPlaceholderText(tr("the system's CA certificates"));
    m_tlsCert = fileField(u"tls-cert"_s, tr("the client certificate (servers with tls-auth-clients yes)"),
                          tr("Certificates (*.pem *.crt *.cer);;All files (*)"), &certRow);
    m_tlsCert->setPlaceholderText(tr("none"));
    m_tlsKey = fileField(u"tls-key"_s, tr("the client certificate's private key"),
                         tr("Keys (*.key *.pem);;All files (*)"), &keyRow);
    m_tlsKey->setPlaceholderText(tr("none"));
    m_tlsServerName = new QLineEdit(tlsGroup);
    m_tlsServerName->setObjectName(u"tls-server-name"_s);
    m_tlsServerName->setPlaceholderText(tr("the host in the URL"));
    m_tlsServerName->setToolTip(tr("The name sent as SNI and verified in the server's certificate"));
    m_tlsInsecure = new QCheckBox(tr("Insecure: no verification of the server's certificate"), tlsGroup);
    m_tlsInsecure->setObjectName(u"tls-insecure"_s);
    m_tlsInsecure->setToolTip(tr("Anyone on the path can then read and change what the console sends and shows. "
                                 "The title and the status bar say so while connected. Never kept."));
    auto* tlsForm = new QFormLayout(tlsGroup);
    tlsForm->addRow(tr("CA file:"), caRow);
    tlsForm->addRow(tr("Client certificate:"), certRow);
    tlsForm->addRow(tr("Client key:"), keyRow);
    tlsForm->addRow(tr("Server name:"), m_tlsServerName);
    tlsForm->addRow(m_tlsInsecure);

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(m_problem);
    auto* form = new QFormLayout;
    layout->addLayout(form);
    form->addRow(tr("URL:"), m_url);
    form->addRow(tr("ACL user:"), m_user);
    form->addRow(tr("Password:"), m_password);
    form->addRow(QString(), m_remember);
    form->addRow(tr("Sentinel password:"), m_sentinelPassword);
    form->addRow(tr("Namespace:"), m_namespace);
    form->addRow(tr("Pattern:"), m_pattern);
    form->addRow(tr("Records written by:"), m_format);
    form->addRow(tr("Table:"), m_table);
    form->addRow(tr("Read keys from:"), m_readFrom);
    layout->addWidget(tlsGroup);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    layout->addWidget(buttons);
    connect(m_url, &QComboBox::currentTextChanged, this, &ConnectDialog::urlChosen);
    connect(m_url->lineEdit(), &QLineEdit::editingFinished, this, &ConnectDialog::takePasswordFromUrl);
    urlChosen(m_url->currentText());
}

QString withoutPassword(const QString& url, QString* password)
{
    // the credentials end at the last '@' (on unix://, the last before the socket's path), as
    // idem reads them; without "://" the text is taken as credentials and host all the same
    const qsizetype scheme = url.indexOf(u"://"_s);
    const qsizetype from = scheme >= 0 ? scheme + 3 : 0;
    const bool unixUrl = url.trimmed().startsWith(u"unix://"_s, Qt::CaseInsensitive);
    const qsizetype at = unixUrl ? (url.mid(from).startsWith(u'/') ? -1 : url.lastIndexOf(u'@', url.indexOf(u'/', from)))
                                 : url.lastIndexOf(u'@');
    if (at < from)
        return url;
    const qsizetype colon = url.indexOf(u':', from);
    if (colon < 0 || colon > at)
        return url; // a user name alone
    if (password)
        *password = QUrl::fromPercentEncoding(url.mid(colon + 1, at - colon - 1).toUtf8());
    // "redis://:pw@host" becomes "redis://host", "redis://ops:pw@host" "redis://ops@host"
    return colon == from ? url.left(from) + url.mid(at + 1) : url.left(colon) + url.mid(at);
}

QString shownUrl(const QString& url)
{
    const QString u = url.trimmed();
    if (isPostgresUrl(u))
        return postgresShown(u);
    try {
        return QString::fromStdString(idem::ConnectionOptions::fromUrl(u.toStdString()).describe());
    } catch (const idem::Error&) {
        return withoutPassword(u);
    }
}

// A password typed into a URL moves to the Password field, masked: the URL field, the recent list
// and the window's title never show it. Only the password is cut out: the rest of the URL stays as
// typed (this runs whenever the field loses focus). For PostgreSQL the console hands libpq the
// password apart (postgresConninfo); without one libpq still reads PGPASSWORD and ~/.pgpass. For the account the keychain filled
// the password in for, the typed one replaces the kept one while "keep" stays ticked.
void ConnectDialog::takePasswordFromUrl()
{
    const QString url = m_url->currentText();
    QString password;
    const QString rest = isPostgresUrl(url.trimmed()) ? postgresWithoutPassword(url, &password)
                                                      : withoutPassword(url, &password);
    if (rest == url)
        return;
    m_password->setText(password);
    const bool applying = std::exchange(m_applying, true); // the same connection, its password
    m_url->setCurrentText(rest);                            // elsewhere: no remembered profile over it
    m_applying = applying;
}

void ConnectDialog::accept()
{
    takePasswordFromUrl();
    QDialog::accept();
}

QLineEdit* ConnectDialog::fileField(const QString& name, const QString& what, const QString& filter, QWidget** row)
{
    *row = new QWidget(this);
    auto* edit = new QLineEdit(*row);
    edit->setObjectName(name);
    edit->setToolTip(tr("A PEM file: %1").arg(what));
    auto* pick = new QToolButton(*row);
    pick->setObjectName(name + u"-pick"_s);
    pick->setText(tr("…"));
    pick->setToolTip(tr("Choose %1").arg(what));
    connect(pick, &QToolButton::clicked, this, [this, edit, what, filter] {
        const QString file = QFileDialog::getOpenFileName(this, tr("Choose %1").arg(what), edit->text(), filter);
        if (!file.isEmpty())
            edit->setText(file);
    });
    auto* h = new QHBoxLayout(*row);
    h->setContentsMargins(0, 0, 0, 0);
    h->addWidget(edit, 1);
    h->addWidget(pick);
    return edit;
}

namespace {
bool isTlsUrl(const QString& url)
{
    const QString u = url.trimmed();
    return u.startsWith(u"rediss://"_s, Qt::CaseInsensitive) || u.startsWith(u"rediss-sentinel://"_s, Qt::CaseInsensitive);
}
bool isSentinelUrl(const QString& url)
{
    const QString u = url.trimmed();
    return u.startsWith(u"redis-sentinel://"_s, Qt::CaseInsensitive) ||
           u.startsWith(u"rediss-sentinel://"_s, Qt::CaseInsensitive);
}
} // namespace

void ConnectDialog::updateEnabled()
{
    const bool tls = isTlsUrl(m_url->currentText());
    for (QWidget* w : m_tlsBox->findChildren<QWidget*>())
        w->setEnabled(tls); // the group's title stays readable: it says which URLs these are for
    m_sentinelPassword->setEnabled(isSentinelUrl(m_url->currentText()));
    m_table->setEnabled(isPostgresUrl(m_url->currentText()));
}

void ConnectDialog::urlChosen(const QString& url)
{
    if (!m_filledFor.isEmpty() && shownUrl(url.trimmed()) != m_filledFor)
        dropFilledPassword();
    // a recent URL brings back what it was connected with (a password only from the keychain)
    if (const auto remembered = Settings::instance().rememberedConnection(url.trimmed()); remembered && !m_applying) {
        m_applying = true;
        ConnectionSettings s = *remembered;
        s.password = m_password->text();
        setSettings(s);
        m_applying = false;
    }
    updateEnabled();
    if (!m_credentials || withoutPassword(url.trimmed()) != url.trimmed())
        return; // the keychain is asked for a URL without a password in it, by the account it is kept under
    if (!isPostgresUrl(url.trimmed())) {
        try {
            idem::ConnectionOptions::fromUrl(url.trimmed().toStdString());
        } catch (const idem::Error&) {
            return; // a URL that cannot be read (or is half typed) has no account
        }
    }
    const QString account = shownUrl(url);
    m_credentials->load(account, [this, url](const QString& password, const QString&) { keychainAnswered(url, password); });
}

void ConnectDialog::keychainAnswered(const QString& url, const QString& password)
{
    if (m_url->currentText() != url || !m_password->text().isEmpty() || password.isEmpty())
        return;
    m_password->setText(password);
    m_filledFor = shownUrl(url.trimmed());
    m_filledPassword = password;
    m_keepTickedByFill = m_keepTickedByFill || !m_remember->isChecked();
    m_remember->setChecked(true);
}

void ConnectDialog::dropFilledPassword()
{
    if (m_filledFor.isEmpty())
        return;
    if (m_password->text() == m_filledPassword)
        m_password->clear();
    if (m_keepTickedByFill)
        m_remember->setChecked(false);
    m_filledFor.clear();
    m_filledPassword.clear();
    m_keepTickedByFill = false;
}

ConnectDialog::~ConnectDialog()
{
    for (QObject* child : findChildren<QObject*>())
        QObject::disconnect(child, nullptr, this, nullptr);
}

ConnectionSettings ConnectDialog::settings() const
{
    ConnectionSettings s;
    s.url = m_url->currentText().trimmed();
    s.user = m_user->text();
    s.password = m_password->text();
    s.keyNamespace = m_namespace->text().trimmed().isEmpty() ? u"idempotency"_s : m_namespace->text().trimmed();
    s.pattern = m_pattern->text().trimmed();
    s.format = m_format->currentData().toString();
    s.readFromReplicas = m_readFrom->currentData().toBool();
    if (isPostgresUrl(s.url))
        s.table = m_table->text().trimmed();
    if (isTlsUrl(s.url)) { // TLS settings for a TLS URL only: what is greyed out is not used
        s.tlsCa = m_tlsCa->text().trimmed();
        s.tlsCert = m_tlsCert->text().trimmed();
        s.tlsKey = m_tlsKey->text().trimmed();
        s.tlsServerName = m_tlsServerName->text().trimmed();
        s.tlsInsecure = m_tlsInsecure->isChecked();
    }
    if (isSentinelUrl(s.url))
        s.sentinelPassword = m_sentinelPassword->text();
    return s;
}

bool ConnectDialog::rememberPassword() const { return m_remember->isChecked(); }

void ConnectDialog::setSettings(const ConnectionSettings& s)
{
    m_url->setCurrentText(s.url);
    m_user->setText(s.user);
    m_password->setText(s.password);
    m_namespace->setText(s.keyNamespace);
    m_pattern->setText(s.pattern == u"*"_s ? QString() : s.pattern);
    if (const int i = m_format->findData(s.format); i >= 0)
        m_format->setCurrentIndex(i);
    m_readFrom->setCurrentIndex(s.readFromReplicas ? 1 : 0);
    m_table->setText(s.table);
    m_tlsCa->setText(s.tlsCa);
    m_tlsCert->setText(s.tlsCert);
    m_tlsKey->setText(s.tlsKey);
    m_tlsServerName->setText(s.tlsServerName);
    m_tlsInsecure->setChecked(s.tlsInsecure);
    m_sentinelPassword->setText(s.sentinelPassword);
    takePasswordFromUrl(); // `idem-console --url redis://:pw@…` opens Connect with the password masked
    updateEnabled();
}

QWidget* ConnectDialog::fieldWidget(const QString& field) const
{
    if (field == u"password"_s)
        return m_password;
    if (field == u"user"_s)
        return m_user;
    if (field == u"sentinel-password"_s)
        return m_sentinelPassword;
    if (field == u"tls-ca"_s)
        return m_tlsCa;
    if (field == u"tls-cert"_s)
        return m_tlsCert;
    if (field == u"tls-key"_s)
        return m_tlsKey;
    if (field == u"tls-server-name"_s)
        return m_tlsServerName;
    if (field == u"tls-insecure"_s)
        return m_tlsInsecure;
    if (field == u"read-from"_s)
        return m_readFrom;
    if (field == u"table"_s)
        return m_table;
    return m_url; // "url", "sentinel" (the name after #), and anything else
}

void ConnectDialog::highlight(const QString& field, const QString& message)
{
    m_problem->setText(message);
    m_problem->setStyleSheet(theme::noteStyle(theme::Severity::Error, palette()));
    m_problem->show();
    QWidget* w = fieldWidget(field);
    const theme::BannerColors c = theme::bannerColors(theme::Severity::Error, palette());
    w->setProperty("needsFix", true);
    w->setStyleSheet(u"border: 2px solid %1; border-radius: 3px;"_s.arg(c.border.name()));
    w->setToolTip(message);
    w->setFocus();
    if (auto* edit = qobject_cast<QLineEdit*>(w))
        edit->selectAll();
    setMinimumWidth(std::min(560, fontMetrics().averageCharWidth() * 72));
    adjustSize(); // tall enough for the problem's lines
}
