// The service's own errors as values. Every fallible call of fencelockd's own code — its
// configuration, TLS files, API keys, the listener, request bodies and queries — returns
// ServiceResult<T>: a T, or a ServiceError whose message says, for people, what was wrong and
// where. The caller decides how it is shown: at startup it is printed and fencelockd exits; in a
// request it is a 400 invalid_request with the message. The engine's errors stay storage::Error;
// api/api_error.h is the one place they become wire errors. A plain value, as BasicResult.
#pragma once

#include <string>
#include <utility>

#include "fencelock/basic_result.h"

namespace fencelock::service {

struct ServiceError {
  std::string message;
};

template <class T>
using ServiceResult = BasicResult<T, ServiceError>;
using ServiceStatus = ServiceResult<Done>;

inline ServiceError service_error(std::string message) {
  return ServiceError{std::move(message)};
}

}  // namespace fencelock::service
