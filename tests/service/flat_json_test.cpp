#include "api/flat_json.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

using namespace fencelock::service;
using nlohmann::json;

namespace {

// Every field the flat reader found holds what nlohmann's DOM holds for it, and no field is
// missing or extra.
void check_same_as_nlohmann(const std::string& body, const FlatJsonObject& flat) {
  const json dom = json::parse(body, nullptr, false);
  REQUIRE_FALSE(dom.is_discarded());
  REQUIRE(dom.is_object());
  for (const auto& [key, value] : dom.items()) {
    INFO(key);
    const FlatJsonValue* field = flat.find(key);
    REQUIRE(field != nullptr);
    switch (field->kind) {
      case FlatJsonValue::Kind::kNull:
        CHECK(value.is_null());
        break;
      case FlatJsonValue::Kind::kBool:
        REQUIRE(value.is_boolean());
        CHECK(value.get<bool>() == field->flag);
        break;
      case FlatJsonValue::Kind::kUnsigned:
        REQUIRE(value.is_number_unsigned());
        CHECK(value.get<std::uint64_t>() == field->unsigned_value);
        break;
      case FlatJsonValue::Kind::kSigned:
        REQUIRE(value.is_number_integer());
        CHECK_FALSE(value.is_number_unsigned());
        CHECK(value.get<std::int64_t>() == field->signed_value);
        break;
      case FlatJsonValue::Kind::kString:
        REQUIRE(value.is_string());
        CHECK(value.get<std::string>() == field->text);
        break;
    }
  }
  std::size_t fields = 0;
  for (const auto& item : dom.items()) {
    if (flat.find(item.key()) != nullptr) ++fields;
  }
  CHECK(fields == dom.size());
}

}  // namespace

TEST_CASE("the flat JSON reader reads the hot bodies exactly as nlohmann does", "[service]") {
  const std::string body = GENERATE(as<std::string>{}, R"({"ttl_ms":10000})",
                                    R"({"ttl_ms": 10000, "wait_ms": 0, "owner": "worker-1"})",
                                    "{\"lease\":\"7.0123456789abcdef0123456789abcdef\"}",
                                    " \t\r\n{ \"lease\" : \"1.x\" , \"ttl_ms\" : 5 } \n",
                                    R"({"ttl_ms":-0,"wait_ms":-9223372036854775808})",
                                    R"({"ttl_ms":18446744073709551615})", R"({"a":true,"b":false})",
                                    R"({"owner":null,"ttl_ms":0})", R"({})", R"({"":1})",
                                    R"({"owner":"say 'hi' / {x} [y]"})");
  INFO(body);
  const auto flat = FlatJsonObject::parse(body);
  REQUIRE(flat);
  check_same_as_nlohmann(body, *flat);
}

TEST_CASE("the flat JSON reader declines what it does not read exactly, for nlohmann to decide",
          "[service]") {
  const std::string body =
      GENERATE(as<std::string>{},
               // not JSON, or not an object
               "", "{", "}", "[1]", "1", "\"x\"", "{\"ttl_ms\":1", "{\"ttl_ms\":1}x",
               "{\"ttl_ms\":1,}", "{\"ttl_ms\" 1}", "{ttl_ms:1}", "{\"ttl_ms\":01}",
               "{\"ttl_ms\":-}", "{\"ttl_ms\":+1}", "{\"ttl_ms\":tru}", "{\"a\":1 \"b\":2}",
               // JSON that nlohmann reads but this reader leaves to it
               R"({"ttl_ms":10.0})", R"({"ttl_ms":1e3})", R"({"ttl_ms":18446744073709551616})",
               R"({"ttl_ms":-9223372036854775809})", R"({"owner":"a\"b"})",
               R"({"owner":"back\\slash"})", R"({"owner":"\u00e9"})", "{\"owner\":\"caf\xc3\xa9\"}",
               "{\"owner\":\"bad \xff\"}", "{\"owner\":\"tab\there\"}", R"({"names":["a"]})",
               R"({"x":{"y":1}})", R"({"ttl_ms":1,"ttl_ms":2})", "\xef\xbb\xbf{\"ttl_ms\":1}",
               R"({"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9})");
  INFO(body);
  CHECK_FALSE(FlatJsonObject::parse(body));
}
