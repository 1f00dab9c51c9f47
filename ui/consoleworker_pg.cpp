// ConsoleWorker on a PostgreSQL store: what differs from Redis. Pages of idem.records come in id
// order (keyset pagination, never OFFSET); live updates are the ids schema v4's triggers NOTIFY on
// channel idem_records, read on a dedicated connection whose socket a QSocketNotifier watches in
// this thread's event loop; force-fail and purge are idem.force_fail and idem.purge.
// With a table (ConnectionSettings::table) the rows are another program's, read by idem::PgTable
// along the table's key and read again on the rescan interval (idem adds no trigger to a table
// it did not create); purge is PgTable's guarded delete, force-fail is refused. Nothing of schema
// idem is touched then: no PgWatch (its LISTEN and its row in idem.watchers would make idem's
// triggers notify, which serialises the commits of every service using idem in that database,
// and a role granted only the table's SELECT and DELETE may not read schema idem at all).
#include "consoleworker.h"

#include "logging.h"
#include "qstd.h"

#include "idem/errors.h"
#include "idem/format/record.h"
#include "idem/pg/pgstore.h"
#include "idem/pg/pgtable.h"
#include "idem/pg/pgwatch.h"

#include <QRegularExpression>
#include <QSocketNotifier>
#include <QUrl>

using namespace Qt::StringLiterals;

namespace {
constexpr int kPgResyncMs = 60'000; // a full read now and then, as with keyspace notifications
} // namespace

bool isPostgresUrl(const QString& url)
{
    const QString u = url.trimmed();
    if (u.startsWith(u"postgresql://"_s, Qt::CaseInsensitive) || u.startsWith(u"postgres://"_s, Qt::CaseInsensitive))
        return true;
    // libpq's key=value form: no scheme, and a known key first
    static const QRegularExpression kv(u"^(host|hostaddr|port|dbname|user|service)\\s*="_s);
    return !u.contains(u"://"_s) && kv.match(u).hasMatch();
}

namespace {

// A URI's password as libpq reads it: the user info ends at the first '@' before any '/' (a '?'
// does not end it), the user name at its first ':'. The scheme in any case: libpq takes only
// lower case, but what is shown of a URL it refuses must not show its password either.
const QRegularExpression& uriPassword()
{
    static const QRegularExpression re(u"^(postgres(?:ql)?://[^:@/]*):([^@/]*)@"_s,
                                       QRegularExpression::CaseInsensitiveOption);
    return re;
}

// key=value: password=secret or password='it\\'s' (libpq: a backslash escapes the next character,
// quoted or not: password=a\\ b is "a b")
const QRegularExpression& kvPassword()
{
    static const QRegularExpression re(u"(^|\\s)password\\s*=\\s*('((?:[^'\\\\]|\\\\.)*)'|((?:\\\\.|\\S)+))"_s,
                                       QRegularExpression::CaseInsensitiveOption);
    return re;
}

} // namespace

QString postgresShown(const QString& url)
{
    QString u = url.trimmed();
    if (const auto m = uriPassword().match(u); m.hasMatch()) {
        u = m.captured(1) + u'@' + u.mid(m.capturedEnd());
    } else {
        // a user info libpq cannot read (a '/' in the password): everything from the user name's
        // ':' to the last '@' goes (too much hidden is harmless, a password shown is not)
        static const QRegularExpression odd(u"^(postgres(?:ql)?://[^:@/]*):.*@"_s,
                                            QRegularExpression::CaseInsensitiveOption);
        if (const auto o = odd.match(u); o.hasMatch())
            u = o.captured(1) + u":…@"_s + u.mid(o.capturedEnd());
    }
    static const QRegularExpression queryPassword(u"([?&]password=)[^&]*"_s, QRegularExpression::CaseInsensitiveOption);
    u.replace(queryPassword, u"\\1…"_s);
    u.replace(kvPassword(), u"\\1password=…"_s);
    return u;
}

QString postgresWithoutPassword(const QString& url, QString* password)
{
    const QString u = url.trimmed();
    if (const auto m = uriPassword().match(u); m.hasMatch()) {
        if (password)
            *password = QUrl::fromPercentEncoding(m.captured(2).toUtf8());
        return m.captured(1) + u'@' + u.mid(m.capturedEnd());
    }
    if (isPostgresUrl(u) && !u.contains(u"://"_s))
        if (const auto m = kvPassword().match(u); m.hasMatch()) {
            if (password) {
                QString value = m.capturedLength(4) ? m.captured(4) : m.captured(3);
                value.replace(QRegularExpression(u"\\\\(.)"_s), u"\\1"_s);
                *password = value;
            }
            return QString(u.left(m.capturedStart()) + m.captured(1) + u.mid(m.capturedEnd())).trimmed();
        }
    return url;
}

QString postgresConninfo(const QString& url, const QString& password)
{
    const QString u = url.trimmed();
    static const QRegularExpression inQuery(u"[?&]password="_s);
    if (password.isEmpty() || postgresWithoutPassword(u, nullptr) != u || u.contains(inQuery))
        return u; // none given apart, or the URL's own
    if (u.contains(u"://"_s))
        return u + (u.contains(u'?') ? u'&' : u'?') + u"password="_s + QString::fromLatin1(QUrl::toPercentEncoding(password));
    QString quoted = password;
    quoted.replace(u'\\', u"\\\\"_s).replace(u'\'', u"\\'"_s);
    return u + u" password='"_s + quoted + u'\'';
}

void ConsoleWorker::pgConnectNow()
{
    const QString shown = postgresShown(m_settings.url);
    const QString table = m_settings.table.trimmed();
    m_link = Link::Connecting;
    Q_EMIT linkChanged(m_link, u"connecting to %1"_s.arg(shown));
    QString where = shown;
    try {
        const std::string conninfo = postgresConninfo(m_settings.url, m_settings.password).toStdString();
        std::unique_ptr<idem::PgWatch> watch;
        std::unique_ptr<idem::PgTable> other;
        std::unique_ptr<idem::PgStore> store;
        if (!table.isEmpty()) {
            // its columns, or ConfigError; one connection, the table's only
            other = std::make_unique<idem::PgTable>(conninfo, table.toStdString(), 15 * 60'000, 2);
            where = qs(other->describe());
        } else {
            watch = std::make_unique<idem::PgWatch>(conninfo, 2);
            where = qs(watch->describe());
            idem::PgStoreOptions po;
            po.connectTimeoutSeconds = 2;
            po.maxIdleConnections = 1;
            store = std::make_unique<idem::PgStore>(conninfo, po);
        }
        {
            std::lock_guard lock(m_ioMutex); // what abortIo() reaches
            m_pgWatch = std::move(watch);
            m_pgTable = std::move(other);
            m_pg = std::move(store);
        }
        if (m_pg)
            m_pg->page({}, 1); // the schema is there (ConfigError if not)
        else
            m_pgTable->page({}, 1, true); // the role may read the table (PermissionError if not)
    } catch (const idem::Error& e) {
        pgFailed(e);
        return;
    }
    m_retryDelayMs = 500;
    m_link = Link::Connected;
    m_endpoint = where;
    m_nodeIndex.clear();
    m_nodeNames.clear();
    Q_EMIT nodesChanged(m_nodeNames);
    Q_EMIT linkChanged(m_link, table.isEmpty() ? u"connected to %1 (table idem.records)"_s.arg(where)
                                               : u"connected to %1 (table %2, another program's)"_s.arg(where, table));
    Q_EMIT writeAccess(true, {}); // the functions say no themselves when the role may not
    if (m_pgWatch) {
        m_pgNotifier = new QSocketNotifier(m_pgWatch->socket(), QSocketNotifier::Read, this);
        connect(m_pgNotifier, &QSocketNotifier::activated, this, &ConsoleWorker::pgTake);
    }
    const bool live = m_pgWatch && m_pgWatch->notifies();
    // why first, as for Redis: where the status bar cuts the line, the reason is still read
    const QString every = u": re-reading every %1 s"_s.arg(QString::number(m_settings.rescanIntervalMs / 1000.0));
    Q_EMIT liveUpdates(live, live               ? u"LISTEN idem_records"_s
                             : !table.isEmpty() ? u"idem adds no trigger to a table it did not create"_s + every
                                                : u"schema idem older than v4 (idemctl pg init adds the notifying "
                                                  u"triggers)"_s + every,
                       false);
    m_heartbeatTimer->start();
    m_rescanTimer->start(live ? kPgResyncMs : m_settings.rescanIntervalMs);
    pgRescan();
}

void ConsoleWorker::pgFailed(const idem::Error& e)
{
    const QString what = qs(e.what());
    // what retrying cannot fix: said in words, not retried
    QString field;
    const auto* config = dynamic_cast<const idem::ConfigError*>(&e);
    if (config && config->field() == "table") // not there, or not a table of idempotency keys
        field = u"table"_s;
    else if (config && config->field() == "permission") // the role lacks a grant (idemctl acl monitor)
        field = u"user"_s;
    else if (dynamic_cast<const idem::UsageError*>(&e)) // a URL libpq cannot read
        field = u"url"_s;
    else if (config && (config->field() == "password" || config->field() == "user")) // the login refused
        field = qs(config->field());
    else if (what.contains(u"password authentication failed"_s) || what.contains(u"no password supplied"_s))
        field = u"password"_s;
    else if (config || what.contains(u"does not exist"_s) ||
             what.contains(u"invalid connection option"_s) || what.contains(u"invalid URI"_s) ||
             what.contains(u"missing \"=\""_s))
        field = u"url"_s;
    if (field.isEmpty()) {
        lost(what);
        return;
    }
    if (const auto* denied = dynamic_cast<const idem::PermissionError*>(&e)) {
        // the user is usually right and lacks a grant: say which, and who prints it
        const QString role = qs(denied->role()), table = m_settings.table.trimmed();
        QString url = postgresShown(m_settings.url);
        if (url.contains(u' '))
            url = u'\'' + url + u'\'';
        // (with --table only the other program's table is read: schema idem's grants are beside the
        // point; "Why" names what was denied)
        const QString grant = table.isEmpty()
                                  ? u"`idemctl --url %1 acl monitor --user %2` prints schema idem's GRANTs for its owner "
                                    u"to run"_s.arg(url, role)
                                  : u"on %1: SELECT; UPDATE and DELETE to purge; the table's owner grants them"_s.arg(table);
        refuse(field, u"%1 refused role '%2'. Retrying will not change that: grant the role what it lacks (%3), "
                      u"or connect as another user in Connect (Ctrl+O). Why: %4"_s
                          .arg(postgresShown(m_settings.url), role, grant, what.simplified()));
        return;
    }
    refuse(field, u"%1 refused the connection settings. Retrying will not change that: correct the %2 in Connect "
                  u"(Ctrl+O). Why: %3"_s
                      .arg(postgresShown(m_settings.url), field == u"url"_s ? u"URL"_s : field, what.simplified()));
}

void ConsoleWorker::pgRescan()
{
    if (!beginScan())
        return;
    m_pgAfter.clear();
    m_pgFirstPage = true;
    try {
        Q_EMIT scanStarted(m_generation, m_pgWatch ? m_pgWatch->estimatedRows() : 0);
    } catch (const idem::Error& e) {
        pgFailed(e);
        return;
    }
    QTimer::singleShot(0, this, &ConsoleWorker::scanStep);
}

void ConsoleWorker::pgScanStep()
{
    if (!onPostgres() || !m_scanning)
        return;
    try {
        if (m_pgWatch)
            m_pgWatch->renewIfDue(); // (the heartbeat waits while a scan runs)
        const auto count = static_cast<std::size_t>(std::clamp(m_settings.scanCount, 10, 10'000));
        idem::PgStore::Page page;
        if (m_pgTable) {
            auto p = m_pgTable->page(m_pgAfter, count, m_pgFirstPage);
            page.records = std::move(p.records);
            page.lastId = std::move(p.lastRowKey);
            page.done = p.done;
            page.serverNowMs = p.serverNowMs;
        } else {
            page = m_pg->page(m_pgAfter, count);
        }
        m_pgFirstPage = false;
        QVector<KeyRow> rows;
        QHash<QString, QStringList> actors;
        rows.reserve(static_cast<qsizetype>(page.records.size()));
        for (const auto& r : page.records) {
            rows.push_back(KeyRow::fromRecord(r, page.serverNowMs, {}));
            if (!r.opBy.empty())
                actors.insert(qs(r.key), {qs(r.op), qs(r.opBy)});
        }
        m_pgAfter = page.lastId;
        m_summary.keysSeen += static_cast<qint64>(page.records.size());
        ++m_summary.pages;
        if (page.serverNowMs)
            m_summary.serverNowMs = page.serverNowMs;
        if (!rows.isEmpty()) {
            ++m_inFlight;
            Q_EMIT rowsArrived(rows, page.serverNowMs, m_generation);
            Q_EMIT observed(rows, actors, page.serverNowMs, m_generation, false);
        }
        if (page.done) {
            m_scanning = false;
            m_summary.elapsedMs = m_scanClock.elapsed();
            if (!m_summary.serverNowMs)
                m_summary.serverNowMs = pgServerNowMs();
            Q_EMIT scanFinished(m_summary);
            if (m_rescanQueued)
                pgRescan();
            return;
        }
        if (m_inFlight >= 4) {
            m_waitingForGui = true; // batchConsumed() resumes
            return;
        }
        QTimer::singleShot(0, this, &ConsoleWorker::scanStep);
    } catch (const idem::Error& e) {
        pgFailed(e);
    }
}

void ConsoleWorker::pgTake()
{
    if (!m_pgWatch)
        return;
    try {
        const auto changes = m_pgWatch->take();
        if (changes.everything) {
            rescan();
            return;
        }
        for (const std::string& id : changes.ids)
            noteDirty(qs(id));
    } catch (const idem::Error& e) {
        pgFailed(e);
    }
}

void ConsoleWorker::pgFlushDirty()
{
    if (m_dirty.isEmpty())
        return;
    QSet<QString> gone = m_dirty;
    std::vector<std::string> ids;
    ids.reserve(static_cast<std::size_t>(m_dirty.size()));
    for (const QString& k : std::as_const(m_dirty))
        ids.push_back(k.toStdString());
    m_dirty.clear();
    try {
        std::int64_t now = 0;
        for (std::size_t first = 0; first < ids.size(); first += 1000) {
            const std::vector<std::string> chunk(ids.begin() + static_cast<long>(first),
                                                 ids.begin() + static_cast<long>(std::min(ids.size(), first + 1000)));
            std::vector<idem::Record> records;
            if (m_pgTable) { // after an action: a few rows
                for (const std::string& id : chunk)
                    for (auto& r : m_pgTable->read(id, &now))
                        records.push_back(std::move(r));
            } else {
                records = m_pg->read(chunk, &now);
            }
            QVector<KeyRow> rows;
            QHash<QString, QStringList> actors;
            for (const auto& r : records) {
                rows.push_back(KeyRow::fromRecord(r, now, {}));
                gone.remove(qs(r.key));
                if (!r.opBy.empty())
                    actors.insert(qs(r.key), {qs(r.op), qs(r.opBy)});
            }
            if (!rows.isEmpty()) {
                ++m_inFlight;
                Q_EMIT rowsArrived(rows, now, m_generation);
                Q_EMIT observed(rows, actors, now, m_generation, true);
            }
        }
        if (!gone.isEmpty()) {
            if (!now)
                now = pgServerNowMs();
            const QStringList keys(gone.begin(), gone.end());
            Q_EMIT observedGone(keys, {}, now);
            Q_EMIT rowsGone(keys);
        }
    } catch (const idem::Error& e) {
        pgFailed(e);
    }
}

void ConsoleWorker::pgInspect(const QString& key)
{
    try {
        std::int64_t now = 0;
        std::optional<idem::Record> rec;
        if (m_pgTable) {
            if (auto rows = m_pgTable->read(key.toStdString(), &now); !rows.empty())
                rec = std::move(rows.front());
        } else {
            rec = m_pg->inspect(key.toStdString(), &now);
        }
        if (!rec) {
            Q_EMIT inspected(key, u"<p><b>%1</b> is gone (swept, or purged).</p>"_s.arg(key.toHtmlEscaped()));
            return;
        }
        Q_EMIT inspected(key, recordHtml(*rec, now, {}));
    } catch (const idem::Error& e) {
        Q_EMIT inspected(key, u"<p style='color:#c0392b'>%1</p>"_s.arg(qs(e.what()).toHtmlEscaped()));
    }
}

std::int64_t ConsoleWorker::pgServerNowMs()
{
    return m_pgWatch ? m_pgWatch->serverNowMs() : m_pgTable->serverNowMs();
}

void ConsoleWorker::pgReadAudit()
{
    if (!onPostgres() || m_link != Link::Connected) {
        Q_EMIT auditRead({}, 0, u"not connected"_s);
        return;
    }
    try {
        QVector<StoreAuditRow> rows;
        // (--table: idem.operations is read only here, while the Store audit view is open)
        for (const auto& op : m_pgWatch ? m_pgWatch->operations(200) : m_pgTable->operations(200))
            rows.push_back({QString::number(op.atMs), op.atMs, qs(op.op), qs(op.id), qs(op.by), qs(op.reason),
                            op.sessionRole.empty() ? QString() : u"role "_s + qs(op.sessionRole), // v5: who the server saw
                            qs(op.previousState)});
        Q_EMIT auditRead(rows, pgServerNowMs(), {});
    } catch (const idem::Error& e) {
        Q_EMIT auditRead({}, 0, qs(e.what()));
    }
}

void ConsoleWorker::pgAction(const QString& action, const QVector<KeyRow>& rows, const QString& reason,
                             bool terminal, const QString& who)
{
    ActionResult result = startAction(action, rows, m_link == Link::Connected);
    if (!result.error.isEmpty())
        return;
    if (m_pgTable && action != u"purge"_s) {
        result.error = u"not done: table %1 is another program's, and the word it writes for a failure is its own; "
                       u"purge the row instead (its next request runs again)"_s.arg(m_settings.table.trimmed());
        Q_EMIT actionDone(result);
        return;
    }
    try {
        for (const KeyRow& row : rows) {
            const std::string id = row.keyText().toStdString();
            if (m_pgTable) { // another program's table: PgTable's guarded delete
                const auto r = m_pgTable->purge(id, who.toStdString(), reason.toStdString());
                ++(r.deleted > 0 ? result.changed : result.skipped);
                if (r.kept > 0 && result.why.isEmpty())
                    result.why = u"%1: %2"_s.arg(row.keyText(), qs(r.why));
                continue;
            }
            const idem::Record seen = row.toGuardRecord(); // deleted only if still what the operator saw
            const auto r = action == u"purge"_s
                               ? m_pg->purge(id, who.toStdString(), reason.toStdString(), &seen)
                               : m_pg->forceFail(id, reason.toStdString(), terminal, who.toStdString());
            if (r.status == idem::AdminStatus::Ok) {
                ++result.changed;
            } else {
                ++result.skipped;
                if (!r.reason.empty() && result.why.isEmpty())
                    result.why = u"%1: %2"_s.arg(row.keyText(), qs(r.reason));
            }
        }
    } catch (const idem::Error& e) {
        result.error = qs(e.what());
        if (result.error.contains(u"permission denied"_s))
            Q_EMIT writeAccess(false, u"the server refused a change: %1"_s.arg(result.error.simplified()));
    }
    Q_EMIT actionDone(result);
    for (const KeyRow& row : rows)
        m_dirty.insert(row.keyText());
    pgFlushDirty();
}
