#include "redis/hiredis_asio_adapter.h"

#include <boost/asio/error.hpp>

namespace fencelock::storage {

namespace asio = boost::asio;

void free_detached(redisAsyncContext*& context) {
  if (context == nullptr) return;
  redisAsyncContext* detached = context;
  context = nullptr;
  detached->data = nullptr;
  detached->onDisconnect = nullptr;
  redisAsyncFree(detached);
}

std::shared_ptr<HiredisAsioAdapter> HiredisAsioAdapter::attach(
    redisAsyncContext* context, const asio::any_io_executor& executor) {
  if (context->ev.data != nullptr) return nullptr;
  auto adapter = std::make_shared<HiredisAsioAdapter>(context, executor);
  adapter->keep_alive_ = adapter;
  context->ev.data = adapter.get();
  context->ev.addRead = &hook_add_read;
  context->ev.delRead = &hook_del_read;
  context->ev.addWrite = &hook_add_write;
  context->ev.delWrite = &hook_del_write;
  context->ev.cleanup = &hook_cleanup;
  return adapter;
}

HiredisAsioAdapter::HiredisAsioAdapter(redisAsyncContext* context,
                                       const asio::any_io_executor& executor)
    : context_(context), socket_(executor, context->c.fd) {}

HiredisAsioAdapter::~HiredisAsioAdapter() {
  // Never close hiredis's socket: if cleanup() did not run, give the descriptor back unclosed.
  if (socket_.is_open()) socket_.release();
}

void HiredisAsioAdapter::add_read() {
  want_read_ = true;
  arm_read();
}

void HiredisAsioAdapter::add_write() {
  want_write_ = true;
  arm_write();
}

void HiredisAsioAdapter::arm_read() {
  if (read_armed_ || context_ == nullptr) return;
  read_armed_ = true;
  socket_.async_wait(asio::posix::stream_descriptor::wait_read,
                     [self = shared_from_this()](const boost::system::error_code& ec) {
                       self->read_armed_ = false;
                       if (ec == asio::error::operation_aborted || self->context_ == nullptr)
                         return;
                       if (!self->want_read_) return;
                       // May re-arm through add_read(), or clean up and null context_.
                       redisAsyncHandleRead(self->context_);
                     });
}

void HiredisAsioAdapter::arm_write() {
  if (write_armed_ || context_ == nullptr) return;
  write_armed_ = true;
  socket_.async_wait(asio::posix::stream_descriptor::wait_write,
                     [self = shared_from_this()](const boost::system::error_code& ec) {
                       self->write_armed_ = false;
                       if (ec == asio::error::operation_aborted || self->context_ == nullptr)
                         return;
                       if (!self->want_write_) return;
                       redisAsyncHandleWrite(self->context_);
                     });
}

void HiredisAsioAdapter::cleanup() {
  context_ = nullptr;
  want_read_ = false;
  want_write_ = false;
  if (socket_.is_open()) socket_.release();  // cancels waits; hiredis closes the fd itself
  keep_alive_.reset();                       // may be the last owner: touch nothing after this
}

void HiredisAsioAdapter::hook_add_read(void* self) {
  static_cast<HiredisAsioAdapter*>(self)->add_read();
}
void HiredisAsioAdapter::hook_del_read(void* self) {
  static_cast<HiredisAsioAdapter*>(self)->del_read();
}
void HiredisAsioAdapter::hook_add_write(void* self) {
  static_cast<HiredisAsioAdapter*>(self)->add_write();
}
void HiredisAsioAdapter::hook_del_write(void* self) {
  static_cast<HiredisAsioAdapter*>(self)->del_write();
}
void HiredisAsioAdapter::hook_cleanup(void* self) {
  static_cast<HiredisAsioAdapter*>(self)->cleanup();
}

}  // namespace fencelock::storage
