// `fencelockd keys new --id ID --names PATTERN[,PATTERN…] --rights lock,read,token,admin [--rate N]
// [--burst N] [--max-locks N] [--max-waiters N]`: makes a key. Prints the secret (once: fencelockd
// never sees it again) on the first line of stdout and, on the second, the JSON object to add to
// the auth file's "keys" list; a hint goes to stderr. Exit 0, or 2 with a one-line message for a
// bad command line.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

namespace fencelock::service {

// `args` are the words after "keys".
int run_keys_command(const std::vector<std::string>& args, std::FILE* out, std::FILE* err);

}  // namespace fencelock::service
