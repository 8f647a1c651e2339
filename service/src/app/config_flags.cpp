// The settings table (config_flags.h): the value readers, one per kind of setting, and the rows.
#include "app/config_flags.h"

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

namespace fencelock::service::config_table {

namespace {

using nlohmann::json;
using std::chrono::milliseconds;

constexpr std::size_t kMaxPathBytes = 4096;  // PATH_MAX on Linux
constexpr std::size_t kMaxEchoedBytes = 64;  // of a user's value inside a message
constexpr std::string_view kEtcd = "etcd://";

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
std::string address_problem(std::string_view text, const std::string& why) {
  return in_quotes(text) + ": " + why;
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
      if (!node) return address_problem(entry, node.error().message);
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
    if (!address) return address_problem(entry, address.error().message);
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
      if (!address) return address_problem(text, address.error().message);
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

// Where it listens, its lock nodes and token store, and who may call (keys, TLS).
void add_listen_token_and_access_flags(std::vector<FlagSpec>& t) {
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
}

// What one client, connection and request may cost.
void add_connection_flags(std::vector<FlagSpec>& t) {
  t.push_back(count_flag<std::size_t>(
      "body-limit", "BYTES", "Largest request body; 1024..16777216 (16 MiB).",
      &ServiceConfig::body_limit, 1024, std::uint64_t{16} * 1024 * 1024));
  t.push_back(count_flag<unsigned>("threads", "N", "Network threads; 1..64.",
                                   &ServiceConfig::threads, 1, 64));
  t.push_back(count_flag<std::size_t>("max-connections", "N",
                                      "Open client connections at once; 1..1000000.",
                                      &ServiceConfig::max_connections, 1, 1'000'000));
  t.push_back(
      count_flag<std::size_t>("max-connections-per-client", "N",
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
}

// The engine's timing, ttl bounds and node trust (EngineOptions).
void add_engine_flags(std::vector<FlagSpec>& t) {
  using storage::EngineOptions;
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
}

}  // namespace

std::string clip(std::string_view text) {
  if (text.size() <= kMaxEchoedBytes) return std::string(text);
  return std::string(text.substr(0, kMaxEchoedBytes)) + "...";
}

std::string in_quotes(std::string_view text) {
  return "'" + clip(text) + "'";
}

std::string path_in_quotes(std::string_view path) {
  return "'" + std::string(path) + "'";
}

const std::vector<FlagSpec>& flag_table() {
  static const std::vector<FlagSpec> table = [] {
    std::vector<FlagSpec> t;
    add_listen_token_and_access_flags(t);
    add_connection_flags(t);
    add_engine_flags(t);
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

std::string flag_message(std::string_view flag, std::string_view origin, std::string_view problem) {
  std::string out = "--" + std::string(flag);
  if (!origin.empty()) out += " (from " + std::string(origin) + ")";
  return out + ": " + std::string(problem);
}
}  // namespace fencelock::service::config_table
