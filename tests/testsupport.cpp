#include "testsupport.h"

#include "idem/errors.h"
#include "idem/monitor/monitor.h"
#include "idem/engine/store.h"

#include <QProcess>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <QThread>
#include <QElapsedTimer>
#include <filesystem>
#include <QTemporaryDir>
#include <QtTest>
#include <atomic>
#include <fstream>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

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

idem::ConnectionOptions quick(idem::ConnectionOptions o)
{
    o.connectTimeout = idem::Millis(500);
    o.commandTimeout = idem::Millis(1500);
    o.reconnectMin = idem::Millis(20);
    o.reconnectMax = idem::Millis(200);
    return o;
}

ClosedPort::ClosedPort()
{
    m_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    // no SO_REUSEADDR: a server that sets it still cannot bind a port held by a socket without it
    if (m_fd < 0 || ::bind(m_fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::getsockname(m_fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
        qFatal("ClosedPort: cannot bind a loopback port: %s", std::strerror(errno));
    m_port = ntohs(addr.sin_port);
}

ClosedPort::~ClosedPort()
{
    ::close(m_fd);
}

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

const TestCerts& TestCerts::get()
{
    static const TestCerts certs;
    return certs;
}

TestCerts::TestCerts()
{
    static QTemporaryDir dir; // lives as long as the test process
    if (!dir.isValid())
        qFatal("cannot make a temporary directory for certificates");
    m_dir = dir.path().toStdString();
    const auto openssl = [&](const QStringList& args) {
        QProcess p;
        p.setWorkingDirectory(dir.path());
        p.start(QStringLiteral("openssl"), args);
        if (!p.waitForFinished(30000) || p.exitCode() != 0)
            qFatal("openssl %s failed: %s", qPrintable(args.join(u' ')), p.readAllStandardError().constData());
    };
    const auto write = [&](const char* name, const char* text) {
        std::ofstream(m_dir + "/" + name) << text;
    };
    write("server.ext", "subjectAltName=DNS:localhost,IP:127.0.0.1\n");
    write("elsewhere.ext", "subjectAltName=DNS:elsewhere.example\n");
    write("client.ext", "extendedKeyUsage=clientAuth\n");
    const auto ca = [&](const QString& name) {
        openssl({u"req"_qs, u"-x509"_qs, u"-newkey"_qs, u"rsa:2048"_qs, u"-nodes"_qs, u"-keyout"_qs, name + u".key"_qs,
                 u"-out"_qs, name + u".pem"_qs, u"-days"_qs, u"2"_qs, u"-subj"_qs, u"/CN="_qs + name});
    };
    const auto sign = [&](const QString& csrKey, const QString& out, const QString& caName, const QString& ext,
                          const QString& days, const QString& cn) {
        openssl({u"req"_qs, u"-newkey"_qs, u"rsa:2048"_qs, u"-nodes"_qs, u"-keyout"_qs, csrKey, u"-out"_qs,
                 out + u".csr"_qs, u"-subj"_qs, u"/CN="_qs + cn});
        openssl({u"x509"_qs, u"-req"_qs, u"-in"_qs, out + u".csr"_qs, u"-CA"_qs, caName + u".pem"_qs, u"-CAkey"_qs,
                 caName + u".key"_qs, u"-CAcreateserial"_qs, u"-out"_qs, out, u"-days"_qs, days, u"-extfile"_qs, ext});
    };
    ca(u"ca"_qs);
    ca(u"other-ca"_qs);
    sign(u"server.key"_qs, u"server.pem"_qs, u"ca"_qs, u"server.ext"_qs, u"2"_qs, u"localhost"_qs);
    sign(u"client.key"_qs, u"client.pem"_qs, u"ca"_qs, u"client.ext"_qs, u"2"_qs, u"idem-client"_qs);
    sign(u"other-server.key"_qs, u"other-server.pem"_qs, u"other-ca"_qs, u"server.ext"_qs, u"2"_qs, u"localhost"_qs);
    sign(u"expired.key"_qs, u"expired.pem"_qs, u"ca"_qs, u"server.ext"_qs, u"-1"_qs, u"localhost"_qs);
    sign(u"elsewhere.key"_qs, u"elsewhere.pem"_qs, u"ca"_qs, u"elsewhere.ext"_qs, u"2"_qs, u"elsewhere.example"_qs);
}

std::string TestCerts::path(const char* name) const { return m_dir + "/" + name; }

idem::LocalServerOptions TestCerts::serverOptions(const char* server, bool authClients) const
{
    idem::LocalServerOptions o;
    const std::string cert = server;
    o.tls.cert = path(server);
    o.tls.key = path((cert.substr(0, cert.size() - 4) + ".key").c_str());
    o.tls.ca = path("ca.pem");
    o.tls.authClients = authClients;
    if (authClients) {
        o.tls.clientCert = path("client.pem");
        o.tls.clientKey = path("client.key");
    }
    return o;
}

LocalSentinelSet::LocalSentinelSet(int replicas)
{
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/idem-sentinels-XXXXXX";
    if (!::mkdtemp(tmpl.data()))
        qFatal("cannot make a directory for the sentinels");
    m_dir = tmpl;
    const std::vector<std::string> fast = {"--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0",
                                           "--appendonly", "no"};
    idem::LocalServerOptions po;
    po.extraArgs = fast;
    m_nodes.push_back(std::make_unique<idem::LocalServer>(po));
    const int primaryPort = m_nodes.front()->port();
    for (int i = 0; i < replicas; ++i) {
        idem::LocalServerOptions ro;
        ro.extraArgs = fast;
        ro.extraArgs.insert(ro.extraArgs.end(), {"--replicaof", "127.0.0.1", std::to_string(primaryPort)});
        m_nodes.push_back(std::make_unique<idem::LocalServer>(ro));
    }
    for (int i = 0; i < 3; ++i) {
        idem::LocalServerOptions so;
        so.dir = m_dir + "/sentinel-" + std::to_string(i);
        std::filesystem::create_directories(so.dir);
        std::ofstream(so.dir + "/sentinel.conf")
            << "sentinel monitor mymaster 127.0.0.1 " << primaryPort << " 2\n"
            << "sentinel down-after-milliseconds mymaster 1000\n"
            << "sentinel failover-timeout mymaster 3000\n"
            << "sentinel parallel-syncs mymaster 1\n";
        so.configFile = "sentinel.conf";
        so.extraArgs = {"--sentinel"};
        m_sentinels.push_back(std::make_unique<idem::LocalServer>(so));
    }
    waitForReplicas(replicas);
    // the sentinels find the replicas and each other through the primary (hello messages every 2 s)
    QElapsedTimer t;
    t.start();
    for (auto& s : m_sentinels) {
        idem::Connection c(s->connectionOptions());
        while (true) {
            const auto known = c.command({"SENTINEL", "replicas", "mymaster"});
            const auto peers = c.command({"SENTINEL", "sentinels", "mymaster"});
            if (static_cast<int>(idem::reply::arraySize(known.get())) >= replicas &&
                idem::reply::arraySize(peers.get()) >= 2)
                break;
            if (t.elapsed() > 30000)
                qFatal("the sentinels did not find each other and the replicas within 30 s");
            QThread::msleep(100);
        }
    }
}

LocalSentinelSet::~LocalSentinelSet()
{
    m_sentinels.clear();
    m_nodes.clear();
    std::error_code ec;
    std::filesystem::remove_all(m_dir, ec);
}

std::string LocalSentinelSet::url() const
{
    std::string nodes;
    for (const auto& s : m_sentinels)
        nodes += (nodes.empty() ? "" : ",") + std::string("127.0.0.1:") + std::to_string(s->port());
    return "redis-sentinel://" + nodes + "/0#mymaster";
}

idem::ConnectionOptions LocalSentinelSet::options() const { return idem::ConnectionOptions::fromUrl(url()); }

int LocalSentinelSet::primary()
{
    for (auto& s : m_sentinels) {
        try {
            idem::Connection c(s->connectionOptions());
            const auto r = c.command({"SENTINEL", "get-master-addr-by-name", "mymaster"});
            const int port = std::atoi(idem::reply::str(idem::reply::element(r.get(), 1)).c_str());
            for (std::size_t i = 0; i < m_nodes.size(); ++i)
                if (m_nodes[i]->port() == port)
                    return static_cast<int>(i);
            return -1;
        } catch (const idem::Error&) {
        }
    }
    return -1;
}

int LocalSentinelSet::waitForNewPrimary(int previous, int timeoutMs)
{
    QElapsedTimer t;
    t.start();
    while (t.elapsed() < timeoutMs) {
        const int now = primary();
        if (now >= 0 && now != previous) {
            try {
                idem::Connection c(node(now).connectionOptions());
                if (idem::reply::str(idem::reply::element(c.checked({"ROLE"}).get(), 0)) == "master")
                    return now;
            } catch (const idem::Error&) {
            }
        }
        QThread::msleep(100);
    }
    qFatal("no new primary within %d ms", timeoutMs);
    return -1;
}

void LocalSentinelSet::waitForFailoverDone(int node, int timeoutMs)
{
    const std::string port = std::to_string(this->node(node).port());
    QElapsedTimer t;
    t.start();
    while (t.elapsed() < timeoutMs) {
        int done = 0;
        for (auto& s : m_sentinels) {
            try {
                idem::Connection c(s->connectionOptions());
                const auto r = c.checked({"SENTINEL", "master", "mymaster"});
                std::map<std::string, std::string> fields;
                for (std::size_t i = 0; i + 1 < idem::reply::arraySize(r.get()); i += 2)
                    fields[idem::reply::str(idem::reply::element(r.get(), i))] =
                        idem::reply::str(idem::reply::element(r.get(), i + 1));
                if (fields["port"] == port && fields["flags"].find("failover") == std::string::npos)
                    ++done;
            } catch (const idem::Error&) {
            }
        }
        if (done == static_cast<int>(m_sentinels.size()))
            return;
        QThread::msleep(100);
    }
    qFatal("the sentinels did not all settle on node %d within %d ms", node, timeoutMs);
}

void LocalSentinelSet::waitForReplicas(int replicas, int timeoutMs)
{
    QElapsedTimer t;
    t.start();
    while (t.elapsed() < timeoutMs) {
        try {
            const int p = primary() >= 0 ? primary() : 0;
            idem::Connection c(node(p).connectionOptions());
            const std::string info = idem::reply::str(c.checked({"INFO", "replication"}).get());
            int online = 0;
            for (std::size_t at = info.find("state=online"); at != std::string::npos;
                 at = info.find("state=online", at + 1))
                ++online;
            if (online >= replicas)
                return;
        } catch (const idem::Error&) {
        }
        QThread::msleep(100);
    }
    qFatal("the replicas did not come online within %d ms", timeoutMs);
}

void DeliveryLoad::go(idem::Executor& ex, const std::string& prefix, int threads, const std::function<void()>& during)
{
    std::atomic<bool> stop{false};
    std::vector<std::thread> workers;
    for (int w = 0; w < threads; ++w)
        workers.emplace_back([&] {
            while (!stop) {
                const std::string id = prefix + std::to_string(ids++);
                QElapsedTimer t;
                t.start();
                while (t.elapsed() < 60000) {
                    const auto work = [&, id](const idem::WorkContext&) {
                        std::lock_guard lock(mutex);
                        ++runs[id];
                        return idem::WorkResult::success("done " + id);
                    };
                    const auto o = viaSubmit ? ex.submit(id, "", work).get() : ex.execute(id, "", work);
                    {
                        std::lock_guard lock(mutex);
                        history[id] << QString::fromUtf8(idem::nameOf(o.kind).data()) +
                                           (o.error.empty() ? QString() : u" ("_qs + QString::fromStdString(o.error) + u")"_qs);
                    }
                    if (o.kind == idem::OutcomeKind::Executed || o.kind == idem::OutcomeKind::Replayed)
                        break;
                    unavailable += o.kind == idem::OutcomeKind::StoreUnavailable ? 1 : 0;
                    notReplicated += o.kind == idem::OutcomeKind::NotReplicated ? 1 : 0;
                    QThread::msleep(30);
                }
                QThread::msleep(5);
            }
        });
    during();
    QThread::msleep(500);
    stop = true;
    for (auto& w : workers)
        w.join();
}

QString DeliveryLoad::check(const std::string& prefix)
{
    QStringList problems;
    for (int i = 0; i < ids; ++i) {
        const std::string id = prefix + std::to_string(i);
        if (runs[id] != 1)
            problems << QString::fromStdString(id) + u" ran "_qs + QString::number(runs[id]) + u" time(s): "_qs +
                            history[id].join(u", "_qs);
    }
    return problems.join(u"; "_qs);
}

} // namespace idemtest
