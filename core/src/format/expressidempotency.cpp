// express-idempotency with express-idempotency-redis-adapter (tools/peers/FORMATS.md): a JSON
// string at the raw Idempotency-Key header value (no prefix, no namespace),
//   {"request":{"body":..,"headers":{..},"method":"POST","query":{},"url":"/orders"}}   in progress
//   {"request":{..},"response":{"statusCode":201,"body":"..","headers":{..}}}           done
// No status word, no owner, no start, no deadline: a request whose handler threw stays in progress
// (409 to every retry) until the key's TTL ends (24 h by default). Its age is told by that TTL.
#include "format/profile.h"

namespace idem::format {

namespace {

bool ownsKey(std::string_view, const DecodeOptions&) { return false; } // any key at all

std::optional<Record> decode(const Input& x, bool claimed)
{
    constexpr auto f = RecordFormat::ExpressIdempotency;
    const KeyRead& in = x.in;
    if (in.type != "string" || !x.object)
        return claimed ? std::optional(malformed(f, in.type == "string" ? "not JSON: " + quoted(in.value)
                                                                         : "a " + in.type + ", not a JSON string"))
                       : std::nullopt;
    const json::Object& j = *x.object;
    if (!j.error.empty())
        return claimed ? std::optional(malformed(f, j.error)) : std::nullopt;
    const json::Member* request = j.find("request");
    // its signature: a request object and no status word
    if (!claimed && (!request || request->kind != json::Kind::Object || j.has("status")))
        return std::nullopt;
    Record r = make(f, RecordState::Malformed);
    addMembers(r, x);
    if (!request || request->kind != json::Kind::Object) {
        r.reason = "no 'request' object";
        return r;
    }
    const json::Member* response = j.find("response");
    if (!response && j.cut) {
        // the request is larger than what was read, and the tail did not show a response
        r.state = RecordState::Unknown;
        r.partial = true;
        r.reason = "a " + std::to_string(in.valueBytes) +
                   "-byte request whose first and last bytes do not say whether a response is stored";
        return r;
    }
    if (!response || response->kind == json::Kind::Null) {
        r.state = RecordState::Started;
        r.startedMs = startFromTtl(x);
        r.reason = "no response yet, no lease: express-idempotency answers 409 until the key's TTL ends";
        settleStarted(r, x.o);
        return r;
    }
    if (response->kind != json::Kind::Object) {
        r.reason = "'response' is not an object";
        return r;
    }
    r.state = RecordState::Completed;
    if (response->cut) {
        r.partial = true;
        return r;
    }
    const std::string raw = rawMember(x, *response);
    const json::Object inner = json::scanObject(raw, false);
    if (const json::Member* body = inner.find("body"))
        r.response = body->kind == json::Kind::String ? body->text : raw.substr(body->begin, body->end - body->begin);
    if (const json::Member* code = inner.find("statusCode"); code && code->kind == json::Kind::Number)
        r.reason = "HTTP " + code->text + " stored: replayed to duplicates";
    return r;
}

const std::vector<FieldDoc> docs = {
    {"request", "the first request (url, method, query, body, headers): a duplicate whose intent differs gets 417"},
    {"response", "what duplicates get back: statusCode, body, headers; absent while in progress (409)"},
};

} // namespace

const Profile expressIdempotency{RecordFormat::ExpressIdempotency, ownsKey, decode, &docs};

} // namespace idem::format
