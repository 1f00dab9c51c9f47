#pragma once

#include <string>
#include <string_view>

namespace idem {

// The text nlohmann::json::parse(text).dump() yields, built without a tree, for the common shapes
// a producer writes: objects, arrays, strings with no escape but \" \\ \b \f \n \r \t, integers,
// true/false/null, nested at most 64 levels, object keys without escapes and not repeated. Appends
// to `out` and returns true; for anything else it leaves `out` as it was and returns false, and the
// caller goes through the library (so every input still yields exactly the library's text).
bool appendCanonicalJson(std::string_view text, std::string& out);

} // namespace idem
