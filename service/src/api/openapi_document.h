// The OpenAPI 3.1 description of API v1 that fencelockd serves at GET /v1/openapi.json.
// docs/openapi.yaml is the source; the build turns it into compact JSON
// (service/tools/embed_openapi.py) and compiles it in, so a binary always describes itself.
#pragma once

#include <string_view>

namespace fencelock::service {

// The document as JSON (ASCII, UTF-8 compatible). Static storage; thread-safe.
std::string_view openapi_document_json() noexcept;

}  // namespace fencelock::service
