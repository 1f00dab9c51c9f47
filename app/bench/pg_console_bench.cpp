// idem-pg-console-bench: the console's snapshot of a PostgreSQL store against psql's COPY of the
// same rows, in one run on one server.
//
//   1. load N rows (default 1,000,000) into idem.records: STARTED, stale, COMPLETED and FAILED;
//   2. reference: psql -c "COPY (SELECT <the columns the console reads> FROM idem.records ORDER BY
//      id) TO STDOUT" > /dev/null, what a user would time;
//   3. the console's worker (ConsoleWorker, its own thread) from open() to scanFinished: keyset
//      pages, each row decoded into an idem::Record and a KeyRow, handed over as the window gets
//      them (batchConsumed per batch, as the window does once it took a batch in).
// Without --url it starts a private server (idem::LocalPostgres). Not a test: it prints figures.
#include "consoleworker.h"

#include "idem/errors.h"
#include "idem/pg/localpostgres.h"
#include "idem/pg/schema.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QThread>

#include <libpq-fe.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

using namespace Qt::StringLiterals;

namespace {

void sql(const std::string& conninfo, const std::string& query)
{
    std::unique_ptr<PGconn, decltype(&PQfinish)> c(PQconnectdb(conninfo.c_str()), &PQfinish);
    if (PQstatus(c.get()) != CONNECTION_OK)
        throw idem::IoError(PQerrorMessage(c.get()));
    std::unique_ptr<PGresult, decltype(&PQclear)> r(PQexec(c.get(), query.c_str()), &PQclear);
    if (PQresultStatus(r.get()) != PGRES_COMMAND_OK && PQresultStatus(r.get()) != PGRES_TUPLES_OK)
        throw idem::ReplyError(query.substr(0, 60) + ": " + PQresultErrorMessage(r.get()));
}

// the columns PgStore's page reads (pgstore.cpp, IDEM_ROW), in the order it reads them
#define MS(x) "(extract(epoch from " x ") * 1000)::bigint"
constexpr const char* kColumns =
    "state, token::text, fence, attempt::bigint, " MS("lease_until") ", " MS("expires_at") ", fingerprint, response, "
    "error, policy, " MS("created_at") ", " MS("started_at") ", " MS("finished_at") ", op, op_by, " MS("op_at")
    ", op_reason, " MS("clock_timestamp()") ", id, phase";
#undef MS

double copyMs(const std::string& bin, const std::string& url)
{
    const std::string cmd = "'" + bin + "/psql' -X -q -d '" + url + "' -c \"COPY (SELECT " + kColumns +
                            " FROM idem.records ORDER BY id) TO STDOUT\" > /dev/null";
    QElapsedTimer t;
    t.start();
    if (std::system(cmd.c_str()) != 0)
        throw idem::Error("psql failed: " + cmd);
    return static_cast<double>(t.nsecsElapsed()) / 1e6;
}

struct Snapshot {
    double ms = 0;
    qint64 rows = 0;
    qint64 pages = 0;
};

Snapshot consoleMs(const std::string& url, int pageRows)
{
    QThread thread;
    auto* worker = new ConsoleWorker;
    worker->moveToThread(&thread);
    QObject::connect(&thread, &QThread::finished, worker, &QObject::deleteLater);
    thread.start();
    Snapshot s;
    QElapsedTimer t;
    QEventLoop loop;
    QObject::connect(worker, &ConsoleWorker::rowsArrived, worker,
                     [&s, worker](const QVector<KeyRow>& rows, qint64, quint64) {
                         s.rows += rows.size();
                         QMetaObject::invokeMethod(worker, &ConsoleWorker::batchConsumed, Qt::QueuedConnection);
                     }, Qt::DirectConnection);
    bool done = false;
    QObject::connect(worker, &ConsoleWorker::scanFinished, &loop, [&](const ScanSummary& summary) {
        if (done)
            return;
        done = true;
        s.ms = static_cast<double>(t.nsecsElapsed()) / 1e6;
        s.pages = summary.pages;
        loop.quit();
    });
    QObject::connect(worker, &ConsoleWorker::refused, &loop, [&](const QString&, const QString& why) {
        std::fprintf(stderr, "refused: %s\n", qPrintable(why));
        loop.quit();
    });
    ConnectionSettings settings;
    settings.url = QString::fromStdString(url);
    settings.scanCount = pageRows;
    t.start();
    QMetaObject::invokeMethod(worker, [worker, settings] { worker->open(settings); });
    loop.exec();
    QMetaObject::invokeMethod(worker, [worker] { worker->close(); }, Qt::BlockingQueuedConnection);
    thread.quit();
    thread.wait();
    return s;
}

} // namespace

int main(int argc, char** argv)
{
    QCoreApplication app(argc, argv);
    std::string url;
    long rows = 1'000'000;
    int runs = 3;
    int pageRows = 500; // Connect's default scan count
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (i + 1 >= argc) {
            std::fprintf(stderr, "usage: idem-pg-console-bench [--url postgresql://...] [--rows N] [--page N] [--runs N]\n");
            return 64;
        }
        if (a == "--url")
            url = argv[++i];
        else if (a == "--rows")
            rows = std::stol(argv[++i]);
        else if (a == "--page")
            pageRows = std::stoi(argv[++i]);
        else if (a == "--runs")
            runs = std::stoi(argv[++i]);
        else {
            std::fprintf(stderr, "usage: idem-pg-console-bench [--url postgresql://...] [--rows N] [--page N] [--runs N]\n");
            return 64;
        }
    }
    try {
        std::unique_ptr<idem::LocalPostgres> local;
        if (url.empty()) {
            local = std::make_unique<idem::LocalPostgres>();
            url = local->url();
        }
        const std::string bin = idem::findPostgresBinDir();
        idem::installPgSchema(url);
        // a quarter each: live STARTED, stale STARTED, COMPLETED with a small response, FAILED
        sql(url, "DELETE FROM idem.records WHERE id LIKE 'scale-%'");
        sql(url, "INSERT INTO idem.records (id, state, token, fence, lease_until, expires_at, response, error, policy, "
                 "created_at, started_at, finished_at) SELECT 'scale-' || lpad(n::text, 8, '0'), "
                 "(ARRAY['STARTED','STARTED','COMPLETED','FAILED'])[n % 4 + 1], gen_random_uuid(), n, "
                 "CASE n % 4 WHEN 0 THEN now() + interval '1 hour' WHEN 1 THEN now() - interval '1 minute' END, "
                 "now() + interval '1 day', CASE WHEN n % 4 = 2 THEN '{\"ok\":true}'::bytea END, "
                 "CASE WHEN n % 4 = 3 THEN 'upstream 503' END, CASE WHEN n % 4 = 3 THEN 'retryable' END, "
                 "now(), now(), CASE WHEN n % 4 >= 2 THEN now() END FROM generate_series(1, " +
                     std::to_string(rows) + ") AS n");
        sql(url, "VACUUM ANALYZE idem.records");
        std::printf("idem-pg-console-bench: %ld rows, console pages of %d, %d run(s)\n", rows, pageRows, runs);
        std::printf("%-4s %14s %14s %12s %7s\n", "run", "psql COPY ms", "console ms", "rows", "ratio");
        for (int r = 1; r <= runs; ++r) {
            const double copy = copyMs(bin, url);
            const Snapshot s = consoleMs(url, pageRows);
            std::printf("%-4d %14.0f %14.0f %12lld %6.2fx   (%lld pages)\n", r, copy, s.ms,
                        static_cast<long long>(s.rows), s.ms / copy, static_cast<long long>(s.pages));
            std::fflush(stdout);
            if (s.rows != rows)
                throw idem::Error("the console read " + std::to_string(s.rows) + " rows, not " + std::to_string(rows));
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "idem-pg-console-bench: %s\n", e.what());
        return 1;
    }
    return 0;
}
