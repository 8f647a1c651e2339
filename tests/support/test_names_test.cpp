// Every Catch test must be exactly one ctest test. catch_discover_tests splits a name at ';' (a
// CMake list separator), and the halves then match no test and "pass" without running: eleven
// tests were silently skipped that way until this check. It reads every layer's test binary's list
// (they sit beside this one).
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

TEST_CASE("every test name is one ctest test: no semicolon in any name", "[meta]") {
  const auto dir = std::filesystem::read_symlink("/proc/self/exe").parent_path();
  std::size_t names = 0;
  for (const char* layer : {"protocol", "storage", "service", "client", "tools"}) {
    const auto binary = dir / (std::string("fencelock_") + layer + "_tests");
    INFO(binary.string());
    REQUIRE(std::filesystem::exists(binary));
    const std::string command = binary.string() + " --list-test-names-only";
    std::unique_ptr<FILE, int (*)(FILE*)> list(popen(command.c_str(), "r"), &pclose);
    REQUIRE(list != nullptr);
    char line[4096];
    while (std::fgets(line, sizeof line, list.get()) != nullptr) {
      const std::string name(line);
      if (name.find_first_not_of(" \n") == std::string::npos) continue;
      ++names;
      INFO(name);
      CHECK(name.find(';') == std::string::npos);
    }
  }
  CHECK(names > 600);
}
