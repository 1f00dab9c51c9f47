// The replay tab's run: start, pause, step and stop a replay, and show its progress and result.
#include "replaywidget.h"

#include "replaylanes.h"
#include "streampickerdialog.h"
#include "theme.h"

#include <QComboBox>
#include <QLabel>
#include <QMessageBox>
#include <QProgressBar>
#include <QRandomGenerator>

using namespace Qt::StringLiterals;

void ReplayWidget::play()
{
    if (m_running && m_paused) {
        m_runner->resume();
        m_paused = false;
        m_status->setText(tr("Replaying %n event(s) from %1…", nullptr, int(m_events->size())).arg(m_source));
        updateButtons();
        return;
    }
    start(false);
}

void ReplayWidget::pause()
{
    if (!m_running || m_paused)
        return;
    m_runner->pause();
    m_paused = true;
    m_status->setText(tr("Paused: no further delivery starts (what a consumer holds finishes). Step lets one through."));
    updateButtons();
}

void ReplayWidget::step()
{
    if (!m_running) {
        start(true);
        if (!m_running)
            return;
    } else if (!m_paused) {
        return;
    }
    m_runner->step();
    m_status->setText(tr("Paused; stepped one delivery."));
}

void ReplayWidget::start(bool paused)
{
    if (m_running || m_capturing || !m_events || m_events->empty())
        return;
    ReplayJob job;
    job.events = m_events;
    job.options = chosenOptions();
    if (m_where->currentData().toInt() == static_cast<int>(Where::Connected)) {
        if (!m_connected || !m_connectedWritable) { // read-only: never, whatever the box says
            m_status->setText(tr("The connected server cannot be used: %1")
                                  .arg(m_connectedWhyNot.isEmpty() ? tr("not connected") : m_connectedWhyNot));
            return;
        }
        const QString ns = u"replay-console-%1"_s.arg(static_cast<uint>(QRandomGenerator::global()->generate() & 0xffffff), 6, 16, QChar(u'0'));
        QMessageBox ask(QMessageBox::Question, tr("Replay into the connected server"),
                        tr("The replay will write into %1, under the namespace %2: (a namespace of its own; nothing "
                           "in the namespace the console watches is written or changed).\n\nAbout %3 keys: an idem "
                           "record per event, kept for idem's retention (24 h), and ledgers that expire within 10 "
                           "minutes.\n\nReplay there?")
                            .arg(m_connectedName, ns)
                            .arg(m_events->size() * 3),
                        QMessageBox::Yes | QMessageBox::Cancel, this);
        ask.setObjectName(u"replayWhereConfirm"_s);
        ask.setDefaultButton(QMessageBox::Cancel);
        if (ask.exec() != QMessageBox::Yes)
            return;
        job.options.keyNamespace = ns.toStdString();
        job.server = m_connected;
    }
    job.id = ++m_job;
    m_lastOptions = job.options;
    // the gate is set before the job is queued: a pause or a step right after Play is not lost
    if (paused)
        m_runner->pause();
    else
        m_runner->resume();
    m_running = true;
    m_paused = paused;
    m_lanes->start(job.options.consumers);
    m_lanes->tabs()->setCurrentIndex(1); // the swimlanes
    m_result.reset();
    m_rateClock.start();
    m_rateDeliveries = 0;
    m_rate = 0;
    for (auto* l : std::as_const(m_counts))
        l->setText(u"0"_s);
    setCount(u"lost"_s, u"—"_s); // known at the end: "no data" is not 0
    m_progress->setValue(0);
    m_progress->setFormat(tr("starting…"));
    m_status->setText(paused ? tr("Paused before the first delivery: Step lets one through, Play goes on.")
                             : tr("Replaying %n event(s) from %1…", nullptr, int(m_events->size())).arg(m_source));
    updateButtons();
    QMetaObject::invokeMethod(m_runner, [runner = m_runner, job] { runner->run(job); });
}

void ReplayWidget::stop()
{
    if (!m_running && !m_capturing)
        return;
    m_runner->cancel();
    m_runner->resume(); // a paused replay notices the cancel at once
    m_status->setText(m_running ? tr("Stopping: no further delivery starts…") : tr("Stopping the capture…"));
}

void ReplayWidget::captureFromStream()
{
    if (!m_connected || m_running || m_capturing)
        return;
    auto* picker = new StreamPickerDialog(m_connectedName, this);
    picker->setAttribute(Qt::WA_DeleteOnClose);
    m_picker = picker;
    const quint64 listing = ++m_job;
    const idem::ConnectionOptions server = *m_connected;
    QMetaObject::invokeMethod(m_runner, [runner = m_runner, listing, server] { runner->listStreams(listing, server); });
    connect(picker, &QDialog::accepted, this, [this, picker, server] {
        const idem::CaptureOptions o = picker->options();
        if (o.stream.empty())
            return;
        m_capturing = true;
        m_source = tr("stream %1 on %2").arg(QString::fromStdString(o.stream), m_connectedName);
        m_status->setText(tr("Capturing %1…").arg(m_source));
        updateButtons();
        const quint64 id = ++m_job;
        QMetaObject::invokeMethod(m_runner, [runner = m_runner, id, server, o] { runner->capture(id, server, o); });
    });
    picker->open();
}

void ReplayWidget::setCount(const QString& name, const QString& value, bool alert)
{
    QLabel* l = m_counts.value(name);
    if (!l)
        return;
    l->setText(value);
    QPalette p = palette();
    if (alert)
        p.setColor(QPalette::WindowText, theme::alertText(palette()));
    l->setPalette(p);
}

void ReplayWidget::showProgress(const idem::ReplayProgress& p)
{
    // deliveries per second over the last second or so (the average until then)
    const double elapsed = static_cast<double>(m_rateClock.elapsed()) / 1000.0;
    if (elapsed >= 1.0) {
        m_rate = (p.deliveries - m_rateDeliveries) / elapsed;
        m_rateDeliveries = p.deliveries;
        m_rateClock.restart();
    } else if (m_rate == 0 && p.seconds > 0) {
        m_rate = p.deliveries / p.seconds;
    }
    m_progress->setValue(p.planned > 0 ? static_cast<int>(1000LL * p.produced / p.planned) : 0);
    m_progress->setFormat(tr("%1 of %2 deliveries — %3 events/s")
                              .arg(p.produced)
                              .arg(p.planned)
                              .arg(m_rate, 0, 'f', 0));
    setCount(u"executed"_s, QString::number(p.executions));
    setCount(u"twice"_s, QString::number(p.twice), p.twice > 0);
    setCount(u"claimed"_s, QString::number(p.claimed));
    setCount(u"deliveries"_s, QString::number(p.deliveries));
    setCount(u"crashes"_s, QString::number(p.crashes));
    m_lanes->addMarks(p.trace);
}

void ReplayWidget::showResult(const idem::ReplayResult& r)
{
    m_result = r;
    m_lanes->setNamespace(QString::fromStdString(r.keyNamespace));
    setCount(u"executed"_s, QString::number(r.executions));
    setCount(u"twice"_s, QString::number(r.doubleExecutions), r.doubleExecutions > 0);
    setCount(u"lost"_s, r.cancelled ? u"—"_s : QString::number(r.lost), !r.cancelled && r.lost > 0);
    setCount(u"claimed"_s, QString::number(r.claimed));
    setCount(u"deliveries"_s, QString::number(r.deliveries));
    setCount(u"crashes"_s, QString::number(r.crashes));
    m_progress->setValue(r.cancelled ? m_progress->value() : 1000);
    m_progress->setFormat(r.cancelled  ? tr("stopped")
                          : r.timedOut ? tr("timed out")
                                       : tr("done — %1 deliveries/s on average").arg(r.seconds > 0 ? r.deliveries / r.seconds : 0, 0, 'f', 0));
    const QString how = m_lastOptions.viaStream ? tr("through a Redis Stream group") : tr("directly");
    QString verdict = r.cancelled ? tr("Stopped after %1: what ran so far is counted; events not delivered yet are "
                                       "not lost.")
                                        .arg(seconds(r.seconds))
                      : r.timedOut ? tr("Timed out after %1.").arg(seconds(r.seconds))
                      : r.doubleExecutions || r.lost
                          ? tr("%1 event(s) ran twice and %2 were lost.").arg(r.doubleExecutions).arg(r.lost)
                          : tr("Each event ran exactly once.");
    m_status->setText(tr("%1 events, %2 deliveries %3 on %4 (keys under %5:), %6. %7")
                          .arg(r.events)
                          .arg(r.deliveries)
                          .arg(how, m_lastWhere, QString::fromStdString(r.keyNamespace), seconds(r.seconds), verdict));
}
