// fencelockd's configuration: flags, FENCELOCK_* environment variables and a JSON file, merged.
//
// Every setting is one row of a table (flag_table() below): its flag name, how to read a value of
// it, and how to print the current value. The environment variable, the config-file key, the
// --help text and describe() are all derived from that row, so a new setting is one new row and
// cannot be forgotten by one of the sources.
//
// Sources are applied in precedence order, lowest first — defaults, file, environment, flags —
// and each simply overwrites what an earlier one set. The bounds of the service's own settings
// are checked as each value is read (a count must be bounded before it is narrowed into its
// field). The engine's bounds are owned by validate_engine_options(), which runs once on the
// merged result; its message names an EngineOptions field, which is rewritten into the flag.
//
// Every message is forced onto one line and capped in length at the end, because values from
// argv, the environment or a file may hold newlines or be huge, and main prints the message as is.
#include "app/config.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <system_error>
#include <utility>

#include "fencelock/duration.h"
#include "fencelock/names.h"
#include "ops/log.h"

namespace fencelock::service {

namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using storage::ErrorCode;
using storage::make_error;

constexpr std::size_t kMaxConfigFileBytes = std::size_t{1024} * 1024;
constexpr std::size_t kMaxPathBytes = 4096;  // PATH_MAX on Linux
constexpr std::size_t kMaxEchoedBytes = 64;  // of a user's value inside a message
constexpr std::size_t kMaxMessageBytes = 512;
constexpr std::string_view kEnvPrefix = "FENCELOCK_";
constexpr std::string_view kEtcd = "etcd://";

// A value as one source holds it: text from argv or the environment, or a JSON value from the file.
struct Input {
  std::string_view text;
  const json* value = nullptr;  // set when the value comes from the config file
};

// What is wrong with one value, without the flag (the caller prefixes it), or nullopt if it was
// accepted and stored.
using Problem = std::optional<std::string>;

// One field of ServiceConfig, either directly or inside its EngineOptions.
template <class T>
struct Field {
  Field(T ServiceConfig::*member) : service(member) {}          // NOLINT: implicit by design
  Field(T storage::EngineOptions::*member) : engine(member) {}  // NOLINT: implicit by design

  T& of(ServiceConfig& c) const { return service != nullptr ? c.*service : c.engine.*engine; }
  const T& of(const ServiceConfig& c) const {
    return service != nullptr ? c.*service : c.engine.*engine;
  }

  T ServiceConfig::*service = nullptr;
  T storage::EngineOptions::*engine = nullptr;
};

struct FlagSpec {
  std::string_view name;        // without the leading "--"
  std::string_view value_name;  // "DURATION", ...; empty for a switch (a flag that takes no value)
  std::string_view help;        // what it sets, then its bounds
  std::function<Problem(ServiceConfig&, const Input&)> apply;
  std::function<std::string(const ServiceConfig&)> show;

  bool is_switch() const { return value_name.empty(); }
};

std::string clip(std::string_view text) {
  if (text.size() <= kMaxEchoedBytes) return std::string(text);
  return std::string(text.substr(0, kMaxEchoedBytes)) + "...";
}

std::string in_quotes(std::string_view text) {
  return "'" + clip(text) + "'";
}

// Not clipped: an operator needs the whole path, and one_line() still caps the message.
std::string path_in_quotes(std::string_view path) {
  return "'" + std::string(path) + "'";
}

// Printable ASCII without spaces or quotes is shown as is; anything else as a JSON string.
std::string plain_or_json(std::string_view text) {
  const bool plain = !text.empty() && std::all_of(text.begin(), text.end(), [](char ch) {
    return ch > ' ' && ch < 0x7f && ch != '"' && ch != '\'';
  });
  if (plain) return std::string(text);
  return json(std::string(text)).dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string type_problem(std::string_view expected, const json& value) {
  return "expected " + std::string(expected) + ", got a JSON " + value.type_name();
}

// The text of `in`: as given on the command line or in the environment, or a JSON string.
Problem read_text(const Input& in, std::string_view expected, std::string_view& text) {
  if (in.value != nullptr) {
    if (!in.value->is_string()) return type_problem(expected, *in.value);
    text = in.value->get_ref<const std::string&>();
  } else {
    text = in.text;
  }
  if (text.find('\0') != std::string_view::npos) return "must not contain a NUL byte";
  return std::nullopt;
}

// parse_node_address() says what is wrong; name the text.
std::string address_problem(std::string_view text, const storage::Error& error) {
  return in_quotes(text) + ": " + error.message;
}

std::optional<bool> parse_switch_word(std::string_view text) {
  std::string lower(text.substr(0, 8));
  if (text.size() > lower.size()) return std::nullopt;
  for (char& ch : lower) {
    if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');
  }
  if (lower == "1" || lower == "true" || lower == "yes" || lower == "on") return true;
  if (lower == "0" || lower == "false" || lower == "no" || lower == "off") return false;
  return std::nullopt;
}

std::string on_off(bool value) {
  return value ? "on" : "off";
}

// --- Value readers, one per kind of setting. ---------------------------------------------------

FlagSpec duration_flag(std::string_view name, std::string_view help, Field<milliseconds> field,
                       std::optional<std::pair<milliseconds, milliseconds>> bounds = std::nullopt) {
  auto apply = [field, bounds](ServiceConfig& c, const Input& in) -> Problem {
    std::string_view text;
    if (auto problem = read_text(in, "a string like \"50ms\"", text)) return problem;
    const std::optional<milliseconds> value = parse_duration(text);
    if (!value) return "expected a duration like 50ms, 2s or 1m, got " + in_quotes(text);
    if (bounds && (*value < bounds->first || *value > bounds->second)) {
      return "must be between " + format_duration(bounds->first) + " and " +
             format_duration(bounds->second) + ", got " + format_duration(*value);
    }
    field.of(c) = *value;
    return std::nullopt;
  };
  auto show = [field](const ServiceConfig& c) { return format_duration(field.of(c)); };
  return {name, "DURATION", help, std::move(apply), std::move(show)};
}

template <class T>
FlagSpec count_flag(std::string_view name, std::string_view value_name, std::string_view help,
                    Field<T> field, std::uint64_t low, std::uint64_t high) {
  auto apply = [field, low, high](ServiceConfig& c, const Input& in) -> Problem {
    const std::string bounds =
        "must be between " + std::to_string(low) + " and " + std::to_string(high) + ", got ";
    std::uint64_t value = 0;
    if (in.value != nullptr) {
      if (in.value->is_number_unsigned()) {
        value = in.value->get<std::uint64_t>();
      } else if (in.value->is_number_integer()) {
        return bounds + std::to_string(in.value->get<std::int64_t>());
      } else {
        return type_problem("a whole number", *in.value);
      }
    } else {
      const std::string_view text = in.text;
      const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
      if (error == std::errc::result_out_of_range) return bounds + in_quotes(text);
      if (error != std::errc() || end != text.data() + text.size()) {
        return "expected a whole number, got " + in_quotes(text);
      }
    }
    if (value < low || value > high) return bounds + std::to_string(value);
    field.of(c) = static_cast<T>(value);
    return std::nullopt;
  };
  auto show = [field](const ServiceConfig& c) { return std::to_string(field.of(c)); };
  return {name, value_name, help, std::move(apply), std::move(show)};
}

// Plain decimal notation only ("0.05", "1"): no signs, exponents, inf or nan. Bounds: the engine's.
FlagSpec decimal_flag(std::string_view name, std::string_view help, Field<double> field) {
  auto apply = [field](ServiceConfig& c, const Input& in) -> Problem {
    double value = 0;
    if (in.value != nullptr) {
      if (!in.value->is_number()) return type_problem("a number", *in.value);
      value = in.value->get<double>();
    } else {
      const std::string_view text = in.text;
      const std::size_t dot = text.find('.');
      const std::string_view whole = text.substr(0, dot);
      const std::string_view fraction =
          dot == std::string_view::npos ? std::string_view("0") : text.substr(dot + 1);
      auto digits = [](std::string_view part) {
        return !part.empty() && part.size() <= 20 &&
               part.find_first_not_of("0123456789") == std::string_view::npos;
      };
      const auto [end, error] =
          digits(whole) && digits(fraction)
              ? std::from_chars(text.data(), text.data() + text.size(), value,
                                std::chars_format::fixed)
              : std::from_chars_result{text.data(), std::errc::invalid_argument};
      if (error != std::errc() || end != text.data() + text.size()) {
        return "expected a decimal number like 0.01, got " + in_quotes(text);
      }
    }
    field.of(c) = value;
    return std::nullopt;
  };
  auto show = [field](const ServiceConfig& c) {
    char buffer[32];
    const auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, field.of(c));
    return error == std::errc() ? std::string(buffer, end) : std::string("?");
  };
  return {name, "NUMBER", help, std::move(apply), std::move(show)};
}

// `as_switch`: the flag takes no value on the command line (alone it means true).
FlagSpec bool_flag(std::string_view name, std::string_view help, Field<bool> field,
                   bool as_switch) {
  auto apply = [field](ServiceConfig& c, const Input& in) -> Problem {
    if (in.value != nullptr && in.value->is_boolean()) {
      field.of(c) = in.value->get<bool>();
      return std::nullopt;
    }
    std::string_view text;
    if (auto problem = read_text(in, "true, false, \"on\" or \"off\"", text)) return problem;
    const std::optional<bool> value = parse_switch_word(text);
    if (!value) return "expected on or off (or 1/true/yes, 0/false/no), got " + in_quotes(text);
    field.of(c) = *value;
    return std::nullopt;
  };
  auto show = [field](const ServiceConfig& c) { return on_off(field.of(c)); };
  return {name, as_switch ? "" : "on|off", help, std::move(apply), std::move(show)};
}

FlagSpec path_flag(std::string_view name, std::string_view help,
                   Field<std::filesystem::path> field) {
  auto apply = [field](ServiceConfig& c, const Input& in) -> Problem {
    std::string_view text;
    if (auto problem = read_text(in, "a string", text)) return problem;
    if (text.empty() || text.size() > kMaxPathBytes) {
      return "expected a path of 1 to " + std::to_string(kMaxPathBytes) + " bytes, got " +
             std::to_string(text.size()) + " bytes";
    }
    field.of(c) = std::filesystem::path(text);
    return std::nullopt;
  };
  auto show = [field](const ServiceConfig& c) { return plain_or_json(field.of(c).string()); };
  return {name, "PATH", help, std::move(apply), std::move(show)};
}

// A Redis ACL user name (not a secret; the password comes from a file or the environment).
FlagSpec user_flag(std::string_view name, std::string_view help, Field<std::string> field) {
  auto apply = [field](ServiceConfig& c, const Input& in) -> Problem {
    std::string_view text;
    if (auto problem = read_text(in, "a string", text)) return problem;
    if (text.empty() || text.size() > 128 ||
        text.find_first_of(" \t\r\n") != std::string_view::npos) {
      return "expected a user name of 1 to 128 characters without spaces, got " + in_quotes(text);
    }
    field.of(c) = std::string(text);
    return std::nullopt;
  };
  auto show = [field](const ServiceConfig& c) { return plain_or_json(field.of(c)); };
  return {name, "NAME", help, std::move(apply), std::move(show)};
}

FlagSpec listen_flag() {
  auto apply = [](ServiceConfig& c, const Input& in) -> Problem {
    std::string_view text;
    if (auto problem = read_text(in, "a string \"HOST:PORT\"", text)) return problem;
    // Numeric or localhost only: binding to a name's addresses is another feature.
    auto address = fencelock::parse_host_port(text);
    if (!address) return in_quotes(text) + ": " + address.error();
    c.listen = std::move(address).value();
    return std::nullopt;
  };
  auto show = [](const ServiceConfig& c) { return c.listen.to_string(); };
  return {"listen", "HOST:PORT",
          "Address the HTTP API listens on: numeric IPv4, [IPv6] or localhost; port 1..65535.",
          std::move(apply), std::move(show)};
}

// The entries of a list setting: a comma-separated string, or (in the config file) a JSON array
// of strings. Entries are trimmed of spaces; `whole` is the text as given (empty for an array).
Problem read_list(const Input& in, std::string_view expected_entry,
                  std::vector<std::string_view>& entries, std::string_view& whole) {
  if (in.value != nullptr && in.value->is_array()) {
    for (const json& element : *in.value) {
      if (!element.is_string())
        return type_problem("\"" + std::string(expected_entry) + "\" strings in the array",
                            element);
      entries.push_back(element.get_ref<const std::string&>());
    }
  } else {
    if (auto problem = read_text(
            in, "a string \"" + std::string(expected_entry) + ",...\" or an array of them",
            whole)) {
      return problem;
    }
    for (std::size_t start = 0; start <= whole.size() && !whole.empty();) {
      const std::size_t comma = std::min(whole.find(',', start), whole.size());
      entries.push_back(whole.substr(start, comma - start));
      start = comma + 1;
    }
  }
  for (std::string_view& entry : entries) {
    while (!entry.empty() && entry.front() == ' ') entry.remove_prefix(1);
    while (!entry.empty() && entry.back() == ' ') entry.remove_suffix(1);
  }
  return std::nullopt;
}

FlagSpec redis_flag() {
  auto apply = [](ServiceConfig& c, const Input& in) -> Problem {
    std::vector<std::string_view> entries;
    std::string_view whole;
    if (auto problem = read_list(in, "HOST:PORT", entries, whole)) return problem;
    if (entries.empty()) return "needs at least one HOST:PORT";
    std::vector<storage::NodeAddress> nodes;
    for (const std::string_view entry : entries) {
      if (entry.empty()) return "empty entry in the node list " + in_quotes(whole);
      auto node = storage::parse_node_address(entry);
      if (!node) return address_problem(entry, node.error());
      nodes.push_back(std::move(node).value());
    }
    c.engine.nodes = std::move(nodes);
    return std::nullopt;
  };
  auto show = [](const ServiceConfig& c) {
    std::string out;
    for (const storage::NodeAddress& node : c.engine.nodes) {
      out += (out.empty() ? "" : ",") + node.to_string();
    }
    return out;
  };
  return {"redis", "HOST:PORT[,...]",
          "The independent Redis masters holding the locks (required): 1..15 distinct nodes, "
          "IP addresses or DNS names (resolved again at every reconnect; each name must lead to "
          "exactly one Redis server); an odd count is recommended.",
          std::move(apply), std::move(show)};
}

// "etcd://HOST:PORT[,HOST:PORT...][?prefix=P][&floor=N]" (options in any order) into `c`.
Problem apply_etcd_spec(ServiceConfig& c, std::string_view text) {
  std::string_view rest = text.substr(kEtcd.size());
  std::string prefix = "fencelock/token/";
  std::uint64_t floor = 0;
  if (const auto query = rest.find('?'); query != std::string_view::npos) {
    std::string_view options = rest.substr(query + 1);
    rest = rest.substr(0, query);
    constexpr std::string_view kPrefix = "prefix=";
    constexpr std::string_view kFloor = "floor=";
    while (true) {
      const std::size_t amp = std::min(options.find('&'), options.size());
      const std::string_view option = options.substr(0, amp);
      if (option.starts_with(kPrefix)) {
        prefix = std::string(option.substr(kPrefix.size()));
        const bool allowed = std::all_of(prefix.begin(), prefix.end(), [](char ch) {
          return is_lock_name_char(ch) || ch == '/';
        });
        if (prefix.empty() || prefix.size() > 128 || !allowed) {
          return "the etcd prefix must be 1 to 128 characters from [A-Za-z0-9._:/-], got " +
                 in_quotes(prefix);
        }
      } else if (option.starts_with(kFloor)) {
        const std::string_view digits = option.substr(kFloor.size());
        const auto [end, error] =
            std::from_chars(digits.data(), digits.data() + digits.size(), floor);
        if (digits.empty() || error != std::errc() || end != digits.data() + digits.size() ||
            floor > (std::uint64_t{1} << 62)) {
          return "the etcd floor must be a whole number 0 .. 2^62, got " + in_quotes(digits);
        }
      } else {
        return "the etcd options are prefix=P and floor=N, got " + in_quotes(option);
      }
      if (amp == options.size()) break;
      options = options.substr(amp + 1);
    }
  }
  std::vector<storage::NodeAddress> endpoints;
  for (std::size_t start = 0; start <= rest.size();) {
    const std::size_t comma = std::min(rest.find(',', start), rest.size());
    const std::string_view entry = rest.substr(start, comma - start);
    auto address = storage::parse_node_address(entry);
    if (!address) return address_problem(entry, address.error());
    endpoints.push_back(std::move(address).value());
    start = comma + 1;
  }
  if (endpoints.size() > storage::kMaxLockNodes) {
    return "at most " + std::to_string(storage::kMaxLockNodes) + " etcd endpoints";
  }
  c.token_backend = TokenBackend::kEtcd;
  c.etcd_endpoints = std::move(endpoints);
  c.etcd_prefix = std::move(prefix);
  c.etcd_floor = floor;
  c.token_master = {};
  return std::nullopt;
}

FlagSpec tokens_flag() {
  auto apply = [](ServiceConfig& c, const Input& in) -> Problem {
    constexpr std::string_view kSqlite = "sqlite:";
    constexpr std::string_view kRedis = "redis://";
    std::string_view text;
    if (auto problem = read_text(in, "a string \"sqlite:PATH\" or \"redis://HOST:PORT\"", text)) {
      return problem;
    }
    if (text.starts_with(kSqlite)) {
      const std::string_view path = text.substr(kSqlite.size());
      if (path.empty() || path.size() > kMaxPathBytes) {
        return "expected sqlite:PATH with a path of 1 to " + std::to_string(kMaxPathBytes) +
               " bytes, got " + in_quotes(text);
      }
      c.token_backend = TokenBackend::kSqlite;
      c.sqlite_path = std::filesystem::path(path);
      c.token_master = {};
      return std::nullopt;
    }
    if (text.starts_with(kRedis)) {
      const std::string_view address_text = text.substr(kRedis.size());
      auto address = storage::parse_node_address(address_text);
      if (!address) return address_problem(text, address.error());
      c.token_backend = TokenBackend::kRedis;
      c.token_master = std::move(address).value();
      return std::nullopt;
    }
    if (text.starts_with(kEtcd)) return apply_etcd_spec(c, text);
    return "expected sqlite:PATH, redis://HOST:PORT or "
           "etcd://HOST:PORT[,...][?prefix=P][&floor=N], got " +
           in_quotes(text);
  };
  auto show = [](const ServiceConfig& c) -> std::string {
    switch (c.token_backend) {
      case TokenBackend::kSqlite:
        return "sqlite:" + plain_or_json(c.sqlite_path.string());
      case TokenBackend::kRedis:
        return "redis://" + c.token_master.to_string();
      case TokenBackend::kEtcd:
        break;
    }
    std::string out = "etcd://";
    for (std::size_t i = 0; i < c.etcd_endpoints.size(); ++i) {
      out += (i == 0 ? "" : ",") + c.etcd_endpoints[i].to_string();
    }
    out += "?prefix=" + c.etcd_prefix;
    if (c.etcd_floor != 0) out += "&floor=" + std::to_string(c.etcd_floor);
    return out;
  };
  return {"tokens", "SPEC",
          "Where fencing tokens come from: sqlite:PATH (one fencelockd per file), "
          "redis://HOST:PORT (a dedicated master shared by several fencelockd; not a lock node) or "
          "etcd://HOST:PORT[,HOST:PORT...][?prefix=P][&floor=N] (an etcd cluster's members: no "
          "single point of failure; give it --token-timeout 1s; floor=N, for moving from another "
          "source, makes tokens start above N when the prefix is first used). HOST: an IP address "
          "or a DNS name, resolved at every (re)connect.",
          std::move(apply), std::move(show)};
}

FlagSpec key_prefix_flag() {
  auto apply = [](ServiceConfig& c, const Input& in) -> Problem {
    std::string_view text;
    if (auto problem = read_text(in, "a string", text)) return problem;
    c.engine.key_prefix = std::string(text);  // its length is the engine's to check
    return std::nullopt;
  };
  auto show = [](const ServiceConfig& c) { return plain_or_json(c.engine.key_prefix); };
  return {"key-prefix", "TEXT", "Prefix of every lock key in Redis; at most 64 bytes, no '#'.",
          std::move(apply), std::move(show)};
}

// --log-format and --log-level: one word out of a fixed set each (log.h).
FlagSpec log_format_flag() {
  auto apply = [](ServiceConfig& c, const Input& in) -> Problem {
    std::string_view text;
    if (auto problem = read_text(in, "a string", text)) return problem;
    const auto format = parse_log_format(text);
    if (!format) return "expected text or json, got " + in_quotes(text);
    c.log_format = *format;
    return std::nullopt;
  };
  auto show = [](const ServiceConfig& c) { return std::string(log_format_name(c.log_format)); };
  return {"log-format", "text|json",
          "How log records are written to stderr: text (key=value) or json (one object a line).",
          std::move(apply), std::move(show)};
}

// A list of names (--allowed-hosts, --allowed-origins): 0..64 entries of 1..253 printable bytes
// without spaces or commas each.
FlagSpec names_flag(std::string_view name, std::string_view value_name, std::string_view help,
                    std::vector<std::string> ServiceConfig::*member) {
  auto apply = [member](ServiceConfig& c, const Input& in) -> Problem {
    std::vector<std::string_view> entries;
    std::string_view whole;
    if (auto problem = read_list(in, "NAME", entries, whole)) return problem;
    if (entries.size() > 64) return "at most 64 entries, got " + std::to_string(entries.size());
    std::vector<std::string> names;
    for (const std::string_view entry : entries) {
      if (entry.empty() || entry.size() > 253) return "an entry must have 1..253 bytes";
      for (const char ch : entry) {
        if (ch <= ' ' || ch >= 0x7f)
          return "the entry " + in_quotes(entry) +
                 " has a space or a "
                 "byte that is not printable ASCII";
      }
      names.emplace_back(entry);
    }
    c.*member = std::move(names);
    return std::nullopt;
  };
  auto show = [member](const ServiceConfig& c) {
    std::string out;
    for (const std::string& entry : c.*member) out += (out.empty() ? "" : ",") + entry;
    return out;
  };
  return {name, value_name, help, std::move(apply), std::move(show)};
}

FlagSpec log_level_flag() {
  auto apply = [](ServiceConfig& c, const Input& in) -> Problem {
    std::string_view text;
    if (auto problem = read_text(in, "a string", text)) return problem;
    const auto level = parse_log_level(text);
    if (!level) return "expected debug, info, warning or error, got " + in_quotes(text);
    c.log_level = *level;
    return std::nullopt;
  };
  auto show = [](const ServiceConfig& c) { return std::string(log_level_name(c.log_level)); };
  return {"log-level", "LEVEL", "Lowest level logged: debug, info, warning or error.",
          std::move(apply), std::move(show)};
}

// Every setting, in the order of --help and describe(). --config, --help and --version are not
// settings and are handled by the command-line reader.
const std::vector<FlagSpec>& flag_table() {
  static const std::vector<FlagSpec> table = [] {
    using storage::EngineOptions;
    std::vector<FlagSpec> t;
    t.push_back(listen_flag());
    t.push_back(redis_flag());
    t.push_back(tokens_flag());
    t.push_back(path_flag("token-epoch-file",
                          "Epoch record of the redis token source (unused with sqlite tokens); "
                          "1..4096 bytes.",
                          &ServiceConfig::token_epoch_file));
    t.push_back(bool_flag("tokens-unsafe-persistence",
                          "Start even if the redis token master can lose acknowledged writes "
                          "(not appendonly with appendfsync always). Tokens may then repeat.",
                          &ServiceConfig::tokens_unsafe_persistence, true));
    t.push_back(duration_flag("token-timeout", "Deadline of one token draw; 1ms..10s.",
                              &ServiceConfig::token_timeout,
                              std::pair{milliseconds(1), milliseconds(10'000)}));
    t.push_back(user_flag("redis-user",
                          "Redis ACL user for the lock nodes (default: the default user).",
                          &ServiceConfig::redis_user));
    t.push_back(path_flag("redis-password-file",
                          "File holding the lock nodes' Redis password (AUTH), or set "
                          "FENCELOCK_REDIS_PASSWORD; never a flag value.",
                          &ServiceConfig::redis_password_file));
    t.push_back(user_flag("token-user", "Redis ACL user for the redis token master.",
                          &ServiceConfig::token_user));
    t.push_back(path_flag("token-password-file",
                          "File holding the redis token master's password (AUTH), or set "
                          "FENCELOCK_TOKEN_PASSWORD.",
                          &ServiceConfig::token_password_file));
    t.push_back(path_flag("auth-file",
                          "API keys (JSON; docs/operations.md), reloaded on SIGHUP. Without it "
                          "anyone who can connect may take, release and read every lock.",
                          &ServiceConfig::auth_file));
    t.push_back(path_flag("tls-cert",
                          "Serve HTTPS only, with this certificate (PEM, then its chain); needs "
                          "--tls-key. TLS 1.2+. Reloaded on SIGHUP.",
                          &ServiceConfig::tls_cert));
    t.push_back(path_flag("tls-key",
                          "The certificate's private key (PEM, unencrypted); needs --tls-cert. "
                          "Reloaded on SIGHUP.",
                          &ServiceConfig::tls_key));
    t.push_back(path_flag("tls-client-ca",
                          "Require client certificates signed by these CAs (PEM; mutual TLS). "
                          "Needs --tls-cert. Reloaded on SIGHUP.",
                          &ServiceConfig::tls_client_ca));
    t.push_back(count_flag<std::size_t>(
        "body-limit", "BYTES", "Largest request body; 1024..16777216 (16 MiB).",
        &ServiceConfig::body_limit, 1024, std::uint64_t{16} * 1024 * 1024));
    t.push_back(count_flag<unsigned>("threads", "N", "Network threads; 1..64.",
                                     &ServiceConfig::threads, 1, 64));
    t.push_back(count_flag<std::size_t>("max-connections", "N",
                                        "Open client connections at once; 1..1000000.",
                                        &ServiceConfig::max_connections, 1, 1'000'000));
    t.push_back(count_flag<std::size_t>(
        "max-connections-per-client", "N",
        "Open connections from one source address; 1..1000000. Over it: 503.",
        &ServiceConfig::max_connections_per_client, 1, 1'000'000));
    t.push_back(duration_flag("idle-timeout", "How long a keep-alive connection may idle; 1s..60m.",
                              &ServiceConfig::idle_timeout,
                              std::pair{milliseconds(1000), milliseconds(3'600'000)}));
    t.push_back(duration_flag("request-timeout",
                              "A request must arrive whole within this of its first byte; "
                              "100ms..10m.",
                              &ServiceConfig::request_timeout,
                              std::pair{milliseconds(100), milliseconds(600'000)}));
    t.push_back(count_flag<std::size_t>(
        "body-memory", "BYTES",
        "Request bodies held at once, all connections together; 1048576..17179869184. Over it: "
        "503.",
        &ServiceConfig::body_memory, std::size_t{1} << 20, std::uint64_t{16} << 30));
    t.push_back(names_flag(
        "allowed-hosts", "NAME[,...]",
        "Host names a request may be addressed to besides IP addresses, localhost and this "
        "machine's names (\"*\": any; \".example.com\": any under it). Checked without API keys, "
        "or with them when given; up to 64.",
        &ServiceConfig::allowed_hosts));
    t.push_back(names_flag("allowed-origins", "ORIGIN[,...]",
                           "Web origins (scheme://host[:port]) whose pages may call; default "
                           "none: a browser's cross-site request gets 403. Up to 64.",
                           &ServiceConfig::allowed_origins));
    t.push_back(duration_flag(
        "shutdown-grace", "How long requests in flight may finish after SIGTERM; 0s..5m.",
        &ServiceConfig::shutdown_grace, std::pair{milliseconds(0), milliseconds(300'000)}));
    t.push_back(duration_flag("node-timeout",
                              "Deadline of every command on every Redis lock node; 1ms..10s.",
                              &EngineOptions::node_timeout));
    t.push_back(duration_flag("connect-timeout",
                              "Extra time a new Redis connection gets to connect; 1ms..60s.",
                              &EngineOptions::connect_timeout));
    t.push_back(decimal_flag("drift-factor",
                             "Allowance for Redis clocks running fast, as a fraction of the ttl; "
                             "0..0.5.",
                             &EngineOptions::drift_factor));
    t.push_back(
        duration_flag("retry-delay",
                      "Pause between attempts while waiting for a held lock when the refusal does "
                      "not tell when it expires (a split vote); 0s..60s.",
                      &EngineOptions::retry_delay));
    t.push_back(duration_flag("retry-jitter", "Random spread of that pause, +/-; 0s..60s.",
                              &EngineOptions::retry_jitter));
    t.push_back(duration_flag("min-ttl", "Shortest lease ttl a client may ask for; 1ms..max-ttl.",
                              &EngineOptions::min_ttl));
    t.push_back(duration_flag("max-ttl",
                              "Longest lease ttl a client may ask for (also the quarantine of a "
                              "restarted node); min-ttl..24h (1440m).",
                              &EngineOptions::max_ttl));
    t.push_back(duration_flag("max-wait", "Longest wait an acquire may ask for; 0s..60m.",
                              &EngineOptions::max_wait));
    t.push_back(bool_flag("quarantine",
                          "Ignore a restarted Redis node's votes for max-ttl plus drift. Turn off "
                          "only if every node runs appendfsync always; the same on every instance "
                          "(instances that differ refuse to grant until one stops).",
                          &EngineOptions::quarantine_restarted_nodes, false));
    t.push_back(bool_flag("new-lock-nodes",
                          "The lock nodes are new and no lease is held (a planned move to empty "
                          "nodes): let them vote at once although the token store has a history. "
                          "For one start; without it, nodes that all lost their data wait out "
                          "the quarantine.",
                          &EngineOptions::new_lock_nodes, true));
    t.push_back(bool_flag("adopt-legacy-markers",
                          "No lock node lost its data since a fencelock version before per-"
                          "deployment node markers last ran: trust that version's records. For "
                          "the first start after such an upgrade (docs/operations.md).",
                          &EngineOptions::adopt_legacy_markers, true));
    t.push_back(key_prefix_flag());
    t.push_back(log_format_flag());
    t.push_back(log_level_flag());
    return t;
  }();
  return table;
}

const FlagSpec* find_flag(std::string_view name) {
  for (const FlagSpec& spec : flag_table()) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

std::string env_name(std::string_view flag) {
  std::string out(kEnvPrefix);
  for (const char ch : flag) {
    out += ch == '-' ? '_' : (ch >= 'a' && ch <= 'z') ? static_cast<char>(ch - 'a' + 'A') : ch;
  }
  return out;
}

std::string file_key(std::string_view flag) {
  std::string out(flag);
  std::replace(out.begin(), out.end(), '-', '_');
  return out;
}

// "--flag: problem" or "--flag (from ORIGIN): problem".
std::string flag_message(std::string_view flag, std::string_view origin, std::string_view problem) {
  std::string out = "--" + std::string(flag);
  if (!origin.empty()) out += " (from " + std::string(origin) + ")";
  return out + ": " + std::string(problem);
}

// --- The command line. --------------------------------------------------------------------------

struct CommandLine {
  std::optional<Command> command;  // --help or --version, whichever came first
  std::optional<std::string_view> config_file;
  std::vector<std::pair<const FlagSpec*, std::string_view>> settings;  // in order
  std::optional<std::string> error;                                    // the first one
};

// Reads every argument even after an error, so that --help or --version anywhere still wins.
CommandLine read_command_line(const std::vector<std::string>& args) {
  CommandLine line;
  auto fail = [&line](std::string message) {
    if (!line.error) line.error = std::move(message);
  };
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string_view arg = args[i];
    if (arg == "--help" || arg == "-h") {
      if (!line.command) line.command = Command::kHelp;
      continue;
    }
    if (arg == "--version") {
      if (!line.command) line.command = Command::kVersion;
      continue;
    }
    if (!arg.starts_with("--") || arg == "--") {
      fail(arg.starts_with("-") && arg != "--" ? clip(arg) + ": unknown flag (see --help)"
                                               : "unexpected argument " + in_quotes(arg) +
                                                     ": fencelockd takes only flags (see --help)");
      continue;
    }
    const std::size_t equals = arg.find('=');
    const std::string_view name =
        arg.substr(2, equals == std::string_view::npos ? arg.npos : equals - 2);
    const bool is_config = name == "config";
    const FlagSpec* spec = is_config ? nullptr : find_flag(name);
    if (name == "help" || name == "version") {
      fail("--" + std::string(name) + ": takes no value");
      continue;
    }
    if (!is_config && spec == nullptr) {
      fail("--" + clip(name) + ": unknown flag (see --help)");
      continue;
    }
    std::string_view value;
    if (equals != std::string_view::npos) {
      value = arg.substr(equals + 1);
    } else if (spec != nullptr && spec->is_switch()) {
      value = "on";
    } else if (i + 1 < args.size() && !std::string_view(args[i + 1]).starts_with("--")) {
      value = args[++i];
    } else {
      fail("--" + std::string(name) + ": needs a value (--" + std::string(name) + " VALUE or --" +
           std::string(name) + "=VALUE)");
      continue;
    }
    if (is_config) {
      line.config_file = value;
    } else {
      line.settings.emplace_back(spec, value);
    }
  }
  return line;
}

// --- The config file. ---------------------------------------------------------------------------

struct FileCloser {
  void operator()(std::FILE* file) const noexcept { std::fclose(file); }
};

// The whole file, or why not ("cannot read ..."; files over kMaxConfigFileBytes are refused).
Problem read_config_file(const std::string& path, std::string& text) {
  if (path.empty()) return "needs a file path";
  std::error_code error;
  const auto status = std::filesystem::status(path, error);
  if (error) return "cannot read " + path_in_quotes(path) + ": " + error.message();
  if (!std::filesystem::is_regular_file(status)) {
    return "cannot read " + path_in_quotes(path) + ": not a regular file";
  }
  const std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
  if (!file) {
    return "cannot read " + path_in_quotes(path) + ": " + std::generic_category().message(errno);
  }
  text.resize(kMaxConfigFileBytes + 1);
  const std::size_t size = std::fread(text.data(), 1, text.size(), file.get());
  if (std::ferror(file.get()) != 0) return "cannot read " + path_in_quotes(path) + ": read error";
  if (size > kMaxConfigFileBytes) return path_in_quotes(path) + " is larger than 1 MiB";
  text.resize(size);
  return std::nullopt;
}

// --- Engine validation. -------------------------------------------------------------------------

// The engine's bounds are its own (find_option_problem); name the flags of the fields concerned.
std::string engine_message(const storage::OptionProblem& problem,
                           const std::map<std::string_view, std::string>& origins) {
  std::vector<const FlagSpec*> specs;
  for (const std::string_view field : problem.fields) {
    std::string flag(field);
    std::replace(flag.begin(), flag.end(), '_', '-');
    const FlagSpec* spec = find_flag(flag == "nodes" ? std::string("redis") : flag);
    if (spec == nullptr)
      return "engine options: " + std::string(field) + ": " + problem.reason;  // no flag
    specs.push_back(spec);
  }
  std::string flags;
  for (const FlagSpec* spec : specs)
    flags += (flags.empty() ? "" : "/--") + std::string(spec->name);
  std::string origin;
  if (specs.size() == 1) {
    if (const auto found = origins.find(specs[0]->name); found != origins.end())
      origin = found->second;
  }
  return flag_message(flags, origin, problem.reason);
}

// Applies the sources in precedence order to `parsed`; the first problem ends it.
class ConfigBuilder {
 public:
  explicit ConfigBuilder(ParsedConfig& parsed) : parsed_(parsed) {}

  Problem apply_file(const std::string& path, std::string_view origin_of_path) {
    auto fail = [&](std::string_view problem) {
      return flag_message("config", origin_of_path, problem);
    };
    std::string text;
    if (auto problem = read_config_file(path, text)) return fail(*problem);
    const json document = json::parse(text, nullptr, false);
    if (document.is_discarded()) return fail(path_in_quotes(path) + " is not valid JSON");
    if (!document.is_object()) {
      return fail(path_in_quotes(path) + " must hold a JSON object, got a JSON " +
                  document.type_name());
    }
    for (const auto& [key, value] : document.items()) {
      const FlagSpec* spec = key.find('-') == std::string::npos ? find_flag(dashed(key)) : nullptr;
      if (spec == nullptr) {
        std::string problem = path_in_quotes(path) + ": unknown key " + in_quotes(key);
        if (key.find('-') != std::string::npos && find_flag(key) != nullptr) {
          problem += " (write " + file_key(key) + ")";
        }
        return fail(problem);
      }
      if (auto problem =
              apply(*spec, Input{{}, &value}, std::string(key).append(" in ").append(path)))
        return problem;
    }
    parsed_.sources.push_back("file " + path);
    return std::nullopt;
  }

  Problem apply_environment(const Environment& env) {
    for (const FlagSpec& spec : flag_table()) {
      const std::string name = env_name(spec.name);
      const std::optional<std::string> value = env(name);
      if (!value || value->empty()) continue;
      if (auto problem = apply(spec, Input{*value}, name)) return problem;
      parsed_.sources.push_back("env " + name);
    }
    return std::nullopt;
  }

  Problem apply_flag(const FlagSpec& spec, std::string_view value) {
    return apply(spec, Input{value}, "");
  }

  Problem validate() const {
    if (parsed_.config.engine.nodes.empty()) {
      return "--redis: required: the Redis lock nodes as HOST:PORT[,HOST:PORT...] (or "
             "FENCELOCK_REDIS, or \"redis\" in the --config file)";
    }
    if (const auto problem = storage::find_option_problem(parsed_.config.engine)) {
      return engine_message(*problem, origins_);
    }
    return tls_problem();
  }

 private:
  // The TLS files come as a pair, and a client CA only with them.
  Problem tls_problem() const {
    const ServiceConfig& c = parsed_.config;
    auto origin = [this](std::string_view flag) {
      const auto found = origins_.find(flag);
      return found == origins_.end() ? std::string() : found->second;
    };
    if (!c.tls_cert.empty() && c.tls_key.empty())
      return flag_message("tls-cert", origin("tls-cert"), "needs --tls-key (both or neither)");
    if (c.tls_cert.empty() && !c.tls_key.empty())
      return flag_message("tls-key", origin("tls-key"), "needs --tls-cert (both or neither)");
    if (c.tls_cert.empty() && !c.tls_client_ca.empty()) {
      return flag_message("tls-client-ca", origin("tls-client-ca"),
                          "needs --tls-cert and --tls-key (client certificates are checked over "
                          "TLS only)");
    }
    return std::nullopt;
  }

  static std::string dashed(std::string_view key) {
    std::string out(key);
    std::replace(out.begin(), out.end(), '_', '-');
    return out;
  }

  // `origin` is empty for the command line.
  Problem apply(const FlagSpec& spec, const Input& in, std::string origin) {
    if (auto problem = spec.apply(parsed_.config, in)) {
      return flag_message(spec.name, origin, *problem);
    }
    if (origin.empty()) {
      origins_.erase(spec.name);
    } else {
      origins_[spec.name] = std::move(origin);
    }
    return std::nullopt;
  }

  ParsedConfig& parsed_;
  std::map<std::string_view, std::string> origins_;  // flag → source, unless the command line
};

storage::Error invalid(std::string_view message) {
  return make_error(ErrorCode::kInvalidArgument, one_line(message, kMaxMessageBytes));
}

// `text` as lines of at most kUsageWidth columns, each indented by six spaces.
std::string wrapped(std::string_view text) {
  constexpr std::size_t kUsageWidth = 80;
  constexpr std::string_view kIndent = "      ";
  std::string out;
  std::string line(kIndent);
  while (!text.empty()) {
    const std::size_t space = std::min(text.find(' '), text.size());
    const std::string_view word = text.substr(0, space);
    if (line.size() > kIndent.size() && line.size() + 1 + word.size() > kUsageWidth) {
      out += line + "\n";
      line = kIndent;
    }
    line += (line.size() > kIndent.size() ? " " : "") + std::string(word);
    text.remove_prefix(std::min(space + 1, text.size()));
  }
  return out + line + "\n";
}

}  // namespace

storage::Result<ParsedConfig> parse_config(const std::vector<std::string>& args,
                                           const Environment& env) {
  const CommandLine line = read_command_line(args);
  ParsedConfig parsed;
  if (line.command) {
    parsed.command = *line.command;
    return parsed;
  }
  if (line.error) return invalid(*line.error);

  const Environment no_environment = [](std::string_view) { return std::optional<std::string>(); };
  const Environment& lookup = env ? env : no_environment;
  ConfigBuilder builder(parsed);

  const std::string config_env = std::string(kEnvPrefix) + "CONFIG";
  std::optional<std::string> config_file;
  std::string config_origin;
  if (line.config_file) {
    config_file = std::string(*line.config_file);
  } else if (std::optional<std::string> from_env = lookup(config_env);
             from_env && !from_env->empty()) {
    config_file = std::move(from_env);
    config_origin = config_env;
  }
  if (config_file) {
    if (auto problem = builder.apply_file(*config_file, config_origin)) return invalid(*problem);
  }
  if (auto problem = builder.apply_environment(lookup)) return invalid(*problem);
  for (const auto& [spec, value] : line.settings) {
    if (auto problem = builder.apply_flag(*spec, value)) return invalid(*problem);
  }
  if (auto problem = builder.validate()) return invalid(*problem);
  return parsed;
}

std::string usage_text() {
  const ServiceConfig defaults;
  std::string out =
      "usage: fencelockd --redis HOST:PORT[,HOST:PORT...] [flags]\n"
      "       fencelockd keys new --id ID --names PATTERN[,...] --rights lock,read,token "
      "[--rate N] [--burst N] [--max-locks N] [--max-waiters N]\n"
      "\n"
      "fencelock: Redlock quorum locks over independent Redis masters, each grant paired with a\n"
      "fencing token from a linearizable counter. See docs/operations.md.\n"
      "\n"
      "Every flag --some-flag can also be set by the environment variable FENCELOCK_SOME_FLAG or\n"
      "by the key \"some_flag\" of the --config file. Flags win over the environment, the\n"
      "environment over the file, the file over the defaults. Durations are a whole number with\n"
      "ms, s or m (50ms, 2s, 1m). Flags take --flag VALUE or --flag=VALUE.\n"
      "\n"
      "  -h, --help\n"
      "      Print this text and exit.\n"
      "  --version\n"
      "      Print the version and exit.\n"
      "  --config FILE  [FENCELOCK_CONFIG]\n"
      "      A JSON object of settings, at most 1 MiB. Unknown keys are an error.\n";
  for (const FlagSpec& spec : flag_table()) {
    const std::string shown = spec.show(defaults);
    out += "  --" + std::string(spec.name);
    if (!spec.is_switch()) out += " " + std::string(spec.value_name);
    out += "  [" + env_name(spec.name) + ", default " + (shown.empty() ? "none" : shown) + "]\n";
    out += wrapped(spec.help);
  }
  return out;
}

std::string describe(const ServiceConfig& config) {
  std::string out;
  for (const FlagSpec& spec : flag_table()) {
    out += (out.empty() ? "" : " ") + std::string(spec.name) + "=" + spec.show(config);
  }
  return out;
}

}  // namespace fencelock::service
