// How the CLI acquires: waiting as long as --wait says, however long that is.
#pragma once

#include <string>

#include "cli_args.h"
#include "fencelock/client.h"

namespace fencelock::cli {

// Acquires what args names for args.ttl — a lock, a lock set (args.names) or a permit
// (args.permits; lease_kind_of). The service caps one request's wait (--max-wait, default
// 60 s): while the lock stays held, this asks again until --wait has passed, or for ever with
// --wait forever. While waiting, a service that cannot answer (kUnavailable, kTransport) is asked
// again after a pause too; a wait of 0 makes exactly one request. Returns the Lease, or the last
// error: kLocked once the wait ran out, else as Client::acquire.
Result<Lease> acquire_waiting(Client& client, const CliArgs& args);

// With -v: "fencelock: <what>" on stderr. Never pass it a lease string or an API key.
void say(const CliArgs& args, const std::string& what);

}  // namespace fencelock::cli
