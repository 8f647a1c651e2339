#include "log.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>

namespace fencelock::service {

void log_event(LogLevel level, std::string_view event, std::string_view fields) {
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  const auto millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char stamp[40];
  const int n = std::snprintf(stamp, sizeof(stamp), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
                              utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday, utc.tm_hour,
                              utc.tm_min, utc.tm_sec, static_cast<int>(millis));
  std::string line(stamp, static_cast<std::size_t>(n > 0 ? n : 0));
  line += level == LogLevel::kInfo      ? " info "
          : level == LogLevel::kWarning ? " warning "
                                        : " error ";
  line.append(event);
  if (!fields.empty()) {
    line += ' ';
    line.append(fields);
  }
  line += '\n';
  const ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
  (void)ignored;  // nowhere left to report a failed log write
}

}  // namespace fencelock::service
