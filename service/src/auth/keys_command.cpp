#include "auth/keys_command.h"

#include <charconv>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "auth/api_keys.h"
#include "auth/api_secret.h"

namespace fencelock::service {

namespace {

constexpr const char* kUsage =
    "usage: fencelockd keys new --id ID --names PATTERN[,PATTERN...] --rights "
    "lock,read,token,admin "
    "[--rate N] [--burst N] [--max-locks N] [--max-waiters N]";

int usage(std::FILE* err, const std::string& problem) {
  std::fprintf(err, "fencelockd keys: %s\n%s\n", problem.c_str(), kUsage);
  return 2;
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto comma = text.find(',', start);
    const auto end = comma == std::string::npos ? text.size() : comma;
    parts.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

}  // namespace

int run_keys_command(const std::vector<std::string>& args, std::FILE* out, std::FILE* err) {
  if (args.empty() || args[0] != "new") return usage(err, "the only command is 'keys new'");
  nlohmann::json entry = nlohmann::json::object();
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string& flag = args[i];
    if (i + 1 >= args.size()) return usage(err, flag + " needs a value");
    const std::string& value = args[++i];
    if (flag == "--id") {
      entry["id"] = value;
    } else if (flag == "--names") {
      entry["names"] = split(value);
    } else if (flag == "--rights") {
      entry["rights"] = split(value);
    } else if (flag == "--rate" || flag == "--burst") {
      double number = 0;
      const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), number);
      if (ec != std::errc() || end != value.data() + value.size())
        return usage(err,
                     std::string(flag).append(": expected a number, got '").append(value) + "'");
      entry[flag.substr(2)] = number;
    } else if (flag == "--max-locks" || flag == "--max-waiters") {
      std::int64_t number = 0;
      const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), number);
      if (ec != std::errc() || end != value.data() + value.size())
        return usage(
            err, std::string(flag).append(": expected a whole number, got '").append(value) + "'");
      entry[flag == "--max-locks" ? "max_locks" : "max_waiters"] = number;
    } else {
      return usage(err, "unknown option " + flag);
    }
  }
  auto secret = generate_api_secret();
  if (!secret.ok()) return usage(err, secret.error().message);
  entry["secret_sha256"] = sha256_hex(secret.value());
  // The same checks the service makes when it loads the file.
  const auto checked = KeySet::parse(nlohmann::json{{"keys", {entry}}}.dump());
  if (!checked.ok()) return usage(err, checked.error().message);
  std::fprintf(out, "%s\n%s\n", secret.value().c_str(), entry.dump().c_str());
  std::fprintf(err,
               "fencelockd keys: line 1 is the secret, shown only now: give it to the client "
               "(FENCELOCK_API_KEY). Line 2 goes into the \"keys\" list of the --auth-file; then "
               "send fencelockd SIGHUP.\n");
  return 0;
}

}  // namespace fencelock::service
