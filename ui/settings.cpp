#include "settings.h"

#include <QSettings>

using namespace Qt::StringLiterals;

Settings& Settings::instance()
{
    static Settings s;
    return s;
}

QStringList Settings::recentUrls() const { return QSettings().value(u"connection/recent"_s).toStringList(); }

void Settings::addRecentUrl(const QString& url)
{
    QStringList list = recentUrls();
    list.removeAll(url);
    list.prepend(url);
    while (list.size() > 10)
        list.removeLast();
    QSettings().setValue(u"connection/recent"_s, list);
    Q_EMIT recentUrlsChanged();
}

QString Settings::keyNamespace() const
{
    return QSettings().value(u"connection/namespace"_s, u"idempotency"_s).toString();
}

void Settings::setKeyNamespace(const QString& ns)
{
    if (ns == keyNamespace())
        return;
    QSettings().setValue(u"connection/namespace"_s, ns);
    Q_EMIT keyNamespaceChanged(ns);
}


QByteArray Settings::windowState() const { return QSettings().value(u"window/state"_s).toByteArray(); }
void Settings::setWindowState(const QByteArray& state) { QSettings().setValue(u"window/state"_s, state); }
QByteArray Settings::windowGeometry() const { return QSettings().value(u"window/geometry"_s).toByteArray(); }
void Settings::setWindowGeometry(const QByteArray& geometry) { QSettings().setValue(u"window/geometry"_s, geometry); }
