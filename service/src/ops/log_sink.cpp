#include "ops/log_sink.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace fencelock::service {

LogSink::LogSink(LogSinkOptions options) : options_(options) {}

LogSink::~LogSink() {
  stop();
}

void LogSink::start() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (running_) return;
  // Both buffers are kept between batches; reserving a little spares the first requests growth.
  queued_.reserve(std::min<std::size_t>(options_.capacity, std::size_t{64} * 1024));
  stopping_ = false;
  writer_ = std::thread([this] { run_writer(); });
  running_ = true;
}

void LogSink::stop() noexcept {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!running_ || stopping_) return;
    stopping_ = true;
  }
  wake_.notify_one();
  writer_.join();  // it sets running_ = false once the queue is empty and written
  std::lock_guard<std::mutex> lock(mutex_);
  stopping_ = false;
}

bool LogSink::running() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return running_;
}

std::uint64_t LogSink::dropped() const {
  return dropped_.load(std::memory_order_relaxed);
}

LogSink::Outcome LogSink::submit(std::string_view record) noexcept {
  bool wake = false;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!running_) {
      // Every record a running sink accepted is written by now (run_writer() clears running_
      // only then), so writing here keeps each thread's order. Outside the lock: a slow
      // destination must not hold up other threads' checks.
      lock.unlock();
      static_cast<void>(write_fully(options_.fd, record));  // nowhere to report a failure
      return Outcome::kWritten;
    }
    if (!queued_.empty() && queued_.size() + record.size() > options_.capacity) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return Outcome::kDropped;
    }
    const std::size_t before = queued_.size();
    try {
      queued_.append(record);
    } catch (...) {  // out of memory: the record is lost like one that did not fit
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return Outcome::kDropped;
    }
    // The writer sleeps until the queue stops being empty, then lingers until it is half full.
    const std::size_t half = options_.capacity / 2;
    wake = before == 0 || (before < half && queued_.size() >= half);
  }
  if (wake) wake_.notify_one();
  return Outcome::kQueued;
}

void LogSink::run_writer() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return !queued_.empty() || stopping_; });
    if (queued_.empty()) break;  // stopping, and everything is written
    if (!stopping_ && options_.linger.count() > 0) {
      const std::size_t half = options_.capacity / 2;
      wake_.wait_for(lock, options_.linger,
                     [this, half] { return stopping_ || queued_.size() >= half; });
    }
    batch_.swap(queued_);  // queued_ takes the empty buffer (and its capacity) back
    lock.unlock();
    write_batch();
    lock.lock();
  }
  running_ = false;
}

void LogSink::write_batch() {
  const std::string_view unwritten = write_fully(options_.fd, batch_);
  if (!unwritten.empty()) {  // a record cut short counts as lost too
    dropped_.fetch_add(
        static_cast<std::uint64_t>(std::count(unwritten.begin(), unwritten.end(), '\n')),
        std::memory_order_relaxed);
  }
  // A burst's batch does not keep its memory for good.
  if (batch_.capacity() > options_.capacity) {
    std::string().swap(batch_);
  } else {
    batch_.clear();
  }
}

std::string_view LogSink::write_fully(int fd, std::string_view bytes) noexcept {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n > 0) {
      bytes.remove_prefix(static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {  // a non-blocking stderr
      pollfd ready{fd, POLLOUT, 0};
      if (::poll(&ready, 1, -1) >= 0 || errno == EINTR) continue;
    }
    break;
  }
  return bytes;
}

}  // namespace fencelock::service
