#pragma once

#include <QFrame>

// One line of text that gives way: cut with "…" to the width it gets (the whole text in its
// tooltip), so a long status never widens the window.
class ElidedLabel : public QFrame {
    Q_OBJECT
public:
    explicit ElidedLabel(QWidget* parent = nullptr);
    void setText(const QString& text);
    QString text() const { return m_text; }
    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

protected:
    void paintEvent(QPaintEvent*) override;

private:
    QString m_text;
};
