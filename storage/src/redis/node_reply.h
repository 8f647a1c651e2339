// One node's answer to one command, copied out of hiredis's reply (which lives only inside its
// callback). Small: strings are kept only for bulk replies and error texts.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

struct redisReply;

namespace fencelock::storage {

struct NodeReply {
  enum class Kind : std::uint8_t {
    kStatus,        // +OK and friends; text holds it
    kNil,           // a nil bulk reply (SET NX refused, GET of a missing key)
    kInteger,       // integer holds it
    kString,        // a bulk string; text holds it
    kArray,         // elements hold it
    kError,         // -ERR ...; text holds the message (NOSCRIPT, WRONGTYPE, LOADING, ...)
    kTimeout,       // no answer within the node timeout; the connection is being replaced
    kDisconnected,  // the node is down, reconnecting, or the connection broke before the answer
  };

  Kind kind = Kind::kDisconnected;
  std::int64_t integer = 0;
  std::string text;
  std::vector<NodeReply> elements;

  bool answered() const noexcept { return kind != Kind::kTimeout && kind != Kind::kDisconnected; }
  bool is_integer() const noexcept { return kind == Kind::kInteger; }
  bool is_integer(std::int64_t value) const noexcept { return is_integer() && integer == value; }
  bool is_string() const noexcept { return kind == Kind::kString; }
  bool is_nil() const noexcept { return kind == Kind::kNil; }
  bool is_error() const noexcept { return kind == Kind::kError; }
  bool is_array() const noexcept { return kind == Kind::kArray; }
  bool is_array(std::size_t size) const noexcept { return is_array() && elements.size() == size; }
  // An array of `size` elements whose first is the integer `tag` (how scripts mark an answer).
  bool is_tagged(std::size_t size, std::int64_t tag) const noexcept {
    return is_array(size) && elements[0].is_integer(tag);
  }
  bool is_error_prefix(const char* prefix) const;  // kError whose text starts with `prefix`

  static NodeReply failure(Kind kind, std::string why = {});
  // A deep copy of hiredis's reply (which lives only inside its callback); never kTimeout or
  // kDisconnected.
  static NodeReply from_hiredis(const redisReply* reply);
};

}  // namespace fencelock::storage
