// fencelockd assembled: the token source, the Redlock engine, the metrics, the API handlers and
// the HTTP server on one io_context, run on `threads` threads until SIGTERM or SIGINT.
//
// Shutdown is graceful: stop accepting, answer requests in flight and close idle connections
// (bounded by shutdown_grace), stop the engine (its operations in flight finish, connections
// close), stop the token source, exit 0.
#pragma once

#include "app/config.h"
#include "base/service_result.h"

namespace fencelock::service {

// Runs the service. Returns once it has shut down: ok after a signal, or the error that kept it
// from starting (token store unavailable, address in use, ...), already described for people.
ServiceStatus run_service(const ServiceConfig& config);

}  // namespace fencelock::service
