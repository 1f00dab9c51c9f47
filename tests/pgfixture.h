#pragma once

// What the PostgreSQL tests share: a private server with schema idem, one statement of SQL on a
// connection of its own, and idemctl run as a process.
#include "idem/pg/localpostgres.h"

#include <QProcess>
#include <QString>
#include <QStringList>

#include <memory>
#include <string>

typedef struct pg_conn PGconn;

namespace idemtest {

// A private PostgreSQL for this test process (idem::LocalPostgres: initdb into a temporary
// directory, postgres on a free loopback port and a unix socket, as the `postgres` user when the
// test runs as root), with schema idem installed in its database "postgres" unless told not to.
// Stopped and removed when the pointer goes.
std::unique_ptr<idem::LocalPostgres> startPostgres(bool installSchema = true);

// One statement on a connection of its own; the first cell of the first row ("" when none).
// PostgreSQL's error throws idem::ReplyError, no connection idem::IoError.
std::string pgSql(const std::string& conninfo, const std::string& query);

// A statement of a transactional work, on the transaction's connection; a failure throws
// std::runtime_error (the work's exception).
void workSql(PGconn* c, const std::string& query);

// The SQLSTATE of one statement run as the conninfo's role: "" when it succeeded.
std::string sqlstateOf(const std::string& conninfo, const std::string& query);

// idemctl (idemctlPath()) as a process, without IDEM_URL from the environment.
struct Ctl {
    int exit = -1;
    QString out, err;
};
QProcess* startIdemctl(const QStringList& args, QObject* parent);
Ctl finishIdemctl(QProcess* p); // waits up to 60 s, then fails the test process
Ctl idemctl(const QStringList& args);
// idemctl --url URL ARGS...: idemctl on that server (a postgresql:// URI or key=value pairs)
Ctl idemctlAt(const QString& url, const QStringList& args);

} // namespace idemtest
