#pragma once

#include "idem/errors.h"

#include <string>

namespace idem {

// The newest version of schema idem this library knows (sql/v<N>.sql).
inline constexpr int kPgSchemaVersion = 2;

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
// SchemaTooNewError for a newer schema, IoError when PostgreSQL is away.
PgSchemaChange installPgSchema(const std::string& conninfo);
// The installed version, 0 when none.
int pgSchemaVersion(const std::string& conninfo);

} // namespace idem
