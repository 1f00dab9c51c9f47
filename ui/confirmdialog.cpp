#include "confirmdialog.h"

#include <QCheckBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QVBoxLayout>

using namespace Qt::StringLiterals;

ConfirmDialog::ConfirmDialog(Kind kind, int keys, const QMap<QString, int>& byState, const QMap<QString, int>& byFormat,
                             int leftOut, const QStringList& warnings, QWidget* parent)
    : QDialog(parent), m_kind(kind)
{
    setObjectName(u"confirmDialog"_s);
    setWindowTitle(kind == Kind::ForceFail ? tr("Force-fail keys") : tr("Purge keys"));
    const auto counts = [](const QMap<QString, int>& m) {
        QStringList parts;
        for (auto it = m.cbegin(); it != m.cend(); ++it)
            parts << u"%1 %2"_s.arg(it.value()).arg(it.key());
        return parts.join(u", "_s);
    };
    const QString what = keys == 1 ? tr("1 key") : tr("%1 keys").arg(keys);
    const bool foreignFormats = byFormat.size() > 1 || (byFormat.size() == 1 && !byFormat.contains(u"idem"_s));
    QString text;
    if (kind == Kind::ForceFail)
        text = tr("Force-fail %1: %2.\nWritten by: %3.\nEach of idem's records becomes FAILED; its owner's late "
                  "completion will be refused. Another library's record is released instead: deleted if unchanged, "
                  "as that library does when its handler fails, so its next call runs.")
                   .arg(what, counts(byState), counts(byFormat));
    else
        text = tr("Purge %1: %2.\nWritten by: %3.\nEach is deleted with UNLINK, but only if it is unchanged since "
                  "it was read; its id can run again.")
                   .arg(what, counts(byState), counts(byFormat));
    if (foreignFormats)
        text += tr("\nidem never writes its own fields into another library's record.");
    if (leftOut > 0)
        text += tr("\n%n key(s) that are not records (malformed, foreign, unknown) are left out: select them by "
                   "hand to purge them.", nullptr, leftOut);
    for (const QString& w : warnings)
        text += u"\n⚠ "_s + w;
    m_summary = new QLabel(text, this);
    m_summary->setObjectName(u"summary"_s);
    m_summary->setWordWrap(true);
    m_reason = new QLineEdit(this);
    m_reason->setObjectName(u"reason"_s);
    m_reason->setPlaceholderText(tr("why (kept in the audit trail)"));
    auto* form = new QFormLayout;
    form->addRow(tr("Reason:"), m_reason);
    if (kind == Kind::ForceFail) {
        m_terminal = new QCheckBox(tr("Terminal: duplicates get the failure back instead of running again"), this);
        m_terminal->setObjectName(u"terminal"_s);
        form->addRow(QString(), m_terminal);
    }
    m_buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    m_buttons->button(QDialogButtonBox::Ok)->setText(kind == Kind::ForceFail ? tr("Force-fail") : tr("Purge"));
    m_buttons->button(QDialogButtonBox::Ok)->setEnabled(false);
    connect(m_reason, &QLineEdit::textChanged, this, [this](const QString& t) {
        m_buttons->button(QDialogButtonBox::Ok)->setEnabled(!t.trimmed().isEmpty());
    });
    connect(m_buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(m_buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(m_summary);
    layout->addLayout(form);
    layout->addWidget(m_buttons);
}

QString ConfirmDialog::summary() const { return m_summary->text(); }
QString ConfirmDialog::reason() const { return m_reason->text().trimmed(); }
bool ConfirmDialog::terminal() const { return m_terminal && m_terminal->isChecked(); }
