#include "replayrunner.h"

#include "labrunner.h"

#include "logging.h"

#include "idem/errors.h"
#include "idem/redis/localserver.h"

using namespace Qt::StringLiterals;

namespace {
constexpr int kMaxProblemsShown = 200; // the rest are counted
}

ReplayRunner::ReplayRunner()
{
    qRegisterMetaType<ReplayJob>();
    qRegisterMetaType<EventLog>();
    qRegisterMetaType<idem::ReplayProgress>();
    qRegisterMetaType<idem::ReplayResult>();
    qRegisterMetaType<idem::CaptureOptions>();
    qRegisterMetaType<QVector<StreamEntry>>();
}

ReplayRunner::~ReplayRunner() = default;

void ReplayRunner::run(const ReplayJob& job)
{
    m_cancel = false;
    try {
        const auto [target, where] = labTarget(job.server, m_server, tr("the replay's private redis-server (pid %1)"));
        idem::ReplayOptions o = job.options;
        o.cancel = &m_cancel;
        o.gate = &m_gate;
        o.trace = true; // the swimlanes
        const quint64 id = job.id;
        o.progress = [this, id](const idem::ReplayProgress& p) { Q_EMIT progressed(id, p); }; // joined before run() returns
        const idem::ReplayResult r = idem::replay(target, *job.events, o);
        Q_EMIT finished(job.id, r, where);
    } catch (const std::exception& e) {
        qCWarning(lcConsole) << "replay:" << e.what();
        Q_EMIT failed(job.id, QString::fromUtf8(e.what()));
    }
}

void ReplayRunner::capture(quint64 id, const idem::ConnectionOptions& server, const idem::CaptureOptions& options)
{
    m_cancel = false;
    try {
        QStringList problems;
        std::size_t skipped = 0;
        idem::CaptureCallbacks cb;
        cb.problem = [&](const idem::CaptureProblem& p) {
            if (++skipped <= kMaxProblemsShown)
                problems.push_back(QString::fromStdString(p.where) + u": "_s + QString::fromStdString(p.why));
        };
        cb.page = [this](const idem::CaptureResult&) { return !m_cancel.load(); };
        auto r = idem::captureStream(server, options, cb);
        if (skipped > kMaxProblemsShown)
            problems.push_back(tr("… and %1 more").arg(skipped - kMaxProblemsShown));
        Q_EMIT captured(id, std::make_shared<const std::vector<idem::ReplayEvent>>(std::move(r.events)),
                        static_cast<qulonglong>(r.read), problems);
    } catch (const std::exception& e) {
        qCWarning(lcConsole) << "capture:" << e.what();
        Q_EMIT failed(id, QString::fromUtf8(e.what()));
    }
}

void ReplayRunner::listStreams(quint64 id, const idem::ConnectionOptions& server)
{
    try {
        QVector<StreamEntry> out;
        for (const auto& s : idem::listStreams(server))
            out.push_back(StreamEntry{QString::fromStdString(s.key), static_cast<qint64>(s.length)});
        Q_EMIT streamsListed(id, out);
    } catch (const std::exception& e) {
        Q_EMIT failed(id, QString::fromUtf8(e.what()));
    }
}
