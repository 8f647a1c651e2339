#include "etcd_cluster.h"

#include <chrono>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include "http_client.h"
#include "redis_server.h"  // pick_free_port

namespace fencelock::testing {

namespace {

std::string url(std::uint16_t port) {
  return "http://127.0.0.1:" + std::to_string(port);
}

}  // namespace

EtcdCluster::EtcdCluster(std::size_t count) {
  members_.resize(count);
  for (std::size_t i = 0; i < count; ++i) {
    members_[i].name = "m" + std::to_string(i);
    members_[i].client_port = pick_free_port();
    members_[i].peer_port = pick_free_port();
    members_[i].process = std::make_unique<ChildProcess>();
    initial_cluster_ += (i == 0 ? "" : ",") + members_[i].name + "=" + url(members_[i].peer_port);
  }
  for (std::size_t i = 0; i < count; ++i) start(i);
  wait_for_leader();
}

EtcdCluster::~EtcdCluster() {
  for (auto& member : members_) member.process->kill();
}

std::vector<std::string> EtcdCluster::arguments(std::size_t i) const {
  const Member& m = members_.at(i);
  return {"etcd",
          "--name",
          m.name,
          "--data-dir",
          (dir_.path() / m.name).string(),
          "--listen-client-urls",
          url(m.client_port),
          "--advertise-client-urls",
          url(m.client_port),
          "--listen-peer-urls",
          url(m.peer_port),
          "--initial-advertise-peer-urls",
          url(m.peer_port),
          "--initial-cluster",
          initial_cluster_,
          "--initial-cluster-state",
          "new",
          "--initial-cluster-token",
          dir_.path().filename().string(),
          "--heartbeat-interval",
          "50",
          "--election-timeout",
          "500",
          "--logger",
          "zap",
          "--log-level",
          "warn"};
}

std::vector<std::string> EtcdCluster::endpoints() const {
  std::vector<std::string> all;
  for (const auto& m : members_) all.push_back("127.0.0.1:" + std::to_string(m.client_port));
  return all;
}

void EtcdCluster::kill(std::size_t i) {
  members_.at(i).process->kill();
}

void EtcdCluster::stop_all() {
  for (std::size_t i = 0; i < members_.size(); ++i) kill(i);
}

void EtcdCluster::start_all() {
  for (std::size_t i = 0; i < members_.size(); ++i) start(i);
  wait_for_leader();
}

void EtcdCluster::wipe() {
  stop_all();
  for (const auto& m : members_) std::filesystem::remove_all(dir_.path() / m.name);
  start_all();
}

void EtcdCluster::back_up() {
  stop_all();
  for (const auto& m : members_) {
    const auto copy = dir_.path() / (m.name + ".backup");
    std::filesystem::remove_all(copy);
    std::filesystem::copy(dir_.path() / m.name, copy, std::filesystem::copy_options::recursive);
  }
  start_all();
}

void EtcdCluster::restore() {
  stop_all();
  for (const auto& m : members_) {
    std::filesystem::remove_all(dir_.path() / m.name);
    std::filesystem::copy(dir_.path() / (m.name + ".backup"), dir_.path() / m.name,
                          std::filesystem::copy_options::recursive);
  }
  start_all();
}

void EtcdCluster::start(std::size_t i) {
  Member& m = members_.at(i);
  if (m.process->running()) return;
  m.process->start(arguments(i), dir_.path() / (m.name + ".log"));
}

std::optional<std::size_t> EtcdCluster::leader() {
  for (std::size_t i = 0; i < members_.size(); ++i) {
    if (!members_[i].process->running()) continue;
    HttpClient client(members_[i].client_port, std::chrono::milliseconds(500));
    const auto status = client.post("/v3/maintenance/status", nlohmann::json::object()).json();
    if (!status.is_object() || !status.contains("leader")) continue;
    const std::string leader = status.value("leader", "");
    for (std::size_t j = 0; j < members_.size(); ++j) {
      if (!members_[j].process->running()) continue;
      HttpClient other(members_[j].client_port, std::chrono::milliseconds(500));
      const auto own = other.post("/v3/maintenance/status", nlohmann::json::object()).json();
      if (own.is_object() && own.contains("header") &&
          own["header"].value("member_id", "") == leader) {
        return j;
      }
    }
  }
  return std::nullopt;
}

void EtcdCluster::wait_for_leader(std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    for (const auto& m : members_) {
      if (!m.process->running()) continue;
      const auto health =
          HttpClient(m.client_port, std::chrono::milliseconds(500)).get("/health").json();
      if (health.is_object() && health.value("health", "") == "true") return;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      throw std::runtime_error("the etcd cluster has no leader after " +
                               std::to_string(limit.count()) + " ms (logs in " +
                               dir_.path().string() + ")");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace fencelock::testing
