#include "idem/gateway/storedanswer.h"

#include "idem/gateway/keyrules.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QStringDecoder>

using namespace Qt::StringLiterals;

namespace idem::gateway {

namespace {
QString text(std::string_view s) { return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size())); }
}

std::string encodeAnswer(const http::Response& r, std::string_view method, std::string_view route,
                         const std::vector<std::string>* replayed)
{
    const auto keep = [&](std::string_view name) {
        if (!replayed)
            return replayedHeader(name);
        return std::any_of(replayed->begin(), replayed->end(),
                           [&](const std::string& h) { return http::equalsIgnoreCase(h, name); });
    };
    QJsonObject o;
    o.insert(u"gateway"_s, 1);
    o.insert(u"method"_s, text(method));
    o.insert(u"route"_s, text(route));
    o.insert(u"status"_s, r.status);
    QJsonArray headers;
    for (const auto& h : r.headers)
        if (keep(h.name))
            headers.append(QJsonArray{text(h.name), text(h.value)});
    o.insert(u"headers"_s, headers);
    const QByteArray body(r.body.data(), static_cast<qsizetype>(r.body.size()));
    QStringDecoder utf8(QStringDecoder::Utf8, QStringDecoder::Flag::Stateless);
    const QString decoded = utf8(body);
    if (!utf8.hasError() && !body.contains('\0'))
        o.insert(u"body"_s, decoded);
    else
        o.insert(u"body_base64"_s, QString::fromLatin1(body.toBase64()));
    return QJsonDocument(o).toJson(QJsonDocument::Compact).toStdString();
}

std::optional<http::Response> decodeAnswer(std::string_view stored)
{
    QJsonParseError error;
    const QJsonDocument doc =
        QJsonDocument::fromJson(QByteArray(stored.data(), static_cast<qsizetype>(stored.size())), &error);
    if (error.error != QJsonParseError::NoError || !doc.isObject())
        return std::nullopt;
    const QJsonObject o = doc.object();
    const int status = o.value(u"status"_s).toInt(0);
    if (o.value(u"gateway"_s).toInt() != 1 || status < 100 || status > 599)
        return std::nullopt;
    http::Response r;
    r.status = status;
    for (const QJsonValue& h : o.value(u"headers"_s).toArray()) {
        const QJsonArray nv = h.toArray();
        if (nv.size() == 2 && nv[0].isString() && nv[1].isString())
            r.headers.push_back({nv[0].toString().toStdString(), nv[1].toString().toStdString()});
    }
    if (o.contains(u"body_base64"_s))
        r.body = QByteArray::fromBase64(o.value(u"body_base64"_s).toString().toLatin1()).toStdString();
    else
        r.body = o.value(u"body"_s).toString().toStdString();
    return r;
}

} // namespace idem::gateway
