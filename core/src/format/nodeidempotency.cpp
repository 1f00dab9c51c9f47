// @node-idempotency/core with its Redis storage adapter (tools/peers/FORMATS.md): a JSON string at
// node-idempotency:<METHOD>:<path>:<key>,
//   {"status":"IN_PROGRESS","fingerPrint":"<blake2s of the body>"}
//   {"status":"COMPLETE","fingerPrint":...,"response":{"additional":{"statusCode":N,...},"body"|"error":...}}
// No owner, no start, no deadline: a crashed handler's lock blocks the key (409) until the key's
// TTL ends (24 h by default). Failures are stored as COMPLETE with response.error and replayed.
#include "format/profile.h"

#include <cstdlib>

namespace idem::format {

namespace {

constexpr std::string_view kPrefix = "node-idempotency:";

bool ownsKey(std::string_view key, const DecodeOptions&) { return key.starts_with(kPrefix); }

std::optional<Record> decode(const Input& x, bool claimed)
{
    constexpr auto f = RecordFormat::NodeIdempotency;
    const KeyRead& in = x.in;
    if (in.type != "string" || !x.object)
        return claimed ? std::optional(malformed(f, in.type == "string" ? "not JSON: " + quoted(in.value)
                                                                         : "a " + in.type + ", not a JSON string"))
                       : std::nullopt;
    const json::Object& j = *x.object;
    if (!j.error.empty())
        return claimed ? std::optional(malformed(f, j.error)) : std::nullopt;
    const std::string* status = j.string("status");
    // its signature without the key prefix: COMPLETE, or IN_PROGRESS with a fingerPrint
    if (!claimed && (!status || !(*status == "COMPLETE" || (*status == "IN_PROGRESS" && j.has("fingerPrint")))))
        return std::nullopt;
    Record r = make(f, RecordState::Malformed);
    addMembers(r, x);
    if (!status) {
        r.reason = "no string 'status'";
        return r;
    }
    r.rawStatus = *status;
    if (const std::string* fp = j.string("fingerPrint"))
        r.fingerprint = *fp;
    if (*status == "IN_PROGRESS") {
        r.state = RecordState::Started;
        r.startedMs = startFromTtl(x);
        r.reason = "no lease: node-idempotency answers 409 until the key's TTL ends";
        settleStarted(r, x.o);
        return r;
    }
    if (*status != "COMPLETE") {
        r.reason = "status " + quoted(*status) + " is not one node-idempotency writes (it would take the record "
                                                 "for done and replay nothing)";
        return r;
    }
    const json::Member* response = j.find("response");
    if (!response || response->cut) {
        r.state = RecordState::Completed;
        r.partial = response && response->cut;
        return r;
    }
    // the stored response's own members: {"additional":{"statusCode":..},"body"|"error":..}
    const std::string raw = rawMember(x, *response);
    const json::Object inner = json::scanObject(raw, false);
    const json::Member* error = inner.find("error");
    const json::Member* body = inner.find("body");
    std::int64_t httpStatus = 0;
    if (const json::Member* additional = inner.find("additional")) {
        const json::Object add = json::scanObject(raw.substr(additional->begin, additional->end - additional->begin), false);
        if (const json::Member* code = add.find("statusCode"); code && code->kind == json::Kind::Number)
            httpStatus = std::atoll(code->text.c_str());
    }
    if (error) {
        // a failure stored as done: replayed to every retry until the TTL ends
        r.state = RecordState::Failed;
        r.terminal = true;
        r.error = raw.substr(error->begin, error->end - error->begin);
        r.response = r.error;
        r.reason = "error response" + (httpStatus ? " (" + std::to_string(httpStatus) + ")" : std::string()) +
                   " stored: replayed to every retry until the key's TTL ends";
    } else {
        r.state = RecordState::Completed;
        if (body)
            r.response = body->kind == json::Kind::String ? body->text : raw.substr(body->begin, body->end - body->begin);
    }
    return r;
}

const std::vector<FieldDoc> docs = {
    {"status", "IN_PROGRESS or COMPLETE"},
    {"fingerPrint", "blake2s of the request body: another body with this key gets 422"},
    {"response", "what duplicates get back: additional.statusCode, and body (or error)"},
};

} // namespace

const Profile nodeIdempotency{RecordFormat::NodeIdempotency, ownsKey, decode, &docs};

} // namespace idem::format
