#include "testsupport.h"

#include "idem/monitor/monitor.h"
#include "idem/engine/store.h"

#include <QProcess>
#include <QtTest>
#include <atomic>
#include <fstream>

namespace idemtest {

idem::ConnectionOptions sharedRedis()
{
    const QByteArray dir = qgetenv("IDEM_TEST_REDIS_DIR");
    if (dir.isEmpty())
        qFatal("IDEM_TEST_REDIS_DIR is not set: run the tests through ctest (it starts redis-server)");
    int port = 0;
    std::ifstream(dir.toStdString() + "/port") >> port;
    if (port <= 0)
        qFatal("no port file in %s: did the redis.start fixture run?", dir.constData());
    idem::ConnectionOptions o;
    o.host = "127.0.0.1";
    o.port = port;
    return o;
}

std::string sharedRedisUrl()
{
    return "redis://127.0.0.1:" + std::to_string(sharedRedis().port) + "/0";
}

LocalCluster::LocalCluster(int primaries, int replicas)
{
    using idem::reply::str;
    idem::LocalServerOptions opts;
    opts.extraArgs = {"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "3000"};
    for (int i = 0; i < primaries + replicas; ++i)
        m_nodes.push_back(std::make_unique<idem::LocalServer>(opts));
    std::vector<std::unique_ptr<idem::Connection>> c;
    for (int i = 0; i < size(); ++i)
        c.push_back(std::make_unique<idem::Connection>(node(i)));
    for (int i = 0; i < primaries; ++i) {
        const int first = idem::ScanCoverage::kSlots * i / primaries;
        const int last = idem::ScanCoverage::kSlots * (i + 1) / primaries - 1;
        c[i]->checked({"CLUSTER", "ADDSLOTSRANGE", std::to_string(first), std::to_string(last)});
    }
    for (int i = 1; i < size(); ++i)
        c[0]->checked({"CLUSTER", "MEET", "127.0.0.1", std::to_string(m_nodes[i]->port())});
    const auto waitFor = [&](const char* what, auto&& done) {
        for (int tries = 0; tries < 300; ++tries) {
            if (done())
                return;
            QThread::msleep(50);
        }
        qFatal("LocalCluster: %s did not happen in 15 s", what);
    };
    const std::string everyone = "cluster_known_nodes:" + std::to_string(size()) + "\r";
    waitFor("every node meeting every other", [&] {
        for (auto& conn : c)
            if (str(conn->checked({"CLUSTER", "INFO"}).get()).find(everyone) == std::string::npos)
                return false;
        return true;
    });
    for (int i = 0; i < replicas; ++i) {
        const std::string primaryId = str(c[i % primaries]->checked({"CLUSTER", "MYID"}).get());
        c[primaries + i]->checked({"CLUSTER", "REPLICATE", primaryId});
    }
    waitFor("cluster_state:ok on every node, replicas known as such", [&] {
        for (auto& conn : c) {
            if (str(conn->checked({"CLUSTER", "INFO"}).get()).find("cluster_state:ok") == std::string::npos)
                return false;
            const std::string nodes = str(conn->checked({"CLUSTER", "NODES"}).get());
            int slaves = 0;
            for (std::size_t p = nodes.find("slave"); p != std::string::npos; p = nodes.find("slave", p + 1))
                ++slaves;
            if (slaves != replicas)
                return false;
        }
        return true;
    });
}

LocalCluster::~LocalCluster() = default;

idem::ConnectionOptions LocalCluster::node(int i) const { return m_nodes.at(static_cast<std::size_t>(i))->connectionOptions(); }

std::string LocalCluster::url(int i) const { return m_nodes.at(static_cast<std::size_t>(i))->url(); }

std::string uniqueNamespace(const char* prefix)
{
    static std::atomic<int> counter{0};
    return std::string(prefix) + "-" + idem::newToken().substr(0, 10) + "-" + std::to_string(counter++);
}

QString idemctlPath()
{
    const QByteArray p = qgetenv("IDEMCTL");
    if (p.isEmpty())
        qFatal("IDEMCTL is not set: run the tests through ctest");
    return QString::fromLocal8Bit(p);
}

ProcessResult runIdemctl(const QStringList& args, int timeoutMs, const QByteArray& stdinData)
{
    QProcess p;
    p.start(idemctlPath(), args);
    ProcessResult r;
    if (!p.waitForStarted(10000))
        return r;
    if (!stdinData.isEmpty())
        p.write(stdinData);
    p.closeWriteChannel();
    if (!p.waitForFinished(timeoutMs)) {
        p.kill();
        p.waitForFinished();
        return r;
    }
    r.exitCode = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    r.out = p.readAllStandardOutput();
    r.err = p.readAllStandardError();
    return r;
}

long long commandCalls(idem::Connection& c, const std::string& command)
{
    const std::string stats = idem::reply::str(c.checked({"INFO", "commandstats"}).get());
    const std::string field = "cmdstat_" + command + ":calls=";
    const auto p = stats.find(field);
    return p == std::string::npos ? 0LL : std::atoll(stats.c_str() + p + field.size());
}

} // namespace idemtest
