#include "ops/log.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

using namespace fencelock::service;
using nlohmann::json;

namespace {

// The record without its time stamp (the first word), for the text format.
std::string after_time(const std::string& record) {
  return record.substr(record.find(' ') + 1);
}

}  // namespace

TEST_CASE("a text record is the time, the level, the event and key=value fields", "[service]") {
  const std::string record =
      format_log_record(LogFormat::kText, LogLevel::kInfo, "request",
                        {{"method", "GET"}, {"status", 200U}, {"duration_us", std::int64_t{-3}}});
  CHECK(after_time(record) == "info request method=GET status=200 duration_us=-3");
  CHECK(record.size() ==
        std::string("2026-11-23T18:00:00.123Z ").size() + after_time(record).size());
  CHECK(record[10] == 'T');
  CHECK(record.find("Z ") == 23);
}

TEST_CASE("a text value with spaces, quotes or control characters is quoted and escaped",
          "[service]") {
  const auto [value, written] = GENERATE(table<std::string, std::string>({
      {"plain", "plain"},
      {"two words", "\"two words\""},
      {"", "\"\""},
      {"say \"hi\"", R"("say \"hi\"")"},
      {"back\\slash", R"("back\\slash")"},
      {"a=b", "\"a=b\""},
      {"line\nbreak", R"("line\x0abreak")"},
      {"caf\xc3\xa9", "\"caf\xc3\xa9\""},
  }));
  INFO(value);
  const std::string record =
      format_log_record(LogFormat::kText, LogLevel::kWarning, "e", {{"v", value}});
  CHECK(after_time(record) == "warning e v=" + written);
  CHECK(record.find('\n') == std::string::npos);
}

TEST_CASE("a json record is one object with time, level, event and typed fields", "[service]") {
  const std::string record = format_log_record(LogFormat::kJson, LogLevel::kError, "lock_node_down",
                                               {{"node", "127.0.0.1:7000"},
                                                {"reason", "said \"no\"\n\x01 and \xff\xfe"},
                                                {"count", std::uint64_t{18446744073709551615ULL}},
                                                {"delta", -5},
                                                {"quarantined", true}});
  CHECK(record.find('\n') == std::string::npos);
  const json parsed = json::parse(record, nullptr, false);
  REQUIRE_FALSE(parsed.is_discarded());
  CHECK(parsed["level"] == "error");
  CHECK(parsed["event"] == "lock_node_down");
  CHECK(parsed["time"].get<std::string>().size() == 24);
  CHECK(parsed["node"] == "127.0.0.1:7000");
  CHECK(parsed["reason"] == "said \"no\"\n\x01 and \xef\xbf\xbd\xef\xbf\xbd");
  CHECK(parsed["count"].get<std::uint64_t>() == 18446744073709551615ULL);
  CHECK(parsed["delta"] == -5);
  CHECK(parsed["quarantined"] == true);
  CHECK(record.rfind(R"({"time":")", 0) == 0);
}

TEST_CASE("fields without a value are left out of the record", "[service]") {
  const std::optional<std::uint64_t> no_token;
  const std::string record = format_log_record(LogFormat::kText, LogLevel::kInfo, "request",
                                               {LogField::if_present("name", std::string_view()),
                                                {"status", 200U},
                                                LogField::if_present("token", no_token),
                                                LogField::if_present("token", std::uint64_t{7}),
                                                LogField::if_present("skipped", std::uint64_t{0}),
                                                LogField::when(false, {"shutdown", true})});
  CHECK(after_time(record) == "info request status=200 token=7");
  const json parsed = json::parse(format_log_record(LogFormat::kJson, LogLevel::kInfo, "request",
                                                    {LogField::if_present("name", "")}));
  CHECK_FALSE(parsed.contains("name"));
}

TEST_CASE("a long value is cut at the cap and says so", "[service]") {
  const std::string long_value(5000, 'x');
  const std::string text =
      format_log_record(LogFormat::kText, LogLevel::kInfo, "e", {{"v", long_value}});
  CHECK(text.size() < kMaxLogValueBytes + 64);
  CHECK(text.find("...\"") != std::string::npos);
  const json parsed =
      json::parse(format_log_record(LogFormat::kJson, LogLevel::kInfo, "e", {{"v", long_value}}));
  CHECK(parsed["v"].get<std::string>().size() == kMaxLogValueBytes + 3);
}

TEST_CASE("one_line escapes control bytes and caps the length", "[service]") {
  CHECK(one_line("a\nb\tc\x7f") == "a\\x0ab\\x09c\\x7f");
  CHECK(one_line("quotes \" and \\ stay") == "quotes \" and \\ stay");
  CHECK(one_line(std::string(100, 'a'), 10) == std::string(10, 'a') + "...");
}

TEST_CASE("log levels and formats are read from their names", "[service]") {
  CHECK(parse_log_level("debug") == LogLevel::kDebug);
  CHECK(parse_log_level("warning") == LogLevel::kWarning);
  CHECK_FALSE(parse_log_level("warn"));
  CHECK_FALSE(parse_log_level("INFO"));
  CHECK(parse_log_format("json") == LogFormat::kJson);
  CHECK(parse_log_format("text") == LogFormat::kText);
  CHECK_FALSE(parse_log_format("xml"));
  configure_log(LogFormat::kText, LogLevel::kWarning);
  CHECK_FALSE(log_enabled(LogLevel::kInfo));
  CHECK(log_enabled(LogLevel::kError));
  configure_log(LogFormat::kText, LogLevel::kInfo);
  CHECK(log_enabled(LogLevel::kInfo));
  CHECK_FALSE(log_enabled(LogLevel::kDebug));
}
