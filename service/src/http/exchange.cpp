#include "http/exchange.h"

#include <nlohmann/json.hpp>
#include <string>
#include <utility>

namespace fencelock::service {

using nlohmann::json;

ApiResponse RequestHandler::error_response(WireError error, std::string_view message,
                                           std::optional<std::int64_t> retry_after_ms) {
  json detail{{"code", wire_code(error)}, {"message", message}};
  if (retry_after_ms) detail["retry_after_ms"] = *retry_after_ms;
  ApiResponse response;
  response.status = http_status(error);
  // A message may quote what the client sent, cut anywhere: never thrown on, replaced.
  response.body =
      json{{"error", std::move(detail)}}.dump(-1, ' ', false, json::error_handler_t::replace);
  response.log.error = wire_code(error);
  return response;
}

ApiResponse RequestHandler::refuse(RequestFault fault, std::size_t body_limit,
                                   std::string_view detail) {
  switch (fault) {
    case RequestFault::kBodyTooLarge:
      return error_response(WireError::kPayloadTooLarge, "the body exceeds the limit of " +
                                                             std::to_string(body_limit) + " bytes");
    case RequestFault::kMalformed:
      return error_response(WireError::kInvalidRequest,
                            "malformed HTTP request: " + std::string(detail));
    case RequestFault::kUnsupportedTransferEncoding:
      return error_response(WireError::kInvalidRequest,
                            "unsupported Transfer-Encoding (only \"chunked\" alone is accepted)");
    case RequestFault::kBadHost:
      return error_response(WireError::kInvalidRequest,
                            "an HTTP/1.1 request needs exactly one Host header");
    case RequestFault::kOverloaded: {
      ApiResponse busy = error_response(WireError::kUnavailable, detail, 1000);
      busy.retry_after_s = 1;
      return busy;
    }
  }
  return error_response(WireError::kInvalidRequest, "malformed HTTP request");
}

}  // namespace fencelock::service
