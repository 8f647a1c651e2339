// libFuzzer's entry point for one target, chosen at build time (FENCELOCK_FUZZ_TARGET).
#include "fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fencelock::fuzz::FENCELOCK_FUZZ_TARGET(data, size);
  return 0;
}
