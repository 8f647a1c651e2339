# FENCELOCK_SANITIZE=ON builds everything (project code and tests) with ASan+UBSan; the test
# command uses it. UBSan findings abort so that a test run cannot pass over one.
if(FENCELOCK_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=undefined
                      -fno-omit-frame-pointer -O1)
  add_link_options(-fsanitize=address,undefined)
endif()

# FENCELOCK_FUZZERS=ON (clang; scripts/fuzz.sh): every target is built with libFuzzer's coverage
# instrumentation, so the fuzzers see into the libraries they drive (tests/fuzz/).
option(FENCELOCK_FUZZERS "Build libFuzzer executables (clang only)" OFF)
if(FENCELOCK_FUZZERS)
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
