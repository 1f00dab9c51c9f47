#include "idem/gateway/gateway.h"

#include "relay.h"
#include "upstream.h"

#include "idem/engine/asyncstore.h"
#include "idem/engine/watchdog.h"
#include "idem/errors.h"
#include "idem/gateway/keyrules.h"
#include "idem/gateway/storedanswer.h"
#include "idem/redis/asyncconnection.h"
#include "idem/redis/pool.h"

#include <QAbstractEventDispatcher>
#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLoggingCategory>
#include <QThread>
#include <QTimer>

#include <sys/resource.h>

#include <algorithm>

Q_LOGGING_CATEGORY(lcGateway, "idem.gateway")

using namespace Qt::StringLiterals;

namespace idem::gateway {

using Clock = std::chrono::steady_clock;

// One request on its way through the gateway.
struct Exchange {
    http::Request request;
    http::Responder out;
    const RoutePolicy* policy = nullptr; // the route's, in the gateway's Policy
    QElapsedTimer clock;
    std::string id, fingerprint;
    Clock::time_point sentAt;
    AcquireResult acquire;
    std::shared_ptr<WatchEntry> watch;
    UpstreamResult upstream;
    Clock::time_point waitUntil{}; // --wait-in-progress: asking again until then
    int pollMs = 0;
    unsigned waitTurn = 0; // which of its waits a poll timer or a wake-up ends (the first that comes)
    bool ran = false;      // it took the key: its end wakes the duplicates waiting here
};

namespace {

const char* kDraft = "https://datatracker.ietf.org/doc/draft-ietf-httpapi-idempotency-key-header/";

std::string whatOf(const std::exception_ptr& e)
{
    try {
        std::rethrow_exception(e);
    } catch (const std::exception& ex) {
        return ex.what();
    } catch (...) {
        return "unknown error";
    }
}

// Each client connection may hold an upstream connection too, and Redis and the listeners take a
// few descriptors: half of what is left, so that accept() never fails for want of descriptors
std::size_t defaultMaxConnections()
{
    rlimit l{};
    if (::getrlimit(RLIMIT_NOFILE, &l) != 0 || l.rlim_cur == RLIM_INFINITY)
        return 10'000;
    const rlim_t usable = l.rlim_cur > 64 ? (l.rlim_cur - 64) / 2 : 1;
    return static_cast<std::size_t>(std::clamp<rlim_t>(usable, 16, 10'000));
}

// The address a client on this machine reaches a listener on: a listener on every address (`*`,
// 0.0.0.0, ::) is no address to connect to, so it is named by the loopback address it answers on:
// [::1] for :: (Qt listens there on IPv6 only), 127.0.0.1 for `*` (both families) and 0.0.0.0
QString reachableHost(const QHostAddress& listening)
{
    QHostAddress h = listening;
    if (listening.isEqual(QHostAddress::Any, QHostAddress::ConvertUnspecifiedAddress))
        h = QHostAddress(listening.protocol() == QAbstractSocket::IPv6Protocol ? QHostAddress::LocalHostIPv6
                                                                                : QHostAddress::LocalHost);
    return h.protocol() == QAbstractSocket::IPv6Protocol ? u'[' + h.toString() + u']' : h.toString();
}

std::string scopeName(const KeyScope& s)
{
    switch (s.kind) {
    case KeyScope::Kind::None: return "none";
    case KeyScope::Kind::Authorization: return "authorization";
    case KeyScope::Kind::Header: return "header:" + s.header;
    }
    return {};
}

} // namespace

Gateway::Gateway(GatewayOptions options, QObject* parent)
    : QObject(parent), m_options(std::move(options)), m_relay(std::make_shared<Relay>(this))
{
    m_policy.defaults = defaultPolicy(m_options);
    m_policy.routes = m_options.routes;
    StoreOptions so;
    so.keyNamespace = m_options.keyNamespace;
    so.lease = m_options.lease;
    so.staleKeep = std::max(so.staleKeep, m_policy.longestLease());
    so.retention = m_options.retention;
    so.minReplicas = m_options.minReplicas;
    so.replicaTimeout = m_options.replicaTimeout;
    // the stored JSON: the body (base64 when binary) and a few headers
    so.maxResponseBytes = m_options.maxResponse / 3 * 4 + 65536;
    m_blockingPool = std::make_unique<ConnectionPool>(m_options.connection, 1);
    m_store = std::make_unique<Store>(*m_blockingPool, so);
    // one connection (one I/O thread): the gateway's one thread sends, and what it sends while a
    // unit is on its way is coalesced into the next (idem-gateway-bench: half the system calls per
    // request of two connections, and twice the requests per second under strace)
    m_pool = std::make_unique<AsyncPool>(m_options.connection, 1);
    m_async = std::make_unique<AsyncStore>(*m_pool, so);
    m_watchdog = std::make_unique<Watchdog>(*m_store);
    m_watchdog->useAsync(m_async.get());
    m_upstream = new Upstream(m_options.upstream, m_options.upstreamTimeout, m_options.maxResponse, this);
}

Gateway::~Gateway()
{
    releaseStore(); // the last turn's completions still go: a retry finds its answer stored
    delete std::exchange(m_server, nullptr); // no more requests; their connections go, and their Responders
                                             // answer into nothing
    delete std::exchange(m_admin, nullptr);
    delete m_upstream; // replies under way end here, while everything they call still stands
    m_relay->close();  // store answers still to come are dropped
    m_watchdog.reset();
    m_async.reset();
    m_pool.reset();
    m_store.reset();
    m_blockingPool.reset();
}

bool Gateway::start(QString* error)
{
    http::ServerOptions so;
    so.limits.maxBody = m_policy.largestBody();
    if (!m_policy.routes.empty())
        so.bodyLimit = [this](const http::Request& head) { return m_policy.of(head.method, head.route).maxBody; };
    so.idleTimeout = m_options.idleTimeout;
    so.headerTimeout = m_options.headerTimeout;
    so.bodyTimeout = m_options.bodyTimeout;
    so.maxConnections = m_options.maxConnections > 0 ? m_options.maxConnections : defaultMaxConnections();
    so.tls = m_options.listenTls;
    m_server = new http::HttpServer(so, [this](http::Request r, http::Responder out) { handle(std::move(r), out); }, this);
    m_server->parseFailed = [this](const http::ParseError& e) {
        m_metrics.count(e.status == 413 ? Outcome::TooLarge : Outcome::Rejected);
    };
    if (!m_server->listen(m_options.listenHost, m_options.listenPort)) {
        if (error)
            *error = u"cannot listen on %1:%2: %3"_s.arg(m_options.listenHost.toString())
                         .arg(m_options.listenPort)
                         .arg(m_server->errorString());
        return false;
    }
    if (m_options.admin) {
        http::ServerOptions ao;
        ao.limits.maxBody = 0;
        m_admin = new http::HttpServer(
            ao, [this](const http::Request& r, const http::Responder& out) { handleAdmin(r, out); }, this);
        if (!m_admin->listen(m_options.adminHost, m_options.adminPort)) {
            if (error)
                *error = u"cannot listen on %1:%2 (--admin-listen): %3"_s.arg(m_options.adminHost.toString())
                             .arg(m_options.adminPort)
                             .arg(m_admin->errorString());
            return false;
        }
    }
    return true;
}

quint16 Gateway::port() const { return m_server ? m_server->port() : 0; }
quint16 Gateway::adminPort() const { return m_admin ? m_admin->port() : 0; }

// The Link names the published policy: --policy-link; else the admin listener's /policy, but only
// to a client on this machine, the one client sure to reach it (clients elsewhere seldom can, and
// need not learn where the operator's /metrics are): a loopback peer that forwards no one else's
// request (a proxy on this machine says Forwarded or X-Forwarded-For); else the draft.
http::Response Gateway::keyProblem(const Exchange& x, std::string_view detail) const
{
    http::Response r = http::problem(400, "Idempotency-Key is missing or invalid", detail);
    QString link = m_options.policyLink;
    const bool local = x.out.peer().isLoopback() && !x.request.header("Forwarded") &&
                       !x.request.header("X-Forwarded-For");
    if (link.isEmpty() && m_admin && local)
        link = u"http://%1:%2/policy"_s.arg(reachableHost(m_options.adminHost)).arg(m_admin->port());
    if (link.isEmpty())
        link = QString::fromLatin1(kDraft);
    r.set("Link", "<" + link.toStdString() + ">; rel=\"describedby\"");
    return r;
}

void Gateway::handle(http::Request r, http::Responder out)
{
    auto x = std::make_shared<Exchange>();
    ++m_inFlight;
    x->request = std::move(r);
    x->out = std::move(out);
    x->clock.start();
    const http::Request& req = x->request;
    x->policy = &m_policy.of(req.method, req.route);
    // the policy's methods are uppercase; the upstream gets the method as it came
    if (!x->policy->methods.count(http::upperMethod(req.method)))
        return pass(x, Outcome::Bypassed);
    const std::size_t keys = req.headerCount("Idempotency-Key");
    if (keys == 0) {
        if (x->policy->requireKey)
            return finish(x, keyProblem(*x, "a " + req.method + " request needs an Idempotency-Key header"), Outcome::Rejected);
        return pass(x, Outcome::Bypassed);
    }
    if (keys > 1)
        return finish(x, keyProblem(*x, "one Idempotency-Key header, not several"), Outcome::Rejected);
    if (const auto why = ambiguousScope(req, m_options.scope))
        return finish(x, http::problem(400, "Whose key this is cannot be told", *why), Outcome::Rejected);
    std::string why;
    const auto key = parseKey(*req.header("Idempotency-Key"), &why);
    if (!key)
        return finish(x, keyProblem(*x, why), Outcome::Rejected);
    x->id = recordId(req, m_options.scope, *key);
    x->fingerprint = requestFingerprint(req, x->policy->fingerprinted);
    acquire(x);
}

void Gateway::holdStore()
{
    if (m_holding)
        return;
    if (!m_releaseConnected) { // this thread's loop: it says when a turn ends (and before it waits)
        auto* loop = QAbstractEventDispatcher::instance();
        Q_ASSERT(QThread::currentThread() == thread());
        if (!loop)
            return;
        connect(loop, &QAbstractEventDispatcher::awake, this, &Gateway::releaseStore);
        connect(loop, &QAbstractEventDispatcher::aboutToBlock, this, &Gateway::releaseStore);
        m_releaseConnected = true;
    }
    m_async->hold();
    m_holding = true;
}

void Gateway::releaseStore()
{
    if (std::exchange(m_holding, false))
        m_async->release();
}

void Gateway::acquire(std::shared_ptr<Exchange> x)
{
    x->sentAt = Clock::now(); // the local lease deadline is never later than the server's
    try {
        holdStore();
        m_async->acquire(x->id, x->fingerprint, x->policy->lease,
                         m_relay->bind<AcquireResult>([this, x](const AcquireResult& a, std::exception_ptr e) {
                             // runs on this thread while this gateway lives (Relay)
                             if (e)
                                 return storeFailed(x, whatOf(e));
                             x->acquire = a;
                             acquired(x);
                         }));
    } catch (const UsageError& e) {
        finish(x, http::problem(400, "Bad request", e.what()), Outcome::Rejected);
    }
}

// --wait-in-progress: ask again a little later, while the wait lasts and the client is there.
// The first request's answer then comes back as a replay; if it was released, this one runs.
bool Gateway::waitMore(const std::shared_ptr<Exchange>& x)
{
    if (m_options.waitInProgress.count() <= 0 || !x->out.connected())
        return false;
    if (x->pollMs == 0) {
        x->waitUntil = Clock::now() + m_options.waitInProgress;
        x->pollMs = 10;
    }
    const auto left = std::chrono::duration_cast<Millis>(x->waitUntil - Clock::now()).count();
    if (left <= 0)
        return false;
    const int delay = static_cast<int>(std::min<long long>(x->pollMs, left));
    x->pollMs = std::min(x->pollMs * 2, 200);
    const unsigned turn = ++x->waitTurn;
    m_waiters.emplace(x->id, x);
    QTimer::singleShot(delay, this, [this, x, turn] {
        if (x->waitTurn != turn) // woken already
            return;
        ++x->waitTurn;
        auto [it, end] = m_waiters.equal_range(x->id);
        for (; it != end; ++it)
            if (it->second.lock() == x) {
                m_waiters.erase(it);
                break;
            }
        acquire(x);
    });
    return true;
}

// A key this gateway ran has its answer stored, or is released: its waiting duplicates ask again
// now (a replay, or one of them runs), not at their next poll, up to 200 ms later.
void Gateway::wakeWaiters(const std::string& id)
{
    const auto [begin, end] = m_waiters.equal_range(id);
    if (begin == end)
        return;
    std::vector<std::shared_ptr<Exchange>> woken;
    for (auto it = begin; it != end; ++it)
        if (auto w = it->second.lock())
            woken.push_back(std::move(w));
    m_waiters.erase(begin, end);
    for (const auto& w : woken) {
        ++w->waitTurn;
        acquire(w);
    }
}

void Gateway::storeFailed(const std::shared_ptr<Exchange>& x, const std::string& why)
{
    m_storeUp = false;
    m_storeProblem = why;
    qCWarning(lcGateway) << "Redis:" << why.c_str();
    if (m_options.failOpen)
        return pass(x, Outcome::StoreError);
    // the client learns what happened, not where the store is or who logs in to it (the log says)
    http::Response r = http::problem(503, "The idempotency store is unavailable",
                                     "the request was not forwarded: its key could not be recorded; retry later");
    r.set("Retry-After", "1");
    finish(x, std::move(r), Outcome::StoreError);
}

void Gateway::pass(std::shared_ptr<Exchange> x, Outcome o)
{
    m_upstream->forward(x->request, x->out.peer().toString().toLatin1(), {}, [this, x, o](UpstreamResult u) {
        m_metrics.upstream.observe(u.seconds);
        if (u.kind == UpstreamResult::Kind::Answered)
            return finish(x, std::move(u.response), o);
        const bool late = u.kind == UpstreamResult::Kind::TimedOut;
        finish(x, http::problem(late ? 504 : 502, late ? "The upstream did not answer in time" : "The upstream failed", u.error),
               o);
    });
}

void Gateway::acquired(std::shared_ptr<Exchange> x)
{
    if (!std::exchange(m_storeUp, true))
        qCInfo(lcGateway) << "Redis answers again";
    const AcquireResult& a = x->acquire;
    switch (a.status) {
    case AcquireStatus::Acquired: {
        x->ran = true;
        x->watch = m_watchdog->add(a.ticket, x->policy->lease, x->sentAt + x->policy->lease);
        const std::vector<http::Header> extra = {{"Idempotency-Fence", std::to_string(a.ticket.fence)}};
        m_upstream->forward(x->request, x->out.peer().toString().toLatin1(), extra, [this, x](UpstreamResult u) {
            x->upstream = std::move(u);
            answered(x);
        });
        return;
    }
    case AcquireStatus::Duplicate: {
        auto stored = decodeAnswer(a.response);
        if (!stored)
            return finish(x, http::problem(500, "The stored answer cannot be read", "the record " + x->id +
                                                                                         " holds no answer of the gateway's"),
                          Outcome::StoreError);
        stored->set("Idempotent-Replayed", "true");
        return finish(x, std::move(*stored), Outcome::Replayed);
    }
    case AcquireStatus::InProgress: {
        if (waitMore(x))
            return;
        http::Response r = http::problem(409, "A request is outstanding for this Idempotency-Key",
                                         "the first request with this key is still in progress; retry later");
        r.set("Retry-After", std::to_string(std::max<std::int64_t>(1, (a.remainingMs + 999) / 1000)));
        return finish(x, std::move(r), Outcome::Conflict);
    }
    case AcquireStatus::FailedTerminal: {
        // force-fail stores "forced: <reason>": the operator's reason is what the client is told
        const std::string_view why = std::string_view(a.error).starts_with("forced: ")
                                         ? std::string_view(a.error).substr(8)
                                         : std::string_view(a.error);
        return finish(x,
                      http::problem(409, "This Idempotency-Key failed for good",
                                    "an operator marked it failed: " + std::string(why)),
                      Outcome::Conflict);
    }
    case AcquireStatus::Mismatch: {
        std::string what = "method, path, query";
        for (const std::string& h : x->policy->fingerprinted)
            what.append(", ").append(h);
        return finish(x, http::problem(422, "Idempotency-Key is already used",
                                       "this key was used with another request (" + what + " or body)"),
                      Outcome::Mismatch);
    }
    case AcquireStatus::Unusable: // another writer's key where the gateway's record would be
        qCWarning(lcGateway) << "key" << x->id.c_str() << "holds no record of the gateway's:" << a.error.c_str();
        return finish(x, http::problem(500, "The key cannot be recorded", a.error), Outcome::StoreError);
    }
}

void Gateway::answered(std::shared_ptr<Exchange> x)
{
    m_watchdog->remove(x->watch);
    const UpstreamResult& u = x->upstream;
    m_metrics.upstream.observe(u.seconds);
    const bool answered = u.kind == UpstreamResult::Kind::Answered;
    std::string stored;
    std::string release = u.error;
    if (answered && x->policy->stores(u.response.status)) {
        stored = encodeAnswer(u.response, x->request.method, x->request.path, &x->policy->replayed);
        if (stored.size() > m_async->options().maxResponseBytes) {
            release = "the answer is too large to store";
            stored.clear();
        }
    } else if (answered) {
        release = "the upstream answered " + std::to_string(u.response.status);
    }
    const Outcome executed = x->acquire.takeover ? Outcome::Takeover : Outcome::Executed;
    try {
        if (!stored.empty()) {
            holdStore();
            m_async->complete(x->acquire.ticket, stored, x->policy->retention,
                              m_relay->bind<OwnerResult>([this, x, executed](const OwnerResult& r, std::exception_ptr e) {
                                  if (e || r.status != OwnerStatus::Ok) {
                                      ++m_metrics.unstored;
                                      qCWarning(lcGateway).noquote()
                                          << u"answer not stored for %1: %2"_s.arg(
                                                 QString::fromStdString(x->id),
                                                 QString::fromStdString(e ? whatOf(e) : "lease lost: " + r.currentState));
                                  }
                                  finish(x, x->upstream.response, executed);
                              }));
        } else {
            m_async->fail(x->acquire.ticket, FailPolicy::Release, release,
                          m_relay->bind<OwnerResult>([this, x](const OwnerResult&, std::exception_ptr e) {
                              if (e) // the lease runs out on its own
                                  qCWarning(lcGateway) << "key not released:" << whatOf(e).c_str();
                              const UpstreamResult& u = x->upstream;
                              if (u.kind == UpstreamResult::Kind::Answered)
                                  return finish(x, u.response, Outcome::Released);
                              const bool late = u.kind == UpstreamResult::Kind::TimedOut;
                              finish(x,
                                     http::problem(late ? 504 : 502,
                                                   late ? "The upstream did not answer in time" : "The upstream failed",
                                                   u.error + "; the key is released, a retry runs again"),
                                     Outcome::Released);
                          }));
        }
    } catch (const UsageError& e) {
        ++m_metrics.unstored;
        finish(x, x->upstream.response, executed);
    }
}

void Gateway::finish(const std::shared_ptr<Exchange>& x, http::Response r, Outcome o)
{
    m_metrics.count(o);
    m_metrics.request.observe(static_cast<double>(x->clock.nsecsElapsed()) / 1e9);
    x->out.send(std::move(r));
    --m_inFlight;
    if (x->ran)
        wakeWaiters(x->id);
    if (m_draining)
        checkDrained();
}

void Gateway::drain(Millis timeout)
{
    if (std::exchange(m_draining, true))
        return;
    const std::size_t open = m_server ? m_server->connections() : 0;
    qCInfo(lcGateway) << "draining:" << m_inFlight << (m_inFlight == 1 ? "request under way," : "requests under way,")
                      << open << (open == 1 ? "connection" : "connections");
    if (m_server) {
        m_server->closed = [this] { checkDrained(); };
        m_server->drain();
    }
    QTimer::singleShot(timeout, this, [this] {
        if (m_drained)
            return;
        // main() says what this cut off (in words a logging rule cannot silence) and exits 1
        m_cutOff = m_inFlight;
        m_drained = true;
        m_drainTimedOut = true;
        emit drained();
    });
    checkDrained();
}

// Drained when nothing is under way and every answer has left (its connection closed after it).
void Gateway::checkDrained()
{
    if (m_drained || m_inFlight > 0 || (m_server && m_server->connections() > 0))
        return;
    m_drained = true;
    releaseStore();
    // queued: the caller may be deep in a connection's or the store's call stack
    QMetaObject::invokeMethod(this, &Gateway::drained, Qt::QueuedConnection);
}

namespace {
QJsonArray list(const auto& strings)
{
    QJsonArray a;
    for (const std::string& s : strings)
        a.append(QString::fromStdString(s));
    return a;
}
double seconds(Millis d) { return static_cast<double>(d.count()) / 1000; }
} // namespace

std::string Gateway::policyJson() const
{
    const QJsonArray methods = list(m_options.methods);
    QJsonObject o{
        {u"header"_s, u"Idempotency-Key"_s},
        {u"methods"_s, methods},
        {u"key_required"_s, m_options.requireKey},
        {u"key_syntax"_s, u"sf-string, or bare printable ASCII without space, quote, ',' or ';'; 1 to 255 "
                                   "characters, one header"_s},
        {u"key_scope"_s, QString::fromStdString(scopeName(m_options.scope))},
        {u"fingerprint"_s, u"method, path, query (parameters in the order sent), body, fingerprint_headers"_s},
        {u"fingerprint_headers"_s, list(m_policy.defaults.fingerprinted)},
        {u"retention_seconds"_s, static_cast<double>(m_options.retention.count()) / 1000},
        {u"lease_seconds"_s, static_cast<double>(m_options.lease.count()) / 1000},
        {u"max_body_bytes"_s, static_cast<qint64>(m_options.maxBody)},
        {u"max_stored_response_bytes"_s, static_cast<qint64>(m_options.maxResponse)},
        {u"stored_statuses"_s, list(m_policy.defaults.stored)},
        {u"replayed_headers"_s, list(m_policy.defaults.replayed)},
        {u"replayed_header"_s, u"Idempotent-Replayed"_s},
        {u"fence_header"_s, u"Idempotency-Fence"_s},
        {u"fail_open"_s, m_options.failOpen},
        {u"min_replicas"_s, m_options.minReplicas},
        {u"wait_in_progress_seconds"_s, static_cast<double>(m_options.waitInProgress.count()) / 1000},
    };
    // --config's routes: what differs per route; the rest above holds for all
    QJsonArray routes;
    for (const RoutePolicy& r : m_policy.routes)
        routes.append(QJsonObject{
            {u"route"_s, QString::fromStdString(r.route)},
            {u"route_methods"_s, r.on.empty() ? QJsonValue(u"any"_s) : QJsonValue(list(r.on))},
            {u"path_prefix"_s, QString::fromStdString(r.prefix)},
            {u"methods"_s, list(r.methods)},
            {u"key_required"_s, r.requireKey},
            {u"retention_seconds"_s, seconds(r.retention)},
            {u"lease_seconds"_s, seconds(r.lease)},
            {u"stored_statuses"_s, list(r.stored)},
            {u"replayed_headers"_s, list(r.replayed)},
            {u"fingerprint_headers"_s, list(r.fingerprinted)},
            {u"max_body_bytes"_s, static_cast<qint64>(r.maxBody)},
        });
    o.insert(u"routes"_s, routes);
    o.insert(u"route_precedence"_s, u"the longest matching path prefix (whole segments); at equal prefixes the route "
                                    "naming the request's method; no route: the values above"_s);
    return QJsonDocument(o).toJson(QJsonDocument::Indented).toStdString();
}

void Gateway::handleAdmin(const http::Request& r, const http::Responder& out)
{
    http::Response resp;
    if (r.method != "GET" && r.method != "HEAD") {
        resp = http::problem(405, "Method Not Allowed", "the admin listener serves GET");
        resp.set("Allow", "GET, HEAD");
    } else if (r.path == "/metrics") {
        resp.set("Content-Type", "text/plain; version=0.0.4");
        resp.body = m_metrics.render(m_server ? m_server->connections() : 0);
    } else if (r.path == "/healthz") {
        const bool ok = (m_storeUp || m_options.failOpen) && !m_draining;
        resp.status = ok ? 200 : 503;
        resp.set("Content-Type", "application/json");
        // the operator's listener: why the store failed, in its words (a certificate, a password)
        resp.body = std::string("{\"status\":\"") + (m_draining ? "draining" : ok ? "ok" : "unavailable") + "\",\"redis\":\"" +
                    (m_storeUp ? "up\"" : "unreachable\",\"redis_error\":" + http::jsonString(m_storeProblem)) + "}\n";
    } else if (r.path == "/policy") {
        resp.set("Content-Type", "application/json");
        resp.body = policyJson();
    } else {
        resp = http::problem(404, "Not Found", "the admin listener serves /metrics, /healthz and /policy");
    }
    out.send(std::move(resp));
}

} // namespace idem::gateway
