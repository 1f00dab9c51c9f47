#include "labrunner.h"

#include "logging.h"

#include "idem/errors.h"
#include "idem/redis/localserver.h"

using namespace Qt::StringLiterals;

LabTarget labTarget(const std::optional<idem::ConnectionOptions>& named, std::unique_ptr<idem::LocalServer>& own,
                    const QString& privateLabel)
{
    if (named)
        return {*named, QString::fromStdString(named->describe())};
    if (!own) // started here: it lives as long as the runner's thread (and dies with it)
        own = std::make_unique<idem::LocalServer>();
    return {own->connectionOptions(), privateLabel.arg(own->pid())};
}

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
        const auto [target, where] = labTarget(job.server, m_server, tr("the lab's private redis-server (pid %1)"));
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
