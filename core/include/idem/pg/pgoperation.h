#pragma once

#include <cstdint>
#include <string>

namespace idem {

// One row of idem.operations: an operator action (force_fail, purge) as the store kept it
struct PgOperation {
    std::int64_t atMs = 0;
    std::string op, id, previousState, by, reason;
    std::string sessionRole; // v5: the database role that acted (by is what it said); "" before
};

} // namespace idem
