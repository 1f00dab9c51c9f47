#include "confirmdialog.h"

#include "theme.h"

#include <QCheckBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QVBoxLayout>

using namespace Qt::StringLiterals;

ConfirmDialog::ConfirmDialog(const Request& request, QWidget* parent) : QDialog(parent), m_request(request)
{
    setObjectName(u"confirmDialog"_s);
    const bool forceFail = request.kind == Kind::ForceFail;
    setWindowTitle(forceFail ? tr("Force-fail keys") : tr("Purge keys"));
    const auto counts = [](const QMap<QString, int>& m) {
        QStringList parts;
        for (auto it = m.cbegin(); it != m.cend(); ++it)
            parts << u"%1 %2"_s.arg(it.value()).arg(it.key());
        return parts.join(u", "_s);
    };
    const QString what = request.keys == 1 ? tr("1 key") : tr("%1 keys").arg(request.keys);
    auto* layout = new QVBoxLayout(this);
    const auto add = [&](const QString& text, const QString& name, const QString& style = {}) {
        auto* l = new QLabel(text, this);
        l->setObjectName(name);
        l->setWordWrap(true);
        l->setTextInteractionFlags(Qt::TextSelectableByMouse);
        if (!style.isEmpty())
            l->setStyleSheet(style);
        layout->addWidget(l);
        m_said << text;
        return l;
    };

    auto* heading = add((forceFail ? tr("Force-fail %1 on %2") : tr("Purge %1 on %2")).arg(what, request.server),
                        u"heading"_s);
    QFont bold = heading->font();
    bold.setBold(true);
    heading->setFont(bold);
    QString sample = request.sample.join(u", "_s);
    if (request.keys > request.sample.size())
        sample += tr(" … and %1 more").arg(request.keys - request.sample.size());
    add(tr("Keys: %1").arg(sample), u"sample"_s);
    add(tr("By state: %1.\nWritten by: %2.").arg(counts(request.byState), counts(request.byFormat)), u"counts"_s);
    const bool idemRecords = request.byFormat.contains(u"idem"_s);
    const bool foreignFormats =
        request.byFormat.size() > 1 || (request.byFormat.size() == 1 && !idemRecords);
    const QString released = tr("released: deleted if unchanged, as that library does when its handler fails, so "
                                "its next call runs.");
    if (forceFail && !foreignFormats)
        add(tr("Each record becomes FAILED; its owner's late completion will be refused."), u"effect"_s);
    else if (forceFail && !idemRecords)
        add(tr("Each is another library's record, ") + released, u"effect"_s);
    else if (forceFail)
        add(tr("Each of idem's records becomes FAILED; its owner's late completion will be refused. Another "
               "library's record is ") + released,
            u"effect"_s);
    else
        add(tr("Each is deleted with UNLINK, but only if it is unchanged since it was read; its id can run again."),
            u"effect"_s);
    if (foreignFormats)
        add(tr("idem never writes its own fields into another library's record."), u"foreignFormats"_s);
    if (request.leftOut > 0)
        add(tr("%n key(s) that are not records (malformed, foreign, unknown) are left out: select them by hand to "
               "purge them.", nullptr, request.leftOut),
            u"leftOut"_s);
    const QString warning = theme::noteStyle(theme::Severity::Error, palette());
    if (request.liveLocks > 0)
        add(u"⚠ "_s + tr("%n live lock(s): the worker holding it may still be running, and a duplicate delivered now "
                          "would run beside it.", nullptr, request.liveLocks),
            u"liveWarning"_s, warning);
    if (request.notRecords > 0)
        add(u"⚠ "_s + tr("%n key(s) idem cannot read as a record: it cannot tell whether their writer still uses "
                          "them (a lease or a running job under names idem does not read). Inspect them first.",
                          nullptr, request.notRecords),
            u"notRecordsWarning"_s, warning);
    if (request.completed > 0 && !forceFail)
        add(u"⚠ "_s + tr("%n COMPLETED record(s): the stored result goes, and the next delivery of the id runs "
                          "the work again.", nullptr, request.completed),
            u"completedWarning"_s, warning);

    m_reason = new QLineEdit(this);
    m_reason->setObjectName(u"reason"_s);
    m_reason->setPlaceholderText(tr("why (kept in the audit trail)"));
    auto* form = new QFormLayout;
    form->addRow(tr("Reason:"), m_reason);
    if (forceFail) {
        m_terminal = new QCheckBox(tr("Terminal: duplicates get the failure back instead of running again"), this);
        m_terminal->setObjectName(u"terminal"_s);
        // only idem's records keep a failure: another library's would be left as it is
        if (!idemRecords) {
            m_terminal->setEnabled(false);
            m_terminal->setToolTip(tr("No idem record is selected: another library's record keeps no failure, it "
                                      "is released"));
        } else if (foreignFormats) {
            m_terminal->setToolTip(tr("For idem's records; with it, other libraries' records are left as they are"));
        }
        form->addRow(QString(), m_terminal);
    }
    if (request.keys > 1) { // a bulk action: its size typed, not just clicked through
        m_typed = new QLineEdit(this);
        m_typed->setObjectName(u"typedCount"_s);
        m_typed->setPlaceholderText(tr("type %1").arg(request.keys));
        form->addRow(tr("Type %1 to confirm:").arg(request.keys), m_typed);
        connect(m_typed, &QLineEdit::textChanged, this, &ConfirmDialog::updateOk);
    }
    layout->addLayout(form);
    m_buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    m_buttons->button(QDialogButtonBox::Ok)->setText(forceFail ? tr("Force-fail %1").arg(what) : tr("Purge %1").arg(what));
    m_buttons->button(QDialogButtonBox::Cancel)->setDefault(true);
    connect(m_reason, &QLineEdit::textChanged, this, &ConfirmDialog::updateOk);
    connect(m_buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(m_buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    layout->addWidget(m_buttons);
    updateOk();
    setMinimumWidth(std::min(560, fontMetrics().averageCharWidth() * 70));
}

void ConfirmDialog::updateOk()
{
    const bool typed = !m_typed || m_typed->text().trimmed() == QString::number(m_request.keys);
    m_buttons->button(QDialogButtonBox::Ok)->setEnabled(!m_reason->text().trimmed().isEmpty() && typed);
}

QString ConfirmDialog::summary() const { return m_said.join(u'\n'); }
QString ConfirmDialog::reason() const { return m_reason->text().trimmed(); }
bool ConfirmDialog::terminal() const { return m_terminal && m_terminal->isChecked(); }
