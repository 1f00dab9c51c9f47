// idem-console-bench: the console's scale goals, measured in one run on one redis-server.
//
//   1. load N keys (default 1,000,000) in mixed states and formats;
//   2. reference: `redis-cli --scan --pattern 'scale:*'` (what a user would time);
//   3. the monitor's full snapshot (enumerate + classify), and SLOWLOG entries at 10 ms;
//   4. the console loading them: longest stall of the GUI thread, resident memory;
//   5. sorting all rows, re-sorting after new keys, a pass that ends with scattered keys gone;
//      how many rows the once-a-second countdown repaints.
#include "scaledata.h"

#include "keyfilterproxy.h"
#include "keytablemodel.h"
#include "mainwindow.h"

#include "idem/errors.h"
#include "idem/redis/localserver.h"
#include "idem/monitor/scanner.h"
#include "idem/redis/cluster.h"
#include "idem/redis/localcluster.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QFile>
#include <QHeaderView>
#include <QIdentityProxyModel>
#include <QTableView>
#include <QTimer>
#include <cstdio>
#include <memory>

using namespace Qt::StringLiterals;

namespace {

struct Counting : QIdentityProxyModel {
    mutable qint64 displayCalls = 0;
    mutable QSet<int> rows;
    QVariant data(const QModelIndex& i, int role) const override
    {
        if (role == Qt::DisplayRole) {
            ++displayCalls;
            rows.insert(i.row());
        }
        return QIdentityProxyModel::data(i, role);
    }
};

qint64 statusKb(const char* field)
{
    QFile f(u"/proc/self/status"_s);
    if (!f.open(QIODevice::ReadOnly))
        return -1;
    for (const QByteArray& line : f.readAll().split('\n'))
        if (line.startsWith(field))
            return line.mid(static_cast<qsizetype>(std::strlen(field))).trimmed().split(' ').first().toLongLong();
    return -1;
}

double timeRedisCliScan(int port, long* count)
{
    QElapsedTimer t;
    t.start();
    const std::string cmd = "redis-cli -p " + std::to_string(port) + " --scan --pattern 'scale:*' | wc -l";
    FILE* p = ::popen(cmd.c_str(), "r");
    long n = 0;
    if (p) {
        if (std::fscanf(p, "%ld", &n) != 1)
            n = -1;
        ::pclose(p);
    }
    *count = n;
    return static_cast<double>(t.nsecsElapsed()) / 1e9;
}

void verdict(const char* what, const QString& value, bool met, const char* goal)
{
    std::printf("%-52s %22s   %-22s %s\n", what, value.toUtf8().constData(), goal, met ? "met" : "MISSED");
}

} // namespace

int main(int argc, char** argv)
{
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    int keys = 1'000'000;
    bool onCluster = false;
    const QStringList args = app.arguments();
    if (args.contains(u"--help"_s)) {
        std::puts("usage: idem-console-bench [--keys N] [--cluster]   (default 1000000, at least 1000; starts a\n"
                  "private redis-server, or with --cluster a private Redis Cluster of three primaries)");
        return 0;
    }
    for (qsizetype i = 1; i < args.size(); ++i) {
        bool ok = false;
        if (args.at(i) == u"--cluster"_s) {
            onCluster = true;
            continue;
        }
        if (args.at(i) == u"--keys"_s) {
            const QString value = i + 1 < args.size() ? args.at(++i) : QString();
            keys = value.toInt(&ok);
            if (ok && keys >= 1000 && keys <= 50'000'000)
                continue;
            std::fprintf(stderr, "idem-console-bench: --keys takes a whole number from 1000 to 50000000, not '%s'\n",
                         qPrintable(value));
        } else {
            std::fprintf(stderr, "idem-console-bench: unknown argument '%s' (see --help)\n", qPrintable(args.at(i)));
        }
        return 64;
    }
    try {
        // one server, or three primaries: every node gets its keys, and is measured the same way
        std::unique_ptr<idem::LocalServer> single;
        std::unique_ptr<idem::LocalCluster> cluster;
        std::vector<std::unique_ptr<idem::Connection>> nodes;
        if (onCluster) {
            cluster = std::make_unique<idem::LocalCluster>(3);
            for (int i = 0; i < 3; ++i)
                nodes.push_back(std::make_unique<idem::Connection>(cluster->node(i)));
        } else {
            single = std::make_unique<idem::LocalServer>();
            nodes.push_back(std::make_unique<idem::Connection>(single->connectionOptions()));
        }
        const idem::ConnectionOptions seed = onCluster ? cluster->node(0) : single->connectionOptions();
        const std::string url = onCluster ? cluster->url(0) : single->url();
        const auto portOf = [&](std::size_t i) { return nodes[i]->options().port; };
        QElapsedTimer t;
        t.start();
        idembench::loadScaleData(keys, [&](std::string_view key) -> idem::Connection& {
            if (!onCluster)
                return *nodes[0];
            const int slot = idem::hashSlot(key); // LocalCluster: node i serves 16384*i/3 .. 16384*(i+1)/3 - 1
            std::size_t owner = 0;
            while (slot > 16384 * static_cast<int>(owner + 1) / 3 - 1)
                ++owner;
            return *nodes[owner];
        });
        std::printf("idem-console-bench: %d keys loaded into %s in %.1f s\n\n", keys,
                    onCluster ? "a private Redis Cluster of three primaries" : "a private redis-server",
                    t.elapsed() / 1000.0);

        long cliCount = 0;
        double cli = 0;
        for (std::size_t i = 0; i < nodes.size(); ++i) { // redis-cli --scan walks one node
            long n = 0;
            cli += timeRedisCliScan(portOf(i), &n);
            cliCount += n;
        }

        for (auto& c : nodes) {
            c->checked({"CONFIG", "SET", "slowlog-log-slower-than", "10000"});
            c->checked({"SLOWLOG", "RESET"});
        }
        idem::MonitorOptions mo;
        mo.keyNamespace = "scale";
        idem::Scanner scanner(seed, mo);
        t.restart();
        std::size_t records = 0;
        scanner.open();
        while (!scanner.done())
            records += scanner.next().records();
        const double snapshot = static_cast<double>(t.nsecsElapsed()) / 1e9;

        // the console loads them; a 5 ms timer on the GUI thread measures its longest stall
        MainWindow::Options o;
        o.connection.url = QString::fromStdString(url);
        o.connection.keyNamespace = u"scale"_s;
        o.auditPath = u"/dev/null"_s;
        MainWindow w(o);
        w.show();
        QElapsedTimer gap;
        qint64 worstStall = 0;
        QTimer probe;
        probe.setTimerType(Qt::PreciseTimer);
        QObject::connect(&probe, &QTimer::timeout, [&] {
            worstStall = std::max(worstStall, gap.restart());
        });
        bool loaded = false;
        qint64 loadMs = 0;
        QElapsedTimer loadClock;
        QObject::connect(&w, &MainWindow::scanCompleted, [&] {
            if (!loaded) {
                loaded = true;
                loadMs = loadClock.elapsed();
            }
        });
        loadClock.start();
        gap.start();
        probe.start(5);
        while (!loaded && loadClock.elapsed() < 600'000)
            QApplication::processEvents(QEventLoop::WaitForMoreEvents, 50);
        probe.stop();
        const qint64 rssKb = statusKb("VmRSS:"), peakKb = statusKb("VmHWM:");

        t.restart();
        w.proxy()->sort(KeyTableModel::Ttl, Qt::AscendingOrder);
        const qint64 sortTtl = t.elapsed();
        t.restart();
        w.proxy()->sort(KeyTableModel::Id, Qt::AscendingOrder);
        const qint64 sortId = t.elapsed();

        // a later scan pass finds 1000 new keys while the table is sorted: they arrive at the end,
        // and the end of the pass puts them in place (what MainWindow does on scanFinished)
        QVector<KeyRow> arrivals(1000);
        for (int i = 0; i < arrivals.size(); ++i) {
            arrivals[i].key = "scale:{arrival-" + QByteArray::number(i * 7919 % 1000) + "}";
            arrivals[i].state = idem::RecordState::Completed;
            arrivals[i].format = idem::RecordFormat::Native;
        }
        w.model()->upsert(arrivals, w.model()->serverNowMs(), 1);
        t.restart();
        w.model()->sortAgain();
        const qint64 resort = t.elapsed();

        // the next pass does not see one key in a hundred (expired since): they go when it ends
        QVector<KeyRow> seen;
        const int before = w.model()->rowCount();
        for (int r = 0; r < before; ++r)
            if (r % 100 != 7)
                seen.push_back(w.model()->row(r));
        w.model()->upsert(seen, w.model()->serverNowMs(), 2);
        t.restart();
        w.model()->finishGeneration(2);
        const qint64 sweep = t.elapsed();
        const int swept = before - w.model()->rowCount();

        // the countdown: one tick repaints the viewport; count the rows data() is asked for
        auto* counting = new Counting;
        counting->setSourceModel(w.proxy());
        w.table()->setModel(counting);
        QApplication::processEvents();
        w.table()->repaint();
        counting->displayCalls = 0;
        counting->rows.clear();
        w.table()->viewport()->update();
        QApplication::processEvents();
        const int visible = w.table()->rowAt(w.table()->viewport()->height() - 1) - w.table()->rowAt(0) + 1;
        const qint64 repainted = counting->rows.size();

        qint64 slow = 0;
        for (auto& c : nodes) {
            const auto slowlog = c->checked({"SLOWLOG", "GET", "128"});
            const qint64 here = static_cast<qint64>(idem::reply::arraySize(slowlog.get()));
            slow += here;
            for (qint64 i = 0; i < here; ++i) {
                const redisReply* e = idem::reply::element(slowlog.get(), static_cast<std::size_t>(i));
                const redisReply* argv = idem::reply::element(e, 3);
                std::string cmd;
                for (std::size_t k = 0; k < std::min<std::size_t>(3, idem::reply::arraySize(argv)); ++k)
                    cmd += idem::reply::str(idem::reply::element(argv, k)) + " ";
                std::printf("slowlog: %lld us  %s\n", static_cast<long long>(idem::reply::integer(idem::reply::element(e, 2))),
                            cmd.c_str());
            }
        }

        std::printf("%-52s %22s   %-22s %s\n", "measurement", "value", "goal", "");
        verdict(onCluster ? "keys seen by redis-cli --scan of each node (reference)" : "keys seen by redis-cli --scan (reference)",
                QString::number(cliCount), true, "");
        verdict("records in idem's snapshot", QString::number(records), static_cast<long>(records) == cliCount,
                "= reference");
        verdict("snapshot time / redis-cli --scan time",
                u"%1 s / %2 s = %3"_s.arg(snapshot, 0, 'f', 2).arg(cli, 0, 'f', 2).arg(snapshot / cli, 0, 'f', 2),
                snapshot <= 2 * cli, "<= 2.0");
        verdict("SLOWLOG entries (>= 10 ms) during the snapshot + load", QString::number(slow), slow == 0, "0");
        verdict("console: full load", u"%1 s"_s.arg(loadMs / 1000.0, 0, 'f', 1), true, "");
        verdict("console: longest GUI-thread stall while loading", u"%1 ms"_s.arg(worstStall), worstStall <= 50,
                "<= 50 ms");
        verdict("console: resident memory after load (peak)",
                u"%1 MB (%2 MB)"_s.arg(rssKb / 1024).arg(peakKb / 1024), peakKb <= 400 * 1024, "<= 400 MB");
        verdict("console: sort all rows by TTL / by id", u"%1 ms / %2 ms"_s.arg(sortTtl).arg(sortId),
                sortTtl < 1000 && sortId < 1000, "< 1000 ms each");
        verdict("console: re-sort after a pass found 1000 new keys", u"%1 ms"_s.arg(resort), resort <= 100,
                "<= 100 ms");
        verdict(qPrintable(u"console: a pass ends, %1 scattered keys gone"_s.arg(swept)), u"%1 ms"_s.arg(sweep),
                sweep <= 200, "<= 200 ms");
        verdict("console: rows repainted by one countdown tick", u"%1 (visible: %2)"_s.arg(repainted).arg(visible),
                repainted <= visible + 1, "visible rows only");
        std::printf("\nredis-cli 7.0 --scan sends SCAN without COUNT (10 keys a call); idem's snapshot uses COUNT "
                    "500 and pipelines its reads.\n");
        return 0;
    } catch (const idem::Error& e) {
        std::fprintf(stderr, "idem-console-bench: %s\n", e.what());
        return 1;
    }
}
