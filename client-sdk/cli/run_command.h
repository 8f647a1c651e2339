// `fencelock run`: hold a lock for exactly as long as a command runs (compare `etcdctl lock` and
// `consul lock`).
//
// Acquires NAME (waiting up to --wait), starts CMD in its own process group with FENCELOCK_NAME
// and FENCELOCK_TOKEN in its environment (never the lease), keeps the lease alive with a
// LeaseKeeper, and
//   - when CMD exits: releases the lease and returns CMD's exit status (128+N for signal N);
//   - when the lease is lost (the keeper's signal, before the deadline): sends SIGTERM to CMD's
//     process group, SIGKILL after --grace, releases what can be released, returns kExitNotHeld;
//   - when fencelock itself gets SIGTERM/SIGINT/SIGHUP: forwards it to CMD and carries on as above.
#pragma once

#include "cli_args.h"
#include "fencelock/client.h"

namespace fencelock::cli {

int run_command(Client& client, const CliArgs& args);

}  // namespace fencelock::cli
