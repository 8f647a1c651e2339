#include "api_recorder.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

namespace fencelock::testing {

namespace {

const std::string& record_path() {
  static const std::string path = [] {
    const char* value = std::getenv(kApiRecordVariable);
    return value == nullptr ? std::string() : std::string(value);
  }();
  return path;
}

}  // namespace

void record_exchange(std::string_view transport, std::string_view method, std::string_view target,
                     bool raw, const HttpAnswer& answer) {
  const std::string& path = record_path();
  if (path.empty() || answer.status == 0 || answer.header("server") != "fencelockd") return;
  nlohmann::json headers = nlohmann::json::object();
  for (const auto& [name, value] : answer.headers) headers[name] = value;
  const nlohmann::json line{
      {"transport", transport},  {"method", method},   {"target", target},   {"raw", raw},
      {"status", answer.status}, {"headers", headers}, {"body", answer.body}};
  // A body that is not UTF-8 is recorded with replacement characters rather than lost.
  const std::string text =
      line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + '\n';
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;  // the check then finds the exchange missing; the test itself goes on
  [[maybe_unused]] const ssize_t written = ::write(fd, text.data(), text.size());
  ::close(fd);
}

std::pair<std::string, std::string> request_line_of(std::string_view bytes) {
  const std::size_t end = bytes.find_first_of("\r\n");
  const std::string_view line = bytes.substr(0, end);
  const std::size_t first = line.find(' ');
  if (first == std::string_view::npos || first == 0) return {};
  const std::size_t second = line.find(' ', first + 1);
  if (second == std::string_view::npos || second == first + 1) return {};
  return {std::string(line.substr(0, first)),
          std::string(line.substr(first + 1, second - first - 1))};
}

}  // namespace fencelock::testing
