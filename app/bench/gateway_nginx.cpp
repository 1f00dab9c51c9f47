// idem-gateway-bench --nginx: what #16's performance goals are set against. The upstream is an
// nginx answering every request 201 with a fixed JSON body; the anchor is a second nginx as a
// plain keep-alive reverse proxy to it; idem-gateway sits in front of the same upstream. wrk
// drives each, at 16 and 64 connections, with two Lua scripts: "replay" (one fixed
// Idempotency-Key: after the first, every request is a duplicate) and "fresh" (a new key per
// request: acquire + upstream + complete). Both nginx run as this user from a temporary
// directory (-p DIR -c conf, pid, logs and temp paths inside it, no daemon, no master process).
// A fourth row, qt-relay, is a bare relay on Qt Network (qtRelay(), this program run as a child),
// the floor of the gateway's own event loop and sockets. Each measured run also prints the CPU time every process spent per request (/proc/PID/stat for
// the servers, getrusage(RUSAGE_CHILDREN) for wrk): where a ratio's cost goes on this machine.
#include "gateway_nginx.h"

#include "idem/errors.h"
#include "idem/redis/localserver.h"

#include <QCoreApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTemporaryDir>
#include <QThread>

#include <cstdio>
#include <sys/resource.h>
#include <unistd.h>
#include <map>
#include <memory>
#include <vector>

using namespace Qt::StringLiterals;

quint16 startGateway(QProcess& gateway, quint16 upstreamPort, const std::string& redisUrl, const QString& keyNamespace)
{
    gateway.setProgram(QCoreApplication::applicationDirPath() + u"/idem-gateway"_s);
    gateway.setArguments({u"--upstream"_s, u"http://127.0.0.1:%1"_s.arg(upstreamPort), u"--listen"_s,
                          u"127.0.0.1:0"_s, u"--url"_s, QString::fromStdString(redisUrl), u"--namespace"_s,
                          keyNamespace});
    gateway.setProcessChannelMode(QProcess::ForwardedErrorChannel);
    gateway.start();
    QByteArray out;
    QElapsedTimer wait;
    wait.start();
    while (wait.elapsed() < 10000 && gateway.waitForReadyRead(10000)) {
        out += gateway.readAllStandardOutput();
        const auto m = QRegularExpression(u"listening: http://127.0.0.1:(\\d+)"_s).match(QString::fromUtf8(out));
        if (m.hasMatch())
            return static_cast<quint16>(m.captured(1).toUInt());
    }
    std::fprintf(stderr, "idem-gateway-bench: idem-gateway did not start (%s)\n", out.constData());
    return 0;
}

namespace {

// A port free now (nginx is told a number; the small race with other programs is accepted).
quint16 freePort()
{
    QTcpServer s;
    return s.listen(QHostAddress::LocalHost, 0) ? s.serverPort() : 0;
}

bool writeFile(const QString& path, const QByteArray& text)
{
    QFile f(path);
    return f.open(QIODevice::WriteOnly | QIODevice::Truncate) && f.write(text) == text.size();
}

bool waitForPort(quint16 port, int ms)
{
    QElapsedTimer t;
    t.start();
    while (t.elapsed() < ms) {
        QTcpSocket s;
        s.connectToHost(QHostAddress::LocalHost, port);
        if (s.waitForConnected(200))
            return true;
        QThread::msleep(50);
    }
    return false;
}

// One nginx in the foreground, single process, everything of its own under `dir`.
class Nginx {
public:
    Nginx(QString binary, QString dir, QString name, const QByteArray& serverBlock)
        : m_dir(std::move(dir)), m_name(std::move(name))
    {
        QDir(m_dir).mkpath(m_name + u"/tmp"_s);
        const QByteArray root = (m_dir + u'/' + m_name).toUtf8();
        const QByteArray conf = "daemon off;\nmaster_process off;\nworker_processes 1;\npid " + root + "/nginx.pid;\n"
                                "error_log " + root + "/error.log warn;\n"
                                "events { worker_connections 4096; }\n"
                                "http {\n  access_log off;\n  keepalive_requests 1000000;\n  keepalive_timeout 120s;\n"
                                "  client_body_temp_path " + root + "/tmp/body;\n  proxy_temp_path " + root + "/tmp/proxy;\n"
                                "  fastcgi_temp_path " + root + "/tmp/fastcgi;\n  uwsgi_temp_path " + root + "/tmp/uwsgi;\n"
                                "  scgi_temp_path " + root + "/tmp/scgi;\n" + serverBlock + "}\n";
        m_ok = writeFile(QString::fromUtf8(root) + u"/nginx.conf"_s, conf);
        m_process.setProgram(binary);
        m_process.setArguments({u"-p"_s, QString::fromUtf8(root), u"-c"_s, QString::fromUtf8(root) + u"/nginx.conf"_s,
                                u"-e"_s, QString::fromUtf8(root) + u"/error.log"_s});
        m_process.setProcessChannelMode(QProcess::ForwardedChannels);
    }
    ~Nginx()
    {
        if (m_process.state() != QProcess::NotRunning) {
            m_process.terminate();
            if (!m_process.waitForFinished(5000))
                m_process.kill();
            m_process.waitForFinished(2000);
        }
    }
    bool start(quint16 port)
    {
        if (!m_ok)
            return false;
        m_process.start();
        if (!m_process.waitForStarted(5000) || !waitForPort(port, 5000)) {
            QFile log(m_dir + u'/' + m_name + u"/error.log"_s);
            log.open(QIODevice::ReadOnly);
            std::fprintf(stderr, "idem-gateway-bench: nginx (%s) did not start: %s\n", qPrintable(m_name),
                         log.readAll().trimmed().constData());
            return false;
        }
        return true;
    }

    qint64 pid() const { return m_process.processId(); }

private:
    QString m_dir, m_name;
    QProcess m_process;
    bool m_ok = false;
};

// CPU seconds a running process has used (user + system), from /proc/PID/stat; -1 if unknown.
double cpuSeconds(qint64 pid)
{
    QFile f(u"/proc/%1/stat"_s.arg(pid));
    if (pid <= 0 || !f.open(QIODevice::ReadOnly))
        return -1;
    const QByteArray stat = f.readAll();
    const qsizetype afterName = stat.lastIndexOf(')'); // the name may hold spaces
    const QList<QByteArray> fields = stat.mid(afterName + 2).split(' ');
    if (fields.size() < 13)
        return -1;
    // fields 14 and 15 of the file (utime, stime) are 11 and 12 after the state
    return (fields[11].toDouble() + fields[12].toDouble()) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

// CPU seconds used by the children this process has waited for (wrk, once it ended).
double childrenCpuSeconds()
{
    rusage u{};
    ::getrusage(RUSAGE_CHILDREN, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

struct WrkResult {
    bool ok = false;
    double rps = 0, p50 = 0, p99 = 0; // ms
    long long requests = 0, non2xx = 0, errors = 0;
};

double toMs(const QString& value, const QString& unit)
{
    const double v = value.toDouble();
    return unit == u"us"_s ? v / 1000 : unit == u"s"_s ? v * 1000 : unit == u"m"_s ? v * 60'000 : v;
}

WrkResult runWrk(const QString& wrk, const QString& script, const QString& run, quint16 port, int connections,
                 int seconds)
{
    QProcess p;
    p.setProgram(wrk);
    p.setArguments({u"-t2"_s, u"-c%1"_s.arg(connections), u"-d%1s"_s.arg(seconds), u"--latency"_s, u"-s"_s, script,
                    u"http://127.0.0.1:%1/orders"_s.arg(port), u"--"_s, run});
    p.start();
    WrkResult r;
    if (!p.waitForFinished((seconds + 30) * 1000)) {
        p.kill();
        p.waitForFinished();
        return r;
    }
    const QString out = QString::fromUtf8(p.readAllStandardOutput());
    const auto rps = QRegularExpression(u"Requests/sec:\\s+([0-9.]+)"_s).match(out);
    const auto p50 = QRegularExpression(u"\\n\\s+50%\\s+([0-9.]+)(us|ms|s|m)"_s).match(out);
    const auto p99 = QRegularExpression(u"\\n\\s+99%\\s+([0-9.]+)(us|ms|s|m)"_s).match(out);
    const auto total = QRegularExpression(u"(\\d+) requests in"_s).match(out);
    if (!rps.hasMatch() || !p50.hasMatch() || !p99.hasMatch()) {
        std::fprintf(stderr, "idem-gateway-bench: cannot read wrk's output:\n%s%s\n", qPrintable(out),
                     p.readAllStandardError().constData());
        return r;
    }
    r.ok = true;
    r.rps = rps.captured(1).toDouble();
    r.p50 = toMs(p50.captured(1), p50.captured(2));
    r.p99 = toMs(p99.captured(1), p99.captured(2));
    r.requests = total.captured(1).toLongLong();
    if (const auto m = QRegularExpression(u"Non-2xx or 3xx responses: (\\d+)"_s).match(out); m.hasMatch())
        r.non2xx = m.captured(1).toLongLong();
    if (const auto m = QRegularExpression(u"Socket errors: connect (\\d+), read (\\d+), write (\\d+), timeout (\\d+)"_s)
                           .match(out);
        m.hasMatch())
        r.errors = m.captured(1).toLongLong() + m.captured(2).toLongLong() + m.captured(3).toLongLong() +
                   m.captured(4).toLongLong();
    return r;
}

// "replay": one fixed key (its run's), so that after the first every request is a duplicate.
// "fresh": a new key per request, unique across wrk's threads and runs.
const char* kReplayLua = R"(wrk.method = "POST"
wrk.body = '{"amount":10}'
wrk.headers["Content-Type"] = "application/json"
function init(args)
  wrk.headers["Idempotency-Key"] = '"replay-' .. args[1] .. '"'
end
)";
const char* kFreshLua = R"(local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("tid", threads)
end
local n = 0
local run = ""
local headers = { ["Content-Type"] = "application/json" }
function init(args)
  run = args[1]
end
function request()
  n = n + 1
  headers["Idempotency-Key"] = '"fresh-' .. run .. '-' .. tid .. '-' .. n .. '"'
  return wrk.format("POST", nil, headers, '{"amount":10}')
end
)";

QString findProgram(const char* name)
{
    QString p = QStandardPaths::findExecutable(QString::fromLatin1(name));
    if (p.isEmpty())
        p = QStandardPaths::findExecutable(QString::fromLatin1(name), {u"/usr/sbin"_s, u"/usr/local/sbin"_s});
    return p;
}

double loadAverage()
{
    QFile f(u"/proc/loadavg"_s);
    return f.open(QIODevice::ReadOnly) ? f.readAll().split(' ').value(0).toDouble() : -1;
}

// This program again, as a bare Qt relay in front of `upstreamPort`; returns the port (0: not started).
quint16 startQtRelay(QProcess& relay, quint16 upstreamPort)
{
    relay.setProgram(QCoreApplication::applicationFilePath());
    relay.setArguments({u"--qt-relay"_s, QString::number(upstreamPort)});
    relay.setProcessChannelMode(QProcess::ForwardedErrorChannel);
    relay.start();
    if (!relay.waitForReadyRead(10000))
        return 0;
    const auto m = QRegularExpression(u"listening: (\\d+)"_s).match(QString::fromUtf8(relay.readAllStandardOutput()));
    return m.hasMatch() ? static_cast<quint16>(m.captured(1).toUInt()) : 0;
}

} // namespace

int qtRelay(quint16 upstreamPort)
{
    QTcpServer server;
    QObject::connect(&server, &QTcpServer::newConnection, [&server, upstreamPort] {
        while (QTcpSocket* client = server.nextPendingConnection()) {
            auto* up = new QTcpSocket(client); // written to while it connects: QAbstractSocket buffers
            up->connectToHost(QHostAddress::LocalHost, upstreamPort);
            QObject::connect(client, &QTcpSocket::readyRead, up, [client, up] { up->write(client->readAll()); });
            QObject::connect(up, &QTcpSocket::readyRead, client, [client, up] { client->write(up->readAll()); });
            QObject::connect(client, &QTcpSocket::disconnected, client, &QObject::deleteLater);
        }
    });
    if (!server.listen(QHostAddress::LocalHost, 0)) {
        std::fprintf(stderr, "idem-gateway-bench --qt-relay: cannot listen: %s\n", qPrintable(server.errorString()));
        return 69;
    }
    std::printf("listening: %u\n", server.serverPort());
    std::fflush(stdout);
    return QCoreApplication::exec();
}

int nginxBench(const QStringList& args)
{
    int seconds = 5;
    std::vector<int> concurrency = {16, 64};
    for (qsizetype i = 1; i < args.size(); ++i) {
        if (args[i] == u"--nginx"_s)
            continue;
        if (args[i] == u"--seconds"_s && i + 1 < args.size() && args[i + 1].toInt() > 0) {
            seconds = args[++i].toInt();
        } else if (args[i] == u"--connections"_s && i + 1 < args.size()) {
            concurrency.clear();
            for (const QString& c : args[++i].split(u','))
                concurrency.push_back(c.toInt());
        } else {
            std::fprintf(stderr, "usage: idem-gateway-bench --nginx [--seconds 5] [--connections 16,64]\n");
            return 64;
        }
    }
    const QString nginx = findProgram("nginx"), wrk = findProgram("wrk");
    if (nginx.isEmpty() || wrk.isEmpty()) {
        std::printf("idem-gateway-bench --nginx: skipped: %s not found (Debian: apt-get install nginx wrk, or "
                    "tools/setup-debian.sh)\n",
                    nginx.isEmpty() && wrk.isEmpty() ? "nginx and wrk" : nginx.isEmpty() ? "nginx" : "wrk");
        return 0;
    }
    QTemporaryDir dir;
    if (!dir.isValid())
        return 69;
    std::unique_ptr<idem::LocalServer> redis;
    try {
        redis = std::make_unique<idem::LocalServer>();
    } catch (const idem::Error& e) {
        std::fprintf(stderr, "idem-gateway-bench: cannot start redis-server: %s\n", e.what());
        return 69;
    }
    const quint16 upPort = freePort(), proxyPort = freePort();
    Nginx upstream(nginx, dir.path(), u"upstream"_s,
                   "  server {\n    listen 127.0.0.1:" + QByteArray::number(upPort) +
                       ";\n    location / {\n      default_type application/json;\n"
                       "      add_header Location /orders/1 always;\n"
                       "      return 201 '{\"id\":1,\"status\":\"created\",\"amount\":10}';\n    }\n  }\n");
    Nginx proxy(nginx, dir.path(), u"proxy"_s,
                "  upstream up {\n    server 127.0.0.1:" + QByteArray::number(upPort) +
                    ";\n    keepalive 128;\n  }\n"
                    "  server {\n    listen 127.0.0.1:" + QByteArray::number(proxyPort) +
                    ";\n    location / {\n      proxy_pass http://up;\n      proxy_http_version 1.1;\n"
                    "      proxy_set_header Connection \"\";\n    }\n  }\n");
    if (!upstream.start(upPort) || !proxy.start(proxyPort))
        return 69;
    QProcess gatewayProcess;
    const quint16 gatewayPort = startGateway(gatewayProcess, upPort, redis->url(), u"bench-nginx"_s);
    if (gatewayPort == 0)
        return 69;
    QProcess relayProcess;
    const quint16 relayPort = startQtRelay(relayProcess, upPort);
    if (relayPort == 0) {
        std::fprintf(stderr, "idem-gateway-bench: the Qt relay did not start\n");
        return 69;
    }
    const QString replayLua = dir.filePath(u"replay.lua"_s), freshLua = dir.filePath(u"fresh.lua"_s);
    if (!writeFile(replayLua, kReplayLua) || !writeFile(freshLua, kFreshLua))
        return 69;

    std::printf("idem-gateway-bench --nginx: wrk -t2 -d%ds --latency, POST /orders with Idempotency-Key; upstream "
                "nginx (201, fixed body), proxy nginx (keep-alive), idem-gateway (redis-server %s); load average "
                "%.2f\n",
                seconds, redis->url().c_str(), loadAverage());
    struct Target {
        const char* name;
        quint16 port;
    };
    const Target targets[] = {
        {"direct", upPort}, {"nginx-proxy", proxyPort}, {"qt-relay", relayPort}, {"idem-gateway", gatewayPort}};
    const std::pair<const char*, qint64> servers[] = {{"nginx upstream", upstream.pid()},
                                                      {"nginx proxy", proxy.pid()},
                                                      {"qt-relay", relayProcess.processId()},
                                                      {"redis-server", static_cast<qint64>(redis->pid())},
                                                      {"idem-gateway", gatewayProcess.processId()}};
    int run = 0;
    bool goalsMet = true;
    for (const int c : concurrency) {
        for (const auto& [script, label] : {std::pair{replayLua, "replay"}, std::pair{freshLua, "fresh"}}) {
            std::map<std::string, WrkResult> res;
            for (const Target& t : targets) {
                const QString tag = u"%1-%2-%3"_s.arg(QCoreApplication::applicationPid()).arg(++run).arg(c);
                // warm-up: replay's executes its key (so that the run is all duplicates); fresh's keys are its own
                runWrk(wrk, script, std::string(label) == "replay" ? tag : tag + u"-warm"_s, t.port, c, 1);
                std::vector<double> before;
                for (const auto& server : servers)
                    before.push_back(cpuSeconds(server.second));
                const double wrkBefore = childrenCpuSeconds();
                res[t.name] = runWrk(wrk, script, tag, t.port, c, seconds);
                const WrkResult& r = res[t.name];
                if (!r.ok)
                    return 70;
                const auto perRequest = [&](double spent) { return spent * 1e6 / static_cast<double>(r.requests); };
                double total = perRequest(childrenCpuSeconds() - wrkBefore);
                std::string cpu = "wrk " + std::to_string(std::lround(total));
                for (std::size_t k = 0; k < std::size(servers); ++k) {
                    const double spent = cpuSeconds(servers[k].second) - before[k];
                    if (before[k] < 0 || perRequest(spent) < 0.5) // idle in this run
                        continue;
                    total += perRequest(spent);
                    cpu += std::string(", ") + servers[k].first + " " + std::to_string(std::lround(perRequest(spent)));
                }
                std::printf("%-7s c=%-3d %-13s %9.0f req/s  p50 %6.2f ms  p99 %6.2f ms", label, c, t.name, r.rps,
                            r.p50, r.p99);
                if (r.non2xx || r.errors)
                    std::printf("  (%lld of %lld answers not 2xx, %lld socket errors)", r.non2xx, r.requests, r.errors);
                std::printf("\n    CPU us a request: %s; all %ld\n", cpu.c_str(), std::lround(total));
                std::fflush(stdout);
            }
            const WrkResult &direct = res["direct"], &anchor = res["nginx-proxy"], &gw = res["idem-gateway"],
                            &relay = res["qt-relay"];
            const double ratio = gw.rps / anchor.rps;
            const double goal = std::string(label) == "replay" ? 0.8 : 0.5;
            goalsMet = goalsMet && ratio >= goal;
            std::printf("  %s c=%d: idem-gateway / nginx-proxy = %.2f (goal >= %.1f: %s); nginx-proxy / direct = %.2f\n",
                        label, c, ratio, goal, ratio >= goal ? "met" : "MISSED", anchor.rps / direct.rps);
            std::printf("  %s c=%d: qt-relay / nginx-proxy = %.2f (the hop on Qt Network, no idempotency); "
                        "idem-gateway / qt-relay = %.2f\n",
                        label, c, relay.rps / anchor.rps, gw.rps / relay.rps);
            if (c == 16) {
                const double add50 = gw.p50 - direct.p50, add99 = gw.p99 - direct.p99;
                const bool ok = add50 <= 1.0 && add99 <= 5.0;
                goalsMet = goalsMet && ok;
                std::printf("  %s c=16: added latency over direct p50 %+.2f ms (goal <= 1), p99 %+.2f ms (goal <= 5): "
                            "%s; nginx-proxy adds p50 %+.2f ms, p99 %+.2f ms\n",
                            label, add50, add99, ok ? "met" : "MISSED", anchor.p50 - direct.p50, anchor.p99 - direct.p99);
            }
            std::fflush(stdout);
        }
    }
    std::printf("goals of #16: %s; load average now %.2f\n", goalsMet ? "all met" : "not all met", loadAverage());
    for (QProcess* p : {&gatewayProcess, &relayProcess}) {
        p->terminate();
        p->waitForFinished(5000);
    }
    return 0;
}
