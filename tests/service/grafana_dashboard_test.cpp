// deploy/grafana/fencelock.json against a real fencelockd: a dashboard that queries a metric the
// daemon does not export shows an empty panel and nobody notices, so every name it uses must be
// in /metrics.
#include <catch2/catch.hpp>
#include <cctype>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <string_view>

#include "build_paths.h"
#include "http_client.h"
#include "prometheus_text.h"
#include "service_under_test.h"

using namespace fencelock::testing;
using nlohmann::json;

namespace {

// Every PromQL expression in the dashboard: panel targets (rows' nested panels too) and the
// template variables' queries.
void collect_queries(const json& node, std::vector<std::string>& out) {
  if (node.is_object()) {
    for (const auto& [key, value] : node.items()) {
      if ((key == "expr" || key == "definition") && value.is_string()) {
        out.push_back(value.get<std::string>());
      } else {
        collect_queries(value, out);
      }
    }
  } else if (node.is_array()) {
    for (const auto& element : node) collect_queries(element, out);
  }
}

// The metric names an expression uses: ours start with fencelock_, the process ones with process_.
// (PromQL identifiers: letters, digits, '_' and ':'; a name starts after a non-identifier byte.)
std::set<std::string> metric_names(const std::vector<std::string>& queries) {
  auto is_identifier = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == ':';
  };
  std::set<std::string> names;
  for (const std::string& query : queries) {
    for (std::size_t i = 0; i < query.size(); ++i) {
      if (i > 0 && is_identifier(query[i - 1])) continue;
      const std::string_view rest = std::string_view(query).substr(i);
      if (!rest.starts_with("fencelock_") && !rest.starts_with("process_")) continue;
      std::size_t end = i;
      while (end < query.size() && is_identifier(query[end])) ++end;
      names.insert(query.substr(i, end - i));
    }
  }
  return names;
}

}  // namespace

TEST_CASE("grafana: every metric the dashboard queries is in a real fencelockd's /metrics",
          "[service][redis]") {
  std::ifstream file(grafana_dashboard_file());
  REQUIRE(file);
  std::stringstream text;
  text << file.rdbuf();
  const json dashboard = json::parse(text.str(), nullptr, false);
  REQUIRE_FALSE(dashboard.is_discarded());
  std::vector<std::string> queries;
  collect_queries(dashboard, queries);
  const std::set<std::string> wanted = metric_names(queries);
  REQUIRE(wanted.size() >= 20);

  ServiceUnderTest service;
  HttpClient http = service.client();
  // Series that appear once something happened: a request of each common kind.
  const json lease = http.post("/v1/locks/dash", {{"ttl_ms", 1000}}).json();
  REQUIRE(lease.contains("lease"));
  http.del("/v1/locks/dash", {{"lease", lease["lease"]}});
  const Exposition exported = parse(http.get("/metrics").body);
  REQUIRE(exported.errors.empty());
  std::set<std::string> have;
  for (const Sample& sample : exported.samples) have.insert(sample.name);
  for (const std::string& name : wanted) {
    INFO(name);
    CHECK(have.count(name) == 1);
  }
}
