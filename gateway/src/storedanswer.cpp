#include "idem/gateway/storedanswer.h"

#include "idem/format/httpanswer.h"
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
    auto a = decodeHttpAnswer(stored); // core's decoder: the one the console and idemctl use
    if (!a)
        return std::nullopt;
    http::Response r;
    r.status = a->status;
    for (auto& [name, value] : a->headers)
        r.headers.push_back({std::move(name), std::move(value)});
    r.body = std::move(a->body);
    return r;
}

} // namespace idem::gateway
