#pragma once

#include <chrono>
#include <string>
#include <string_view>

namespace idem {

using Millis = std::chrono::milliseconds;

// "250ms", "30s", "5m", "2h", "1d", a plain number of seconds, or whole units largest first as
// formatDuration prints them ("1d1h1m1s", "1h30m"). Throws UsageError otherwise.
Millis parseDuration(std::string_view text);
// 90061000 ms -> "1d1h1m1s"; below a second "250ms".
std::string formatDuration(Millis d);

// "512KiB", "1MiB", "10k", "4096" -> bytes. Throws UsageError otherwise.
std::size_t parseSize(std::string_view text);

} // namespace idem
