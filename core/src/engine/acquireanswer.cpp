#include "engine/acquireanswer.h"

#include "idem/errors.h"

#include <charconv>

namespace idem::acquireanswer {

namespace {
void acquired(AcquireResult& out, std::string_view id, std::string_view token, std::int64_t fence,
              std::int64_t attempt, std::int64_t leaseUntilMs)
{
    if (fence < 1 || attempt < 1)
        throw ProtoError("acquire script answered fence " + std::to_string(fence) + ", attempt " +
                         std::to_string(attempt) + ": no owner has those");
    out.status = AcquireStatus::Acquired;
    out.ticket.id = std::string(id);
    out.ticket.token = std::string(token);
    out.ticket.fence = out.fence = fence;
    out.ticket.attempt = out.attempt = attempt;
    out.ticket.leaseUntilMs = leaseUntilMs;
}
} // namespace

void acquiredFresh(AcquireResult& out, std::int64_t fence, std::string_view id, std::string_view token,
                   std::int64_t leaseMs)
{
    acquired(out, id, token, fence, 1, fence / 1000 + leaseMs);
}

void parseAcquireLine(AcquireResult& out, LineReader& in, std::string_view id, std::string_view token,
                      std::int64_t leaseMs)
{
    if (in.atDigit()) { // a fence alone
        acquiredFresh(out, in.number(), id, token, leaseMs);
        in.finish();
        return;
    }
    const std::string_view status = in.word();
    if (status == "ACQUIRED") {
        const std::int64_t fence = in.number(), attempt = in.number(), leaseUntilMs = in.number();
        acquired(out, id, token, fence, attempt, leaseUntilMs);
        out.takeover = in.number() != 0;
    } else if (status == "DUPLICATE") {
        out.status = AcquireStatus::Duplicate;
        out.fence = in.number();
        out.response = std::string(in.rest());
    } else if (status == "IN_PROGRESS") {
        out.status = AcquireStatus::InProgress;
        out.remainingMs = in.number();
        out.attempt = in.number();
        out.fence = in.number();
    } else if (status == "FAILED") {
        out.status = AcquireStatus::FailedTerminal;
        out.fence = in.number();
        out.error = std::string(in.rest());
    } else if (status == "MISMATCH") {
        out.status = AcquireStatus::Mismatch;
        in.word(); // the stored record's state
        out.storedFingerprint = std::string(in.rest());
    } else if (status == "UNUSABLE") {
        out.status = AcquireStatus::Unusable;
        out.error = std::string(in.rest());
    } else {
        in.fail();
    }
    in.finish();
}

} // namespace idem::acquireanswer
