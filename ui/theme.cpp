#include "theme.h"

#include <QApplication>
#include <QStyle>
#include <QStyleFactory>

using namespace Qt::StringLiterals;

namespace theme {

std::optional<Palette> paletteFromString(QStringView name)
{
    if (name == u"system")
        return Palette::System;
    if (name == u"light")
        return Palette::Light;
    if (name == u"dark")
        return Palette::Dark;
    return std::nullopt;
}

void apply(Palette p)
{
    if (p == Palette::System)
        return;
    QApplication::setStyle(QStyleFactory::create(u"Fusion"_s));
    if (p == Palette::Light) {
        QApplication::setPalette(QApplication::style()->standardPalette());
        return;
    }
    QPalette d;
    const QColor window(45, 47, 50), base(30, 31, 34), text(230, 230, 230), disabled(128, 130, 134);
    d.setColor(QPalette::Window, window);
    d.setColor(QPalette::WindowText, text);
    d.setColor(QPalette::Base, base);
    d.setColor(QPalette::AlternateBase, QColor(38, 40, 43));
    d.setColor(QPalette::ToolTipBase, QColor(60, 63, 66));
    d.setColor(QPalette::ToolTipText, text);
    d.setColor(QPalette::PlaceholderText, QColor(150, 152, 156));
    d.setColor(QPalette::Text, text);
    d.setColor(QPalette::Button, QColor(55, 58, 62));
    d.setColor(QPalette::ButtonText, text);
    d.setColor(QPalette::BrightText, QColor(255, 110, 100));
    d.setColor(QPalette::Link, QColor(100, 170, 255));
    d.setColor(QPalette::LinkVisited, QColor(170, 140, 255));
    d.setColor(QPalette::Highlight, QColor(42, 110, 190));
    d.setColor(QPalette::HighlightedText, Qt::white);
    d.setColor(QPalette::Light, QColor(75, 78, 82));
    d.setColor(QPalette::Midlight, QColor(65, 68, 72));
    d.setColor(QPalette::Mid, QColor(90, 93, 98));
    d.setColor(QPalette::Dark, QColor(25, 26, 28));
    d.setColor(QPalette::Shadow, Qt::black);
    for (auto role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText})
        d.setColor(QPalette::Disabled, role, disabled);
    d.setColor(QPalette::Disabled, QPalette::Highlight, QColor(70, 72, 76));
    QApplication::setPalette(d);
}

bool isDark(const QPalette& p) { return p.color(QPalette::Window).lightness() < 128; }

BannerColors bannerColors(Severity s, const QPalette& p)
{
    // light: a pale tint and dark text; dark: a deep tint and light text - never black on dark
    const bool dark = isDark(p);
    switch (s) {
    case Severity::Info:
        return dark ? BannerColors{QColor(28, 58, 92), QColor(214, 232, 255), QColor(70, 120, 180)}
                    : BannerColors{QColor(222, 236, 252), QColor(20, 60, 110), QColor(120, 165, 220)};
    case Severity::Warning:
        return dark ? BannerColors{QColor(92, 66, 10), QColor(255, 232, 170), QColor(170, 125, 30)}
                    : BannerColors{QColor(253, 242, 208), QColor(122, 82, 0), QColor(224, 180, 76)};
    case Severity::Error: break;
    }
    return dark ? BannerColors{QColor(100, 30, 28), QColor(255, 215, 210), QColor(190, 70, 60)}
                : BannerColors{QColor(252, 226, 224), QColor(130, 25, 20), QColor(220, 120, 110)};
}

QString bannerStyle(Severity s, const QPalette& p)
{
    const BannerColors c = bannerColors(s, p);
    return u"QFrame#banner { background: %1; border: 1px solid %3; border-radius: 3px; }"
           "QFrame#banner > QLabel { color: %2; background: transparent; border: none; padding: 2px 4px; }"_s.arg(
               c.background.name(), c.text.name(), c.border.name());
}

QString noteStyle(Severity s, const QPalette& p)
{
    const BannerColors c = bannerColors(s, p);
    return u"QLabel { background: %1; color: %2; border: 1px solid %3; border-radius: 3px; padding: 3px 6px; }"_s.arg(
        c.background.name(), c.text.name(), c.border.name());
}

QColor alertText(const QPalette& p) { return isDark(p) ? QColor(255, 120, 105) : QColor(192, 40, 30); }

QColor staleText(const QPalette& p)
{
    // between the text and the base colour: plainly grey, still readable on a tinted row or a
    // pressed button (the disabled colour is too faint for either in a light palette)
    const QColor t = p.color(QPalette::Text), b = p.color(QPalette::Base);
    return QColor::fromRgbF(t.redF() * 0.55f + b.redF() * 0.45f, t.greenF() * 0.55f + b.greenF() * 0.45f,
                            t.blueF() * 0.55f + b.blueF() * 0.45f);
}

} // namespace theme
