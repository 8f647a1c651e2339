// FlatJsonObject: the request bodies of the hot routes ({"ttl_ms": 10000}, {"lease": "7.3a…"})
// read without building a DOM: one pass over the text, no allocation, values as views into it.
//
// It reads only what it can read exactly as nlohmann::json::parse() does, and declines the rest:
// parse() returns nullopt for anything it does not cover — invalid JSON, a value that is an
// object, an array or a number with a fraction or exponent, a string with an escape, a control
// character or a byte above 0x7e, a key given twice, more than kMaxFields fields — and the caller
// then parses the body with nlohmann::json, which decides (and words the error). So for every
// body it accepts, each field holds what nlohmann's DOM would hold: the same keys, integers as
// nlohmann's number_unsigned (>= 0) or number_integer (< 0, or "-0"), the same strings, booleans
// and nulls.
//
// Pure; thread-safe. The object holds views into the body: it must not outlive it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace fencelock::service {

struct FlatJsonValue {
  enum class Kind : std::uint8_t { kNull, kBool, kUnsigned, kSigned, kString };
  Kind kind = Kind::kNull;
  bool flag = false;                 // kBool
  std::uint64_t unsigned_value = 0;  // kUnsigned
  std::int64_t signed_value = 0;     // kSigned
  std::string_view text;             // kString: the string's characters, without the quotes
};

class FlatJsonObject {
 public:
  static constexpr std::size_t kMaxFields = 8;

  // The object `body` holds, or nullopt if it is not one this reader covers (see above).
  static std::optional<FlatJsonObject> parse(std::string_view body) noexcept;

  // The value of `key`, or nullptr if the object has no such field.
  const FlatJsonValue* find(std::string_view key) const noexcept;
  // The fields' keys, in the body's order.
  std::size_t size() const noexcept { return size_; }
  std::string_view key(std::size_t i) const noexcept { return fields_[i].key; }

 private:
  struct Field {
    std::string_view key;
    FlatJsonValue value;
  };
  std::array<Field, kMaxFields> fields_{};
  std::size_t size_ = 0;
};

}  // namespace fencelock::service
