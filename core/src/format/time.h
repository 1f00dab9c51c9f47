#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

// Times as other libraries write them, read without trusting them: a number outside what a time
// can be (negative, before 2000, past year 9999, exponent notation, not a number) is refused with a reason, so a
// record holding one is malformed - never a lease that looks expired, never a purge candidate.
namespace idem::timefield {

enum class Unit { Seconds, Millis, Micros, Guess }; // Guess: below 1e11 seconds, else milliseconds

constexpr std::int64_t kMaxMs = 253'402'300'799'999; // 9999-12-31T23:59:59.999Z
// 2000-01-01T00:00:00Z: no lease, start or expiry of a record written today lies before it, and 0
// (or a small number) is what Go, Java and C write for a time never set: read as a time, it would
// be a lease that expired decades ago, and the lock would look stale.
constexpr std::int64_t kMinMs = 946'684'800'000;

// A decimal number (digits, an optional fraction; no sign, no exponent) in `unit`, as ms since
// the epoch; nullopt with *why set otherwise.
std::optional<std::int64_t> fromNumber(std::string_view digits, Unit unit, std::string* why);
// The same, or an ISO 8601 text ("2024-05-01T12:00:00.5Z", "+02:00" offsets) when `unit` is Guess;
// a text without a zone is the latest instant it can be (read as UTC-12:00).
std::optional<std::int64_t> fromText(std::string_view text, Unit unit, std::string* why);
// An ISO 8601 text without a zone (no Z, no offset): what fromText reads as UTC-12:00.
bool zoneless(std::string_view text);

} // namespace idem::timefield
