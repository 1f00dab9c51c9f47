#include "testsupport.h"

#include "idem/store.h"

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

} // namespace idemtest
