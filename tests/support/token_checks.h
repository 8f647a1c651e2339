// Checks shared by the token-source and cluster tests: uniqueness, per-thread order and real-time
// order of concurrent draws.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "fencelock/storage/token_source.h"

namespace fencelock::testing {

struct Draw {
  std::chrono::steady_clock::time_point called, returned;
  std::uint64_t token = 0;
  int thread = 0;
};

inline storage::Result<std::uint64_t> draw_one(storage::TokenSource& source,
                                               const std::string& name) {
  std::promise<storage::Result<std::uint64_t>> drawn;
  source.next(name,
              [&](storage::Result<std::uint64_t> token) { drawn.set_value(std::move(token)); });
  return drawn.get_future().get();
}

inline storage::Result<std::uint64_t> current_of(storage::TokenSource& source,
                                                 const std::string& name) {
  std::promise<storage::Result<std::uint64_t>> read;
  source.current(name,
                 [&](storage::Result<std::uint64_t> token) { read.set_value(std::move(token)); });
  return read.get_future().get();
}

// Calls next() for every name in `names`, in order, without waiting for any answer — so that the
// draws pile up behind each other and a source that batches serves many of them together — then
// waits for every answer. Answers are in the order of `names`. A source that leaves a draw
// unanswered for 30 s aborts the test run: the pending callbacks refer to this frame.
inline std::vector<storage::Result<std::uint64_t>> draw_burst(
    storage::TokenSource& source, const std::vector<std::string>& names) {
  std::vector<std::promise<storage::Result<std::uint64_t>>> answers(names.size());
  std::vector<std::future<storage::Result<std::uint64_t>>> futures;
  for (auto& answer : answers) futures.push_back(answer.get_future());
  for (std::size_t i = 0; i < names.size(); ++i) {
    source.next(names[i], [&answers, i](storage::Result<std::uint64_t> token) {
      answers[i].set_value(std::move(token));
    });
  }
  std::vector<storage::Result<std::uint64_t>> out;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (auto& future : futures) {
    if (future.wait_until(deadline) != std::future_status::ready) std::abort();
    out.push_back(future.get());
  }
  return out;
}

// `threads` threads each draw `per_thread` tokens of `name` one after another. Failed draws are
// returned with token 0.
inline std::vector<Draw> draw_concurrently(storage::TokenSource& source, const std::string& name,
                                           int threads, int per_thread) {
  std::vector<std::vector<Draw>> per(static_cast<std::size_t>(threads));
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      for (int i = 0; i < per_thread; ++i) {
        Draw d;
        d.thread = t;
        d.called = std::chrono::steady_clock::now();
        auto token = draw_one(source, name);
        d.returned = std::chrono::steady_clock::now();
        d.token = token.ok() ? token.value() : 0;
        per[static_cast<std::size_t>(t)].push_back(d);
      }
    });
  }
  for (auto& w : workers) w.join();
  std::vector<Draw> all;
  for (auto& p : per) all.insert(all.end(), p.begin(), p.end());
  return all;
}

// Linearizability of a counter: whenever draw a returned before draw b was called, a < b.
// Sweep: by call time, keep the greatest token among draws that returned earlier.
inline bool real_time_ordered(std::vector<Draw> draws, std::string& why) {
  std::vector<Draw> by_return = draws;
  std::sort(draws.begin(), draws.end(),
            [](const Draw& a, const Draw& b) { return a.called < b.called; });
  std::sort(by_return.begin(), by_return.end(),
            [](const Draw& a, const Draw& b) { return a.returned < b.returned; });
  std::size_t done = 0;
  std::uint64_t greatest_returned = 0;
  for (const Draw& b : draws) {
    while (done < by_return.size() && by_return[done].returned < b.called) {
      greatest_returned = std::max(greatest_returned, by_return[done].token);
      ++done;
    }
    if (b.token <= greatest_returned) {
      why = "token " + std::to_string(b.token) + " was drawn after " +
            std::to_string(greatest_returned) + " had returned";
      return false;
    }
  }
  return true;
}

// What is wrong with a set of successful draws of one name — a token of 0, a token handed out
// twice, or one out of real-time order — or "" when nothing is.
inline std::string draws_problem(const std::vector<Draw>& draws) {
  std::vector<std::uint64_t> tokens;
  for (const Draw& d : draws) {
    if (d.token == 0) return "a draw got token 0";
    tokens.push_back(d.token);
  }
  std::sort(tokens.begin(), tokens.end());
  if (std::adjacent_find(tokens.begin(), tokens.end()) != tokens.end()) {
    return "a token was handed out twice";
  }
  std::string why;
  return real_time_ordered(draws, why) ? std::string() : why;
}

}  // namespace fencelock::testing
