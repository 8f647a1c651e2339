// A Redis command formatted once in RESP, ready for redisAsyncFormattedCommand: one allocation
// per command, no argv arrays, binary-safe arguments.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace fencelock::storage {

class RespCommand {
 public:
  // `argc` is the number of arguments that will be added, the command name included. A command
  // with fewer would make the server wait for the rest, stalling the connection: debug builds
  // assert that exactly `argc` were added before wire() is read.
  explicit RespCommand(std::size_t argc);

  RespCommand& arg(std::string_view value);
  RespCommand& arg(std::int64_t value);

  std::string_view wire() const noexcept {
    assert(missing_ == 0);
    return wire_;
  }

 private:
  std::string wire_;
  std::size_t missing_;
};

}  // namespace fencelock::storage
