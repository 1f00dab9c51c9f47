#pragma once

#include <stdexcept>
#include <string>

namespace idem {

// Errors are for what is not an expected outcome of the state machine (those are values, see
// Outcome and AcquireResult). The hierarchy follows redis-plus-plus.
class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Redis could not be reached or the connection broke: the store is unavailable (fail closed).
class IoError : public Error {
public:
    using Error::Error;
};
class TimeoutError : public IoError {
public:
    using IoError::IoError;
};
class ClosedError : public IoError {
public:
    using IoError::IoError;
};
// A write was acknowledged by fewer replicas than StoreOptions::minReplicas asked for: a failover
// could lose it. An acquire that gets this has released its lock again (the work must not run).
// complete, fail and renew throw it for a refusal ("lease lost") from a node fewer replicas follow:
// it may be a primary that came back empty, and the caller tries again.
class NotReplicatedError : public IoError {
public:
    using IoError::IoError;
};

// Retrying cannot fix it: wrong credentials, a missing permission, a certificate refused or not
// matching the host, a plaintext client on a TLS port (or the reverse), a node that is not what
// the URL says. Callers stop retrying and say what to change; `field()` names it ("password",
// "user", "url", "tls-ca", "tls-cert", "tls-key", "tls-server-name", "sentinel", ...).
class ConfigError : public Error {
public:
    // `certain`: false for a likely cause read from a symptom (a server that hangs up before its
    // first answer is most likely a TLS port; a sentinel set that knows no such primary may not
    // have met it yet): a deployment check warns on those rather than refusing to start
    ConfigError(const std::string& what, std::string field, bool certain = true)
        : Error(what), m_field(std::move(field)), m_certain(certain)
    {
    }
    const std::string& field() const { return m_field; }
    bool certain() const { return m_certain; }

private:
    std::string m_field;
    bool m_certain = true;
};

// The server refused for want of a right (PostgreSQL's SQLSTATE 42501, insufficient_privilege):
// `role` is the role the connection acts as, `denied` the server's words ("permission denied for
// function purge"). Retrying cannot fix it; a grant can.
class PermissionError : public ConfigError {
public:
    PermissionError(const std::string& what, std::string role, std::string denied)
        : ConfigError(what, "permission"), m_role(std::move(role)), m_denied(std::move(denied))
    {
    }
    const std::string& role() const { return m_role; }
    const std::string& denied() const { return m_denied; }

private:
    std::string m_role;
    std::string m_denied;
};

// The server answered with an error reply (wrong password, wrong type, script error, ...).
class ReplyError : public Error {
public:
    using Error::Error;
};
// The server answered something the client did not expect.
class ProtoError : public Error {
public:
    using Error::Error;
};
// The caller passed something unusable (bad URL, empty or oversized id, response over the cap).
class UsageError : public Error {
public:
    using Error::Error;
};

} // namespace idem
