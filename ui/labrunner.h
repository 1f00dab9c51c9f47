#pragma once

#include "idem/lab/racelab.h"
#include "idem/redis/options.h"

#include <QMetaType>
#include <QObject>
#include <QVector>
#include <atomic>
#include <memory>

namespace idem {
class LocalServer;
}

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
