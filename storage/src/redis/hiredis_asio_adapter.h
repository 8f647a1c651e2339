// Drives one hiredis 0.14 asynchronous context from a Boost.Asio executor.
//
// hiredis ships adapters for libevent, libuv, ae, ... but none for Asio; this is ours, following
// the same hook contract:
//   - hiredis calls addRead/delRead/addWrite/delWrite whenever it changes its mind, repeatedly and
//     in any order. We keep one "wanted" flag per direction and at most one outstanding
//     async_wait per direction; a wait that completes when its direction is no longer wanted does
//     nothing.
//   - hiredis owns the socket and closes it. The Asio descriptor only borrows it: cleanup()
//     release()s it (cancelling outstanding waits) without closing.
//   - cleanup() can run from inside redisAsyncHandleRead/Write (a disconnect found while reading).
//     After cleanup the context pointer is gone; completion handlers of cancelled waits hold the
//     adapter alive through shared_ptr and find nothing to do.
// The adapter runs on one executor (a strand); it is not thread-safe and needs none.
#pragma once

#include <hiredis/async.h>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <memory>

namespace fencelock::storage {

class HiredisAsioAdapter : public std::enable_shared_from_this<HiredisAsioAdapter> {
 public:
  // Attaches to `context`, whose socket must already exist (redisAsyncConnect succeeded without
  // an immediate error). Returns nullptr if the context already has event hooks.
  static std::shared_ptr<HiredisAsioAdapter> attach(redisAsyncContext* context,
                                                    const boost::asio::any_io_executor& executor);

  HiredisAsioAdapter(redisAsyncContext* context, const boost::asio::any_io_executor& executor);
  HiredisAsioAdapter(const HiredisAsioAdapter&) = delete;
  HiredisAsioAdapter& operator=(const HiredisAsioAdapter&) = delete;
  ~HiredisAsioAdapter();

 private:
  void add_read();
  void del_read() { want_read_ = false; }
  void add_write();
  void del_write() { want_write_ = false; }
  void cleanup();

  void arm_read();
  void arm_write();

  static void hook_add_read(void* self);
  static void hook_del_read(void* self);
  static void hook_add_write(void* self);
  static void hook_del_write(void* self);
  static void hook_cleanup(void* self);

  redisAsyncContext* context_;  // nullptr once hiredis has cleaned up
  boost::asio::posix::stream_descriptor socket_;
  bool want_read_ = false;
  bool want_write_ = false;
  bool read_armed_ = false;
  bool write_armed_ = false;
  std::shared_ptr<HiredisAsioAdapter> keep_alive_;  // hiredis's reference, dropped in cleanup()
};

// Frees `context` (if any) so that nothing reaches its owner any more — no data pointer, no
// disconnect callback — and sets it to null. For destructors of objects that own a context.
void free_detached(redisAsyncContext*& context);

}  // namespace fencelock::storage
