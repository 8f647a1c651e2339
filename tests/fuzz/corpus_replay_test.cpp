// Every input kept in tests/fuzz/corpus/<target>/ (seeds, and every crash a fuzzing run found)
// runs through its target under the test build's sanitizers: a regression that brings a crash
// back fails here, without clang or libFuzzer.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "build_paths.h"
#include "fuzz_targets.h"

TEST_CASE("fuzz: every kept corpus input runs through its target", "[fuzz]") {
  std::size_t inputs = 0;
  for (const auto& dir :
       std::filesystem::directory_iterator(fencelock::testing::fuzz_corpus_dir())) {
    const auto target = fencelock::fuzz::target_named(dir.path().filename().string());
    INFO("target " << dir.path().filename());
    REQUIRE(target != nullptr);
    for (const auto& file : std::filesystem::directory_iterator(dir.path())) {
      std::ifstream in(file.path(), std::ios::binary);
      const std::string bytes((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
      INFO("input " << file.path());
      target(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
      ++inputs;
    }
  }
  CHECK(inputs >= 10);
}
