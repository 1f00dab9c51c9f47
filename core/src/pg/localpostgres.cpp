#include "idem/pg/localpostgres.h"

#include "idem/errors.h"
#include "idem/redis/localserver.h"

#include <libpq-fe.h>

#include <array>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <grp.h>
#include <pwd.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace idem {

namespace {

bool hasServer(const std::string& dir)
{
    return !dir.empty() && ::access((dir + "/initdb").c_str(), X_OK) == 0 &&
           ::access((dir + "/postgres").c_str(), X_OK) == 0;
}

std::string pgConfigBinDir()
{
    FILE* p = ::popen("pg_config --bindir 2>/dev/null", "r");
    if (!p)
        return {};
    std::array<char, 512> buf{};
    std::string out;
    while (std::fgets(buf.data(), static_cast<int>(buf.size()), p))
        out += buf.data();
    ::pclose(p);
    while (!out.empty() && (out.back() == '\n' || out.back() == '\r'))
        out.pop_back();
    return out;
}

std::string lastLine(const std::string& path)
{
    std::ifstream in(path);
    std::string line, last;
    while (std::getline(in, line))
        if (!line.empty())
            last = line;
    return last;
}

// fork + exec as uid/gid (0: as we are), stdout and stderr to `log`. With dieWithParent the child
// asks for SIGINT when the starting thread ends; it must do so after setuid, which clears it.
pid_t spawnAs(std::vector<std::string> args, const std::string& log, uid_t uid, gid_t gid, bool dieWithParent)
{
    std::vector<char*> argv;
    for (auto& a : args)
        argv.push_back(a.data());
    argv.push_back(nullptr);
    const pid_t parent = ::getpid();
    int errPipe[2];
    if (::pipe2(errPipe, O_CLOEXEC) != 0)
        throw IoError(std::string("pipe: ") + std::strerror(errno));
    const pid_t pid = ::fork();
    if (pid < 0) {
        ::close(errPipe[0]);
        ::close(errPipe[1]);
        throw IoError(std::string("fork: ") + std::strerror(errno));
    }
    if (pid == 0) {
        ::setsid();
        int err = 0;
        if (uid != 0 && (::setgroups(0, nullptr) != 0 || ::setgid(gid) != 0 || ::setuid(uid) != 0))
            err = errno;
        if (err == 0 && dieWithParent) {
            ::prctl(PR_SET_PDEATHSIG, SIGINT);
            if (::getppid() != parent)
                ::_exit(127);
        }
        const int in = ::open("/dev/null", O_RDONLY);
        const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
        if (in >= 0)
            ::dup2(in, 0);
        if (out >= 0) {
            ::dup2(out, 1);
            ::dup2(out, 2);
        }
        if (err == 0) {
            ::execv(argv[0], argv.data());
            err = errno;
        }
        (void)!::write(errPipe[1], &err, sizeof err);
        ::_exit(127);
    }
    ::close(errPipe[1]);
    int childErr = 0;
    ssize_t n;
    while ((n = ::read(errPipe[0], &childErr, sizeof childErr)) < 0 && errno == EINTR) {
    }
    ::close(errPipe[0]);
    if (n == static_cast<ssize_t>(sizeof childErr)) {
        int status = 0;
        ::waitpid(pid, &status, 0);
        throw IoError(args.front() + ": " + std::strerror(childErr));
    }
    return pid;
}

} // namespace

std::string findPostgresBinDir()
{
    if (const char* env = std::getenv("IDEM_PG_BINDIR"); env && *env)
        return hasServer(env) ? std::string(env) : std::string();
    // Debian's pg_config (libpq-dev) names the client's directory, which holds the server too when
    // postgresql-<version> is installed
    if (std::string d = pgConfigBinDir(); hasServer(d))
        return d;
    for (int version = 20; version >= 12; --version)
        if (std::string d = "/usr/lib/postgresql/" + std::to_string(version) + "/bin"; hasServer(d))
            return d;
    return {};
}

LocalPostgres::LocalPostgres(LocalPostgresOptions options) : m_options(std::move(options))
{
    m_binDir = m_options.binDir.empty() ? findPostgresBinDir() : m_options.binDir;
    if (!hasServer(m_binDir))
        throw IoError("no PostgreSQL server found (install postgresql-15, or set IDEM_PG_BINDIR to the "
                      "directory that holds initdb and postgres)");
    if (::geteuid() == 0) {
        const passwd* pw = ::getpwnam("postgres");
        if (!pw)
            throw IoError("initdb refuses to run as root, and there is no user \"postgres\" to run it as "
                          "(install postgresql-15, which makes it)");
        m_uid = pw->pw_uid;
        m_gid = pw->pw_gid;
    }
    // as root, the postgres user must reach the directory: a root-only $TMPDIR would not do
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmp && *tmp && m_uid == 0 ? tmp : "/tmp") + "/idem-pg-XXXXXX";
    if (!::mkdtemp(tmpl.data()))
        throw IoError("cannot create a temporary directory: " + std::string(std::strerror(errno)));
    m_dir = tmpl;
    try {
        if (m_uid != 0 && ::chown(m_dir.c_str(), m_uid, m_gid) != 0)
            throw IoError("cannot give " + m_dir + " to the postgres user: " + std::strerror(errno));
        runInitdb();
        std::string lastError;
        for (int attempt = 0; attempt < 5; ++attempt) { // the port may be taken between probe and bind
            m_port = freeLoopbackPort();
            try {
                start();
                return;
            } catch (const Error& e) {
                lastError = e.what();
            }
        }
        throw IoError("cannot start postgres: " + lastError);
    } catch (...) {
        std::error_code ec;
        std::filesystem::remove_all(m_dir, ec);
        throw;
    }
}

LocalPostgres::~LocalPostgres()
{
    reap(SIGINT);
    std::error_code ec;
    std::filesystem::remove_all(m_dir, ec);
}

void LocalPostgres::runInitdb()
{
    const std::string log = m_dir + "/initdb.log";
    const pid_t pid = spawnAs({m_binDir + "/initdb", "-D", m_dir + "/data", "-U", "idem", "--auth=trust",
                               "--encoding=UTF8", "--locale=C", "--no-sync"},
                              log, m_uid, m_gid, true);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        throw IoError("initdb failed: " + lastLine(log));
}

std::string LocalPostgres::url(const std::string& database) const
{
    return "postgresql://idem@127.0.0.1:" + std::to_string(m_port) + "/" + database;
}

std::string LocalPostgres::socketConninfo(const std::string& database) const
{
    return "host=" + m_dir + " port=" + std::to_string(m_port) + " user=idem dbname=" + database;
}

void LocalPostgres::spawn()
{
    m_pid = spawnAs({m_binDir + "/postgres", "-D", m_dir + "/data", "-p", std::to_string(m_port), "-k", m_dir,
                     "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off",
                     "-c", "full_page_writes=off", "-c", "max_connections=100", "-c", "shared_buffers=32MB"},
                    m_dir + "/postgres.log", m_uid, m_gid, true);
}

void LocalPostgres::start()
{
    if (m_pid > 0)
        throw UsageError("postgres already running");
    spawn();
    waitReady();
}

void LocalPostgres::waitReady()
{
    const std::string conninfo = socketConninfo() + " connect_timeout=2";
    const auto deadline = std::chrono::steady_clock::now() + m_options.startTimeout;
    while (std::chrono::steady_clock::now() < deadline) {
        int status = 0;
        if (::waitpid(m_pid, &status, WNOHANG) == m_pid) {
            m_pid = -1;
            throw IoError("postgres exited at start: " + lastLine(m_dir + "/postgres.log"));
        }
        // the socket is in our own directory: whoever answers there is ours
        if (PQping(conninfo.c_str()) == PQPING_OK)
            return;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    reap(SIGQUIT);
    throw TimeoutError("postgres did not accept connections within " +
                       std::to_string(m_options.startTimeout.count()) + " ms: " + lastLine(m_dir + "/postgres.log"));
}

void LocalPostgres::reap(int signal)
{
    if (m_pid <= 0)
        return;
    ::kill(m_pid, signal);
    int status = 0;
    while (::waitpid(m_pid, &status, 0) < 0 && errno == EINTR) {
    }
    m_pid = -1;
}

void LocalPostgres::stop() { reap(SIGINT); }

} // namespace idem
