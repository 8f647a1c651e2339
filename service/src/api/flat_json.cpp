#include "api/flat_json.h"

#include <limits>

namespace fencelock::service {

namespace {

// A cursor over the body. Every read either advances over what it read or leaves `ok` false.
class Reader {
 public:
  explicit Reader(std::string_view text) : text_(text) {}

  bool at_end() const { return at_ == text_.size(); }

  void skip_space() {
    while (at_ < text_.size() &&
           (text_[at_] == ' ' || text_[at_] == '\t' || text_[at_] == '\n' || text_[at_] == '\r'))
      ++at_;
  }

  bool take(char c) {
    skip_space();
    if (at_ < text_.size() && text_[at_] == c) {
      ++at_;
      return true;
    }
    return false;
  }

  char peek() {
    skip_space();
    return at_ < text_.size() ? text_[at_] : '\0';
  }

  // A string of printable ASCII without escapes; the opening quote is next.
  std::optional<std::string_view> plain_string() {
    if (!take('"')) return std::nullopt;
    const std::size_t start = at_;
    while (at_ < text_.size()) {
      const auto byte = static_cast<unsigned char>(text_[at_]);
      if (byte == '"') {
        const std::string_view content = text_.substr(start, at_ - start);
        ++at_;
        return content;
      }
      if (byte < 0x20 || byte > 0x7e || byte == '\\') return std::nullopt;
      ++at_;
    }
    return std::nullopt;
  }

  bool literal(std::string_view word) {
    if (text_.substr(at_, word.size()) != word) return false;
    at_ += word.size();
    return true;
  }

  // An integer in JSON's grammar, that nlohmann would keep as an integer (it fits).
  std::optional<FlatJsonValue> integer() {
    const bool negative = at_ < text_.size() && text_[at_] == '-';
    if (negative) ++at_;
    const std::size_t start = at_;
    std::uint64_t magnitude = 0;
    while (at_ < text_.size() && text_[at_] >= '0' && text_[at_] <= '9') {
      const auto digit = static_cast<std::uint64_t>(text_[at_] - '0');
      if (magnitude > (std::numeric_limits<std::uint64_t>::max() - digit) / 10)
        return std::nullopt;  // nlohmann would read a float
      magnitude = magnitude * 10 + digit;
      ++at_;
    }
    const std::size_t digits = at_ - start;
    if (digits == 0 || (digits > 1 && text_[start] == '0')) return std::nullopt;
    if (at_ < text_.size() && (text_[at_] == '.' || text_[at_] == 'e' || text_[at_] == 'E'))
      return std::nullopt;
    FlatJsonValue value;
    if (!negative) {
      value.kind = FlatJsonValue::Kind::kUnsigned;
      value.unsigned_value = magnitude;
      return value;
    }
    constexpr auto kLowest =
        static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) + 1;
    if (magnitude > kLowest) return std::nullopt;
    value.kind = FlatJsonValue::Kind::kSigned;
    value.signed_value = magnitude == kLowest ? std::numeric_limits<std::int64_t>::min()
                                              : -static_cast<std::int64_t>(magnitude);
    return value;
  }

  std::optional<FlatJsonValue> scalar() {
    const char next = peek();
    FlatJsonValue value;
    if (next == '"') {
      const auto text = plain_string();
      if (!text) return std::nullopt;
      value.kind = FlatJsonValue::Kind::kString;
      value.text = *text;
      return value;
    }
    if (next == '-' || (next >= '0' && next <= '9')) return integer();
    if (literal("true")) {
      value.kind = FlatJsonValue::Kind::kBool;
      value.flag = true;
      return value;
    }
    if (literal("false")) {
      value.kind = FlatJsonValue::Kind::kBool;
      return value;
    }
    if (literal("null")) return value;
    return std::nullopt;
  }

 private:
  std::string_view text_;
  std::size_t at_ = 0;
};

}  // namespace

std::optional<FlatJsonObject> FlatJsonObject::parse(std::string_view body) noexcept {
  Reader reader(body);
  if (!reader.take('{')) return std::nullopt;
  FlatJsonObject object;
  if (!reader.take('}')) {
    for (;;) {
      const auto key = reader.plain_string();
      if (!key || !reader.take(':')) return std::nullopt;
      const auto value = reader.scalar();
      if (!value || object.find(*key) != nullptr || object.size_ == kMaxFields) return std::nullopt;
      object.fields_[object.size_++] = Field{*key, *value};
      if (reader.take(',')) continue;
      if (reader.take('}')) break;
      return std::nullopt;
    }
  }
  reader.skip_space();
  if (!reader.at_end()) return std::nullopt;
  return object;
}

const FlatJsonValue* FlatJsonObject::find(std::string_view key) const noexcept {
  for (std::size_t i = 0; i < size_; ++i) {
    if (fields_[i].key == key) return &fields_[i].value;
  }
  return nullptr;
}

}  // namespace fencelock::service
