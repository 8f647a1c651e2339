// A Redis command formatted once in RESP, ready for redisAsyncFormattedCommand: one allocation
// per command, no argv arrays, binary-safe arguments.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace fencelock::storage {

class RespCommand {
 public:
  // `argc` is the number of arguments that will be added, the command name included.
  explicit RespCommand(std::size_t argc);

  RespCommand& arg(std::string_view value);
  RespCommand& arg(std::int64_t value);

  std::string_view wire() const noexcept { return wire_; }

 private:
  std::string wire_;
};

}  // namespace fencelock::storage
