#include "labrunner.h"

#include "logging.h"

#include "idem/errors.h"
#include "idem/redis/localserver.h"

using namespace Qt::StringLiterals;

LabRunner::LabRunner()
{
    qRegisterMetaType<LabJob>();
    qRegisterMetaType<QVector<idem::RaceResult>>();
}

LabRunner::~LabRunner() = default;

void LabRunner::run(const LabJob& job)
{
    m_cancel = false;
    try {
        idem::ConnectionOptions target;
        QString where;
        if (job.server) {
            target = *job.server;
            where = QString::fromStdString(target.describe());
        } else {
            if (!m_server) // started here: it lives as long as this thread (and dies with it)
                m_server = std::make_unique<idem::LocalServer>();
            target = m_server->connectionOptions();
            where = tr("the lab's private redis-server (pid %1)").arg(m_server->pid());
        }
        QVector<idem::RaceResult> results;
        for (const idem::Strategy s : job.strategies) {
            if (m_cancel)
                break;
            results.push_back(idem::runRace(target, s, job.workload, &m_cancel));
        }
        Q_EMIT finished(job.id, results, where);
    } catch (const std::exception& e) {
        qCWarning(lcConsole) << "race lab:" << e.what();
        Q_EMIT failed(job.id, QString::fromUtf8(e.what()));
    }
}
