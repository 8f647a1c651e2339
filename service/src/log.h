// One-line structured log records on stderr: "<UTC time> <level> <event> key=value ...".
// Thread-safe: each record is formatted first and written with one write(2). Callers never pass a
// lease secret.
#pragma once

#include <string_view>

namespace fencelock::service {

enum class LogLevel { kInfo, kWarning, kError };

void log_event(LogLevel level, std::string_view event, std::string_view fields);

}  // namespace fencelock::service
