#include "connectdialog.h"

#include "credentialstore.h"
#include "settings.h"

#include "idem/format/record.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QVBoxLayout>

#include "theme.h"

using namespace Qt::StringLiterals;

ConnectDialog::ConnectDialog(CredentialStore* credentials, QWidget* parent)
    : QDialog(parent), m_credentials(credentials)
{
    setWindowTitle(tr("Connect to Redis"));
    m_url = new QComboBox(this);
    m_url->setEditable(true);
    m_url->addItems(Settings::instance().recentUrls());
    if (m_url->count() == 0)
        m_url->addItem(u"redis://127.0.0.1:6379/0"_s);
    m_url->setObjectName(u"url"_s);
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
    m_namespace = new QLineEdit(Settings::instance().keyNamespace(), this);
    m_pattern = new QLineEdit(this);
    m_pattern->setPlaceholderText(tr("namespace:*"));
    m_format = new QComboBox(this);
    m_format->setObjectName(u"format"_s);
    m_format->addItem(tr("Each key's own (detected)"), QString());
    for (int f = 0; f < idem::kRecordFormats; ++f) {
        const auto format = static_cast<idem::RecordFormat>(f);
        if (format != idem::RecordFormat::Unknown)
            m_format->addItem(QString::fromUtf8(idem::libraryOf(format).data()),
                              QString::fromUtf8(idem::nameOf(format).data()));
    }
    m_format->setToolTip(tr("When a namespace is known to hold one library's records, read every key as that "
                            "library's: what it cannot read is then malformed, not someone else's."));
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(m_problem);
    auto* form = new QFormLayout;
    layout->addLayout(form);
    form->addRow(tr("URL:"), m_url);
    form->addRow(tr("ACL user:"), m_user);
    form->addRow(tr("Password:"), m_password);
    form->addRow(QString(), m_remember);
    form->addRow(tr("Namespace:"), m_namespace);
    form->addRow(tr("Pattern:"), m_pattern);
    form->addRow(tr("Records written by:"), m_format);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    layout->addWidget(buttons);
    connect(m_url, &QComboBox::currentTextChanged, this, &ConnectDialog::urlChosen);
    urlChosen(m_url->currentText());
}

void ConnectDialog::urlChosen(const QString& url)
{
    if (!m_credentials)
        return;
    m_credentials->load(url, [this, url](const QString& password, const QString&) {
        if (m_url->currentText() == url && m_password->text().isEmpty() && !password.isEmpty()) {
            m_password->setText(password);
            m_remember->setChecked(true);
        }
    });
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
}

QWidget* ConnectDialog::fieldWidget(const QString& field) const
{
    if (field == u"password"_s)
        return m_password;
    if (field == u"user"_s)
        return m_user;
    return m_url;
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
