#include "settings.h"

#include "consoleworker.h"

#include <QSettings>

using namespace Qt::StringLiterals;

Settings& Settings::instance()
{
    static Settings s;
    return s;
}

namespace {
// one group per URL: its bytes in hex, as QSettings keys may not hold '/' or ':'
QString groupOf(const QString& url) { return u"connection/profiles/"_s + QString::fromLatin1(url.toUtf8().toHex()); }
} // namespace

QStringList Settings::recentUrls() const { return QSettings().value(u"connection/recent"_s).toStringList(); }

void Settings::addRecentUrl(const QString& url)
{
    QStringList list = recentUrls();
    list.removeAll(url);
    list.prepend(url);
    while (list.size() > 10) {
        QSettings().remove(groupOf(list.last()));
        list.removeLast();
    }
    QSettings().setValue(u"connection/recent"_s, list);
    Q_EMIT recentUrlsChanged();
}

void Settings::rememberConnection(const QString& url, const ConnectionSettings& c)
{
    QSettings s;
    s.beginGroup(groupOf(url));
    s.setValue(u"user"_s, c.user);
    s.setValue(u"namespace"_s, c.keyNamespace);
    s.setValue(u"pattern"_s, c.pattern);
    s.setValue(u"format"_s, c.format);
    s.setValue(u"table"_s, c.table);
    s.setValue(u"readFromReplicas"_s, c.readFromReplicas);
    s.setValue(u"tlsCa"_s, c.tlsCa);
    s.setValue(u"tlsCert"_s, c.tlsCert);
    s.setValue(u"tlsKey"_s, c.tlsKey);
    s.setValue(u"tlsServerName"_s, c.tlsServerName);
}

std::optional<ConnectionSettings> Settings::rememberedConnection(const QString& url) const
{
    QSettings s;
    s.beginGroup(groupOf(url));
    if (!s.contains(u"namespace"_s))
        return std::nullopt;
    ConnectionSettings c;
    c.url = url;
    c.user = s.value(u"user"_s).toString();
    c.keyNamespace = s.value(u"namespace"_s).toString();
    c.pattern = s.value(u"pattern"_s).toString();
    c.format = s.value(u"format"_s).toString();
    c.table = s.value(u"table"_s).toString();
    c.readFromReplicas = s.value(u"readFromReplicas"_s).toBool();
    c.tlsCa = s.value(u"tlsCa"_s).toString();
    c.tlsCert = s.value(u"tlsCert"_s).toString();
    c.tlsKey = s.value(u"tlsKey"_s).toString();
    c.tlsServerName = s.value(u"tlsServerName"_s).toString();
    return c;
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
