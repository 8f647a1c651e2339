#include "prometheus_text.h"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <set>

namespace fencelock::testing {

double Exposition::value(const std::string& name, const Labels& labels) const {
  for (const Sample& s : samples) {
    if (s.name == name && s.labels == labels) return s.value;
  }
  return std::nan("");
}

bool Exposition::has(const std::string& name, const Labels& labels) const {
  return !std::isnan(value(name, labels));
}

std::size_t Exposition::count_of(const std::string& name) const {
  std::size_t n = 0;
  for (const Sample& s : samples) {
    if (s.name == name) ++n;
  }
  return n;
}

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

bool is_name_char(char c, bool first) {
  const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
  return letter || (!first && c >= '0' && c <= '9');
}

std::size_t read_name(const std::string& line, std::size_t at) {
  std::size_t end = at;
  while (end < line.size() && is_name_char(line[end], end == at)) ++end;
  return end;
}

}  // namespace

std::optional<double> parse_value(const std::string& text) {
  if (text == "+Inf") return kInf;
  if (text == "-Inf") return -kInf;
  if (text == "NaN") return std::nan("");
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) return std::nullopt;
  return v;
}

// The family a sample belongs to: histogram series carry a suffix.
std::string family_of(const std::string& name, const std::map<std::string, std::string>& types) {
  for (const std::string suffix : {"_bucket", "_sum", "_count"}) {
    if (name.size() > suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      const std::string base = name.substr(0, name.size() - suffix.size());
      const auto it = types.find(base);
      if (it != types.end() && it->second == "histogram") return base;
    }
  }
  return name;
}

Exposition parse(const std::string& text) {
  Exposition out;
  std::set<std::string> helped;
  std::set<std::string> finished;  // families whose samples are over: they must not reappear
  std::string current;
  if (text.empty() || text.back() != '\n') {
    out.errors.push_back("output does not end with a newline");
  }
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t eol = text.find('\n', pos);
    const std::string line = text.substr(pos, eol - pos);
    pos = eol == std::string::npos ? text.size() : eol + 1;
    auto fail = [&](const std::string& why) { out.errors.push_back(why + ": " + line); };

    if (line.rfind("# HELP ", 0) == 0 || line.rfind("# TYPE ", 0) == 0) {
      const std::size_t name_end = read_name(line, 7);
      const std::string name = line.substr(7, name_end - 7);
      if (name.empty() || name_end >= line.size() || line[name_end] != ' ') {
        fail("bad comment");
        continue;
      }
      if (name != current) {
        if (!current.empty()) finished.insert(current);
        current = name;
      }
      if (finished.count(name) != 0) fail("family appears twice");
      if (line[2] == 'H') {
        if (!helped.insert(name).second) fail("second HELP");
      } else {
        const std::string type = line.substr(name_end + 1);
        if (type != "counter" && type != "gauge" && type != "histogram") fail("unknown TYPE");
        if (!out.types.emplace(name, type).second) fail("second TYPE");
      }
      continue;
    }
    if (line.empty() || line[0] == '#') {
      fail("unexpected line");
      continue;
    }

    Sample sample;
    std::size_t at = read_name(line, 0);
    sample.name = line.substr(0, at);
    if (sample.name.empty()) {
      fail("no metric name");
      continue;
    }
    if (at < line.size() && line[at] == '{') {
      ++at;
      bool ok = true;
      while (ok && at < line.size() && line[at] != '}') {
        const std::size_t label_end = read_name(line, at);
        const std::string label = line.substr(at, label_end - at);
        if (label.empty() || line.compare(label_end, 2, "=\"") != 0) {
          ok = false;
          break;
        }
        at = label_end + 2;
        std::string value;
        while (at < line.size() && line[at] != '"') {
          if (line[at] == '\\') {
            if (at + 1 >= line.size()) {
              ok = false;
              break;
            }
            const char e = line[at + 1];
            if (e == '\\' || e == '"') {
              value += e;
            } else if (e == 'n') {
              value += '\n';
            } else {
              ok = false;
            }
            at += 2;
          } else {
            value += line[at++];
          }
        }
        if (!ok || at >= line.size()) {
          ok = false;
          break;
        }
        ++at;  // closing quote
        if (!sample.labels.emplace(label, value).second) ok = false;
        if (at < line.size() && line[at] == ',') ++at;
      }
      if (!ok || at >= line.size()) {
        fail("bad labels");
        continue;
      }
      ++at;  // closing brace
    }
    if (at >= line.size() || line[at] != ' ') {
      fail("no space before the value");
      continue;
    }
    const auto value = parse_value(line.substr(at + 1));
    if (!value) {
      fail("bad value");
      continue;
    }
    sample.value = *value;
    const std::string family = family_of(sample.name, out.types);
    if (family != current || helped.count(family) == 0 || out.types.count(family) == 0) {
      fail("sample without HELP and TYPE just before it");
    }
    out.samples.push_back(std::move(sample));
  }
  return out;
}

}  // namespace fencelock::testing
