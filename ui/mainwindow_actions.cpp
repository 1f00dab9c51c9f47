// MainWindow: the operator actions (force-fail, purge) on the selection or the filtered rows,
// each through one guarded path with a confirmation that names what it touches.
#include "mainwindow.h"

#include "confirmdialog.h"
#include "elidedlabel.h"
#include "frozentableview.h"
#include "historycontroller.h"
#include "inspectorpanel.h"
#include "keyfilterproxy.h"
#include "keytablemodel.h"
#include "logging.h"
#include "racelabwidget.h"
#include "replaywidget.h"
#include "settings.h"

#include "idem/errors.h"

#include <QAction>
#include <QDateTime>
#include <QMessageBox>
#include <QStatusBar>
#include <QTableView>
#include <unistd.h>

using namespace Qt::StringLiterals;

namespace {

QString whoAmI()
{
    const QString user = qEnvironmentVariable("USER", u"operator"_s);
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    return user + u'@' + QString::fromLocal8Bit(host) + u" (idem-console)"_s;
}

} // namespace

void MainWindow::updateActions()
{
    const bool live = freshness() == Freshness::Live;
    const QString lock = readOnlyLock();
    const bool readOnly = m_readOnly || !lock.isEmpty();
    const bool rewound = m_history->isRewound();
    const bool can = live && !readOnly && !rewound;
    const QString why = rewound    ? tr("Rewound: the table shows the past; press Live to act on keys")
                        : readOnly ? tr("Read-only: %1").arg(lock.isEmpty() ? tr("switched on (Keys ▸ Read-only)") : lock)
                        : !live  ? tr("Not connected: force-fail and purge are off until the server answers again")
                                 : QString();
    for (QAction* a : {m_forceFail, m_purge, m_forceFailAll, m_purgeAll}) {
        a->setEnabled(can);
        a->setToolTip(can ? a->text().remove(u'&') : why);
    }
    if (can && !m_table->selectionModel()->hasSelection()) { // (their shortcuts would only say so)
        m_forceFail->setEnabled(false);
        m_forceFail->setToolTip(tr("Select the keys to force-fail first"));
        m_purge->setEnabled(false);
        m_purge->setToolTip(tr("Select the keys to purge first"));
    } else if (can && !selectionHasForceFailable()) { // (it would only say there is nothing to take)
        m_forceFail->setEnabled(false);
        m_forceFail->setToolTip(tr("None of the selected keys can be force-failed: only STARTED and FAILED records can"));
    }
    // another program's table: the word it writes for a failure is its own, so idem writes none
    const QString table = isPostgresUrl(m_options.connection.url) ? m_options.connection.table : QString();
    const QString noForceFail =
        tr("Table %1 is another program's: the word it writes for a failure is its own. Purge a row whose work is "
           "over instead (its next request runs again)").arg(table);
    if (!table.isEmpty())
        for (QAction* a : {m_forceFail, m_forceFailAll}) {
            a->setEnabled(false);
            a->setToolTip(noForceFail);
        }
    m_readOnlyAction->setChecked(readOnly);
    m_readOnlyAction->setEnabled(lock.isEmpty()); // --read-only, or a user who may not write: it stays
    m_readOnlyAction->setText(lock.isEmpty() ? tr("&Read-only") : tr("&Read-only (locked)"));
    m_readOnlyAction->setToolTip(lock.isEmpty() ? tr("Switch force-fail and purge off for this session")
                                                : tr("Read-only: %1").arg(lock));
    m_modeLabel->setText(readOnly ? why : QString()); // (no emoji: a desktop without such a font shows a box)
    const int r = m_inspector->key().isEmpty() ? -1 : m_model->rowOfKey(m_inspector->key());
    const bool failable = r >= 0 && m_model->row(r).forceFailable(m_model->serverNowMs());
    m_inspector->setActions(can && failable && table.isEmpty(), can && r >= 0,
                            !can ? why : !table.isEmpty() ? noForceFail
                                                          : tr("Only STARTED and FAILED records can be force-failed"));
    m_raceLab->setConnectedWritable(live && !readOnly,
                                    readOnly ? why : !live ? tr("not connected") : QString());
    m_replay->setConnectedWritable(live && !readOnly, readOnly ? why : !live ? tr("not connected") : QString());
}

bool MainWindow::selectionHasForceFailable() const
{
    // by range, stopping at the first: a selection of a million rows is not listed row by row
    const qint64 now = m_model->serverNowMs();
    for (const QItemSelectionRange& range : m_table->selectionModel()->selection())
        for (int p = range.top(); p <= range.bottom(); ++p)
            if (m_model->row(m_proxy->mapToSource(m_proxy->index(p, 0)).row()).forceFailable(now))
                return true;
    return false;
}

QVector<KeyRow> MainWindow::rowsFor(bool selectedOnly) const
{
    QVector<KeyRow> rows;
    if (selectedOnly) {
        for (const QModelIndex& i : m_table->selectionModel()->selectedRows())
            rows.push_back(m_model->row(m_proxy->mapToSource(i).row()));
    } else {
        for (int r = 0; r < m_proxy->rowCount(); ++r)
            rows.push_back(m_model->row(m_proxy->mapToSource(m_proxy->index(r, 0)).row()));
    }
    return rows;
}

void MainWindow::forceFailSelected() { runAction(true, rowsFor(true), true); }
void MainWindow::purgeSelected() { runAction(false, rowsFor(true), true); }
void MainWindow::forceFailFiltered() { runAction(true, rowsFor(false), false); }
void MainWindow::purgeFiltered() { runAction(false, rowsFor(false), false); }

void MainWindow::actOnKey(bool forceFail, const QString& key)
{
    const int r = m_model->rowOfKey(key);
    if (r < 0) {
        noteAction(tr("%1 is no longer in the table").arg(key));
        return;
    }
    runAction(forceFail, {m_model->row(r)}, true);
}

void MainWindow::noteAction(const QString& text)
{
    const QString line = QTime::currentTime().toString(u"HH:mm:ss "_s) + text;
    m_noteLabel->setText(line);
    m_noteLabel->setToolTip(line); // whole, when the status bar elides it
    m_noteLabel->show();
    m_noteTimer->start();
}

QString MainWindow::actionNote() const { return m_noteLabel->text(); }

void MainWindow::runAction(bool forceFail, const QVector<KeyRow>& rows, bool selection)
{
    if (freshness() != Freshness::Live) { // checked before asking anything
        noteAction(tr("Not connected to %1: force-fail and purge wait until it answers again").arg(m_server));
        return;
    }
    if (m_readOnly || !readOnlyLock().isEmpty()) {
        noteAction(tr("Read-only: operator actions are disabled"));
        return;
    }
    if (rows.isEmpty()) {
        noteAction(tr("No keys selected"));
        return;
    }
    if (forceFail && !m_options.connection.table.isEmpty() && isPostgresUrl(m_options.connection.url)) {
        noteAction(m_forceFail->toolTip()); // (the action is off: a shortcut or the inspector got here)
        return;
    }
    const qint64 now = m_model->serverNowMs();
    ConfirmDialog::Request request;
    request.kind = forceFail ? ConfirmDialog::Kind::ForceFail : ConfirmDialog::Kind::Purge;
    request.server = m_server + (m_options.titleNote.isEmpty() ? QString() : u" ("_s + m_options.titleNote + u')');
    QVector<KeyRow> target;
    for (const KeyRow& r : rows) {
        const idem::RecordState state = r.stateAt(now);
        if (forceFail && !r.forceFailable(now))
            continue;
        if (idem::notARecord(state) && !selection) {
            ++request.leftOut; // keys idem cannot read are never taken by a filter: select them by hand
            continue;
        }
        QString s = QString::fromUtf8(idem::nameOf(state).data());
        if (r.isStale(now))
            s = u"stale STARTED"_s;
        ++request.byState[s];
        ++request.byFormat[QString::fromUtf8(idem::nameOf(r.format).data())];
        request.liveLocks += r.mayBeLive(now) ? 1 : 0;
        request.notRecords += idem::notARecord(state) && !r.mayBeLive(now) && !r.lab() ? 1 : 0;
        request.completed += state == idem::RecordState::Completed ? 1 : 0;
        if (request.sample.size() < ConfirmDialog::kSampleSize)
            request.sample << shownText(m_model->idOf(r));
        target.push_back(r);
    }
    if (target.isEmpty()) {
        noteAction(forceFail ? tr("Nothing to force-fail: only STARTED and FAILED records can be")
                             : tr("Nothing to purge: keys that are not records are only purged when selected by hand"));
        return;
    }
    request.keys = static_cast<int>(target.size());
    ConfirmDialog dialog(request, this);
    if (dialog.exec() != QDialog::Accepted)
        return;
    if (freshness() != Freshness::Live) { // the connection went while the dialog was open
        noteAction(tr("Not done: the connection to %1 went while the confirmation was open").arg(m_server));
        return;
    }
    const QString reason = dialog.reason();
    const bool terminal = dialog.terminal();
    const QString who = whoAmI();

    AuditEntry entry;
    entry.when = QDateTime::currentDateTime();
    entry.who = who;
    entry.action = forceFail ? (terminal ? u"force-fail (terminal)"_s : u"force-fail (retryable)"_s) : u"purge"_s;
    entry.server = m_server;
    entry.why = reason;
    entry.keys = static_cast<int>(target.size());
    QStringList sample;
    for (int i = 0; i < std::min<int>(5, static_cast<int>(target.size())); ++i)
        sample << shownText(m_model->idOf(target[i]));
    entry.sample = sample.join(u", "_s) + (target.size() > 5 ? u", …"_s : QString());
    // the entry is written when the worker reports what changed
    auto conn = std::make_shared<QMetaObject::Connection>();
    *conn = connect(this, &MainWindow::actionCompleted, this, [this, entry, conn](const ActionResult& r) mutable {
        disconnect(*conn);
        entry.changed = r.changed;
        entry.error = r.error;
        if (!m_audit->append(entry))
            QMessageBox::warning(this, tr("Audit trail"),
                                 tr("Could not write the audit trail %1: %2").arg(m_audit->path(), m_audit->lastError()));
    });
    if (forceFail)
        QMetaObject::invokeMethod(m_worker, [w = m_worker, target, reason, terminal, who] {
            w->forceFail(target, reason, terminal, who);
        });
    else
        QMetaObject::invokeMethod(m_worker, [w = m_worker, target, reason, who] { w->purge(target, reason, who); });
}
