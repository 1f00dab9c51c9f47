#include "idem/redis/connectionflags.h"

#include "idem/errors.h"

namespace idem {

ConnectionOptions connectionFromFlags(const ConnectionFlags& flags)
{
    ConnectionOptions o = ConnectionOptions::fromUrl(flags.url);
    TlsOptions& tls = o.tls;
    const auto tlsValue = [&](const char* name, const std::optional<std::string>& v, std::string& into) {
        if (!v)
            return;
        if (!tls.enabled)
            throw UsageError(std::string(name) + " needs a rediss:// (or rediss-sentinel://) URL");
        if (v->empty())
            throw UsageError(std::string(name) + " must not be empty");
        into = *v;
    };
    tlsValue("--tls-ca", flags.tlsCa, tls.caFile);
    tlsValue("--tls-cert", flags.tlsCert, tls.certFile);
    tlsValue("--tls-key", flags.tlsKey, tls.keyFile);
    tlsValue("--tls-server-name", flags.tlsServerName, tls.serverName);
    if (flags.tlsInsecure) {
        if (!tls.enabled)
            throw UsageError("--tls-insecure needs a rediss:// (or rediss-sentinel://) URL");
        tls.insecure = true;
    }
    if (flags.sentinelPassword) {
        if (!o.viaSentinel())
            throw UsageError("--sentinel-password needs a redis-sentinel:// URL");
        o.sentinel.password = *flags.sentinelPassword;
    }
    return o;
}

} // namespace idem
