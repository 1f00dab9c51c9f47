#pragma once

#include "idem/lab/racelab.h"
#include "idem/redis/options.h"

#include <QMetaType>
#include <QObject>
#include <QString>
#include <QVector>
#include <atomic>
#include <memory>
#include <optional>

namespace idem {
class LocalServer;
}

// Where a lab's job runs: the server the job names, or else the runner's own private
// redis-server (started on first use, kept in `own`); `where` says which, `privateLabel` naming
// the private one with its pid as %1.
struct LabTarget {
    idem::ConnectionOptions options;
    QString where;
};
LabTarget labTarget(const std::optional<idem::ConnectionOptions>& named, std::unique_ptr<idem::LocalServer>& own,
                    const QString& privateLabel);

struct LabJob {
    quint64 id = 0;
    // empty: the lab's own private redis-server (started on first use, stopped with the console)
    std::optional<idem::ConnectionOptions> server;
    idem::Workload workload;
    QVector<idem::Strategy> strategies;
};
Q_DECLARE_METATYPE(LabJob)
Q_DECLARE_METATYPE(QVector<idem::RaceResult>)

// Runs the race lab on the "idem-lab" thread (it talks to Redis and sleeps: never on the GUI
// thread). By default on a private redis-server of its own, so a demo never writes into a store
// an operator watches; it owns that server, which dies with the thread.
class LabRunner : public QObject {
    Q_OBJECT
public:
    LabRunner();
    ~LabRunner() override;
    // Thread-safe: the running race starts no further delivery and returns.
    void cancel() { m_cancel = true; }

public Q_SLOTS:
    void run(const LabJob& job);

Q_SIGNALS:
    void finished(quint64 id, const QVector<idem::RaceResult>& results, const QString& where);
    void failed(quint64 id, const QString& message);

private:
    std::unique_ptr<idem::LocalServer> m_server;
    std::atomic<bool> m_cancel{false};
};
