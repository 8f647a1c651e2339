#include "api/answer_json.h"

#include <nlohmann/json.hpp>

#include "base/append_decimal.h"

namespace fencelock::service {

void append_json_string(std::string& out, std::string_view text) {
  for (const char c : text) {
    if (static_cast<unsigned char>(c) >= 0x80) {  // UTF-8: nlohmann checks it and writes it
      out += nlohmann::json(std::string(text)).dump();
      return;
    }
  }
  constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  for (const char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += "\\u00";
          out += kHex[static_cast<unsigned char>(c) >> 4];
          out += kHex[static_cast<unsigned char>(c) & 0xf];
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

std::string lease_answer_json(std::string_view name, std::string_view lease, std::uint64_t token,
                              std::chrono::milliseconds ttl, std::chrono::milliseconds validity,
                              std::optional<std::chrono::milliseconds> waited) {
  std::string out;
  out.reserve(112 + name.size() + lease.size());
  out += R"({"lease":)";
  append_json_string(out, lease);
  out += R"(,"name":)";
  append_json_string(out, name);
  out += R"(,"token":)";
  append_decimal(out, token);
  out += R"(,"ttl_ms":)";
  append_decimal(out, ttl.count());
  out += R"(,"validity_ms":)";
  append_decimal(out, validity.count());
  if (waited) {
    out += R"(,"waited_ms":)";
    append_decimal(out, waited->count());
  }
  out += '}';
  return out;
}

std::string released_answer_json(std::string_view name, bool released) {
  std::string out;
  out.reserve(32 + name.size());
  out += R"({"name":)";
  append_json_string(out, name);
  out += released ? R"(,"released":true})" : R"(,"released":false})";
  return out;
}

ApiResponse ok_json_text(std::string body, std::optional<std::uint64_t> token) {
  ApiResponse response;
  response.body = std::move(body);
  response.log.token = token;
  return response;
}

}  // namespace fencelock::service
