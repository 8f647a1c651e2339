// A strict reader of the Prometheus text exposition format 0.0.4, as far as fencelockd's /metrics
// uses it (counters, gauges, histograms; HELP and TYPE before every family): every problem it meets
// becomes one line in `errors`. For tests only.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fencelock::testing {

using Labels = std::map<std::string, std::string>;

struct Sample {
  std::string name;
  Labels labels;
  double value = 0;
};

struct Exposition {
  std::map<std::string, std::string> types;  // family → counter|gauge|histogram
  std::vector<Sample> samples;
  std::vector<std::string> errors;

  // The sample's value, or NaN (which equals nothing) if there is no such sample.
  double value(const std::string& name, const Labels& labels = {}) const;
  bool has(const std::string& name, const Labels& labels) const;
  std::size_t count_of(const std::string& name) const;
};

Exposition parse(const std::string& text);

// One sample value as the format writes it ("1", "0.5", "+Inf", "NaN"); nullopt if it is not one.
std::optional<double> parse_value(const std::string& text);

// The family a sample belongs to: histogram series carry a suffix (_bucket, _sum, _count).
std::string family_of(const std::string& name, const std::map<std::string, std::string>& types);

}  // namespace fencelock::testing
