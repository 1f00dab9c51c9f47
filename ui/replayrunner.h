#pragma once

#include "idem/lab/capture.h"
#include "idem/lab/replay.h"
#include "idem/redis/options.h"

#include <QMetaType>
#include <QObject>
#include <QStringList>
#include <QVector>
#include <atomic>
#include <memory>
#include <optional>

namespace idem {
class LocalServer;
}

using EventLog = std::shared_ptr<const std::vector<idem::ReplayEvent>>;

struct ReplayJob {
    quint64 id = 0;
    // empty: the lab's own private redis-server (started on first use, stopped with the console)
    std::optional<idem::ConnectionOptions> server;
    EventLog events;
    idem::ReplayOptions options; // progress and cancel are the runner's
};

struct StreamEntry {
    QString key;
    qint64 length = 0;
};

Q_DECLARE_METATYPE(ReplayJob)
Q_DECLARE_METATYPE(EventLog)
Q_DECLARE_METATYPE(idem::ReplayProgress)
Q_DECLARE_METATYPE(idem::ReplayResult)
Q_DECLARE_METATYPE(idem::CaptureOptions)
Q_DECLARE_METATYPE(QVector<StreamEntry>)

// Runs replays and captures on the "idem-replay" thread (they talk to Redis and sleep: never on
// the GUI thread). A replay runs on a private redis-server of its own unless the job names a
// server; the runner owns that server, which dies with the thread. Each job has an id: results
// for a job the view no longer waits for are its to drop.
class ReplayRunner : public QObject {
    Q_OBJECT
public:
    ReplayRunner();
    ~ReplayRunner() override;
    // Thread-safe: the running replay starts no further delivery, a capture reads no further page.
    void cancel() { m_cancel = true; }
    // Thread-safe: pause, resume, let one delivery through while paused (the next replay starts
    // with the gate as it is: resume() before queueing one that should not start paused).
    void pause() { m_gate.pause(); }
    void resume() { m_gate.resume(); }
    void step() { m_gate.step(); }
    bool paused() const { return m_gate.paused(); }

public Q_SLOTS:
    void run(const ReplayJob& job);
    void capture(quint64 id, const idem::ConnectionOptions& server, const idem::CaptureOptions& options);
    void listStreams(quint64 id, const idem::ConnectionOptions& server);

Q_SIGNALS:
    // from the replay's reporting thread, about every 100 ms
    void progressed(quint64 id, const idem::ReplayProgress& progress);
    void finished(quint64 id, const idem::ReplayResult& result, const QString& where);
    void captured(quint64 id, const EventLog& events, qulonglong read, const QStringList& problems);
    void streamsListed(quint64 id, const QVector<StreamEntry>& streams);
    void failed(quint64 id, const QString& message);

private:
    std::unique_ptr<idem::LocalServer> m_server;
    std::atomic<bool> m_cancel{false};
    idem::ReplayGate m_gate;
};
