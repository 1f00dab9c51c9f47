// idem-test-redis start|stop DIR: the ctest fixture around the shared redis-server.
#include "idem/errors.h"
#include "idem/redis/localserver.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

int main(int argc, char** argv)
{
    if (argc != 3) {
        std::fprintf(stderr, "usage: idem-test-redis start|stop DIR\n");
        return 64;
    }
    const std::string cmd = argv[1], dir = argv[2];
    if (cmd == "start") {
        try {
            std::error_code ec;
            std::filesystem::remove_all(dir, ec);
            idem::LocalServerOptions o;
            o.dir = dir;
            o.dieWithParent = false; // it must outlive this process: redis.stop ends it
            // keyspace notifications on, as the console's live view will want them
            o.extraArgs = {"--notify-keyspace-events", "KEA"};
            idem::LocalServer server(o);
            server.detach();
            std::ofstream(dir + "/port") << server.port() << "\n";
            std::ofstream(dir + "/pid") << server.pid() << "\n";
            std::printf("redis-server pid %d on 127.0.0.1:%d in %s\n", static_cast<int>(server.pid()),
                        server.port(), dir.c_str());
            return 0;
        } catch (const idem::Error& e) {
            std::fprintf(stderr, "idem-test-redis: %s\n", e.what());
            return 1;
        }
    }
    if (cmd == "stop") {
        int pid = 0;
        std::ifstream(dir + "/pid") >> pid;
        if (pid > 0) {
            ::kill(pid, SIGCONT);
            ::kill(pid, SIGTERM);
            for (int i = 0; i < 500 && ::kill(pid, 0) == 0; ++i)
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
            if (::kill(pid, 0) == 0)
                ::kill(pid, SIGKILL);
        }
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
        std::printf("redis-server stopped\n");
        return 0;
    }
    std::fprintf(stderr, "idem-test-redis: unknown command '%s'\n", cmd.c_str());
    return 64;
}
