#pragma once

#include "format/time.h"
#include "idem/format/jsonscan.h"
#include "idem/format/record.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

// The record format profiles behind decode(): one per library, each in its own file.
namespace idem::format {

// What decode() hands a profile: the key as read, the options, and the value's top-level JSON
// object scanned once for every profile that reads JSON.
struct Input {
    const KeyRead& in;
    const DecodeOptions& o;
    const json::Object* object = nullptr; // strings that start with '{'; nullptr otherwise
    bool prefix = false;                  // `in.value` is the first bytes of a longer value
};

struct Profile {
    RecordFormat format;
    // The key has this library's shape (its prefix, its hash encoding): the key is its own, and a
    // value it cannot read is malformed rather than someone else's.
    bool (*ownsKey)(std::string_view key, const DecodeOptions& o);
    // The record, or nullopt when the value is not this library's. `claimed`: the key shape or the
    // operator's --format say it is, so what cannot be read comes back malformed (never nullopt).
    std::optional<Record> (*decode)(const Input& in, bool claimed);
    const std::vector<FieldDoc>* docs;
};

// In the order decode() asks them when no key shape decides.
const std::vector<const Profile*>& profiles();
const Profile& profileOf(RecordFormat f);

extern const Profile native, powertools, powertoolsPython, powertoolsJava, nodeIdempotency, expressIdempotency,
    idempotentRequest, camel, statusJson, plain;

// Another program's data (programs.cpp): a job queue's or a task backend's key, FOREIGN with
// Record::program set; nullopt for anything else.
std::optional<Record> programData(const Input& x);
// The fields of this key a scan's HMGET asks for too, to tell such a program's hash (a BullMQ job's
// name and timestamp, ...); none for other keys.
std::vector<std::string_view> programHashFields(std::string_view key);
// Powertools for Java's fields of this key ("<key>:status", ...); none for other keys.
std::vector<std::string> javaHashFields(std::string_view key);

// Helpers the profiles share.
Record make(RecordFormat f, RecordState s);
Record malformed(RecordFormat f, std::string reason);
Record foreign(RecordFormat f, std::string reason);
// A STARTED record's staleness: its lease when it has one, else its start and the in-progress
// window (then it is also `blocked`: nothing but the TTL ends it for its library).
void settleStarted(Record& r, const DecodeOptions& o);
// A member of the top-level object as a time; nullopt if absent. A member that is present but
// cannot be a time sets *why (the record is then malformed).
std::optional<std::int64_t> timeMember(const json::Object& j, std::string_view name, timefield::Unit unit,
                                       std::string* why);
// The member was not read: it is cut, or it is absent from a value read only in part (its middle
// was never read). A lease that was not read is unknown: never "no lease", never stale.
bool unread(const json::Object& j, std::string_view name);
// The member's bytes as written (nested objects as JSON text); empty when cut.
std::string rawMember(const Input& in, const json::Member& m);
// Every member as a field: strings decoded, the rest as written; a cut member says so.
void addMembers(Record& r, const Input& in);
// Up to 40 printable characters of s, quoted.
std::string quoted(std::string_view s);
// The state a hand-written status word says (STARTED, PENDING, PROCESSING, IN_PROGRESS, COMPLETED,
// FAILED; any case), or nullopt.
std::optional<RecordState> handWrittenState(std::string_view status);
// s without the whitespace around it.
std::string_view trimmedWord(std::string_view s);
// When a record whose library writes no start began, from its TTL: writer's TTL minus the TTL left.
std::optional<std::int64_t> startFromTtl(const Input& in);

} // namespace idem::format
