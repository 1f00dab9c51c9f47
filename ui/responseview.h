#pragma once

#include <QString>

#include <string>

// A record's stored response as the inspector shows it: an answer idem-gateway stored with its
// method, route, status and headers as fields and its body pretty-printed; any other response as
// its body (JSON pretty-printed, text as text, binary as a hex dump). HTML for the inspector.
QString storedResponseHtml(const std::string& response);
