#include "http/session_host.h"

#include <algorithm>
#include <random>

namespace fencelock::service {

bool RequestId::accept(std::string_view text) noexcept {
  if (text.empty() || text.size() > kMaxRequestIdBytes) return false;
  for (const char c : text) {
    if (c <= ' ' || c >= 0x7f || c == '"' || c == '\\') return false;
  }
  std::copy(text.begin(), text.end(), bytes_.begin());
  size_ = text.size();
  return true;
}

void RequestId::assign_hex(std::uint64_t value) noexcept {
  constexpr char kHex[] = "0123456789abcdef";
  for (std::size_t i = 0; i < 16; ++i) bytes_[15 - i] = kHex[(value >> (4 * i)) & 0xfU];
  size_ = 16;
}

std::uint64_t SessionHost::random_request_id_base() {
  std::random_device device;
  return (std::uint64_t{device()} << 32) ^ device();
}

Admission SessionHost::add(const std::shared_ptr<Session>& session, const std::string& client) {
  Admission admission = Admission::kServe;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const std::size_t open = sessions_.size();
    std::size_t& from_client = per_client_[client];
    if (from_client >= options_.max_connections_per_client) {
      admission = Admission::kRefuseClient;
    } else if (open >= options_.max_connections + kOverCapConnections) {
      admission = Admission::kRefuseCapped;
    } else if (open >= options_.max_connections) {
      admission = Admission::kHealthOnly;
    }
    if (admission == Admission::kServe || admission == Admission::kHealthOnly) {
      ++from_client;
      sessions_.emplace(session.get(), Entry{session, client});
      open_.store(sessions_.size(), std::memory_order_relaxed);
    } else if (from_client == 0) {
      per_client_.erase(client);
    }
  }
  if (admission == Admission::kRefuseClient || admission == Admission::kRefuseCapped)
    refused_.fetch_add(1, std::memory_order_relaxed);
  return admission;
}

void SessionHost::forget(Session* session) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto found = sessions_.find(session);
    if (found == sessions_.end()) return;
    const auto client = per_client_.find(found->second.client);
    if (client != per_client_.end() && --client->second == 0) per_client_.erase(client);
    sessions_.erase(found);
    open_.store(sessions_.size(), std::memory_order_relaxed);
  }
  check_drained();
}

bool SessionHost::log_tls_handshake_failure(std::uint64_t& unlogged) {
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(log_mutex_);
  if (now - log_window_ >= std::chrono::seconds(1)) {
    log_window_ = now;
    logged_in_window_ = 0;
  }
  if (logged_in_window_ >= kHandshakeFailureLogsPerSecond) {
    ++unlogged_;
    return false;
  }
  ++logged_in_window_;
  unlogged = unlogged_;
  unlogged_ = 0;
  return true;
}

bool SessionHost::reserve_body(std::size_t bytes) {
  std::size_t held = body_bytes_.load(std::memory_order_relaxed);
  do {
    if (bytes > options_.body_memory - std::min(held, options_.body_memory)) return false;
  } while (!body_bytes_.compare_exchange_weak(held, held + bytes, std::memory_order_relaxed));
  return true;
}

void SessionHost::release_body(std::size_t bytes) {
  body_bytes_.fetch_sub(bytes, std::memory_order_relaxed);
}

std::vector<std::shared_ptr<Session>> SessionHost::drain(std::function<void()> drained) {
  draining_ = true;
  std::vector<std::shared_ptr<Session>> live;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    drained_ = std::move(drained);
    for (auto& [raw, entry] : sessions_) {
      if (auto session = entry.session.lock()) live.push_back(std::move(session));
    }
  }
  check_drained();
  return live;
}

std::function<void()> SessionHost::take_drained() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::function<void()> drained = std::move(drained_);
  drained_ = nullptr;
  return drained;
}

void SessionHost::check_drained() {
  std::function<void()> done;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!draining_ || !sessions_.empty() || !drained_) return;
    done = std::move(drained_);
    drained_ = nullptr;
  }
  done();
}

}  // namespace fencelock::service
