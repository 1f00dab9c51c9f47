#pragma once

#include <QWidget>

class QComboBox;
class QLabel;
class QPushButton;
class QSlider;
class QTimer;

// The time slider above the key table: drag it (or press Play) to see the whole view as it was at
// a past moment of the recorded history; a banner says "REWOUND to … — not live" until Live is
// pressed. It only asks (moveTo); HistoryController computes the moment off the GUI thread.
class RewindBar : public QWidget {
    Q_OBJECT
public:
    explicit RewindBar(QWidget* parent = nullptr);

    // what the history spans (server clock); nothing recorded: firstMs == lastMs == 0
    void setExtent(qint64 firstMs, qint64 lastMs, qint64 transitions);
    bool isRewound() const { return m_atMs != 0; }
    qint64 atMs() const { return m_atMs; }
    // Rewinds to `ms` (clamped to the history) as if the slider had been moved there.
    void rewindTo(qint64 ms);
    void goLive();
    void setPlaying(bool playing);
    bool isPlaying() const;
    double speed() const;
    // where the history is kept (the extent's tooltip: `idemctl capture --from-history DIR` reads it)
    void setDirectory(const QString& directory);
    qint64 firstMs() const { return m_firstMs; }
    qint64 lastMs() const { return m_lastMs; }
    // the snapshot for `ms` is shown (how long it took, for the tooltip)
    void shown(qint64 ms, qint64 elapsedMs);

Q_SIGNALS:
    void moveTo(qint64 ms);
    void live();
    void exportRequested(); // the history as an event log

private:
    void step();
    void updateBanner();

    QSlider* m_slider;
    QLabel* m_banner;
    QLabel* m_extent;
    QPushButton* m_play;
    QPushButton* m_live;
    QPushButton* m_export;
    QComboBox* m_speed;
    QTimer* m_player;
    qint64 m_firstMs = 0;
    qint64 m_lastMs = 0;
    qint64 m_atMs = 0; // 0: live
    qint64 m_shownMs = 0;
};
