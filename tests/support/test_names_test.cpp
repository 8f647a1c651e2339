// Every Catch test must be exactly one ctest test. catch_discover_tests splits a name at ';' (a
// CMake list separator), and the halves then match no test and "pass" without running: eleven
// tests were silently skipped that way until this check.
#include <catch2/catch.hpp>
#include <string>

TEST_CASE("every test name is one ctest test: no semicolon in any name", "[meta]") {
  const auto& tests = Catch::getRegistryHub().getTestCaseRegistry().getAllTests();
  CHECK(tests.size() > 100);
  for (const auto& test : tests) {
    INFO(test.name);
    CHECK(test.name.find(';') == std::string::npos);
  }
}
