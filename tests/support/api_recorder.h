// A record of what fencelockd answered, for checking it against docs/openapi.yaml: when the
// environment variable FENCELOCK_API_RECORD names a file, record_exchange() appends each exchange
// with fencelockd (an answer with `Server: fencelockd`; the same clients also talk to etcd and the
// example resource store) to it as one JSON line — {"transport", "method", "target", "raw",
// "status", "headers", "body"} — and scripts/check-openapi.sh validates every line against the
// document. When it is unset (the normal test run) record_exchange() does nothing beyond one
// cached getenv. Thread- and process-safe: each line is one O_APPEND write, so lines from
// concurrent clients and test processes never interleave.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "http_client.h"

namespace fencelock::testing {

// The environment variable that turns recording on.
inline constexpr const char* kApiRecordVariable = "FENCELOCK_API_RECORD";

// Appends one exchange (an answer with status 0 — none came — is not recorded). `transport` is
// "http" or "https"; `raw` marks bytes a test wrote itself (method and target may then be "").
void record_exchange(std::string_view transport, std::string_view method, std::string_view target,
                     bool raw, const HttpAnswer& answer);

// The method and target of the first request line in `bytes` ("GET /healthz HTTP/1.1" →
// {"GET", "/healthz"}); both "" when the bytes do not start with such a line.
std::pair<std::string, std::string> request_line_of(std::string_view bytes);

}  // namespace fencelock::testing
