#include "build_paths.h"

namespace fencelock::testing {

const char* clock_shim_library() {
  return FENCELOCK_CLOCK_SHIM;
}
const char* resource_store_binary() {
  return FENCELOCK_RESOURCE_STORE;
}
const char* kleppmann_demo_binary() {
  return FENCELOCK_KLEPPMANN_DEMO;
}
const char* cli_binary() {
  return FENCELOCK_CLI_BINARY;
}
const char* token_drawer_binary() {
  return FENCELOCK_TOKEN_DRAWER;
}
const char* fuzz_corpus_dir() {
  return FENCELOCK_FUZZ_CORPUS;
}
const char* grafana_dashboard_file() {
  return FENCELOCK_GRAFANA_DASHBOARD;
}

}  // namespace fencelock::testing
