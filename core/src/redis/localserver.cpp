#include "idem/redis/localserver.h"

#include "idem/redis/connection.h"
#include "idem/errors.h"

#include <arpa/inet.h>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace idem {

int freeLoopbackPort()
{
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        throw IoError(std::string("socket: ") + std::strerror(errno));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    socklen_t len = sizeof addr;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
        const std::string why = std::strerror(errno);
        ::close(fd);
        throw IoError("cannot find a free loopback port: " + why);
    }
    ::close(fd);
    return ntohs(addr.sin_port);
}

LocalServer::LocalServer(LocalServerOptions options) : m_options(std::move(options))
{
    if (m_options.dir.empty()) {
        const char* tmp = std::getenv("TMPDIR");
        std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/idem-redis-XXXXXX";
        if (!::mkdtemp(tmpl.data()))
            throw IoError("cannot create a temporary directory: " + std::string(std::strerror(errno)));
        m_dir = tmpl;
        m_ownDir = true;
    } else {
        m_dir = m_options.dir;
        std::filesystem::create_directories(m_dir);
    }
    // the port may be taken between probing and binding: try a few
    std::string lastError;
    for (int attempt = 0; attempt < 5; ++attempt) {
        m_port = freeLoopbackPort();
        try {
            start();
            return;
        } catch (const Error& e) {
            lastError = e.what();
        }
    }
    if (m_ownDir) {
        std::error_code ec;
        std::filesystem::remove_all(m_dir, ec);
    }
    throw IoError("cannot start " + m_options.executable + ": " + lastError);
}

LocalServer::~LocalServer()
{
    if (m_detached)
        return;
    try {
        stop();
    } catch (...) {
    }
    if (m_ownDir) {
        std::error_code ec;
        std::filesystem::remove_all(m_dir, ec);
    }
}

std::string LocalServer::url() const
{
    return (m_options.tls.cert.empty() ? "redis://127.0.0.1:" : "rediss://127.0.0.1:") + std::to_string(m_port) + "/0";
}

ConnectionOptions LocalServer::connectionOptions() const
{
    ConnectionOptions o;
    o.host = "127.0.0.1";
    o.port = m_port;
    if (!m_options.tls.cert.empty()) {
        o.tls.enabled = true;
        o.tls.caFile = m_options.tls.ca;
        o.tls.certFile = m_options.tls.clientCert;
        o.tls.keyFile = m_options.tls.clientKey;
    }
    return o;
}

void LocalServer::spawn()
{
    std::vector<std::string> args = {m_options.executable};
    if (!m_options.configFile.empty())
        args.push_back(m_options.configFile.front() == '/' ? m_options.configFile : m_dir + "/" + m_options.configFile);
    args.insert(args.end(), {"--port", std::to_string(m_port),
                                     "--bind", "127.0.0.1",
                                     "--dir", m_dir,
                                     "--logfile", m_dir + "/redis.log",
                                     "--save", "",
                                     "--daemonize", "no",
                                     "--protected-mode", "yes"});
    if (const LocalServerTls& t = m_options.tls; !t.cert.empty()) // TLS on the port, no plaintext
        args.insert(args.end(), {"--port", "0", "--tls-port", std::to_string(m_port), "--tls-cert-file", t.cert,
                                 "--tls-key-file", t.key, "--tls-ca-cert-file", t.ca, "--tls-auth-clients",
                                 t.authClients ? "yes" : "no"});
    args.insert(args.end(), m_options.extraArgs.begin(), m_options.extraArgs.end());
    std::vector<char*> argv;
    for (auto& a : args)
        argv.push_back(a.data());
    argv.push_back(nullptr);

    // fork + exec rather than posix_spawn: the child must ask for PR_SET_PDEATHSIG itself
    const pid_t parent = ::getpid();
    const bool dieWithParent = m_options.dieWithParent;
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
        // child: only async-signal-safe calls until exec
        ::setsid();
        if (dieWithParent) {
            ::prctl(PR_SET_PDEATHSIG, SIGTERM);
            if (::getppid() != parent)
                ::_exit(127); // the parent is already gone
        }
        const int devnull = ::open("/dev/null", O_RDWR);
        if (devnull >= 0) {
            ::dup2(devnull, 0);
            ::dup2(devnull, 1);
            ::dup2(devnull, 2);
        }
        ::execvp(argv[0], argv.data());
        const int err = errno;
        (void)!::write(errPipe[1], &err, sizeof err);
        ::_exit(127);
    }
    ::close(errPipe[1]);
    int childErr = 0;
    ssize_t n;
    while ((n = ::read(errPipe[0], &childErr, sizeof childErr)) < 0 && errno == EINTR) {
    }
    ::close(errPipe[0]);
    if (n == static_cast<ssize_t>(sizeof childErr)) { // exec failed
        int status = 0;
        ::waitpid(pid, &status, 0);
        throw IoError(m_options.executable + ": " + std::strerror(childErr) +
                      (childErr == ENOENT ? " (install redis-server, or put it in PATH)" : ""));
    }
    m_pid = pid;
}

void LocalServer::start()
{
    if (m_pid > 0)
        throw UsageError("redis-server already running");
    spawn();
    waitReady();
}

void LocalServer::waitReady()
{
    ConnectionOptions o = connectionOptions();
    o.tls.insecure = true; // it answers: whether its certificate verifies is for its clients to find out
    o.connectTimeout = Millis(200);
    o.commandTimeout = Millis(1000);
    const auto deadline = std::chrono::steady_clock::now() + m_options.startTimeout;
    std::string lastError;
    while (std::chrono::steady_clock::now() < deadline) {
        int status = 0;
        if (::waitpid(m_pid, &status, WNOHANG) == m_pid) {
            m_pid = -1;
            std::ifstream log(m_dir + "/redis.log");
            std::string line, last;
            while (std::getline(log, line))
                if (!line.empty())
                    last = line;
            throw IoError("redis-server exited at start" + (last.empty() ? std::string() : ": " + last));
        }
        bool someoneElse = false;
        try {
            Connection c(o);
            c.connect();
            ReplyPtr r = c.command({"PING"});
            if (!reply::isError(r.get())) {
                // ours, or another redis-server that had the port first (ours then fails to bind
                // and exits, but the other one answers the PING): the process id tells them apart
                const ReplyPtr info = c.command({"INFO", "server"});
                const std::string_view text = reply::isError(info.get()) ? std::string_view() : reply::view(info.get());
                const auto at = text.find("process_id:");
                if (at == std::string_view::npos || std::atol(text.data() + at + 11) == m_pid)
                    return;
                someoneElse = true;
            } else {
                lastError = std::string(reply::errorText(r.get()));
            }
            if (lastError.starts_with("NOAUTH"))
                return; // a password was configured through extraArgs: it answers, that is enough
        } catch (const ConfigError& e) {
            lastError = e.what();
            if (lastError.find("NOAUTH") != std::string::npos)
                return; // a password was configured through extraArgs: it answers, that is enough
        } catch (const Error& e) {
            lastError = e.what();
        }
        if (someoneElse) { // the constructor tries another port
            reap(SIGKILL);
            throw IoError("port " + std::to_string(m_port) + " belongs to another redis-server");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    reap(SIGKILL);
    throw TimeoutError("redis-server did not answer within " +
                       std::to_string(m_options.startTimeout.count()) + " ms: " + lastError);
}

void LocalServer::reap(int signal)
{
    if (m_pid <= 0)
        return;
    ::kill(m_pid, SIGCONT); // a paused server could not act on SIGTERM
    ::kill(m_pid, signal);
    int status = 0;
    while (::waitpid(m_pid, &status, 0) < 0 && errno == EINTR) {
    }
    m_pid = -1;
}

void LocalServer::stop() { reap(SIGTERM); }
void LocalServer::kill() { reap(SIGKILL); }
void LocalServer::pause()
{
    if (m_pid > 0)
        ::kill(m_pid, SIGSTOP);
}
void LocalServer::resume()
{
    if (m_pid > 0)
        ::kill(m_pid, SIGCONT);
}

} // namespace idem
