// MainWindow: how live the data is (the status bar's freshness and the banner when it is not).
#include "mainwindow.h"

#include "countschart.h"
#include "elidedlabel.h"
#include "frozentableview.h"
#include "inspectorpanel.h"
#include "keytablemodel.h"
#include "theme.h"

#include <QDateTime>
#include <QLabel>
#include <QPushButton>
#include <QStatusBar>
#include <QTimer>

using namespace Qt::StringLiterals;

MainWindow::Freshness MainWindow::freshness() const
{
    if (!m_everHeard)
        return Freshness::NoData;
    return m_link == ConsoleWorker::Link::Connected && m_freshScan ? Freshness::Live : Freshness::AsOf;
}

void MainWindow::heard(qint64 serverNowMs)
{
    m_lastHeard = QDateTime::currentDateTime();
    if (serverNowMs > 0)
        m_lastHeardServerMs = serverNowMs;
    if (!m_everHeard) {
        m_everHeard = true;
        updateFreshness();
    }
}

void MainWindow::updateFreshness()
{
    const Freshness f = freshness();
    const bool changed = f != m_freshness;
    m_freshness = f;
    if (f == Freshness::AsOf) {
        if (!m_live->isFrozen())
            m_live->freezeAt(m_lastHeardServerMs);
    } else {
        m_live->thaw();
    }
    // counters: grey while the data is not current
    QPalette counterPalette = palette();
    if (f != Freshness::Live)
        counterPalette.setColor(QPalette::ButtonText, theme::staleText(counterPalette));
    m_counterBox->setPalette(counterPalette);

    using Link = ConsoleWorker::Link;
    const QString asOf = m_lastHeard.toString(u"HH:mm:ss"_s);
    QString text, chartText;
    theme::Severity severity = theme::Severity::Info;
    bool offerConnect = false;
    if (m_link == Link::Refused) {
        severity = theme::Severity::Error;
        text = m_linkDetail;
        if (m_everHeard)
            text += u' ' + tr("The data shown is as of %1.").arg(asOf);
        offerConnect = true;
        chartText = tr("No data: the settings for %1 need correcting (Connect…).").arg(m_server);
    } else if (m_link == Link::Connected) {
        if (f == Freshness::NoData)
            text = tr("Connected to %1 — reading the keys…").arg(m_server);
        else if (f == Freshness::AsOf)
            text = tr("Back in touch with %1: reading the keys again. Until that ends, the data shown is as of %2.")
                       .arg(m_server, asOf);
        chartText = tr("Reading the keys of %1…").arg(m_server);
        if (!m_notLive.isEmpty() && f != Freshness::NoData) {
            severity = theme::Severity::Warning;
            if (!text.isEmpty())
                text += u' ';
            text += tr("Not live since %1: %2. Until notifications are back, a change on that node shows at "
                       "the next read, not at once.")
                        .arg(m_notLiveSince.toString(u"HH:mm:ss"_s), m_notLive);
        }
        if (!m_clusterNotes.isEmpty() && f != Freshness::NoData) {
            if (!text.isEmpty())
                text += u'\n';
            text += tr("Cluster: %1").arg(m_clusterNotes.join(u"; "_s));
        }
    } else if (!m_everHeard) {
        severity = m_link == Link::Connecting ? theme::Severity::Info : theme::Severity::Error;
        text = m_link == Link::Connecting
                   ? tr("Connecting to %1 — no data yet.").arg(m_server)
                   : tr("Cannot reach %1: %2. Nothing has been read from it yet: the counters show “—”, not 0.")
                         .arg(m_server, m_linkDetail);
        offerConnect = m_link != Link::Connecting;
        chartText = m_link == Link::Connecting ? tr("Connecting to %1…").arg(m_server)
                                               : tr("No data: not connected to %1.").arg(m_server);
    } else if (m_linkDetail.startsWith(u"failing over"_s)) {
        severity = theme::Severity::Warning;
        text = tr("%1 is failing over since %2: the console asks the sentinels for the new primary (%3). The data "
                  "shown is as of %4: countdowns are stopped, and force-fail and purge are off until the new primary "
                  "answers.")
                   .arg(m_server, m_lostAt.toString(u"HH:mm:ss"_s), m_linkDetail.section(u": "_s, 1), asOf);
    } else {
        severity = theme::Severity::Warning;
        text = tr("Connection to %1 lost at %2 (%3). The data shown is as of %4: countdowns are stopped, and force-fail "
                  "and purge are off until the server answers again.")
                   .arg(m_server, m_lostAt.toString(u"HH:mm:ss"_s), m_linkDetail, asOf);
        offerConnect = true;
    }
    if (m_link != Link::Connected)
        m_liveLabel->setText(tr("no live updates"));
    m_bannerText->setText(text);
    if (const QString sheet = theme::bannerStyle(severity, palette()); sheet != m_banner->styleSheet())
        m_banner->setStyleSheet(sheet); // a new style sheet re-polishes: only when it changes
    m_bannerConnect->setVisible(offerConnect);
    m_banner->setVisible(!text.isEmpty());
    if (!chartText.isEmpty())
        m_chart->setEmptyText(chartText);
    m_inspector->setStaleNote(f == Freshness::AsOf ? tr("Not current: this is the record as read before %1; the "
                                                        "connection to %2 is down.")
                                                         .arg(asOf, m_server)
                                                   : QString());
    m_table->repaintRows();
    updateCounters();
    updateActions();
    if (changed)
        Q_EMIT freshnessChanged(f);
}
