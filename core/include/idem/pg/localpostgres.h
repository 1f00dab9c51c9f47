#pragma once

#include "idem/duration.h"

#include <string>
#include <sys/types.h>

namespace idem {

struct LocalPostgresOptions {
    // Where initdb and postgres are; empty: $IDEM_PG_BINDIR, `pg_config --bindir`, then Debian's
    // /usr/lib/postgresql/<version>/bin, newest first.
    std::string binDir;
    Millis startTimeout{30'000};
};

// A private PostgreSQL server for tests and benchmarks: initdb into a fresh temporary directory,
// then postgres on a free loopback port and a unix socket in that directory, trust authentication
// for the user "idem", no fsync. initdb refuses to run as root: as root, the directory is given to
// the "postgres" user (Debian's package makes it) and both programs run as that user. The server
// dies with the thread that started it (PR_SET_PDEATHSIG) and stops on destruction.
class LocalPostgres {
public:
    explicit LocalPostgres(LocalPostgresOptions options = {});
    ~LocalPostgres();
    LocalPostgres(const LocalPostgres&) = delete;
    LocalPostgres& operator=(const LocalPostgres&) = delete;

    int port() const { return m_port; }
    pid_t pid() const { return m_pid; }
    const std::string& dir() const { return m_dir; }
    // postgresql://idem@127.0.0.1:<port>/<database>
    std::string url(const std::string& database = "postgres") const;
    // host=<dir> port=<port> user=idem dbname=<database> (the unix socket)
    std::string socketConninfo(const std::string& database = "postgres") const;

    void start(); // (re)start on the same port and data directory; waits until it accepts connections
    void stop();  // fast shutdown (SIGINT): open transactions are rolled back

private:
    void spawn();
    void waitReady();
    void reap(int signal);
    void runInitdb();

    LocalPostgresOptions m_options;
    std::string m_binDir;
    std::string m_dir;
    int m_port = 0;
    pid_t m_pid = -1;
    uid_t m_uid = 0; // whom the programs run as (0: as we are)
    gid_t m_gid = 0;
};

// The directory that holds initdb and postgres, as LocalPostgresOptions::binDir describes; empty
// when none is found.
std::string findPostgresBinDir();

} // namespace idem
