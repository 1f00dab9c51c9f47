#include "idem/gateway/routepolicy.h"

#include "idem/errors.h"
#include "idem/gateway/httprequest.h"
#include "idem/gateway/keyrules.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <algorithm>

using namespace Qt::StringLiterals;

namespace idem::gateway {

namespace {

struct Bad {
    QString field;
    QString message;
};

bool token(std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
               std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
    });
}

bool statusWord(const std::string& s) {
    if (s.size() != 3)
        return false;
    if (s[1] == 'x' && s[2] == 'x')
        return s[0] >= '2' && s[0] <= '5';
    const int n = std::atoi(s.c_str());
    return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
           n >= 200 && n <= 599;
}

std::set<std::string> methodList(const QString& text, const QString& field) {
    std::set<std::string> out;
    for (const QString& m : text.split(u',')) {
        const std::string t = m.trimmed().toUpper().toStdString();
        if (!token(t))
            throw Bad{field, u"not a comma-separated list of methods: '"_s + text + u"'"_s};
        out.insert(t);
    }
    return out;
}

std::vector<std::string> strings(const QJsonValue& v, const QString& field) {
    if (!v.isArray())
        throw Bad{field, u"must be a list of strings"_s};
    std::vector<std::string> out;
    for (const QJsonValue& e : v.toArray()) {
        if (!e.isString())
            throw Bad{field, u"must be a list of strings"_s};
        out.push_back(e.toString().toStdString());
    }
    return out;
}

RoutePolicy readRoute(const QJsonObject& o, const RoutePolicy& defaults) {
    static const QStringList kFields = {u"route"_s,          u"methods"_s, u"key_required"_s,
                                        u"retention"_s,      u"lease"_s,   u"store"_s,
                                        u"replay_headers"_s, u"max_body"_s, u"fingerprint_headers"_s};
    for (auto it = o.begin(); it != o.end(); ++it)
        if (!kFields.contains(it.key()))
            throw Bad{it.key(), u"unknown field (known: "_s + kFields.join(u", "_s) + u")"_s};
    RoutePolicy r = defaults;
    // "route": "[METHOD[,METHOD...] ]/prefix"
    const QString route = o.value(u"route"_s).toString().trimmed();
    r.route = route.toStdString();
    const qsizetype space = route.indexOf(u' ');
    const QString prefix = space < 0 ? route : route.mid(space + 1).trimmed();
    if (!prefix.startsWith(u'/') || prefix.contains(u'?') || prefix.contains(u' '))
        throw Bad{u"route"_s,
                  u"must be \"[METHOD[,METHOD...]] /path-prefix\", not '"_s + route + u"'"_s};
    r.on = space < 0 ? std::set<std::string>{} : methodList(route.left(space), u"route"_s);
    // read as request paths are, or it would never match one ("/%7Euser" is "/~user")
    const char* why = nullptr;
    r.prefix = http::routePath(http::normalizedPath(prefix.toStdString(), &why));
    if (r.prefix.empty())
        throw Bad{u"route"_s, QString::fromUtf8(why) + u": '"_s + route + u"'"_s};
    while (r.prefix.size() > 1 && r.prefix.back() == '/')
        r.prefix.pop_back();

    if (o.contains(u"methods"_s)) {
        r.methods.clear();
        for (const std::string& m : strings(o.value(u"methods"_s), u"methods"_s)) {
            std::string u = m;
            std::transform(u.begin(), u.end(), u.begin(),
                           [](char c) { return c >= 'a' && c <= 'z' ? c - 32 : c; });
            if (!token(u))
                throw Bad{u"methods"_s,
                          u"'"_s + QString::fromStdString(m) + u"' is not a method"_s};
            r.methods.insert(u);
        }
    }
    if (o.contains(u"key_required"_s)) {
        if (!o.value(u"key_required"_s).isBool())
            throw Bad{u"key_required"_s, u"must be true or false"_s};
        r.requireKey = o.value(u"key_required"_s).toBool();
    }
    const auto duration = [&](const QString& field, Millis& into) {
        if (!o.contains(field))
            return;
        const QJsonValue v = o.value(field);
        try {
            if (!v.isString())
                throw UsageError("must be a duration string such as \"30s\"");
            into = parseDuration(v.toString().toStdString());
        } catch (const UsageError& e) {
            throw Bad{field, QString::fromUtf8(e.what())};
        }
        if (into.count() <= 0)
            throw Bad{field, u"must be longer than 0"_s};
    };
    duration(u"retention"_s, r.retention);
    duration(u"lease"_s, r.lease);
    if (o.contains(u"store"_s)) {
        r.stored = strings(o.value(u"store"_s), u"store"_s);
        for (const std::string& s : r.stored)
            if (!statusWord(s))
                throw Bad{
                    u"store"_s,
                    u"'"_s + QString::fromStdString(s) +
                        u"' is neither a status class (2xx to 5xx) nor a status (200 to 599)"_s};
    }
    if (o.contains(u"replay_headers"_s)) {
        r.replayed = strings(o.value(u"replay_headers"_s), u"replay_headers"_s);
        for (const std::string& h : r.replayed) {
            const QString name = QString::fromStdString(h);
            if (!token(h))
                throw Bad{u"replay_headers"_s, u"'"_s + name + u"' is not a header name"_s};
            // the gateway writes these itself, or they belong to one client or one connection
            for (const char* never :
                 {"Set-Cookie", "Date", "Content-Length", "Idempotent-Replayed"})
                if (http::equalsIgnoreCase(h, never))
                    throw Bad{u"replay_headers"_s, name + u" is never replayed"_s};
            if (hopByHop(h))
                throw Bad{u"replay_headers"_s, name + u" is a hop-by-hop header, never replayed"_s};
        }
    }
    if (o.contains(u"fingerprint_headers"_s)) {
        std::string why;
        const auto names = fingerprintHeaders(strings(o.value(u"fingerprint_headers"_s), u"fingerprint_headers"_s), &why);
        if (!names)
            throw Bad{u"fingerprint_headers"_s, QString::fromStdString(why)};
        r.fingerprinted = *names;
    }
    if (o.contains(u"max_body"_s)) {
        const QJsonValue v = o.value(u"max_body"_s);
        try {
            r.maxBody = v.isDouble() ? static_cast<std::size_t>(std::max(0.0, v.toDouble()))
                        : v.isString()
                            ? parseSize(v.toString().toStdString())
                            : throw UsageError("must be a size such as \"64KiB\" or bytes");
        } catch (const UsageError& e) {
            throw Bad{u"max_body"_s, QString::fromUtf8(e.what())};
        }
        if (r.maxBody == 0 || r.maxBody > (std::size_t(1) << 30))
            throw Bad{u"max_body"_s, u"must be from 1 byte to 1GiB"_s};
    }
    return r;
}

bool overlap(const std::set<std::string>& a, const std::set<std::string>& b) {
    if (a.empty() || b.empty())
        return a.empty() && b.empty();
    return std::any_of(a.begin(), a.end(), [&](const std::string& m) { return b.count(m) > 0; });
}

} // namespace

bool RoutePolicy::stores(int status) const {
    const std::string code = std::to_string(status);
    return std::any_of(stored.begin(), stored.end(), [&](const std::string& s) {
        return s == code || (s.size() == 3 && s[1] == 'x' && code.size() == 3 && s[0] == code[0]);
    });
}

bool RoutePolicy::replays(std::string_view header) const {
    return std::any_of(replayed.begin(), replayed.end(),
                       [&](const std::string& h) { return http::equalsIgnoreCase(h, header); });
}

bool RoutePolicy::matches(std::string_view method, std::string_view path) const {
    if (!on.empty() && !on.count(std::string(method)))
        return false;
    if (prefix == "/")
        return true;
    return path.substr(0, prefix.size()) == prefix &&
           (path.size() == prefix.size() || path[prefix.size()] == '/' || path[prefix.size()] == ';'); // (;params)
}

std::vector<std::string> defaultStored(bool store5xx) {
    std::vector<std::string> s = {"2xx", "3xx", "4xx"};
    if (store5xx)
        s.emplace_back("5xx");
    return s;
}

std::vector<std::string> defaultReplayed() {
    return {kReplayedHeaders.begin(), kReplayedHeaders.end()};
}

const RoutePolicy& Policy::of(std::string_view requestMethod, std::string_view route) const {
    // "post" is POST to upstreams that fold the case of methods (Werkzeug): it is protected as POST
    const std::string method = http::upperMethod(requestMethod);
    const RoutePolicy* best = &defaults;
    bool bestNamed = false;
    std::size_t bestLength = 0;
    for (const RoutePolicy& r : routes) {
        if (!r.matches(method, route))
            continue;
        const std::size_t length = r.prefix == "/" ? 0 : r.prefix.size();
        const bool named = !r.on.empty();
        if (best == &defaults || length > bestLength ||
            (length == bestLength && named && !bestNamed)) {
            best = &r;
            bestLength = length;
            bestNamed = named;
        }
    }
    return *best;
}

Millis Policy::longestLease() const {
    Millis m = defaults.lease;
    for (const RoutePolicy& r : routes)
        m = std::max(m, r.lease);
    return m;
}

std::size_t Policy::largestBody() const {
    std::size_t m = defaults.maxBody;
    for (const RoutePolicy& r : routes)
        m = std::max(m, r.maxBody);
    return m;
}

bool parseRoutes(const QByteArray& json, const RoutePolicy& defaults,
                 std::vector<RoutePolicy>& routes, QString* error) {
    QJsonParseError pe;
    const QJsonDocument doc = QJsonDocument::fromJson(json, &pe);
    if (pe.error != QJsonParseError::NoError) {
        *error = u"not JSON: "_s + pe.errorString() + u" at byte "_s + QString::number(pe.offset);
        return false;
    }
    const QJsonObject top = doc.object();
    if (!doc.isObject() || !top.value(u"routes"_s).isArray()) {
        *error = u"must be an object with a list \"routes\""_s;
        return false;
    }
    for (auto it = top.begin(); it != top.end(); ++it)
        if (it.key() != u"routes"_s) {
            *error = u"unknown field '"_s + it.key() + u"' (known: routes)"_s;
            return false;
        }
    std::vector<RoutePolicy> out;
    const QJsonArray list = top.value(u"routes"_s).toArray();
    for (qsizetype i = 0; i < list.size(); ++i) {
        const QJsonObject o = list.at(i).toObject();
        const QString where =
            u"routes["_s + QString::number(i) + u"]"_s +
            (o.value(u"route"_s).isString() ? u" \""_s + o.value(u"route"_s).toString() + u"\""_s
                                            : QString());
        try {
            if (!list.at(i).isObject())
                throw Bad{QString(), u"must be an object"_s};
            if (!o.value(u"route"_s).isString())
                throw Bad{u"route"_s, u"is required: \"[METHOD[,METHOD...]] /path-prefix\""_s};
            RoutePolicy r = readRoute(o, defaults);
            for (std::size_t j = 0; j < out.size(); ++j)
                if (out[j].prefix == r.prefix && overlap(out[j].on, r.on))
                    throw Bad{u"route"_s, u"the same prefix and methods as routes["_s +
                                              QString::number(j) + u"] \""_s +
                                              QString::fromStdString(out[j].route) + u"\""_s};
            out.push_back(std::move(r));
        } catch (const Bad& b) {
            *error =
                where + (b.field.isEmpty() ? QString() : u": "_s + b.field) + u": "_s + b.message;
            return false;
        }
    }
    routes = std::move(out);
    return true;
}

} // namespace idem::gateway
