// ConsoleWorker: the operator actions (force-fail, purge) through the guarded paths, on the
// worker thread.
#include "consoleworker.h"

#include "logging.h"
#include "qstd.h"
#include "responseview.h"

#include "idem/duration.h"
#include "idem/errors.h"
#include "idem/monitor/keyspacelistener.h"
#include "idem/monitor/monitor.h"
#include "idem/monitor/scanner.h"
#include "idem/engine/store.h"
#include "idem/format/record.h"
#include "idem/pg/pgstore.h"
#include "idem/pg/pgtable.h"
#include "idem/pg/pgwatch.h"

#include <QDateTime>
#include <QLocale>

using namespace Qt::StringLiterals;

ActionResult ConsoleWorker::startAction(const QString& action, const QVector<KeyRow>& rows, bool connected)
{
    ActionResult result;
    result.action = action;
    result.requested = static_cast<int>(rows.size());
    for (const KeyRow& r : rows)
        result.keys << r.keyText();
    if (!connected) {
        result.error = u"not connected"_s;
        Q_EMIT actionDone(result); // answered at once: nothing was tried
    }
    return result;
}

void ConsoleWorker::noteRefusedWrite(const QString& error)
{
    // a script's command refused inside EVALSHA says so without the NOPERM code
    if (error.contains(u"NOPERM"_s) || error.contains(u"user executing the script can't"_s))
        Q_EMIT writeAccess(false, u"the server refused a change: %1; the operator role has it: idemctl acl operator"_s.arg(
                                      error.section(u": "_s, -1)));
    else if (error.contains(u"READONLY"_s))
        Q_EMIT writeAccess(false, u"this server is a read-only replica"_s);
}

void ConsoleWorker::forceFail(const QVector<KeyRow>& rows, const QString& reason, bool terminal, const QString& who)
{
    if (onPostgres()) {
        pgAction(u"force-fail"_s, rows, reason, terminal, who);
        return;
    }
    ActionResult result = startAction(u"force-fail"_s, rows, m_store != nullptr);
    if (!result.error.isEmpty())
        return;
    std::vector<std::string> keys;
    try {
        std::vector<idem::Record> release; // other libraries' records: deleted as their library does on failure
        for (const KeyRow& row : rows) {
            const std::string id = idem::idFromKey(row.key.toStdString(), m_settings.keyNamespace.toStdString());
            if (row.format != idem::RecordFormat::Native) {
                // never idem's fields in another library's record; none of them keeps a failure
                if (!terminal && row.state == idem::RecordState::Started)
                    release.push_back(row.toGuardRecord());
                else
                    ++result.skipped;
                keys.push_back(row.key.toStdString());
                continue;
            }
            if (id.empty()) {
                ++result.skipped;
                continue;
            }
            const auto r = m_store->forceFail(id, reason.toStdString(), terminal, who.toStdString());
            if (r.status == idem::AdminStatus::Ok)
                ++result.changed;
            else
                ++result.skipped;
            keys.push_back(row.key.toStdString());
        }
        if (!release.empty()) {
            const auto n = static_cast<int>(m_scanner->unlinkIfUnchanged(
                release, idem::Actor{who.toStdString(), "force-fail (released): " + reason.toStdString()}));
            result.changed += n;
            result.skipped += static_cast<int>(release.size()) - n;
        }
    } catch (const idem::Error& e) {
        result.error = qs(e.what());
        noteRefusedWrite(result.error);
    }
    Q_EMIT actionDone(result);
    for (const auto& k : keys)
        m_dirty.insert(qs(k));
    flushDirty();
}

void ConsoleWorker::purge(const QVector<KeyRow>& rows, const QString& reason, const QString& who)
{
    if (onPostgres()) {
        pgAction(u"purge"_s, rows, reason, false, who);
        return;
    }
    ActionResult result = startAction(u"purge"_s, rows, m_monitor != nullptr);
    if (!result.error.isEmpty())
        return;
    try {
        const idem::Actor by{who.toStdString(), reason.toStdString()}; // kept in the store with each purge
        std::vector<idem::Record> batch;
        for (qsizetype i = 0; i < rows.size(); ++i) {
            batch.push_back(rows[i].toGuardRecord());
            if (batch.size() == 500 || i + 1 == rows.size()) {
                result.changed += static_cast<int>(m_scanner->unlinkIfUnchanged(batch, by));
                batch.clear();
            }
        }
        result.skipped = result.requested - result.changed;
    } catch (const idem::Error& e) {
        result.error = qs(e.what());
        noteRefusedWrite(result.error);
    }
    Q_EMIT actionDone(result);
    for (const KeyRow& row : rows)
        m_dirty.insert(row.keyText());
    flushDirty();
}
