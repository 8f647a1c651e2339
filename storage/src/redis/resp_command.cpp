#include "redis/resp_command.h"

#include <charconv>

namespace fencelock::storage {

RespCommand::RespCommand(std::size_t argc) : missing_(argc) {
  wire_.reserve(96);
  wire_ += '*';
  wire_ += std::to_string(argc);
  wire_ += "\r\n";
}

RespCommand& RespCommand::arg(std::string_view value) {
  assert(missing_ > 0);
  --missing_;
  wire_ += '$';
  wire_ += std::to_string(value.size());
  wire_ += "\r\n";
  wire_.append(value);
  wire_ += "\r\n";
  return *this;
}

RespCommand& RespCommand::arg(std::int64_t value) {
  char digits[24];
  const auto [end, ec] = std::to_chars(digits, digits + sizeof(digits), value);
  (void)ec;  // 24 characters always fit an int64
  return arg(std::string_view(digits, static_cast<std::size_t>(end - digits)));
}

}  // namespace fencelock::storage
