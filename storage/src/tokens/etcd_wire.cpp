#include "tokens/etcd_wire.h"

#include <openssl/evp.h>

#include <charconv>
#include <nlohmann/json.hpp>

namespace fencelock::storage::etcd {

namespace {

using nlohmann::json;

// int64 fields come as decimal strings ("17"); absent means 0.
bool read_uint(const json& object, const char* field, std::uint64_t& out) {
  out = 0;
  if (!object.is_object() || !object.contains(field)) return true;
  const json& value = object[field];
  if (value.is_number_unsigned()) {
    out = value.get<std::uint64_t>();
    return true;
  }
  if (!value.is_string()) return false;
  const auto& text = value.get_ref<const std::string&>();
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
  return error == std::errc() && end == text.data() + text.size();
}

Result<json> parse(unsigned status, std::string_view body) {
  json parsed = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_object() && parsed.contains("error")) {
    const std::string message =
        parsed["error"].is_string() ? parsed["error"].get<std::string>() : parsed["error"].dump();
    return make_error(ErrorCode::kUnavailable, "etcd: " + message);
  }
  if (status != 200) {
    return make_error(ErrorCode::kUnavailable, "etcd answered HTTP " + std::to_string(status));
  }
  if (!parsed.is_object()) {
    return make_error(ErrorCode::kInternal, "etcd's answer is not a JSON object");
  }
  return parsed;
}

}  // namespace

std::string base64(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  const int written = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                      reinterpret_cast<const unsigned char*>(bytes.data()),
                                      static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(written));
  return out;
}

Result<std::string> unbase64(std::string_view text) {
  if (text.size() % 4 != 0) return make_error(ErrorCode::kInternal, "etcd sent malformed base64");
  std::string out(3 * (text.size() / 4), '\0');
  const int written = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                      reinterpret_cast<const unsigned char*>(text.data()),
                                      static_cast<int>(text.size()));
  if (written < 0) return make_error(ErrorCode::kInternal, "etcd sent malformed base64");
  // EVP_DecodeBlock counts the padding's bytes as zeros.
  std::size_t size = static_cast<std::size_t>(written);
  if (text.ends_with("==")) {
    size -= 2;
  } else if (text.ends_with("=")) {
    size -= 1;
  }
  out.resize(size);
  return out;
}

std::string create_or_read_body(std::string_view key, std::string_view value,
                                std::string_view also) {
  const std::string encoded = base64(key);
  json compare = json::array(
      {{{"key", encoded}, {"result", "EQUAL"}, {"target", "CREATE"}, {"create_revision", "0"}}});
  json success = json::array({{{"requestPut", {{"key", encoded}, {"value", base64(value)}}}}});
  json failure = json::array(
      {{{"requestRange", {{"key", encoded}}}}, {{"requestRange", {{"key", base64(also)}}}}});
  return json{{"compare", std::move(compare)},
              {"success", std::move(success)},
              {"failure", std::move(failure)}}
      .dump();
}

namespace {

json guard_compare(const HistoryGuard& guard) {
  return json::array({{{"key", base64(guard.key)},
                       {"result", "EQUAL"},
                       {"target", "VALUE"},
                       {"value", base64(guard.value)}}});
}

}  // namespace

std::string guarded_put_body(const HistoryGuard& guard, std::string_view key) {
  json success = json::array({{{"requestPut", {{"key", base64(key)}, {"value", ""}}}}});
  return json{{"compare", guard_compare(guard)}, {"success", std::move(success)}}.dump();
}

std::string guarded_read_body(const HistoryGuard& guard, std::string_view key) {
  json success = json::array({{{"requestRange", {{"key", base64(key)}, {"count_only", true}}}}});
  return json{{"compare", guard_compare(guard)}, {"success", std::move(success)}}.dump();
}

Result<Header> read_header(unsigned status, std::string_view body) {
  auto parsed = parse(status, body);
  if (!parsed.ok()) return parsed.error();
  const json& object = parsed.value();
  if (!object.contains("header") || !object["header"].is_object()) {
    return make_error(ErrorCode::kInternal, "etcd's answer has no header");
  }
  const json& header = object["header"];
  Header out;
  std::uint64_t cluster = 0;
  if (!read_uint(header, "cluster_id", cluster) || !read_uint(header, "revision", out.revision)) {
    return make_error(ErrorCode::kInternal, "etcd's answer has a malformed header");
  }
  out.cluster_id = std::to_string(cluster);
  if (object.contains("succeeded")) {
    if (!object["succeeded"].is_boolean()) {
      return make_error(ErrorCode::kInternal, "etcd's answer has a malformed \"succeeded\"");
    }
    out.succeeded = object["succeeded"].get<bool>();
  }
  return out;
}

Result<RangeRead> read_first_range(std::string_view body) {
  return read_range(body, 0);
}

Result<RangeRead> read_range(std::string_view body, std::size_t index) {
  auto parsed = parse(200, body);
  if (!parsed.ok()) return parsed.error();
  const json& object = parsed.value();
  const auto malformed = [] {
    return make_error(ErrorCode::kInternal, "etcd's range answer is malformed");
  };
  if (!object.contains("responses") || !object["responses"].is_array() ||
      object["responses"].size() <= index) {
    return malformed();
  }
  const json& first = object["responses"][index];
  if (!first.is_object() || !first.contains("response_range") ||
      !first["response_range"].is_object()) {
    return malformed();
  }
  const json& range = first["response_range"];
  if (!range.contains("kvs")) return RangeRead{};
  const json& kvs = range["kvs"];
  if (!kvs.is_array()) return malformed();
  if (kvs.empty()) return RangeRead{};
  RangeRead out;
  if (!read_uint(kvs[0], "mod_revision", out.mod_revision)) return malformed();
  if (kvs[0].contains("value")) {
    if (!kvs[0]["value"].is_string()) return malformed();
    auto value = unbase64(kvs[0]["value"].get_ref<const std::string&>());
    if (!value.ok()) return value.error();
    out.value = std::move(value).value();
  }
  return out;
}

}  // namespace fencelock::storage::etcd
