// An LD_PRELOAD shim that shifts one process's wall clock: clock_gettime(CLOCK_REALTIME[_COARSE]),
// gettimeofday() and time() answer the true time plus an offset, and optionally run at a drifted
// rate; CLOCK_MONOTONIC and every other clock are untouched. The fault campaign uses it to jump or
// skew a lock node's clock (Redis expires keys by its wall clock) without touching the host's.
//
// The offset file (path in FENCELOCK_CLOCK_FILE) holds "<offset ms> [<drift ppm>]", e.g. "30000"
// (30 s ahead) or "0 20000" (running 2 % fast from when the line was read). It is re-read at most
// every 10 ms, so a test changes the clock of a running process by rewriting the file.
//
// Why not libfaketime: Debian's 0.9.10 aborts redis-server 7.0 at startup (jemalloc calls
// clock_gettime while libfaketime initialises). So this shim calls the syscalls directly: no
// dlsym, no malloc, no stdio — safe to run before the process's allocator exists.
// Built without sanitizers (it is loaded into redis-server).
#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

namespace {

std::atomic<std::int64_t> g_offset_ns{0};
std::atomic<std::int64_t> g_drift_ppm{0};
std::atomic<std::int64_t> g_drift_since_ns{0};  // realtime when the current drift began
std::atomic<std::int64_t> g_next_read_ns{0};    // monotonic

std::int64_t raw_ns(clockid_t clock) {
  timespec ts{};
  syscall(SYS_clock_gettime, clock, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Parses a signed decimal at `*p`; advances past it.
std::int64_t parse_int(const char*& p, const char* end) {
  while (p < end && (*p == ' ' || *p == '\t')) ++p;
  bool negative = false;
  if (p < end && (*p == '-' || *p == '+')) negative = *p++ == '-';
  std::int64_t value = 0;
  while (p < end && *p >= '0' && *p <= '9') value = value * 10 + (*p++ - '0');
  return negative ? -value : value;
}

void refresh() {
  const std::int64_t now = raw_ns(CLOCK_MONOTONIC);
  if (now < g_next_read_ns.load(std::memory_order_relaxed)) return;
  g_next_read_ns.store(now + 10'000'000, std::memory_order_relaxed);
  const char* path = nullptr;
  for (char** env = environ; env != nullptr && *env != nullptr; ++env) {
    const char* e = *env;
    const char name[] = "FENCELOCK_CLOCK_FILE=";
    std::size_t i = 0;
    while (name[i] != '\0' && e[i] == name[i]) ++i;
    if (name[i] == '\0') path = e + i;
  }
  if (path == nullptr) return;
  const long fd = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  char buffer[64];
  const long got = syscall(SYS_read, fd, buffer, sizeof buffer);
  syscall(SYS_close, fd);
  if (got <= 0) return;
  const char* p = buffer;
  const char* end = buffer + got;
  const std::int64_t offset_ms = parse_int(p, end);
  const std::int64_t drift = parse_int(p, end);
  if (drift != g_drift_ppm.load(std::memory_order_relaxed)) {
    g_drift_since_ns.store(raw_ns(CLOCK_REALTIME), std::memory_order_relaxed);
    g_drift_ppm.store(drift, std::memory_order_relaxed);
  }
  g_offset_ns.store(offset_ms * 1'000'000, std::memory_order_relaxed);
}

std::int64_t shift(std::int64_t realtime_ns) {
  refresh();
  const std::int64_t drift = g_drift_ppm.load(std::memory_order_relaxed);
  std::int64_t shifted = realtime_ns + g_offset_ns.load(std::memory_order_relaxed);
  if (drift != 0)
    shifted += (realtime_ns - g_drift_since_ns.load(std::memory_order_relaxed)) / 1'000'000 * drift;
  return shifted;
}

}  // namespace

extern "C" {

int clock_gettime(clockid_t clock, timespec* ts) {
  const long rc = syscall(SYS_clock_gettime, clock, ts);
  if (rc == 0 && (clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE)) {
    const std::int64_t ns =
        shift(static_cast<std::int64_t>(ts->tv_sec) * 1'000'000'000 + ts->tv_nsec);
    ts->tv_sec = static_cast<time_t>(ns / 1'000'000'000);
    ts->tv_nsec = static_cast<long>(ns % 1'000'000'000);
  }
  return static_cast<int>(rc);
}

int gettimeofday(timeval* tv, void* /*tz*/) {
  const std::int64_t ns = shift(raw_ns(CLOCK_REALTIME));
  tv->tv_sec = static_cast<time_t>(ns / 1'000'000'000);
  tv->tv_usec = static_cast<suseconds_t>((ns % 1'000'000'000) / 1000);
  return 0;
}

time_t time(time_t* out) {
  const auto seconds = static_cast<time_t>(shift(raw_ns(CLOCK_REALTIME)) / 1'000'000'000);
  if (out != nullptr) *out = seconds;
  return seconds;
}

}  // extern "C"
