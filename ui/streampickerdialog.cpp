#include "streampickerdialog.h"

#include <QDialogButtonBox>
#include <QFormLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>

using namespace Qt::StringLiterals;

StreamPickerDialog::StreamPickerDialog(const QString& server, QWidget* parent) : QDialog(parent)
{
    setObjectName(u"streamPicker"_s);
    setWindowTitle(tr("Capture from a stream"));
    m_status = new QLabel(tr("Listing the streams of %1…").arg(server), this);
    m_status->setObjectName(u"pickerStatus"_s);
    m_status->setWordWrap(true);
    m_table = new QTableWidget(0, 2, this);
    m_table->setObjectName(u"streams"_s);
    m_table->setHorizontalHeaderLabels({tr("stream"), tr("entries")});
    m_table->verticalHeader()->hide();
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
    m_table->horizontalHeader()->setSectionResizeMode(1, QHeaderView::ResizeToContents);
    m_idField = new QLineEdit(u"id"_s, this);
    m_idField->setObjectName(u"idField"_s);
    m_payloadField = new QLineEdit(u"payload"_s, this);
    m_payloadField->setObjectName(u"payloadField"_s);
    m_count = new QSpinBox(this);
    m_count->setObjectName(u"maxEntries"_s);
    m_count->setRange(0, 10'000'000);
    m_count->setValue(100'000);
    m_count->setSpecialValueText(tr("all"));
    m_count->setToolTip(tr("At most this many entries, from the oldest (0: all of them)"));
    auto* note = new QLabel(tr("Read-only: the stream is read with XRANGE, page by page; no consumer group is "
                               "created and nothing is acknowledged or written."),
                            this);
    note->setWordWrap(true);
    m_buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    m_buttons->button(QDialogButtonBox::Ok)->setText(tr("Capture"));
    auto* form = new QFormLayout;
    form->addRow(tr("Event id field:"), m_idField);
    form->addRow(tr("Payload field:"), m_payloadField);
    form->addRow(tr("Entries at most:"), m_count);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(m_status);
    layout->addWidget(m_table, 1);
    layout->addLayout(form);
    layout->addWidget(note);
    layout->addWidget(m_buttons);
    connect(m_buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(m_buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(m_table, &QTableWidget::itemSelectionChanged, this, &StreamPickerDialog::updateOk);
    connect(m_table, &QTableWidget::cellDoubleClicked, this, [this] {
        if (m_buttons->button(QDialogButtonBox::Ok)->isEnabled())
            accept();
    });
    for (QLineEdit* e : {m_idField, m_payloadField})
        connect(e, &QLineEdit::textChanged, this, &StreamPickerDialog::updateOk);
    updateOk();
    resize(480, 420);
}

void StreamPickerDialog::setStreams(const QVector<StreamEntry>& streams)
{
    m_status->setText(streams.isEmpty() ? tr("This server has no streams.")
                                        : tr("%n stream(s). Pick the one to capture:", nullptr, int(streams.size())));
    m_table->setRowCount(int(streams.size()));
    for (int i = 0; i < streams.size(); ++i) {
        m_table->setItem(i, 0, new QTableWidgetItem(streams[i].key));
        auto* n = new QTableWidgetItem(streams[i].length < 0 ? tr("gone") : QString::number(streams[i].length));
        n->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
        m_table->setItem(i, 1, n);
    }
    if (!streams.isEmpty())
        m_table->selectRow(0);
    updateOk();
}

void StreamPickerDialog::setFailed(const QString& message)
{
    m_status->setText(tr("The streams could not be listed: %1").arg(message));
}

void StreamPickerDialog::updateOk()
{
    m_buttons->button(QDialogButtonBox::Ok)->setEnabled(!m_table->selectedItems().isEmpty() &&
                                                        !m_idField->text().isEmpty() &&
                                                        !m_payloadField->text().isEmpty());
}

idem::CaptureOptions StreamPickerDialog::options() const
{
    idem::CaptureOptions o;
    const auto rows = m_table->selectionModel()->selectedRows();
    if (!rows.isEmpty())
        o.stream = m_table->item(rows.front().row(), 0)->text().toStdString();
    o.idField = m_idField->text().toStdString();
    o.payloadField = m_payloadField->text().toStdString();
    o.count = static_cast<std::size_t>(m_count->value());
    return o;
}
