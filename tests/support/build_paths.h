// Where the build put what the tests run (binaries) and read (data files of the source tree).
// Only build_paths.cpp is compiled with these paths (tests/CMakeLists.txt): the other test files'
// command lines do not name the checkout, so a compiler cache (scripts/test.sh) serves their
// objects to any clone of the same commit.
#pragma once

namespace fencelock::testing {

const char* clock_shim_library();  // libfencelock_clock_shim.so, for LD_PRELOAD
const char* resource_store_binary();
const char* kleppmann_demo_binary();
const char* cli_binary();  // the fencelock CLI
const char* token_drawer_binary();
const char* fuzz_corpus_dir();
const char* grafana_dashboard_file();

}  // namespace fencelock::testing
