// Request-body parsing on the hot path, measured (issue #35 item 12): FlatJsonObject (ours,
// service/src/api/flat_json.h) against simdjson 3's On-Demand API and nlohmann::json::parse, on
// the bodies of acquire, extend and release. Each reader finds every field, checks that no other
// is there and takes its value (integers, the lease string), as request_body.cpp does. Prints ns
// per body, the best of kRounds rounds of kBodies bodies each. Built only where simdjson's
// development files are (Debian: libsimdjson-dev). Figures: docs/architecture.md.
#include <simdjson.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "api/flat_json.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kRounds = 7;
constexpr int kBodies = 200'000;

struct Body {
  const char* route;
  std::string text;
};

// What a reader takes from a body; summed so that no work is optimized away.
struct Taken {
  std::uint64_t integers = 0;
  std::size_t text_bytes = 0;
  bool ok = true;
};

bool known(std::string_view key) {
  return key == "ttl_ms" || key == "wait_ms" || key == "lease" || key == "owner";
}

void read_flat(std::string_view body, Taken& taken) {
  const auto object = fencelock::service::FlatJsonObject::parse(body);
  if (!object) {
    taken.ok = false;
    return;
  }
  for (std::size_t i = 0; i < object->size(); ++i) taken.ok &= known(object->key(i));
  for (const char* name : {"ttl_ms", "wait_ms"}) {
    if (const auto* value = object->find(name)) taken.integers += value->unsigned_value;
  }
  if (const auto* lease = object->find("lease")) taken.text_bytes += lease->text.size();
}

void read_simdjson(simdjson::ondemand::parser& parser, const simdjson::padded_string_view body,
                   Taken& taken) {
  simdjson::ondemand::document document;
  simdjson::ondemand::object object;
  if (parser.iterate(body).get(document) || document.get_object().get(object)) {
    taken.ok = false;
    return;
  }
  for (auto field : object) {
    std::string_view key;
    if (field.unescaped_key().get(key)) {
      taken.ok = false;
      return;
    }
    taken.ok &= known(key);
    if (key == "lease") {
      std::string_view text;
      taken.ok &= !field.value().get_string().get(text);
      taken.text_bytes += text.size();
    } else {
      std::uint64_t number = 0;
      taken.ok &= !field.value().get_uint64().get(number);
      taken.integers += number;
    }
  }
}

void read_nlohmann(std::string_view body, Taken& taken) {
  const auto parsed = nlohmann::json::parse(body.begin(), body.end(), nullptr, false);
  if (!parsed.is_object()) {
    taken.ok = false;
    return;
  }
  for (const auto& [key, value] : parsed.items()) taken.ok &= known(key);
  for (const char* name : {"ttl_ms", "wait_ms"}) {
    if (const auto it = parsed.find(name); it != parsed.end()) {
      taken.integers += it->get<std::uint64_t>();
    }
  }
  if (const auto it = parsed.find("lease"); it != parsed.end()) {
    taken.text_bytes += it->get_ref<const std::string&>().size();
  }
}

// ns per body, the best round.
template <typename Read>
double best_ns(Read read) {
  double best = 1e18;
  for (int round = 0; round < kRounds; ++round) {
    const auto start = Clock::now();
    for (int i = 0; i < kBodies; ++i) read();
    const std::chrono::duration<double, std::nano> took = Clock::now() - start;
    best = std::min(best, took.count() / kBodies);
  }
  return best;
}

}  // namespace

int main() {
  const std::string lease = "17.4f1c0e9a2b7d4c6e8f0a1b2c3d4e5f6071c2d9e04b3a8f15";
  const std::array<Body, 3> bodies{{
      {"acquire", R"({"ttl_ms":30000,"wait_ms":5000})"},
      {"extend", R"({"lease":")" + lease + R"(","ttl_ms":30000})"},
      {"release", R"({"lease":")" + lease + R"("})"},
  }};
  simdjson::ondemand::parser parser;
  std::printf("%-8s %10s %18s %18s %10s\n", "body", "flat (ns)", "simdjson pad (ns)",
              "simdjson copy (ns)", "nlohmann");
  for (const Body& body : bodies) {
    Taken flat, padded, copied, dom;
    // The best case for simdjson: the body already sits in a buffer with SIMDJSON_PADDING spare
    // bytes. The usual one: a body read into a std::string is copied into a padded string.
    std::string spare = body.text;
    spare.reserve(body.text.size() + simdjson::SIMDJSON_PADDING);
    const simdjson::padded_string_view in_place(spare.data(), spare.size(), spare.capacity());
    const double flat_ns = best_ns([&] { read_flat(body.text, flat); });
    const double padded_ns = best_ns([&] { read_simdjson(parser, in_place, padded); });
    const double copied_ns = best_ns([&] {
      const simdjson::padded_string copy(body.text);
      read_simdjson(parser, copy, copied);
    });
    const double dom_ns = best_ns([&] { read_nlohmann(body.text, dom); });
    const bool agree = flat.ok && padded.ok && copied.ok && dom.ok &&
                       flat.integers == dom.integers && padded.integers == dom.integers &&
                       flat.text_bytes == dom.text_bytes && padded.text_bytes == dom.text_bytes;
    std::printf("%-8s %10.1f %18.1f %18.1f %10.1f%s\n", body.route, flat_ns, padded_ns, copied_ns,
                dom_ns, agree ? "" : "  (readers disagree!)");
    if (!agree) return 1;
  }
  return 0;
}
