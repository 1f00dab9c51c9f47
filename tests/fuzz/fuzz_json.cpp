// The JSON scanner every record profile reads other libraries' values with (idem::json): a whole
// value, the first bytes of a large one, its last bytes, a string array, validity; and what reads a
// stored answer of the gateway's with it (arrayElements, pretty, decodeHttpAnswer, viewBody).
//
// Input: [cut byte] JSON text. The cut byte says where a "prefix" of the text ends (what GETRANGE
// would have read of a larger value).
#include "fuzzcheck.h"

#include "idem/format/httpanswer.h"
#include "idem/format/jsonscan.h"

using namespace idem;
using fuzzsupport::Input;

namespace {

void checkMembers(const std::vector<json::Member>& members, std::size_t size, bool fromTail)
{
    for (const json::Member& m : members) {
        FUZZ_CHECK(m.begin <= m.end && m.end <= size, m.key);
        FUZZ_CHECK(m.fromTail == fromTail);
        if (!m.cut && (m.kind == json::Kind::Object || m.kind == json::Kind::Array || m.kind == json::Kind::Number))
            FUZZ_CHECK(m.begin < m.end, m.key);
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    Input f(data, size);
    const std::uint8_t cutAt = f.byte();
    const std::string_view text = f.rest();

    std::string why;
    const bool isValid = json::valid(text, &why);
    FUZZ_CHECK(isValid || !why.empty());

    // the whole value
    const json::Object whole = json::scanObject(text, false);
    checkMembers(whole.members, text.size(), false);
    FUZZ_CHECK(!whole.cut);
    FUZZ_CHECK(!whole.complete || (whole.isObject && whole.error.empty()));
    FUZZ_CHECK(whole.complete || !whole.error.empty() || text.find_first_not_of(" \t\r\n") == std::string_view::npos);
    // a complete object is valid JSON, and valid JSON that opens an object is a complete one
    FUZZ_CHECK(!whole.complete || isValid, why);
    const auto first = text.find_first_not_of(" \t\r\n");
    if (isValid && first != std::string_view::npos && text[first] == '{')
        FUZZ_CHECK(whole.complete, whole.error);
    for (const json::Member& m : whole.members) {
        FUZZ_CHECK(!m.cut);
        // each member's bytes are a JSON value of the kind it says
        const std::string_view bytes = text.substr(m.begin, m.end - m.begin);
        if (whole.complete)
            FUZZ_CHECK(json::valid(bytes), m.key);
        if (m.kind == json::Kind::Number)
            FUZZ_CHECK(m.text == bytes);
    }

    // a prefix of it: never an error where the whole text has none, and the members that end
    // before the cut are the whole text's
    const std::size_t cut = text.empty() ? 0 : cutAt % (text.size() + 1);
    const std::string_view head = text.substr(0, cut);
    const json::Object part = json::scanObject(head, true);
    checkMembers(part.members, head.size(), false);
    if (whole.complete) {
        FUZZ_CHECK(part.error.empty() || head.find_first_not_of(" \t\r\n") == std::string_view::npos, part.error);
        std::size_t kept = 0;
        for (const json::Member& m : part.members) {
            if (m.cut)
                continue;
            FUZZ_CHECK(kept < whole.members.size());
            const json::Member& w = whole.members[kept++];
            FUZZ_CHECK(m.key == w.key && m.kind == w.kind && m.begin == w.begin && m.end == w.end && m.text == w.text,
                       m.key);
        }
    }

    // its last bytes: whole members that end where the object does
    const std::string_view tail = text.substr(cut);
    const std::vector<json::Member> last = json::scanTail(tail);
    checkMembers(last, tail.size(), true);
    for (const json::Member& m : last)
        if (m.kind == json::Kind::String || m.kind == json::Kind::Object || m.kind == json::Kind::Array)
            FUZZ_CHECK(json::valid(tail.substr(m.begin, m.end - m.begin)), m.key);

    // a string array: decoded only when it is valid JSON
    if (const auto items = json::stringArray(text)) {
        FUZZ_CHECK(isValid, why);
        FUZZ_CHECK(items->size() <= text.size() / 2);
    }
    // array elements: only of valid JSON, each a valid value
    if (const auto items = json::arrayElements(text)) {
        FUZZ_CHECK(isValid, why);
        for (const std::string_view item : *items)
            FUZZ_CHECK(json::valid(item), std::string(item));
    }
    // pretty-printed: exactly the valid texts, still valid, and printing it again changes nothing
    const auto pretty = json::pretty(text);
    FUZZ_CHECK(pretty.has_value() == isValid, why);
    if (pretty) {
        FUZZ_CHECK(json::valid(*pretty), *pretty);
        FUZZ_CHECK(json::pretty(*pretty) == pretty, *pretty);
    }
    // the gateway's stored answer: never throws; a status in range when it decodes
    if (const auto answer = decodeHttpAnswer(text)) {
        FUZZ_CHECK(whole.complete);
        FUZZ_CHECK(answer->status >= 100 && answer->status <= 599);
    }
    // a body view: JSON exactly when it is valid JSON, text only of UTF-8, bounded output
    const BodyView view = viewBody(text, {}, 4096, 64);
    FUZZ_CHECK(view.bytes == text.size());
    FUZZ_CHECK((view.kind == BodyKind::Empty) == text.empty());
    FUZZ_CHECK(!text.empty() && text.size() <= 4 * 4096 ? (view.kind == BodyKind::Json) == isValid : true, why);
    if (view.kind == BodyKind::Text)
        FUZZ_CHECK(isUtf8(text) && view.text.size() <= 4096);
    if (view.kind == BodyKind::Binary)
        FUZZ_CHECK(view.text.size() <= 4 * 80 + 1);
    return 0;
}
