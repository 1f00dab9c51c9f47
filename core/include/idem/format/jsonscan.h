#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace idem::json {

// What a record decoder needs of a JSON value written by another library: the members of the
// top-level object, scalars decoded, nested values only located. It reads a whole value or a
// bounded prefix of a large one (GETRANGE): a prefix yields every member that starts in it, the
// one it cuts marked `cut`. Strict in what it reads (RFC 8259; nesting bounded), never recursive,
// never throws.
enum class Kind : std::uint8_t { String, Number, True, False, Null, Object, Array };

struct Member {
    std::string key;
    Kind kind = Kind::Null;
    std::string text;      // String: the decoded value; Number: as written; otherwise empty
    std::size_t begin = 0; // the value's bytes in the input: [begin, end)
    std::size_t end = 0;
    bool cut = false;      // the input ended inside this value
    bool fromTail = false; // found by scanTail: begin/end are offsets in the tail
};

struct Object {
    bool isObject = false; // the text is (or starts as) a JSON object
    bool complete = false; // the object closed, with nothing but whitespace after it
    bool cut = false;      // the input ended before the object did
    std::string error;     // why the text is not JSON (or not an object); empty when it is (so far)
    std::vector<Member> members;

    // The member named `key` (the last one if repeated, as JSON.parse keeps), or nullptr.
    const Member* find(std::string_view key) const;
    // Its decoded string, when the member is a whole string.
    const std::string* string(std::string_view key) const;
    bool has(std::string_view key) const { return find(key) != nullptr; }
};

// `isPrefix`: the text is the first bytes of a longer value, so running out is not an error.
Object scanObject(std::string_view text, bool isPrefix);

// The last members of a JSON object from the final bytes of a large value (its head is read with
// scanObject): the longest run of whole members that ends exactly where the object closes. A run
// starts at a '"' that follows a ',' (or the object's '{'), so it can never start inside a string
// (a string holds no unescaped quote) nor end inside a nested value (that would leave a closing
// bracket over). Empty when the tail holds no whole member.
std::vector<Member> scanTail(std::string_view tail);

// A JSON array of strings, decoded; nullopt if `text` is anything else.
std::optional<std::vector<std::string>> stringArray(std::string_view text);

// The elements of a JSON array, each as its text in `text` (validated); nullopt for anything else.
std::optional<std::vector<std::string_view>> arrayElements(std::string_view text);

// A valid JSON value re-indented for reading (two spaces a level, "key": value, empty containers
// kept as {} and []); strings are copied byte for byte. nullopt when `text` is not valid JSON.
std::optional<std::string> pretty(std::string_view text);

// Whether `text` is valid JSON of any kind (a whole value), and why not.
bool valid(std::string_view text, std::string* why = nullptr);

} // namespace idem::json
