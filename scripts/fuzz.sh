#!/usr/bin/env bash
# Fuzzes fencelock's untrusted-input paths with libFuzzer (clang-14, ASan+UBSan): the HTTP request
# parser and router, the HTTP session's read path over loopback TCP, the JSON body validators, the
# hand-written body reader against nlohmann (differential), lease decoding and the RESP reply
# reader (tests/fuzz/fuzz_targets.h). Each target starts from its kept corpus,
# tests/fuzz/corpus/<target>/; a crash is written there too (crash-<sha1>), so the test suite
# replays it from then on — fix it, keep the file.
#   ./scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]     default: 60 s, every target
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
targets=${*:-http_request http_session request_body flat_json lease resp}
scripts/install-deps.sh clang-14 libclang-rt-14-dev >/dev/null
cmake -S . -B build/fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_BUILD_TYPE=Debug \
  -DFENCELOCK_SANITIZE=ON -DFENCELOCK_FUZZERS=ON >/dev/null
status=0
for target in $targets; do
  cmake --build build/fuzz -j "$(nproc)" --target "fuzz_$target" >/dev/null
  work=build/fuzz/corpus/$target
  mkdir -p "$work"
  echo "fuzz: $target for ${seconds}s"
  # New interesting inputs go to the work corpus; the kept corpus is read, crashes written into it.
  # Memory is bounded too: an input that makes one allocation over 64 MiB, or the process's
  # resident set pass 1 GiB, is a crash (http_session streams up to 16 MiB into a session whose
  # buffers must stay within its limits).
  if ! "build/fuzz/tests/fuzz/fuzz_$target" -max_total_time="$seconds" -max_len=65536 -timeout=10 \
      -rss_limit_mb=1024 -malloc_limit_mb=64 \
      -artifact_prefix="tests/fuzz/corpus/$target/" -print_final_stats=1 \
      "$work" "tests/fuzz/corpus/$target" 2>"build/fuzz/$target.log"; then
    echo "fuzz: $target found a crash (see build/fuzz/$target.log; the input is in tests/fuzz/corpus/$target/)" >&2
    status=1
  fi
  grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb" "build/fuzz/$target.log" | sed "s/^/  /" || true
done
exit "$status"
