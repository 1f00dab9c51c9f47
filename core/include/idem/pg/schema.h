#pragma once

#include "idem/errors.h"

#include <string>
#include <vector>

namespace idem {

// The newest version of schema idem this library knows (sql/v<N>.sql).
inline constexpr int kPgSchemaVersion = 7;

// The database's schema idem is newer than this library: it must not write to it (functions may
// have changed meaning). Nothing was changed.
class SchemaTooNewError : public ConfigError {
public:
    SchemaTooNewError(const std::string& what, int found) : ConfigError(what, "schema"), m_found(found) {}
    int found() const { return m_found; }

private:
    int m_found;
};

struct PgSchemaChange {
    int before = 0; // 0: schema idem was not installed
    int after = 0;
};

// Installs or upgrades schema idem to kPgSchemaVersion, in one transaction under an advisory lock
// (two installers at once: one waits, then finds nothing to do). Idempotent. Throws
// SchemaTooNewError for a newer schema than this library knows, IoError when PostgreSQL is away.
// `version` stops at an older version (1..kPgSchemaVersion; a test of upgrades): a schema already
// at or past it is left as it is.
PgSchemaChange installPgSchema(const std::string& conninfo, int version = kPgSchemaVersion);
// The installed version, 0 when none.
int pgSchemaVersion(const std::string& conninfo);

// The roles of schema idem (v5: the functions run as the schema's owner, PUBLIC may run none):
//   service   acquire, complete, fail, renew, checkpoint and sweep through the functions (also
//             inside its own transaction, the transactional mode); no right on the tables
//   monitor   reads the records, the operations and the schema version; watches (idem.watch)
//   operator  the monitor's rights, force_fail, purge, purge_seen and sweep; and INSERT into
//             idem.operations (not its session_role) for the purges of a table idem did not make
// pgRoleGrants: the SQL that gives `user` (an existing role) exactly those rights in schema idem,
// one statement a line: first what it had there is revoked, then what the role needs is granted.
// For the schema's owner (or a superuser) to run; idempotent. Throws UsageError for another role.
const std::vector<std::string>& pgRoleNames();
std::vector<std::string> pgRoleGrants(const std::string& role, const std::string& user);

} // namespace idem
