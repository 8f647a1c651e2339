// `fencelock run`: hold a lock for exactly as long as a command runs (compare `etcdctl lock` and
// `consul lock`).
//
// Acquires NAME — or a lock set, or a permit (waiting up to --wait, acquire_waiting.h) — starts
// CMD in its own process group — the terminal's foreground group when fencelock runs in the
// foreground of a terminal — with FENCELOCK_NAME and FENCELOCK_TOKEN (a set: FENCELOCK_NAMES and
// FENCELOCK_TOKENS; a permit: also FENCELOCK_SLOT and FENCELOCK_PERMITS; child_environment.h) in
// its environment (never the lease), keeps the lease alive with a LeaseKeeper, and
//   - when CMD exits: releases the lease and returns CMD's exit status (128+N for signal N);
//   - when the lease is lost (the keeper's signal, before the deadline): sends SIGTERM to CMD's
//     process group, SIGKILL after --grace, releases what can be released, returns kExitNotHeld;
//   - when fencelock itself gets SIGTERM/SIGINT/SIGHUP: forwards it to CMD (with SIGCONT, so a
//     stopped CMD sees it) and carries on as above;
//   - when CMD is stopped by Ctrl-Z or by reading a terminal it does not own: stops too, and
//     continues CMD when continued (a shell does not know CMD's process group).
// Without CMD, holds the lock until SIGTERM/SIGINT/SIGHUP (exit 0) or its loss (kExitNotHeld).
#pragma once

#include "cli_args.h"
#include "fencelock/client.h"

namespace fencelock::cli {

int run_command(Client& client, const CliArgs& args);

}  // namespace fencelock::cli
