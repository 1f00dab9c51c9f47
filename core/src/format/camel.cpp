// Apache Camel's Redis idempotent repositories (tools/peers/FORMATS.md): message ids, not
// records. SpringRedisIdempotentRepository keeps one set per route (any name: a set is foreign to
// every profile); SpringRedisStringIdempotentRepository writes <repository>:<id> = <id>. With
// Camel's default template keys and values are Java-serialized (AC ED 00 05 ...). An id present
// means "seen": the route drops the message. Deleting it lets that message be processed again.
#include "format/profile.h"

namespace idem::format {

namespace {

bool ownsKey(std::string_view, const DecodeOptions&) { return false; }

std::optional<Record> decode(const Input& x, bool claimed)
{
    constexpr auto f = RecordFormat::Camel;
    const KeyRead& in = x.in;
    if (in.type != "string")
        return claimed ? std::optional(foreign(f, "a " + in.type + " (Camel keeps message ids; deleting it forgets them all)"))
                       : std::nullopt;
    const std::string_view v = in.value;
    if (v.starts_with(std::string_view("\xAC\xED\x00\x05", 4)))
        return foreign(f, "a Java-serialized value, as Camel's default Redis template writes (a message id seen)");
    // <repository>:<id>: the id may hold colons itself (JMS ids: "ID:broker-1:...")
    const std::string_view key = in.key;
    if (!v.empty() && key.size() > v.size() && key.ends_with(v) && key[key.size() - v.size() - 1] == ':') {
        Record r = foreign(f, "a message id Camel has seen (" + quoted(v) +
                                  "): the route drops it; deleting the key lets it be processed again");
        r.fields = {{"value", in.value}};
        return r;
    }
    return claimed ? std::optional(foreign(f, "not a message id of this key: " + quoted(v))) : std::nullopt;
}

const std::vector<FieldDoc> docs = {
    {"value", "the message id"},
};

} // namespace

const Profile camel{RecordFormat::Camel, ownsKey, decode, &docs};

} // namespace idem::format
