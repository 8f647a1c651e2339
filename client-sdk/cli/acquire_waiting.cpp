#include "acquire_waiting.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <optional>
#include <thread>

#include "child_environment.h"

namespace fencelock::cli {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// fencelockd's default --max-wait: the longest wait one request asks for.
constexpr milliseconds kLongestRequestWait{60'000};
// Between attempts when the service could not answer: short enough to notice it is back soon.
constexpr milliseconds kPauseWhenUnavailable{1000};

// A fencelockd with a lower --max-wait refuses a longer wait_ms with "wait_ms must be an integer
// between 0 and N": its N, so that the next request fits.
std::optional<milliseconds> service_max_wait(const Error& error) {
  constexpr std::string_view kPrefix = "wait_ms must be an integer between 0 and ";
  if (error.code != ErrorCode::kInvalidArgument || !error.message.starts_with(kPrefix))
    return std::nullopt;
  const std::string_view rest = std::string_view(error.message).substr(kPrefix.size());
  std::int64_t value = 0;
  const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), value);
  if (ec != std::errc() || end != rest.data() + rest.size() || value <= 0) return std::nullopt;
  return milliseconds(value);
}

// One request of the kind args asks for.
Result<Lease> acquire_once(Client& client, const CliArgs& args, milliseconds wait) {
  switch (lease_kind_of(args)) {
    case LeaseKind::kSet:
      return client.acquire_set(args.names, args.ttl, wait, args.owner);
    case LeaseKind::kPermit:
      return client.acquire_permit(args.name, *args.permits, args.ttl, wait, args.owner);
    case LeaseKind::kRead:
      return client.acquire_read(args.name, args.ttl, wait, args.owner);
    case LeaseKind::kWrite:
      return client.acquire_write(args.name, args.ttl, wait, args.owner);
    case LeaseKind::kLock:
      break;
  }
  return client.acquire(args.name, args.ttl, wait, args.owner, args.request_id);
}

std::string tokens_said(const Lease& lease) {
  if (lease.kind() == LeaseKind::kSet) return "tokens " + tokens_text(lease);
  std::string text = "token " + std::to_string(lease.token());
  if (lease.kind() == LeaseKind::kPermit)
    text +=
        " (slot " + std::to_string(lease.slot()) + " of " + std::to_string(lease.permits()) + ")";
  return text;
}

std::string seconds_text(milliseconds d) {
  return std::to_string(d.count() / 1000) + "." + std::to_string(d.count() % 1000 / 100) + "s";
}

}  // namespace

void say(const CliArgs& args, const std::string& what) {
  if (args.verbose) std::fprintf(stderr, "fencelock: %s\n", what.c_str());
}

Result<Lease> acquire_waiting(Client& client, const CliArgs& given) {
  const auto started = Clock::now();
  // One request id for every request of the call: one that timed out may have been granted, and
  // the next then answers that grant instead of being refused by it.
  CliArgs args = given;
  if (args.request_id.empty() && lease_kind_of(args) == LeaseKind::kLock)
    args.request_id = new_request_id();
  const bool waits = args.wait_forever || args.wait.count() > 0;
  const auto deadline = args.wait_forever ? Clock::time_point::max() : started + args.wait;
  milliseconds longest = kLongestRequestWait;
  for (int attempt = 1;; ++attempt) {
    const auto now = Clock::now();
    const milliseconds left =
        deadline == Clock::time_point::max()
            ? longest
            : std::max(milliseconds(0), std::chrono::duration_cast<milliseconds>(deadline - now));
    const milliseconds wait = std::min(left, longest);
    say(args, "acquiring '" + args.name + "' (ttl " + seconds_text(args.ttl) + ", waiting up to " +
                  seconds_text(wait) + " in this request, attempt " + std::to_string(attempt) +
                  ")");
    auto lease = acquire_once(client, args, wait);
    if (lease.ok()) {
      say(args, "acquired '" + args.name + "' with " + tokens_said(lease.value()) + " after " +
                    seconds_text(std::chrono::duration_cast<milliseconds>(Clock::now() - started)));
      return lease;
    }
    const Error& error = lease.error();
    if (const auto cap = service_max_wait(error); cap && *cap < longest) {
      say(args, "the service waits at most " + seconds_text(*cap) + " per request");
      longest = *cap;
      continue;
    }
    const bool worth_waiting = error.code == ErrorCode::kLocked ||
                               error.code == ErrorCode::kUnavailable ||
                               error.code == ErrorCode::kTransport;
    if (!waits || !worth_waiting || Clock::now() >= deadline) return lease;
    if (error.code == ErrorCode::kLocked) {
      say(args, "'" + args.name + "' is still held by another lease" +
                    (args.permits ? " (every permit)" : "") + "; waiting on");
      continue;
    }
    say(args, "the service cannot answer (" + error.message + "); asking again in " +
                  seconds_text(kPauseWhenUnavailable));
    const auto resume = std::min(deadline, Clock::now() + kPauseWhenUnavailable);
    std::this_thread::sleep_until(resume);
    if (Clock::now() >= deadline) return lease;
  }
}

}  // namespace fencelock::cli
