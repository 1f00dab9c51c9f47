#pragma once

#include "idem/errors.h"

#include <string>

namespace idem {

// The newest version of schema idem this library knows (sql/v<N>.sql).
inline constexpr int kPgSchemaVersion = 4;

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

} // namespace idem
