// The table of fencelockd's settings, which every source of config.cpp reads (flags, FENCELOCK_*
// variables, the --config file, --help, describe()): one row per setting with its flag name, how
// to read a value of it and how to print the current value. A new setting is one new row.
//
// A row's apply() checks the service's own bounds as it reads (a count is bounded before it is
// narrowed into its field) and answers what is wrong with the value, without the flag, or nullopt
// once it stored it. Messages echo a user's value clipped (clip()); paths are shown whole.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "app/config.h"

namespace fencelock::service::config_table {

inline constexpr std::string_view kEnvPrefix = "FENCELOCK_";

// A value as one source holds it: text from argv or the environment, or a JSON value from the file.
struct Input {
  std::string_view text;
  const nlohmann::json* value = nullptr;  // set when the value comes from the config file
};

// What is wrong with one value, without the flag (the caller prefixes it), or nullopt if it was
// accepted and stored.
using Problem = std::optional<std::string>;

struct FlagSpec {
  std::string_view name;        // without the leading "--"
  std::string_view value_name;  // "DURATION", ...; empty for a switch (a flag that takes no value)
  std::string_view help;        // what it sets, then its bounds
  std::function<Problem(ServiceConfig&, const Input&)> apply;
  std::function<std::string(const ServiceConfig&)> show;

  bool is_switch() const { return value_name.empty(); }
};

// Every setting, in the order of --help and describe(). --config, --help and --version are not
// settings and are handled by the command-line reader.
const std::vector<FlagSpec>& flag_table();
// The row of `name` (without "--"), or nullptr.
const FlagSpec* find_flag(std::string_view name);
// "some-flag" -> "FENCELOCK_SOME_FLAG".
std::string env_name(std::string_view flag);
// "some-flag" -> "some_flag" (the --config file's key).
std::string file_key(std::string_view flag);
// "--flag: problem" or "--flag (from ORIGIN): problem".
std::string flag_message(std::string_view flag, std::string_view origin, std::string_view problem);

// A user's value inside a message: at most 64 bytes, then "...".
std::string clip(std::string_view text);
// clip(text) in single quotes.
std::string in_quotes(std::string_view text);
// A path in single quotes, whole: an operator needs all of it.
std::string path_in_quotes(std::string_view path);

}  // namespace fencelock::service::config_table
