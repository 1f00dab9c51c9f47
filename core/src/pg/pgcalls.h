#pragma once

// What PgStore sends and how it reads the answers (pgcalls.cpp). Internal to idem::pg.
#include "idem/engine/store.h"
#include "idem/format/record.h"
#include "pg/pgconnection.h"
#include "pg/pgpipeline.h"

#include <string>
#include <string_view>
#include <vector>

namespace idem::pgcalls {

// Prepares every statement PgStore uses ("idem_acquire", "idem_complete", ...) on a new connection
void prepareAll(PgConnection& c);

// One row of the statements that read records (idem_inspect, idem_page, idem_read) as a Record
// (state Expired when its expiry has passed)
Record recordFrom(const PGresult* r, int row);
OwnerStatus ownerStatus(const std::string& outcome);
AdminStatus adminStatus(const std::string& outcome);
std::string_view policyWord(FailPolicy p);

// Each owner's call: its parameters, and the reading of its answer
std::vector<PgParam> acquireParams(std::string_view id, std::string_view fingerprint, Millis lease, Millis staleKeep,
                                   const std::string& token);
AcquireResult acquireFrom(const PGresult* p, int row, std::string_view id);
std::vector<PgParam> completeParams(const Ticket& t, std::string_view response, Millis retention);
std::vector<PgParam> failParams(const Ticket& t, FailPolicy policy, std::string_view error, Millis retention);
OwnerResult ownerFrom(const PGresult* r, int row); // complete's and fail's answer: (outcome, state)

// acquire and complete, many calls in one statement (the pipeline's batches)
extern const PgBatch acquireBatch;
extern const PgBatch completeBatch;

// An acquire whose row another transaction held past the lock timeout (PgError::rowHeld): that
// transaction is working on the id, so it is in progress (the time left unknown)
AcquireResult rowHeldAcquire();

// The same, on a connection, waiting for the answer (acquireOn answers rowHeldAcquire() for a
// held row; in a transaction, the transaction is then aborted)
AcquireResult acquireOn(PgConnection& c, std::string_view id, std::string_view fingerprint, Millis lease,
                        Millis staleKeep, const std::string& token);
OwnerResult completeOn(PgConnection& c, const Ticket& t, std::string_view response, Millis retention);
OwnerResult failOn(PgConnection& c, const Ticket& t, FailPolicy policy, std::string_view error, Millis retention);

} // namespace idem::pgcalls
