// LogSink: writes log records to a file descriptor from a thread of its own, so that the thread
// that logs (the event loop) never waits for the log's destination. submit() appends a finished
// record (with its newline) to a bounded buffer and returns; the writer thread writes batches with
// write(2), never holding the buffer's mutex while it writes.
// - Order: records are written in the order submit() accepted them; a dropped record leaves a gap.
// - Bounded: at most `capacity` bytes wait besides the batch being written. A record that does not
//   fit is dropped whole and counted (dropped()); an empty buffer takes a record of any size.
// - stop() returns once every record accepted before it was written (or failed: counted with the
//   drops), without waiting out `linger`; a write that blocks blocks stop() too.
// - Not running (before start(), after stop()): submit() writes the record itself at once.
// The sink never closes `fd`, which must stay open until stop() returns. submit(), dropped() and
// running() from any thread; start() and stop() from one thread at a time. The destructor stops.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

namespace fencelock::service {

struct LogSinkOptions {
  int fd = 2;  // where records go; default stderr. Never closed by the sink.
  // Bytes that may wait to be written; a record beyond that is dropped. Default 4 MiB: about a
  // quarter of a second of a request log at 20,000 requests a second.
  std::size_t capacity = std::size_t{4} * 1024 * 1024;
  // How long the writer waits for more records after the first one of a batch. Default 2 ms:
  // records reach the destination within a few milliseconds, in a few hundred writes a second.
  std::chrono::microseconds linger{2000};
};

class LogSink {
 public:
  enum class Outcome {
    kQueued,   // the writer thread will write it
    kWritten,  // not running: written by the caller's thread (or the write failed: nowhere to tell)
    kDropped,  // the buffer was full: counted in dropped()
  };

  explicit LogSink(LogSinkOptions options = {});
  ~LogSink();
  LogSink(const LogSink&) = delete;
  LogSink& operator=(const LogSink&) = delete;

  // Starts the writer thread; from now on records are queued. Does nothing if running already.
  // Throws std::system_error if the thread cannot start (the sink then stays synchronous).
  void start();
  // Writes everything queued, stops the writer thread and returns; records submitted from now on
  // are written synchronously. Does nothing if not running. Never throws.
  void stop() noexcept;
  bool running() const;

  // One record, its newline included. Never throws; never blocks on I/O while running.
  Outcome submit(std::string_view record) noexcept;

  // Records not written since construction: dropped because the buffer was full, or lost to a
  // failed write(2) of the writer thread.
  std::uint64_t dropped() const;

 private:
  void run_writer();
  void write_batch();
  // Writes all of `bytes`; returns what could not be written (empty on success).
  static std::string_view write_fully(int fd, std::string_view bytes) noexcept;

  const LogSinkOptions options_;
  mutable std::mutex mutex_;  // guards queued_, running_, stopping_
  std::condition_variable wake_;
  std::string queued_;  // accepted records not yet handed to the writer
  bool running_ = false;
  bool stopping_ = false;
  std::atomic<std::uint64_t> dropped_{0};  // changed under mutex_, read without it
  std::string batch_;                      // the writer thread's alone: the records it is writing
  std::thread writer_;                     // start() and stop() only
};

}  // namespace fencelock::service
