#include "responseview.h"

#include "idem/format/httpanswer.h"

#include <QLocale>
#include <QStringList>

using namespace Qt::StringLiterals;

namespace {

QString escaped(std::string_view s)
{
    QString out = QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size())).toHtmlEscaped();
    for (QChar& c : out)
        if (c.unicode() < 0x20 && c != u'\n' && c != u'\t')
            c = u'\uFFFD';
    return out;
}

QString size(std::size_t bytes) { return QLocale().formattedDataSize(static_cast<qint64>(bytes)); }

QString bodyHtml(const QString& title, std::string_view body, std::string_view contentType)
{
    const idem::BodyView v = idem::viewBody(body, contentType);
    if (v.kind == idem::BodyKind::Empty)
        return u"<h4>%1: empty</h4>"_s.arg(title);
    QString what = u"%1, %2"_s.arg(QString::fromLatin1(idem::nameOf(v.kind)), size(v.bytes));
    if (v.cut)
        what += v.kind == idem::BodyKind::Binary ? u", the first bytes"_s : u", the beginning"_s;
    return u"<h4>%1 (%2)</h4><pre>%3</pre>"_s.arg(title, what, escaped(v.text));
}

QString statusHtml(int status)
{
    const bool ok = status < 400;
    const QString color = ok ? u"#27ae60"_s : u"#d35400"_s;
    const QString meaning = status < 300 ? u"success"_s : status < 400 ? u"redirect"_s : status < 500
                                ? u"client error"_s : u"server error (stored with --store-5xx)"_s;
    return u"<span style='color:%1'><b>%2</b></span> <i>(%3; duplicates get it back with Idempotent-Replayed: "
           "true)</i>"_s.arg(color, QString::number(status), meaning);
}

} // namespace

QString storedResponseHtml(const std::string& response)
{
    const auto answer = idem::decodeHttpAnswer(response);
    if (!answer)
        return bodyHtml(u"stored response"_s, response, {});
    QString out = u"<a name='http-answer'></a><h4>HTTP answer stored by idem-gateway</h4><table cellspacing='0' cellpadding='2'>"_s;
    const auto row = [&out](const QString& name, const QString& value) {
        out += u"<tr><td valign='top'><b>%1</b>&nbsp;</td><td>%2</td></tr>"_s.arg(name, value);
    };
    row(u"method"_s, escaped(answer->method));
    row(u"route"_s, u"<tt>%1</tt>"_s.arg(escaped(answer->route)));
    row(u"status"_s, statusHtml(answer->status));
    QStringList headers;
    for (const auto& [name, value] : answer->headers)
        headers << u"<tt>%1: %2</tt>"_s.arg(escaped(name), escaped(value));
    row(u"headers"_s, headers.isEmpty() ? u"<i>none kept</i>"_s : headers.join(u"<br>"_s));
    out += u"</table>"_s;
    const std::string* type = answer->header("Content-Type");
    out += bodyHtml(answer->bodyBase64 ? u"body (stored as base64)"_s : u"body"_s, answer->body,
                    type ? std::string_view(*type) : std::string_view());
    return out;
}
