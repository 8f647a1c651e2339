// What `fencelock run` tells the command it starts about the lease it holds, through the
// environment. Never the lease string: it stays with fencelock, which renews and releases it.
//
//   a lock:    FENCELOCK_NAME=<name>  FENCELOCK_TOKEN=<token>
//   a permit:  FENCELOCK_NAME=<semaphore>  FENCELOCK_TOKEN=<token>  FENCELOCK_SLOT=<0..N-1>
//              FENCELOCK_PERMITS=<N>
//   a set:     FENCELOCK_NAMES=<a>,<b>  FENCELOCK_TOKENS=<a>=<17>,<b>=<4>  (sorted by name;
//              FENCELOCK_NAME and FENCELOCK_TOKEN are not set: no single token fences a set)
//
// Lock names are [A-Za-z0-9._:-] only, so neither ',' nor '=' is ambiguous; they are not all
// valid in variable names, hence no per-name variable. Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "fencelock/lease.h"

namespace fencelock::cli {

// "a=17,b=4": every name of the lease with its token, in the lease's (sorted) order.
std::string tokens_text(const Lease& lease);

// `inherited` ("NAME=value" entries) without any FENCELOCK_NAME, FENCELOCK_NAMES,
// FENCELOCK_TOKEN, FENCELOCK_TOKENS, FENCELOCK_SLOT, FENCELOCK_PERMITS or FENCELOCK_LEASE of its
// own, followed by the variables above for `lease`.
std::vector<std::string> child_environment(const std::vector<std::string>& inherited,
                                           const Lease& lease);

}  // namespace fencelock::cli
