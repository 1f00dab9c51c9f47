#include "storeauditview.h"

#include <QHeaderView>
#include <QLabel>
#include <QTableWidget>
#include <QTimer>
#include <QVBoxLayout>

using namespace Qt::StringLiterals;

namespace {
constexpr int kPollMs = 2000;

QString ago(qint64 ms)
{
    if (ms < 60'000)
        return QObject::tr("%1 s ago").arg(std::max<qint64>(0, ms / 1000));
    if (ms < 3'600'000)
        return QObject::tr("%1 min ago").arg(ms / 60'000);
    if (ms < 86'400'000)
        return QObject::tr("%1 h ago").arg(ms / 3'600'000);
    return QObject::tr("%1 d ago").arg(ms / 86'400'000);
}
} // namespace

StoreAuditView::StoreAuditView(QWidget* parent)
    : QWidget(parent), m_table(new QTableWidget(this)), m_status(new QLabel(this)), m_poll(new QTimer(this))
{
    const QStringList headers = {tr("When (UTC)"), tr("Who"),  tr("Action"), tr("Key"),
                                 tr("Why"),        tr("Tool and host"), tr("Was")};
    m_table->setObjectName(u"storeAudit"_s);
    m_table->setColumnCount(static_cast<int>(headers.size()));
    m_table->setHorizontalHeaderLabels(headers);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->verticalHeader()->hide();
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_status->setText(tr("Reading the store's audit stream…"));
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_status);
    layout->addWidget(m_table);
    m_poll->setInterval(kPollMs);
    connect(m_poll, &QTimer::timeout, this, &StoreAuditView::wanted);
}

QString StoreAuditView::status() const { return m_status->text(); }

void StoreAuditView::showEvent(QShowEvent* event)
{
    QWidget::showEvent(event);
    m_poll->start();
    Q_EMIT wanted();
}

void StoreAuditView::hideEvent(QHideEvent* event)
{
    m_poll->stop();
    QWidget::hideEvent(event);
}

void StoreAuditView::setEntries(const QVector<StoreAuditRow>& rows, qint64 serverNowMs, const QString& error)
{
    if (!error.isEmpty()) { // what was shown stays, marked as not current
        m_status->setText(tr("Not current: %1").arg(error));
        return;
    }
    m_status->setText(tr("%n action(s) of every operator, newest first — read %1", nullptr, static_cast<int>(rows.size()))
                          .arg(QDateTime::fromMSecsSinceEpoch(serverNowMs, Qt::UTC).toString(u"HH:mm:ss"_s)));
    const bool first = m_table->rowCount() == 0;
    m_table->setRowCount(static_cast<int>(rows.size()));
    for (int i = 0; i < rows.size(); ++i) {
        const StoreAuditRow& e = rows[i];
        const QString when = QDateTime::fromMSecsSinceEpoch(e.atMs, Qt::UTC).toString(u"yyyy-MM-dd HH:mm:ss"_s) +
                             u"  ("_s + ago(serverNowMs - e.atMs) + u')';
        const QString cells[] = {when, e.by, e.action, e.key, e.why, e.via, e.was};
        for (int c = 0; c < 7; ++c) {
            auto* item = m_table->item(i, c);
            if (!item) {
                item = new QTableWidgetItem;
                m_table->setItem(i, c, item);
            }
            item->setText(cells[c]);
            item->setToolTip(cells[c]);
        }
    }
    if (first && !rows.isEmpty())
        m_table->resizeColumnsToContents();
}
