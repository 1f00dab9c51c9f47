#include "upstream.h"

#include "idem/gateway/keyrules.h"

#include <QElapsedTimer>
#include <QNetworkAccessManager>
#include <QNetworkProxy>
#include <QNetworkReply>
#include <QNetworkRequest>
#include <QTimer>

#include <map>
#include <set>
#include <memory>

using namespace Qt::StringLiterals;

namespace idem::gateway {

namespace {

QByteArray bytes(std::string_view s) { return QByteArray(s.data(), static_cast<qsizetype>(s.size())); }

std::string lower(std::string_view s)
{
    std::string out(s);
    for (char& c : out)
        if (c >= 'A' && c <= 'Z')
            c = static_cast<char>(c - 'A' + 'a');
    return out;
}

// The headers the client's Connection header names belong to that hop too.
std::set<std::string> connectionTokens(const http::Request& r)
{
    std::set<std::string> out;
    for (const auto& h : r.headers)
        if (http::equalsIgnoreCase(h.name, "Connection"))
            for (const QByteArray& t : bytes(h.value).split(','))
                out.insert(lower(t.trimmed().toStdString()));
    return out;
}

} // namespace

Upstream::Upstream(QUrl base, Millis timeout, std::size_t maxResponse, QObject* parent)
    : QObject(parent), m_base(std::move(base)), m_timeout(timeout), m_maxResponse(maxResponse),
      m_nam(new QNetworkAccessManager(this))
{
    m_nam->setProxy(QNetworkProxy::NoProxy);
    m_nam->setCookieJar(nullptr);
    m_nam->setRedirectPolicy(QNetworkRequest::ManualRedirectPolicy);
}

void Upstream::forward(const http::Request& r, const QByteArray& clientAddress, const std::vector<http::Header>& extra,
                       std::function<void(UpstreamResult)> done)
{
    QByteArray base = m_base.toEncoded();
    if (base.endsWith('/'))
        base.chop(1);
    QNetworkRequest req(QUrl::fromEncoded(base + bytes(r.target), QUrl::TolerantMode));
    req.setAttribute(QNetworkRequest::RedirectPolicyAttribute, QNetworkRequest::ManualRedirectPolicy);
    req.setAttribute(QNetworkRequest::CookieLoadControlAttribute, QNetworkRequest::Manual);
    req.setAttribute(QNetworkRequest::CookieSaveControlAttribute, QNetworkRequest::Manual);
    req.setAttribute(QNetworkRequest::CacheLoadControlAttribute, QNetworkRequest::AlwaysNetwork);
    req.setAttribute(QNetworkRequest::CacheSaveControlAttribute, false);
    req.setAttribute(QNetworkRequest::Http2AllowedAttribute, false);
    req.setAttribute(QNetworkRequest::AuthenticationReuseAttribute, QNetworkRequest::Manual);

    // headers of one name go as one, comma-joined (Cookie with "; ")
    const auto hop = connectionTokens(r);
    std::map<std::string, std::pair<std::string, QByteArray>> merged; // lower name -> (name, value)
    for (const auto& h : r.headers) {
        const std::string key = lower(h.name);
        if (hopByHop(h.name) || hop.count(key))
            continue;
        auto [it, fresh] = merged.try_emplace(key, h.name, bytes(h.value));
        if (!fresh)
            it->second.second += (key == "cookie" ? "; " : ", ") + bytes(h.value);
    }
    if (!merged.count("accept-encoding")) // else Qt asks for gzip and inflates what it gets
        merged["accept-encoding"] = {"Accept-Encoding", "identity"};
    auto& forwardedFor = merged["x-forwarded-for"];
    forwardedFor.first = "X-Forwarded-For";
    forwardedFor.second = forwardedFor.second.isEmpty() ? clientAddress : forwardedFor.second + ", " + clientAddress;
    if (const std::string* host = r.header("Host"))
        merged["x-forwarded-host"] = {"X-Forwarded-Host", bytes(*host)};
    for (const auto& h : extra)
        merged[lower(h.name)] = {h.name, bytes(h.value)};
    for (const auto& [key, nv] : merged)
        req.setRawHeader(bytes(nv.first), nv.second);

    auto clock = std::make_shared<QElapsedTimer>();
    clock->start();
    QNetworkReply* reply = m_nam->sendCustomRequest(req, bytes(r.method), bytes(r.body));
    auto timedOut = std::make_shared<bool>(false);
    auto* timer = new QTimer(reply);
    timer->setSingleShot(true);
    connect(timer, &QTimer::timeout, reply, [reply, timedOut] {
        *timedOut = true;
        reply->abort();
    });
    timer->start(static_cast<int>(m_timeout.count()));
    auto tooLarge = std::make_shared<bool>(false);
    connect(reply, &QNetworkReply::downloadProgress, reply, [this, reply, tooLarge](qint64 received, qint64) {
        if (static_cast<std::size_t>(received) > m_maxResponse && !*tooLarge) {
            *tooLarge = true;
            reply->abort();
        }
    });
    connect(reply, &QNetworkReply::finished, this, [this, reply, clock, timedOut, tooLarge, done = std::move(done)] {
        reply->deleteLater();
        UpstreamResult out;
        out.seconds = static_cast<double>(clock->nsecsElapsed()) / 1e9;
        const QVariant status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute);
        if (*timedOut) {
            out.kind = UpstreamResult::Kind::TimedOut;
            out.error = "no answer from the upstream within " + formatDuration(m_timeout);
        } else if (*tooLarge) {
            out.error = "the upstream's answer is larger than " + std::to_string(m_maxResponse) + " bytes";
        } else if (!status.isValid() || reply->error() == QNetworkReply::RemoteHostClosedError ||
                   reply->error() == QNetworkReply::OperationCanceledError) {
            out.error = "the upstream did not answer: " + reply->errorString().toStdString();
        } else {
            out.kind = UpstreamResult::Kind::Answered;
            out.response.status = status.toInt();
            for (const auto& [name, value] : reply->rawHeaderPairs()) {
                const std::string n = name.toStdString();
                if (hopByHop(n) || http::equalsIgnoreCase(n, "Date"))
                    continue;
                // Qt joins repeated headers: Set-Cookie with newlines, the others with ", "
                if (http::equalsIgnoreCase(n, "Set-Cookie")) {
                    for (const QByteArray& c : value.split('\n'))
                        out.response.headers.push_back({n, c.toStdString()});
                } else {
                    out.response.headers.push_back({n, value.toStdString()});
                }
            }
            const QByteArray body = reply->readAll();
            out.response.body.assign(body.constData(), static_cast<std::size_t>(body.size()));
        }
        done(std::move(out));
    });
}

} // namespace idem::gateway
