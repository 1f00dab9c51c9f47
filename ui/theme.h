#pragma once

#include <QColor>
#include <QPalette>
#include <QStringView>
#include <optional>

// The console's palettes: the desktop's own, or Fusion with a light or a dark palette (a dark
// desktop, a projector, screenshots). The colours the console draws itself are picked against the
// palette in use, so every text stays readable on both.
namespace theme {

enum class Palette { System, Light, Dark };
std::optional<Palette> paletteFromString(QStringView name); // "system", "light", "dark"
void apply(Palette p);                                      // call once QApplication exists

bool isDark(const QPalette& p);
// A banner's colours for each severity: a tinted background with text that reads on it.
enum class Severity { Info, Warning, Error };
struct BannerColors {
    QColor background, text, border;
};
BannerColors bannerColors(Severity s, const QPalette& p);
// A style sheet for a QFrame named "banner" and the labels in it
QString bannerStyle(Severity s, const QPalette& p);
// The same colours for one QLabel
QString noteStyle(Severity s, const QPalette& p);
// A colour for text that must stand out (red for "ran twice") and still read on the base colour.
QColor alertText(const QPalette& p);
// The colour of text that is shown but no longer current (data of a lost connection): grey, and
// readable on the table's tints and on a pressed button.
QColor staleText(const QPalette& p);

} // namespace theme
