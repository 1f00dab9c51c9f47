#pragma once

#include <string_view>

namespace idem {

// Well-formed UTF-8 (RFC 3629): no overlong forms, no surrogates, nothing past U+10FFFF.
// The number of continuation bytes after lead byte `lead` whose first continuation byte is
// `next` (1 to 3), or 0 when no well-formed sequence starts so.
int utf8Tail(unsigned char lead, unsigned char next);
bool validUtf8(std::string_view s);
// A Unicode bidirectional control (U+061C, U+200E-U+200F, U+202A-U+202E, U+2066-U+2069): it
// reorders the text around it as shown, so a key could read as another one (the Trojan Source
// trick). What idemctl and the console show as '?'.
bool bidiControl(char32_t c);

} // namespace idem
