// idem-pg-bench: the PostgreSQL store's leased calls against pgbench running a hand-written
// ("seed") idempotency table's two statements, in the same run on the same server:
//   pair:      idem.acquire + idem.complete of a new id   vs  INSERT ... ON CONFLICT DO NOTHING; UPDATE ... SET status='COMPLETED'
//   duplicate: idem.acquire of a completed id (answers the stored response) vs the same two statements on an existing key
//   pair-sql:  idem.acquire + idem.complete run by pgbench itself (the functions' server cost, no idem client)
//   pipelined: the same pair and duplicate through PgStore's asynchronous calls (what Executor::submit()
//              uses): C chains in flight, each calling its next when the last answered, over the
//              store's pipelined connections, which batch the calls that queue up
// Each statement in its own transaction on both sides (pgbench's default, idem's leased mode),
// except the pipelined rows' batches: one statement and transaction for the calls they carry.
//   idem-pg-bench [--url postgresql://...] [--clients 1,16] [--seconds 5] [--runs 3]
// Without --url it starts a private server (idem::LocalPostgres). Not a test: it prints figures.
#include "idem/errors.h"
#include "idem/pg/localpostgres.h"
#include "idem/pg/pgstore.h"
#include "idem/pg/schema.h"

#include <libpq-fe.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <cstdio>
#include <fstream>
#include <memory>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

void sql(const std::string& conninfo, const std::string& query)
{
    std::unique_ptr<PGconn, decltype(&PQfinish)> c(PQconnectdb(conninfo.c_str()), &PQfinish);
    if (PQstatus(c.get()) != CONNECTION_OK)
        throw idem::IoError(PQerrorMessage(c.get()));
    std::unique_ptr<PGresult, decltype(&PQclear)> r(PQexec(c.get(), query.c_str()), &PQclear);
    if (PQresultStatus(r.get()) != PGRES_COMMAND_OK && PQresultStatus(r.get()) != PGRES_TUPLES_OK)
        throw idem::ReplyError(query + ": " + PQresultErrorMessage(r.get()));
}

// `clients` threads each run `op(thread, i)` until `seconds` have passed; answers ops per second.
// Each thread's first op (its connection opened) runs before the clock starts, as pgbench excludes
// connection time.
// `chains` chains of asynchronous steps, each starting its next when the last answered (done(ok)),
// for `seconds` after a warm-up of half a second; steps per second
double chained(int chains, int seconds, const std::function<void(long long, std::function<void(bool)>)>& step)
{
    std::atomic<bool> counting{false}, stop{false};
    std::atomic<long long> issued{0}, counted{0};
    std::atomic<bool> failed{false};
    std::mutex mutex;
    std::condition_variable cv;
    int ended = 0;
    std::function<void()> next = [&] {
        if (stop || failed) {
            std::lock_guard lock(mutex);
            ++ended;
            cv.notify_all();
            return;
        }
        step(issued++, [&](bool ok) {
            if (!ok)
                failed = true;
            if (counting)
                ++counted;
            next();
        });
    };
    for (int c = 0; c < chains; ++c)
        next();
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    counting = true;
    const auto start = Clock::now();
    std::this_thread::sleep_for(std::chrono::seconds(seconds));
    const long long n = counted;
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    stop = true;
    std::unique_lock lock(mutex);
    cv.wait(lock, [&] { return ended == chains; });
    if (failed)
        throw idem::Error("a pipelined call did not answer as expected");
    return static_cast<double>(n) / elapsed;
}

template <typename Op> double timed(int clients, int seconds, Op op)
{
    std::atomic<int> ready{0};
    std::atomic<bool> go{false}, stop{false};
    std::atomic<long long> total{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < clients; ++t)
        threads.emplace_back([&, t] {
            long long i = 0;
            op(t, i++);
            ++ready;
            while (!go)
                std::this_thread::yield();
            long long n = 0;
            while (!stop) {
                op(t, i++);
                ++n;
            }
            total += n;
        });
    while (ready < clients)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const auto start = Clock::now();
    go = true;
    std::this_thread::sleep_for(std::chrono::seconds(seconds));
    stop = true;
    for (auto& th : threads)
        th.join();
    return static_cast<double>(total) / std::chrono::duration<double>(Clock::now() - start).count();
}

double pgbench(const std::string& bin, const std::string& url, const std::string& script, int clients, int seconds)
{
    char path[] = "/tmp/idem-pg-bench-XXXXXX";
    const int fd = ::mkstemp(path);
    if (fd < 0)
        throw idem::Error("mkstemp failed");
    ::close(fd);
    std::ofstream(path) << script;
    const std::string cmd = "'" + bin + "/pgbench' -n -M prepared -c " + std::to_string(clients) + " -j " +
                            std::to_string(clients) + " -T " + std::to_string(seconds) + " -f '" + path + "' '" + url +
                            "' 2>&1";
    std::string out;
    if (FILE* p = ::popen(cmd.c_str(), "r")) {
        char buf[4096];
        while (std::fgets(buf, sizeof buf, p))
            out += buf;
        ::pclose(p);
    }
    ::unlink(path);
    std::smatch m;
    if (!std::regex_search(out, m, std::regex(R"(tps = ([0-9.]+) \(without initial connection time\))")))
        throw idem::Error("pgbench did not report tps:\n" + out);
    return std::stod(m[1]);
}

const char* kPairScript = R"(\set k random(1, 2000000000)
INSERT INTO idempotency_keys (key, status, locked_at) VALUES ('new-' || :client_id || '-' || :k, 'STARTED', now()) ON CONFLICT DO NOTHING;
UPDATE idempotency_keys SET status = 'COMPLETED', response = 'ok' WHERE key = 'new-' || :client_id || '-' || :k;
)";

const char* kDuplicateScript = R"(\set k random(1, 10000)
INSERT INTO idempotency_keys (key, status, locked_at) VALUES ('dup-' || :k, 'STARTED', now()) ON CONFLICT DO NOTHING;
UPDATE idempotency_keys SET status = 'COMPLETED', response = 'ok' WHERE key = 'dup-' || :k;
)";

// idem's functions called by pgbench itself: the server's share of idem's pair, without its client
const char* kIdemPairScript = R"(\set k random(1, 2000000000)
SELECT token FROM idem.acquire('bench-sql-' || :client_id || '-' || :k) \gset
SELECT outcome FROM idem.complete('bench-sql-' || :client_id || '-' || :k, :token, 'ok');
)";

// i's place in a random-looking order (splitmix64's finalizer), so that new ids land all over the
// primary key's index as pgbench's random(1, 2000000000) keys do
std::uint64_t spread(long long i)
{
    std::uint64_t z = static_cast<std::uint64_t>(i) + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return (z ^ (z >> 31)) % 2000000000;
}

std::vector<int> parseList(const std::string& s)
{
    std::vector<int> out;
    std::stringstream in(s);
    for (std::string part; std::getline(in, part, ',');)
        out.push_back(std::stoi(part));
    return out;
}

} // namespace

int main(int argc, char** argv)
{
    std::string url;
    std::vector<int> clients = {1, 16};
    int seconds = 5, runs = 3;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        if (a == "--url")
            url = argv[i + 1];
        else if (a == "--clients")
            clients = parseList(argv[i + 1]);
        else if (a == "--seconds")
            seconds = std::stoi(argv[i + 1]);
        else if (a == "--runs")
            runs = std::stoi(argv[i + 1]);
        else {
            std::fprintf(stderr, "usage: idem-pg-bench [--url postgresql://...] [--clients 1,16] [--seconds 5] [--runs 3]\n");
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
        sql(url, "DROP TABLE IF EXISTS idempotency_keys; "
                 "CREATE TABLE idempotency_keys (key text PRIMARY KEY, status text NOT NULL, response bytea, "
                 "locked_at timestamptz, created_at timestamptz NOT NULL DEFAULT now()); "
                 "INSERT INTO idempotency_keys (key, status, response) SELECT 'dup-' || n, 'COMPLETED', 'ok' "
                 "FROM generate_series(1, 10000) AS n; "
                 "DELETE FROM idem.records WHERE id LIKE 'bench-%'; "
                 "INSERT INTO idem.records (id, state, fence, expires_at, created_at, started_at, finished_at, response) "
                 "SELECT 'bench-dup-' || n, 'COMPLETED', nextval('idem.fence'), now() + interval '1 day', now(), now(), "
                 "now(), 'ok' FROM generate_series(1, 10000) AS n; ANALYZE");
        idem::PgStoreOptions o;
        o.maxIdleConnections = 64;
        idem::PgStore store(url, o);
        const long long pid = ::getpid();
        std::printf("idem-pg-bench: %d s per figure, %d run(s); load average before: ", seconds, runs);
        if (std::ifstream la("/proc/loadavg"); la) {
            std::string l;
            std::getline(la, l);
            std::printf("%s", l.c_str());
        }
        std::printf("\n%-8s %-10s %12s %12s %7s\n", "clients", "what", "pgbench/s", "idem/s", "ratio");
        for (int run = 1; run <= runs; ++run)
            for (int c : clients) {
                const double pbPair = pgbench(bin, url, kPairScript, c, seconds);
                const double idemPair = timed(c, seconds, [&](int t, long long i) {
                    const std::string id = "bench-" + std::to_string(pid) + "-" + std::to_string(run) + "-" +
                                           std::to_string(c) + "-" + std::to_string(t) + "-" + std::to_string(i);
                    const idem::AcquireResult a = store.acquire(id);
                    if (a.status != idem::AcquireStatus::Acquired)
                        throw idem::Error("not acquired: " + id);
                    if (store.complete(a.ticket, "ok").status != idem::OwnerStatus::Ok)
                        throw idem::Error("not completed: " + id);
                });
                std::printf("%-8d %-10s %12.0f %12.0f %6.2fx\n", c, "pair", pbPair, idemPair, idemPair / pbPair);
                const double sqlPair = pgbench(bin, url, kIdemPairScript, c, seconds);
                std::printf("%-8d %-10s %12.0f %12.0f %6.2fx   (idem's functions run by pgbench)\n", c, "pair-sql",
                            pbPair, sqlPair, sqlPair / pbPair);
                const double pbDup = pgbench(bin, url, kDuplicateScript, c, seconds);
                const double idemDup = timed(c, seconds, [&](int t, long long i) {
                    thread_local std::mt19937 rng(static_cast<unsigned>(t * 7919 + i));
                    const std::string id = "bench-dup-" + std::to_string(rng() % 10000 + 1);
                    if (store.acquire(id).status != idem::AcquireStatus::Duplicate)
                        throw idem::Error("not a duplicate: " + id);
                });
                std::printf("%-8d %-10s %12.0f %12.0f %6.2fx\n", c, "duplicate", pbDup, idemDup, idemDup / pbDup);
                const double pipePair = chained(c, seconds, [&](long long i, std::function<void(bool)> done) {
                    // spread over the key space as pgbench's random keys are (not one hot index page)
                    const std::string id = "bench-p-" + std::to_string(pid) + "-" + std::to_string(run) + "-" +
                                           std::to_string(c) + "-" + std::to_string(spread(i)) + "-" +
                                           std::to_string(i);
                    store.acquireAsync(id, "", o.lease, [&store, done](idem::AcquireResult a, std::exception_ptr e) {
                        if (e || a.status != idem::AcquireStatus::Acquired)
                            return done(false);
                        store.completeAsync(a.ticket, "ok", std::nullopt,
                                            [done](idem::OwnerResult r, std::exception_ptr e2) {
                                                done(!e2 && r.status == idem::OwnerStatus::Ok);
                                            });
                    });
                });
                std::printf("%-8d %-10s %12.0f %12.0f %6.2fx   (pipelined, %d in flight)\n", c, "pair", pbPair,
                            pipePair, pipePair / pbPair, c);
                const double pipeDup = chained(c, seconds, [&](long long i, std::function<void(bool)> done) {
                    const std::string id = "bench-dup-" + std::to_string((i * 7919) % 10000 + 1);
                    store.acquireAsync(id, "", o.lease, [done](idem::AcquireResult a, std::exception_ptr e) {
                        done(!e && a.status == idem::AcquireStatus::Duplicate);
                    });
                });
                std::printf("%-8d %-10s %12.0f %12.0f %6.2fx   (pipelined, %d in flight)\n", c, "duplicate", pbDup,
                            pipeDup, pipeDup / pbDup, c);
                std::fflush(stdout);
            }
        sql(url, "DELETE FROM idem.records WHERE id LIKE 'bench-%'; DROP TABLE idempotency_keys");
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "idem-pg-bench: %s\n", e.what());
        return 69;
    }
}
