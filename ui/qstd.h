#pragma once

// std::string (UTF-8, from the core library) to QString
#include <QString>

#include <string>

inline QString qs(const std::string& s) { return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size())); }
