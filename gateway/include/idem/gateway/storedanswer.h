#pragma once

#include "idem/gateway/httpresponse.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace idem::gateway {

// An upstream answer as the gateway stores it in a record's `response`: JSON, so that idemctl
// inspect and the console show it as it is -
//   {"gateway":1,"method":"POST","route":"/orders","status":201,
//    "headers":[["Content-Type","application/json"]],"body":"..."}
// with "body_base64" instead of "body" when the body is not UTF-8 text. Only the headers
// replayedHeader() allows are kept, or those of `replayed` when given (a route's allow-list).
std::string encodeAnswer(const http::Response& r, std::string_view method, std::string_view route,
                         const std::vector<std::string>* replayed = nullptr);
// nullopt when the text is not a stored answer of the gateway's (idem::decodeHttpAnswer reads it).
std::optional<http::Response> decodeAnswer(std::string_view stored);

} // namespace idem::gateway
