#include "rewindbar.h"

#include "theme.h"

#include <QComboBox>
#include <QDateTime>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSlider>
#include <QStyle>
#include <QTimeZone>
#include <QTimer>
#include <QVBoxLayout>

#include <algorithm>

using namespace Qt::StringLiterals;

namespace {
constexpr int kPlayTickMs = 100;

QString clock(qint64 ms)
{
    return QDateTime::fromMSecsSinceEpoch(ms, QTimeZone::utc()).toString(u"HH:mm:ss"_s);
}
} // namespace

RewindBar::RewindBar(QWidget* parent) : QWidget(parent)
{
    m_slider = new QSlider(Qt::Horizontal, this);
    m_slider->setObjectName(u"rewindSlider"_s);
    m_slider->setToolTip(tr("Drag to see every key as it was at that moment of the recorded history"));
    m_slider->setEnabled(false);
    m_play = new QPushButton(style()->standardIcon(QStyle::SP_MediaPlay), tr("Play"), this);
    m_play->setObjectName(u"rewindPlay"_s);
    m_play->setCheckable(true);
    m_play->setEnabled(false);
    m_speed = new QComboBox(this);
    m_speed->setObjectName(u"rewindSpeed"_s);
    for (const double s : {1.0, 2.0, 10.0, 60.0, 600.0})
        m_speed->addItem(u"×%1"_s.arg(s), s);
    m_speed->setToolTip(tr("How fast Play goes through the history"));
    m_live = new QPushButton(tr("Live"), this);
    m_live->setObjectName(u"rewindLive"_s);
    m_live->setEnabled(false);
    m_export = new QPushButton(tr("Export…"), this);
    m_export->setObjectName(u"historyExport"_s);
    m_export->setToolTip(tr("Save the history as an event log, to replay in the sandbox (Replay tab or idemctl replay)"));
    m_export->setEnabled(false);
    connect(m_export, &QPushButton::clicked, this, &RewindBar::exportRequested);
    m_extent = new QLabel(this);
    m_extent->setObjectName(u"historyExtent"_s);
    m_banner = new QLabel(this);
    m_banner->setObjectName(u"rewoundBanner"_s);
    m_banner->hide();

    auto* row = new QHBoxLayout;
    row->setContentsMargins(0, 0, 0, 0);
    row->addWidget(new QLabel(tr("History:"), this));
    row->addWidget(m_slider, 1);
    row->addWidget(m_play);
    row->addWidget(m_speed);
    row->addWidget(m_live);
    row->addWidget(m_export);
    row->addWidget(m_extent);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);
    layout->addWidget(m_banner);
    layout->addLayout(row);

    m_player = new QTimer(this);
    m_player->setInterval(kPlayTickMs);
    connect(m_player, &QTimer::timeout, this, &RewindBar::step);
    connect(m_slider, &QSlider::sliderMoved, this, [this](int v) { rewindTo(m_firstMs + v); });
    connect(m_slider, &QSlider::actionTriggered, this, [this](int action) {
        if (action != QAbstractSlider::SliderMove) // page and arrow steps: the value after the step
            QTimer::singleShot(0, this, [this] { rewindTo(m_firstMs + m_slider->value()); });
    });
    connect(m_play, &QPushButton::toggled, this, &RewindBar::setPlaying);
    connect(m_live, &QPushButton::clicked, this, &RewindBar::goLive);
    setExtent(0, 0, 0);
}

void RewindBar::setExtent(qint64 firstMs, qint64 lastMs, qint64 transitions)
{
    m_firstMs = firstMs;
    m_lastMs = lastMs;
    const bool any = transitions > 0 && lastMs >= firstMs;
    m_slider->setEnabled(any);
    m_play->setEnabled(any);
    m_export->setEnabled(any);
    // never an empty range: its handle would sit at the left, which reads as rewound; live is the right end
    m_slider->setRange(0, any ? static_cast<int>(std::clamp<qint64>(lastMs - firstMs, 1, INT_MAX)) : 1);
    m_slider->setPageStep(std::max(1000, m_slider->maximum() / 20));
    m_slider->setSingleStep(1000);
    if (!m_slider->isSliderDown())
        m_slider->setValue(isRewound() ? static_cast<int>(m_atMs - firstMs) : m_slider->maximum());
    m_extent->setText(any ? tr("%1 changes since %2").arg(transitions).arg(clock(firstMs)) : tr("nothing recorded yet"));
}

void RewindBar::setDirectory(const QString& directory)
{
    m_extent->setToolTip(directory.isEmpty() ? tr("No history: the URL cannot be used")
                                             : tr("Kept in %1 (idemctl capture --from-history reads it)").arg(directory));
}

void RewindBar::rewindTo(qint64 ms)
{
    if (m_lastMs == 0)
        return;
    m_atMs = std::clamp(ms, m_firstMs, m_lastMs);
    if (!m_slider->isSliderDown())
        m_slider->setValue(static_cast<int>(m_atMs - m_firstMs));
    m_live->setEnabled(true);
    updateBanner();
    Q_EMIT moveTo(m_atMs);
}

void RewindBar::goLive()
{
    m_player->stop();
    m_play->setChecked(false);
    m_atMs = 0;
    m_shownMs = 0;
    m_live->setEnabled(false);
    m_slider->setValue(m_slider->maximum());
    updateBanner();
    Q_EMIT live();
}

void RewindBar::setPlaying(bool playing)
{
    if (m_play->isChecked() != playing)
        m_play->setChecked(playing); // comes back here through toggled
    m_play->setText(playing ? tr("Pause") : tr("Play"));
    m_play->setIcon(style()->standardIcon(playing ? QStyle::SP_MediaPause : QStyle::SP_MediaPlay));
    if (!playing) {
        m_player->stop();
        return;
    }
    if (!isRewound() || m_atMs >= m_lastMs)
        rewindTo(m_firstMs); // from the start
    m_player->start();
}

bool RewindBar::isPlaying() const { return m_player->isActive(); }
double RewindBar::speed() const { return m_speed->currentData().toDouble(); }

void RewindBar::step()
{
    const qint64 next = m_atMs + static_cast<qint64>(kPlayTickMs * speed());
    if (next >= m_lastMs) { // the end of what was recorded: stays there, not live, until Live
        rewindTo(m_lastMs);
        setPlaying(false);
        return;
    }
    rewindTo(next);
}

void RewindBar::shown(qint64 ms, qint64 elapsedMs)
{
    m_shownMs = ms;
    m_slider->setToolTip(tr("Shown: %1 (worked out in %2 ms)").arg(clock(ms)).arg(elapsedMs));
    updateBanner();
}

void RewindBar::updateBanner()
{
    if (!isRewound()) {
        m_banner->hide();
        return;
    }
    m_banner->setStyleSheet(theme::noteStyle(theme::Severity::Warning, palette()));
    m_banner->setText(tr("REWOUND to %1 UTC — not live%2. Press Live to go back.")
                          .arg(QDateTime::fromMSecsSinceEpoch(m_atMs, QTimeZone::utc()).toString(u"yyyy-MM-dd HH:mm:ss"_s),
                               isPlaying() ? tr(", playing at ×%1").arg(speed()) : QString()));
    m_banner->show();
}
