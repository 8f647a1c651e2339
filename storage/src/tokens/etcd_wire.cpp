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

std::string txn_put_body(const std::vector<std::string>& keys) {
  json success = json::array();
  for (const std::string& key : keys) {
    success.push_back({{"requestPut", {{"key", base64(key)}, {"value", ""}}}});
  }
  return json{{"success", std::move(success)}}.dump();
}

std::string range_body(std::string_view key) {
  return json{{"key", base64(key)}}.dump();
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
  return out;
}

Result<std::uint64_t> read_mod_revision(std::string_view body) {
  auto parsed = parse(200, body);
  if (!parsed.ok()) return parsed.error();
  const json& object = parsed.value();
  if (!object.contains("kvs")) return std::uint64_t{0};
  const json& kvs = object["kvs"];
  if (!kvs.is_array()) return make_error(ErrorCode::kInternal, "etcd's range answer is malformed");
  if (kvs.empty()) return std::uint64_t{0};
  std::uint64_t revision = 0;
  if (!read_uint(kvs[0], "mod_revision", revision)) {
    return make_error(ErrorCode::kInternal, "etcd's range answer has a malformed mod_revision");
  }
  return revision;
}

}  // namespace fencelock::storage::etcd
