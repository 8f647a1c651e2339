// fencelockd's configuration: flags, FENCELOCK_* environment variables and a JSON file, merged.
//
// Every setting is one row of a table (config_flags.h): its flag name, how to read a value of
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

#include "app/config_flags.h"
#include "fencelock/duration.h"
#include "ops/log.h"

namespace fencelock::service {

namespace {

using namespace config_table;  // NOLINT(google-build-using-namespace): this file's own table
using nlohmann::json;

constexpr std::size_t kMaxConfigFileBytes = std::size_t{1024} * 1024;
constexpr std::size_t kMaxMessageBytes = 512;

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

ServiceError invalid(std::string_view message) {
  return service_error(one_line(message, kMaxMessageBytes));
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

ServiceResult<ParsedConfig> parse_config(const std::vector<std::string>& args,
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
      "       fencelockd keys new --id ID --names PATTERN[,...] --rights lock,read,token,admin "
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
