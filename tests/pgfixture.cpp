#include "pgfixture.h"

#include "idem/errors.h"
#include "idem/pg/schema.h"
#include "testsupport.h"

#include <libpq-fe.h>

#include <QProcessEnvironment>
#include <QtGlobal>

namespace idemtest {

std::unique_ptr<idem::LocalPostgres> startPostgres(bool installSchema)
{
    auto pg = std::make_unique<idem::LocalPostgres>();
    if (installSchema)
        idem::installPgSchema(pg->url());
    return pg;
}

std::string pgSql(const std::string& conninfo, const std::string& query)
{
    std::unique_ptr<PGconn, decltype(&PQfinish)> c(PQconnectdb(conninfo.c_str()), &PQfinish);
    if (PQstatus(c.get()) != CONNECTION_OK)
        throw idem::IoError(PQerrorMessage(c.get()));
    std::unique_ptr<PGresult, decltype(&PQclear)> r(PQexec(c.get(), query.c_str()), &PQclear);
    const ExecStatusType s = PQresultStatus(r.get());
    if (s != PGRES_TUPLES_OK && s != PGRES_COMMAND_OK)
        throw idem::ReplyError(query + ": " + PQresultErrorMessage(r.get()));
    return s == PGRES_TUPLES_OK && PQntuples(r.get()) > 0 ? std::string(PQgetvalue(r.get(), 0, 0)) : std::string();
}

void workSql(PGconn* c, const std::string& query)
{
    std::unique_ptr<PGresult, decltype(&PQclear)> r(PQexec(c, query.c_str()), &PQclear);
    if (PQresultStatus(r.get()) != PGRES_COMMAND_OK && PQresultStatus(r.get()) != PGRES_TUPLES_OK)
        throw std::runtime_error(PQresultErrorMessage(r.get()));
}

std::string sqlstateOf(const std::string& conninfo, const std::string& query)
{
    std::unique_ptr<PGconn, decltype(&PQfinish)> c(PQconnectdb(conninfo.c_str()), &PQfinish);
    if (PQstatus(c.get()) != CONNECTION_OK)
        throw idem::IoError(PQerrorMessage(c.get()));
    std::unique_ptr<PGresult, decltype(&PQclear)> r(PQexec(c.get(), query.c_str()), &PQclear);
    const ExecStatusType s = PQresultStatus(r.get());
    if (s == PGRES_TUPLES_OK || s == PGRES_COMMAND_OK)
        return {};
    const char* state = PQresultErrorField(r.get(), PG_DIAG_SQLSTATE);
    return state ? state : "?";
}

QProcess* startIdemctl(const QStringList& args, QObject* parent)
{
    auto* p = new QProcess(parent);
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.remove(QStringLiteral("IDEM_URL"));
    p->setProcessEnvironment(env);
    p->start(idemctlPath(), args);
    return p;
}

Ctl finishIdemctl(QProcess* p)
{
    if (!p->waitForFinished(60'000))
        qFatal("idemctl did not finish");
    return {p->exitCode(), QString::fromUtf8(p->readAllStandardOutput()), QString::fromUtf8(p->readAllStandardError())};
}

Ctl idemctl(const QStringList& args)
{
    QObject owner;
    return finishIdemctl(startIdemctl(args, &owner));
}

Ctl idemctlAt(const QString& url, const QStringList& args)
{
    return idemctl(QStringList{QStringLiteral("--url"), url} + args);
}

} // namespace idemtest
