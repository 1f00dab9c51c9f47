#pragma once

#include "idem/redis/options.h"

#include <string>
#include <sys/types.h>
#include <vector>

namespace idem {

// A server that speaks TLS on its port (and no plaintext): its certificate and key, the CA that
// verifies clients' certificates, whether it asks clients for one, and the client's own files
// connectionOptions() hands out (readiness is checked over TLS with them).
struct LocalServerTls {
    std::string cert, key, ca;
    bool authClients = false;
    std::string clientCert, clientKey; // when authClients
};

struct LocalServerOptions {
    std::string executable = "redis-server"; // looked up in PATH
    std::vector<std::string> extraArgs;      // e.g. {"--appendonly", "yes"}
    std::string dir;                         // working directory; empty = a fresh temporary one
    Millis startTimeout{10'000};
    // The server dies with the thread that started it even if the process is killed (Linux
    // PR_SET_PDEATHSIG): start it from a thread that lives as long as it should. Off for a
    // server that must outlive its starter (the ctest fixture).
    bool dieWithParent = true;
    LocalServerTls tls; // cert set: TLS only
    // A configuration file, given before every other argument (a sentinel keeps its state in it);
    // relative to `dir` when it is not absolute.
    std::string configFile;
};

// A private redis-server on a free loopback port in its own directory: the embedded default of
// idemctl and idem-console, the test fixture, and the benchmark's server. Stops on destruction.
class LocalServer {
public:
    explicit LocalServer(LocalServerOptions options = {});
    ~LocalServer();
    LocalServer(const LocalServer&) = delete;
    LocalServer& operator=(const LocalServer&) = delete;

    int port() const { return m_port; }
    pid_t pid() const { return m_pid; }
    const std::string& dir() const { return m_dir; }
    std::string url() const;
    ConnectionOptions connectionOptions() const;

    void start();  // (re)start on the same port and directory; waits until it answers PING
    void stop();   // SIGTERM, wait for exit
    void kill();   // SIGKILL, wait for exit (a crash)
    void pause();  // SIGSTOP
    void resume(); // SIGCONT
    // Leave the server running after this object is gone (the ctest fixture's setup step).
    void detach() { m_detached = true; }

private:
    void spawn();
    void waitReady();
    void reap(int signal);

    LocalServerOptions m_options;
    std::string m_dir;
    bool m_ownDir = false;
    bool m_detached = false;
    int m_port = 0;
    pid_t m_pid = -1;
};

// A TCP port on 127.0.0.1 that was free a moment ago.
int freeLoopbackPort();

} // namespace idem
