// What the session host and the server know of one connection's session, whatever its stream
// (plain TCP or TLS; http_session.h): it can be told to drain. Sessions are owned by the async
// operations that hold their shared_ptr; the host keeps only weak references.
#pragma once

namespace fencelock::service {

class Session {
 public:
  virtual ~Session() = default;

  // Shutdown: close now if waiting for a request; otherwise finish the current one and close.
  // Thread-safe: posts to the session's strand.
  virtual void drain() = 0;
};

}  // namespace fencelock::service
