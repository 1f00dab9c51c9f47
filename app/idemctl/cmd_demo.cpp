// idemctl demo: duplicate deliveries racing through `idemctl run`, on a private redis-server.
#include "cli.h"

#include "idem/redis/localserver.h"
#include "idem/engine/store.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <spawn.h>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace idemctl {

namespace {


std::string readFile(const std::string& path)
{
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

} // namespace

int cmdDemo(const std::vector<std::string>& argv, const std::string& self)
{
    Args args(argv, {"--ids", "--duplicates"}, {});
    if (args.flag("--help")) {
        std::puts("usage: idemctl demo [--ids N] [--duplicates D] [--url URL]\n\nStarts a private "
                  "redis-server (unless --url names one; never IDEM_URL's), then delivers each of N\norders D "
                  "times at once, every delivery a separate `idemctl run` process whose command\n"
                  "'charges' the order. Prints who ran and who replayed, and counts the charges.");
        return Ok;
    }
    const int ids = number(args.value("--ids"), 5, 1, 100, "--ids");
    const int dups = number(args.value("--duplicates"), 4, 1, 32, "--duplicates");
    Global g = redisGlobalFrom(args);

    std::unique_ptr<idem::LocalServer> server;
    std::string url = g.url;
    std::string work;
    if (!writesToGivenServer(g, "demo")) {
        server = std::make_unique<idem::LocalServer>();
        url = server->url();
        work = server->dir();
        std::printf("idem demo: private redis-server on %s (pid %d, directory %s)\n", url.c_str(),
                    static_cast<int>(server->pid()), work.c_str());
    } else {
        char tmpl[] = "/tmp/idem-demo-XXXXXX";
        if (!::mkdtemp(tmpl))
            throw UsageFailure{std::string("cannot create a temporary directory: ") + std::strerror(errno)};
        work = tmpl;
        std::printf("idem demo: using %s\n", idem::ConnectionOptions::fromUrl(url).describe().c_str());
    }
    const std::string ns = "idem-demo-" + idem::newToken().substr(0, 8);
    const std::string ledger = work + "/charges.log";
    std::printf("firing %d order%s x %d duplicate deliveries = %d concurrent `idemctl run` processes "
                "(namespace %s)\n\n",
                ids, ids == 1 ? "" : "s", dups, ids * dups, ns.c_str());

    // The business effect: append to a ledger, take a moment, print a receipt.
    const std::string script = "echo \"$1\" >> \"$2\"; sleep 0.3; echo \"charged $1 (delivery $IDEM_DEMO_DELIVERY)\"";
    struct Proc {
        pid_t pid;
        int order;
        int delivery;
        std::string out;
        int exitCode = -1;
    };
    std::vector<Proc> procs;
    for (int d = 1; d <= dups; ++d) {
        for (int o = 1; o <= ids; ++o) {
            const std::string order = "order-" + std::to_string(o);
            std::vector<std::string> a = {self, "--url", url, "--namespace", ns, "run", "--key", order,
                                          "--lease", "2s", "--wait", "10s", "--",
                                          "sh", "-c", script, "sh", order, ledger};
            std::vector<char*> cargv;
            for (auto& s : a)
                cargv.push_back(s.data());
            cargv.push_back(nullptr);
            const std::string out = work + "/out-" + std::to_string(o) + "-" + std::to_string(d);
            std::vector<std::string> env;
            for (char** e = environ; *e; ++e)
                if (!std::string_view(*e).starts_with("IDEM_DEMO_DELIVERY="))
                    env.emplace_back(*e);
            env.push_back("IDEM_DEMO_DELIVERY=" + std::to_string(d));
            std::vector<char*> cenv;
            for (auto& s : env)
                cenv.push_back(s.data());
            cenv.push_back(nullptr);
            posix_spawn_file_actions_t fa;
            posix_spawn_file_actions_init(&fa);
            posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
            pid_t pid = -1;
            const int rc = posix_spawn(&pid, self.c_str(), &fa, nullptr, cargv.data(), cenv.data());
            posix_spawn_file_actions_destroy(&fa);
            if (rc != 0)
                throw UsageFailure{"cannot start " + self + ": " + std::strerror(rc)};
            procs.push_back(Proc{pid, o, d, out});
        }
    }
    for (auto& p : procs) {
        int status = 0;
        while (::waitpid(p.pid, &status, 0) < 0 && errno == EINTR) {
        }
        p.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        p.out = readFile(p.out);
        while (!p.out.empty() && p.out.back() == '\n')
            p.out.pop_back();
    }

    std::map<std::string, int> charges;
    {
        std::ifstream in(ledger);
        std::string line;
        while (std::getline(in, line))
            ++charges[line];
    }
    int executed = 0, replayed = 0, other = 0;
    std::sort(procs.begin(), procs.end(), [](const Proc& a, const Proc& b) {
        return std::tie(a.order, a.delivery) < std::tie(b.order, b.delivery);
    });
    for (const auto& p : procs) {
        const std::string mine = "(delivery " + std::to_string(p.delivery) + ")";
        const char* what = "other";
        if (p.exitCode == 0 && p.out.ends_with(mine)) {
            what = "EXECUTED";
            ++executed;
        } else if (p.exitCode == 0) {
            what = "replayed";
            ++replayed;
        } else {
            ++other;
        }
        std::printf("order-%-3d delivery %-2d  %-9s exit %-3d  %s\n", p.order, p.delivery, what, p.exitCode,
                    p.out.c_str());
    }
    int doubles = 0;
    for (const auto& [order, n] : charges)
        if (n > 1)
            doubles += n - 1;
    std::printf("\n%d deliveries: %d executed, %d replayed the stored receipt, %d other.\n",
                ids * dups, executed, replayed, other);
    std::printf("ledger: %zu orders charged, %d double charges.\n", charges.size(), doubles);
    if (!server) {
        std::error_code ec;
        std::filesystem::remove_all(work, ec);
    }
    return (doubles == 0 && executed == ids && other == 0) ? Ok : Refused;
}

} // namespace idemctl
