#include "ops/log_sink.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "temp_dir.h"

using namespace fencelock::service;
using namespace std::chrono_literals;
using fencelock::testing::TempDir;

namespace {

// A file the sink writes to: opened for writing, read back whole.
class LogFile {
 public:
  LogFile() : path_((dir_.path() / "log").string()) {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    REQUIRE(fd_ >= 0);
  }
  ~LogFile() { ::close(fd_); }
  LogFile(const LogFile&) = delete;
  LogFile& operator=(const LogFile&) = delete;

  int fd() const { return fd_; }
  std::vector<std::string> lines() const {
    std::ifstream in(path_);
    std::vector<std::string> out;
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  }

 private:
  TempDir dir_;
  std::string path_;
  int fd_ = -1;
};

// "t<thread> n<number>" records: checks that each thread's numbers only grow (none reordered)
// and returns how many records each thread has in `lines`.
std::vector<int> per_thread_in_order(const std::vector<std::string>& lines, int threads) {
  std::vector<int> count(static_cast<std::size_t>(threads), 0);
  std::vector<long> last(static_cast<std::size_t>(threads), -1);
  for (const std::string& line : lines) {
    int thread = -1;
    long number = -1;
    REQUIRE(std::sscanf(line.c_str(), "t%d n%ld", &thread, &number) == 2);
    REQUIRE(thread >= 0);
    REQUIRE(thread < threads);
    const auto t = static_cast<std::size_t>(thread);
    INFO(line);
    REQUIRE(number > last[t]);
    last[t] = number;
    ++count[t];
  }
  return count;
}

std::string record(int thread, long number) {
  return "t" + std::to_string(thread) + " n" + std::to_string(number) + "\n";
}

}  // namespace

TEST_CASE("a log sink that is not running writes each record at once, itself", "[service]") {
  LogFile file;
  LogSink sink(LogSinkOptions{file.fd(), 1024, 60s});
  CHECK_FALSE(sink.running());
  CHECK(sink.submit(record(0, 1)) == LogSink::Outcome::kWritten);
  CHECK(file.lines() == std::vector<std::string>{"t0 n1"});
  sink.start();
  CHECK(sink.running());
  sink.stop();
  CHECK_FALSE(sink.running());
  CHECK(sink.submit(record(0, 2)) == LogSink::Outcome::kWritten);
  CHECK(file.lines() == std::vector<std::string>{"t0 n1", "t0 n2"});
  CHECK(sink.dropped() == 0);
}

TEST_CASE("stopping a log sink writes every queued record without waiting out the linger",
          "[service]") {
  LogFile file;
  LogSink sink(LogSinkOptions{file.fd(), 1024 * 1024, 3600s});
  sink.start();
  for (long n = 0; n < 100; ++n) CHECK(sink.submit(record(0, n)) == LogSink::Outcome::kQueued);
  const auto before = std::chrono::steady_clock::now();
  sink.stop();
  CHECK(std::chrono::steady_clock::now() - before < 10s);
  const auto lines = file.lines();
  CHECK(lines.size() == 100);
  CHECK(per_thread_in_order(lines, 1) == std::vector<int>{100});
  SECTION("and it can run again") {
    sink.start();
    CHECK(sink.submit(record(0, 100)) == LogSink::Outcome::kQueued);
    sink.stop();
    CHECK(file.lines().size() == 101);
  }
}

TEST_CASE("a log sink keeps each thread's records in order, also across a stop", "[service]") {
  constexpr int kThreads = 4;
  constexpr long kRecords = 5000;
  LogFile file;
  // A short linger, so that the writer writes many batches while the threads submit.
  LogSink sink(LogSinkOptions{file.fd(), std::size_t{64} * 1024 * 1024, 100us});
  sink.start();
  std::atomic<long> submitted{0};
  std::atomic<long> not_kept{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (long n = 0; n < kRecords; ++n) {
        if (sink.submit(record(t, n)) == LogSink::Outcome::kDropped) ++not_kept;
        ++submitted;
      }
    });
  }
  // Stop while the threads still submit: their later records are written synchronously.
  for (int spins = 0; submitted.load() < kThreads * kRecords / 2 && spins < 10'000'000; ++spins) {
    std::this_thread::yield();
  }
  sink.stop();
  for (auto& thread : threads) thread.join();
  CHECK(not_kept.load() == 0);
  CHECK(sink.dropped() == 0);
  CHECK(per_thread_in_order(file.lines(), kThreads) ==
        std::vector<int>(kThreads, static_cast<int>(kRecords)));
}

TEST_CASE("a full log sink drops records, counts them, and writes the rest in order", "[service]") {
  // A pipe nobody reads yet: once the kernel's pipe buffer is full, the writer blocks, and the
  // queue (4 KiB) fills up behind it.
  int pipe_fds[2];
  REQUIRE(::pipe2(pipe_fds, O_CLOEXEC) == 0);
  LogSink sink(LogSinkOptions{pipe_fds[1], 4096, 0us});
  sink.start();
  const std::string padding(90, 'x');
  long queued = 0;
  long dropped = 0;
  long n = 0;
  for (; n < 200'000 && dropped < 50; ++n) {
    const LogSink::Outcome outcome = sink.submit("t0 n" + std::to_string(n) + " " + padding + "\n");
    REQUIRE(outcome != LogSink::Outcome::kWritten);
    (outcome == LogSink::Outcome::kQueued ? queued : dropped) += 1;
  }
  CHECK(dropped == 50);
  CHECK(sink.dropped() == 50);
  // The submitting thread was never held up: it got its answer for every record at once. Now
  // read the pipe, stop, and see every queued record arrive, in order.
  std::string received;
  std::thread reader([&] {
    char chunk[65536];
    for (;;) {
      const ssize_t got = ::read(pipe_fds[0], chunk, sizeof chunk);
      if (got <= 0) return;
      received.append(chunk, static_cast<std::size_t>(got));
    }
  });
  sink.stop();
  ::close(pipe_fds[1]);
  reader.join();
  ::close(pipe_fds[0]);
  std::vector<std::string> lines;
  std::istringstream in(received);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  CHECK(static_cast<long>(lines.size()) == queued);
  CHECK(per_thread_in_order(lines, 1) == std::vector<int>{static_cast<int>(queued)});
  CHECK(queued + dropped == n);
}

TEST_CASE("a record longer than a log sink's whole queue is still written when the queue is empty",
          "[service]") {
  LogFile file;
  LogSink sink(LogSinkOptions{file.fd(), 16, 0us});
  sink.start();
  const std::string long_record = "t0 n1 " + std::string(100, 'y') + "\n";
  CHECK(sink.submit(long_record) == LogSink::Outcome::kQueued);
  sink.stop();
  CHECK(file.lines() == std::vector<std::string>{long_record.substr(0, long_record.size() - 1)});
}

TEST_CASE("a log sink counts the records a failed write lost", "[service]") {
  // The read end of a pipe cannot be written to: every write fails with EBADF.
  int pipe_fds[2];
  REQUIRE(::pipe2(pipe_fds, O_CLOEXEC) == 0);
  LogSink sink(LogSinkOptions{pipe_fds[0], 4096, 3600s});
  sink.start();
  CHECK(sink.submit(record(0, 1)) == LogSink::Outcome::kQueued);
  CHECK(sink.submit(record(0, 2)) == LogSink::Outcome::kQueued);
  sink.stop();
  CHECK(sink.dropped() == 2);
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
}
