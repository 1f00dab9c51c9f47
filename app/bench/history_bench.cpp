// idem-history-bench: the console's history (issue 17), in one run.
//  1. recording: 5 000 transitions per second into a HistoryRecorder on its own thread, through
//     the queued signal path the worker uses, for --seconds (default 10; the figure is a
//     minute: --seconds 60), with the GUI thread's longest stall (a 10 ms timer's worst lateness);
//  2. rewind: the state of every key at random moments of a 1 M-transition history (the snapshot
//     worked out off the GUI thread, then swapped into a key table model on the GUI thread with one
//     model reset);
//  3. memory for 1 M transitions (the index's own count, and the process's RSS growth).
// Not in ctest: it measures. The machine's load average is printed with the figures.
#include "historyrecorder.h"
#include "keytablemodel.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QTemporaryDir>
#include <QThread>
#include <QTimer>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>

using namespace Qt::StringLiterals;

namespace {
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

QString loadAverage()
{
    QFile f(u"/proc/loadavg"_s);
    return f.open(QIODevice::ReadOnly) ? QString::fromLatin1(f.readAll()).section(u' ', 0, 2) : u"?"_s;
}

KeyRow rowFor(int key, int version)
{
    KeyRow r;
    r.key = "idempotency:{order-" + QByteArray::number(key) + '}';
    r.type = KeyRow::Type::Hash;
    r.format = idem::RecordFormat::Native;
    r.state = version % 3 == 2 ? idem::RecordState::Completed : idem::RecordState::Started;
    r.attempt = 1 + version / 3;
    r.fence = 1'700'000'000'000'000 + version;
    r.guard = "owner-" + QByteArray::number(key) + '-' + QByteArray::number(version / 3);
    r.leaseUntilMs = 1'700'000'030'000 + version;
    r.expiresAtMs = 1'700'086'400'000;
    return r;
}

// A history of `transitions` over `keys` keys, a transition every ms of server time.
void fill(idem::HistoryIndex& index, int transitions, int keys)
{
    std::mt19937 rng(7);
    std::vector<int> version(static_cast<std::size_t>(keys), 0);
    for (int i = 0; i < transitions; ++i) {
        const int k = static_cast<int>(rng() % static_cast<unsigned>(keys));
        const KeyRow r = rowFor(k, version[static_cast<std::size_t>(k)]++);
        idem::Transition t;
        t.atMs = 1'700'000'000'000 + i;
        t.key = r.key.toStdString();
        t.state = r.state;
        t.format = r.format;
        t.keyType = static_cast<std::uint8_t>(r.type);
        t.attempt = r.attempt;
        t.fence = r.fence;
        t.owner = r.guard.toStdString();
        t.leaseUntilMs = r.leaseUntilMs;
        t.expiresAtMs = r.expiresAtMs;
        index.add(t);
    }
}
} // namespace

int main(int argc, char** argv)
{
    QApplication app(argc, argv);
    QCommandLineParser cli;
    cli.setApplicationDescription(u"The console's history: recording, rewind and memory figures"_s);
    cli.addHelpOption();
    QCommandLineOption seconds(u"seconds"_s, u"How long to record at the rate (default 10; 60 for the issue's minute)"_s,
                               u"S"_s, u"10"_s);
    QCommandLineOption rate(u"rate"_s, u"Transitions per second (default 5000)"_s, u"N"_s, u"5000"_s);
    QCommandLineOption size(u"transitions"_s, u"History size for the rewind (default 1000000)"_s, u"N"_s, u"1000000"_s);
    QCommandLineOption keys(u"keys"_s, u"Keys the history is over (default 100000)"_s, u"N"_s, u"100000"_s);
    cli.addOptions({seconds, rate, size, keys});
    cli.process(app);
    bool ok = true;
    const auto positive = [&](const QCommandLineOption& o) {
        bool good = false;
        const int v = cli.value(o).toInt(&good);
        if (!good || v <= 0) {
            std::fprintf(stderr, "idem-history-bench: --%s must be a positive number\n", qPrintable(o.names().first()));
            ok = false;
        }
        return v;
    };
    const int runSeconds = positive(seconds), perSecond = positive(rate), total = positive(size),
              keyCount = positive(keys);
    if (!ok)
        return 2;
    std::printf("load average at start: %s (2 vCPUs, shared)\n", qPrintable(loadAverage()));

    // 0. the reference: the same GUI-thread timer for 5 s with nothing recorded (what the loaded
    // machine's scheduler alone costs)
    {
        qint64 worst = 0;
        QElapsedTimer tick;
        tick.start();
        QTimer gui;
        gui.setInterval(10);
        QObject::connect(&gui, &QTimer::timeout, [&] { worst = std::max(worst, tick.restart() - 10); });
        QTimer::singleShot(5000, &app, &QCoreApplication::quit);
        gui.start();
        app.exec();
        std::printf("reference: longest lateness of a 10 ms GUI-thread timer with nothing recorded, 5 s: %lld ms\n",
                    static_cast<long long>(worst));
    }

    // 1. recording, the GUI thread ticking beside it
    {
        QTemporaryDir dir;
        QThread thread;
        auto* recorder = new HistoryRecorder;
        recorder->moveToThread(&thread);
        QObject::connect(&thread, &QThread::finished, recorder, &QObject::deleteLater);
        thread.start();
        QMetaObject::invokeMethod(recorder, [recorder, d = dir.path()] { recorder->open(d, u"idempotency"_s); },
                                  Qt::BlockingQueuedConnection);
        constexpr int kBatchMs = 50; // the worker's pace: a page or a burst of notifications at a time
        const int perBatch = std::max(1, perSecond * kBatchMs / 1000);
        std::vector<int> version(20'000, 0);
        int sent = 0, batches = 0;
        qint64 worstStallMs = 0;
        std::vector<qint64> lateness; // every tick's: the 99th percentile beside the worst
        lateness.reserve(static_cast<std::size_t>(runSeconds) * 100 + 100);
        QElapsedTimer clock, tick;
        clock.start();
        tick.start();
        QTimer gui; // the GUI thread's heartbeat: how late it fires is how long the GUI was stalled
        gui.setInterval(10);
        QObject::connect(&gui, &QTimer::timeout, [&] {
            const qint64 late = std::max<qint64>(0, tick.restart() - 10);
            lateness.push_back(late);
            worstStallMs = std::max(worstStallMs, late);
        });
        QTimer producer;
        producer.setInterval(kBatchMs);
        std::mt19937 rng(1);
        QObject::connect(&producer, &QTimer::timeout, [&] {
            QVector<KeyRow> rows;
            for (int i = 0; i < perBatch; ++i) {
                const int k = static_cast<int>(rng() % version.size());
                rows.push_back(rowFor(k, version[static_cast<std::size_t>(k)]++));
            }
            sent += perBatch;
            const qint64 now = 1'700'000'000'000 + clock.elapsed();
            QMetaObject::invokeMethod(recorder, [recorder, rows, now, b = ++batches] {
                recorder->observe(rows, {}, now, static_cast<quint64>(b), true);
            });
            if (clock.elapsed() >= runSeconds * 1000LL)
                app.quit();
        });
        gui.start();
        producer.start();
        app.exec();
        const double seconds = clock.elapsed() / 1000.0;
        qint64 recorded = 0;
        QMetaObject::invokeMethod(recorder, [&] { recorder->flush(); recorded = static_cast<qint64>(recorder->index().size()); },
                                  Qt::BlockingQueuedConnection);
        thread.quit();
        thread.wait();
        qint64 bytes = 0;
        for (const QFileInfo& f : QDir(dir.path()).entryInfoList(QDir::Files))
            bytes += f.size();
        std::sort(lateness.begin(), lateness.end());
        const qint64 p99 = lateness.empty() ? 0 : lateness[lateness.size() * 99 / 100];
        std::printf("recording: %d transitions in %.1f s (%.0f/s), %lld recorded and written (%.1f MB on disk); "
                    "GUI-thread stall: longest %lld ms (goal <= 50 ms), 99th percentile %lld ms over %zu ticks\n",
                    sent, seconds, sent / seconds, static_cast<long long>(recorded), bytes / 1048576.0,
                    static_cast<long long>(worstStallMs), static_cast<long long>(p99), lateness.size());
    }

    // 2 + 3. a 1 M-transition history: memory, and the rewind to random moments
    const qint64 rssBefore = statusKb("VmRSS:");
    idem::HistoryIndex index({static_cast<std::size_t>(total), 24LL * 3600 * 1000, 65'536});
    QElapsedTimer build;
    build.start();
    fill(index, total, keyCount);
    const qint64 buildMs = build.elapsed();
    const qint64 rssAfter = statusKb("VmRSS:");
    std::printf("memory: %d transitions over %d keys: %.1f MB by the index's count, RSS +%.1f MB (built in %lld ms)\n",
                total, keyCount, index.memoryBytes() / 1048576.0, (rssAfter - rssBefore) / 1024.0,
                static_cast<long long>(buildMs));

    KeyTableModel model;
    model.setKeyNamespace(u"idempotency"_s);
    std::mt19937 rng(3);
    std::vector<qint64> offGui, onGui;
    for (int i = 0; i < 20; ++i) {
        const qint64 at = index.firstMs() + static_cast<qint64>(rng() % static_cast<unsigned>(total));
        QElapsedTimer t;
        t.start();
        const QVector<KeyRow> rows = HistoryRecorder::rowsOf(index, index.stateAt(at));
        offGui.push_back(t.restart());
        model.replaceSnapshot(rows, at); // what the console does for a far jump: one model reset
        onGui.push_back(t.elapsed());
    }
    const auto stats = [](std::vector<qint64> v) {
        std::sort(v.begin(), v.end());
        return std::make_pair(v[v.size() / 2], v.back());
    };
    const auto [offMedian, offMax] = stats(offGui);
    const auto [onMedian, onMax] = stats(onGui);
    std::printf("rewind (20 random moments of %d transitions): snapshot off the GUI thread median %lld ms, max %lld ms; "
                "swapped into the table model on the GUI thread median %lld ms, max %lld ms; total max %lld ms "
                "(goal <= 300 ms)\n",
                total, static_cast<long long>(offMedian), static_cast<long long>(offMax),
                static_cast<long long>(onMedian), static_cast<long long>(onMax),
                static_cast<long long>(offMax + onMax));

    // playing forward at x60 from a random moment: each 100 ms step is 6 s of history (the
    // benchmark's history has a transition every ms: 6 000 transitions a step)
    {
        KeyTableModel played;
        idem::HistoryIndex::Cursor cursor;
        qint64 at = index.firstMs() + total / 3;
        std::vector<qint64> stepOff, stepOn;
        for (int step = 0; step < 30; ++step) {
            QElapsedTimer t;
            t.start();
            const bool fresh = !cursor.valid;
            QVector<KeyRow> rows;
            QStringList gone;
            for (const std::uint32_t k : index.seek(cursor, at)) {
                const idem::HistoryEntry* e = index.bySequence(cursor.last[k]);
                if (!e || (e->flags & idem::Transition::Gone))
                    gone << QString::fromStdString(index.keyName(k));
                else
                    rows.push_back(HistoryRecorder::rowOf(index, *e));
            }
            const qint64 off = t.restart();
            if (fresh)
                played.showSnapshot(rows, at);
            else
                played.applySnapshotChanges(rows, gone, at);
            if (!fresh) {
                stepOff.push_back(off);
                stepOn.push_back(t.elapsed());
            }
            at += 6000;
        }
        const auto [pOffMedian, pOffMax] = stats(stepOff);
        const auto [pOnMedian, pOnMax] = stats(stepOn);
        std::printf("play forward at x60 (6 000 transitions a 100 ms step): off the GUI thread median %lld ms, max %lld ms; "
                    "on the GUI thread median %lld ms, max %lld ms\n",
                    static_cast<long long>(pOffMedian), static_cast<long long>(pOffMax),
                    static_cast<long long>(pOnMedian), static_cast<long long>(pOnMax));
    }
    std::printf("load average at end: %s\n", qPrintable(loadAverage()));
    return 0;
}
