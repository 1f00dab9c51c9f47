#!/usr/bin/env bash
# One command for all tests: installs dependencies, builds with warnings as errors, runs the Qt Test
# suite through ctest (a fixture starts a private redis-server), then builds and runs it again under
# AddressSanitizer + UndefinedBehaviorSanitizer, and the async suites under ThreadSanitizer. Both
# ctest runs replay every fuzz target's corpus; IDEM_FUZZ=1 also fuzzes each target briefly (clang,
# libFuzzer), which CI leaves out to stay within its 30 minutes (tools/fuzz.sh fuzzes by hand).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup-debian.sh
jobs=$(nproc)
# The plain suites mostly wait (failovers, lease expiries, servers starting): on 2 cores they use
# about a quarter of the CPU at -j2, and -j4 halves the wall time. Under the sanitizers they are
# CPU-bound and their lease and failover timings get tight, so those run 2 at a time.
# IDEM_TEST_JOBS and IDEM_SANITIZER_TEST_JOBS override.
test_jobs=${IDEM_TEST_JOBS:-4}
sanitizer_test_jobs=${IDEM_SANITIZER_TEST_JOBS:-2}
# each stage says when it began (UTC): where CI's 30 minutes go
stage() { echo "== $* ($(date -u +%H:%M:%S))"; }

stage "build (warnings are errors)"
# optimised, without debug information: the tests need neither -O2 nor symbols, and a 2-core CI
# machine builds this way in about two thirds of the time (the benchmarks' figures come from
# tools/run.sh's or a RelWithDebInfo build, not from this one)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -DNDEBUG" \
  -DIDEM_WERROR=ON -DIDEM_BUILD_TESTS=ON
cmake --build build -j "$jobs"
stage "tests"
(cd build && ctest --output-on-failure -j "$test_jobs")

if [ "${IDEM_SKIP_SANITIZERS:-0}" != 1 ]; then
  stage "build with AddressSanitizer + UBSan"
  # line tables only (-g1): what the sanitizers' reports need (file:line), at a fraction of -g's cost
  # without the corpus replays when the fuzz stage runs: libFuzzer runs every corpus input first,
  # under ASan + UBSan too
  replay=ON
  [ "${IDEM_FUZZ:-0}" = 1 ] && replay=OFF
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-g1 -DIDEM_WERROR=ON \
    -DIDEM_SANITIZE=ON -DIDEM_BUILD_TESTS=ON -DIDEM_FUZZ_REPLAY=$replay
  cmake --build build-asan -j "$jobs"
  stage "tests under AddressSanitizer + UBSan"
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:strict_string_checks=1
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  (cd build-asan && ctest --output-on-failure -j "$sanitizer_test_jobs")

  # The async cores' threads (I/O threads, watchdog, callers; Redis and PostgreSQL's pipelines)
  # under ThreadSanitizer: their suites only, which keeps the third build small. IDEM_SKIP_TSAN=1
  # skips it.
  if [ "${IDEM_SKIP_TSAN:-0}" != 1 ]; then
    stage "build the async suites with ThreadSanitizer"
    cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-g1 -DIDEM_WERROR=ON \
      -DIDEM_SANITIZE=thread -DIDEM_BUILD_TESTS=ON
    cmake --build build-tsan -j "$jobs" --target tst_async tst_asyncexec tst_pgpipeline idem-test-redis
    stage "the async suites under ThreadSanitizer"
    export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 die_after_fork=0 suppressions=$PWD/tools/tsan.supp"
    (cd build-tsan && ctest --output-on-failure -R '^(redis\.start|async|asyncexec|pgpipeline|redis\.stop)$')
  fi
fi

if [ "${IDEM_FUZZ:-0}" = 1 ]; then
  seconds=${IDEM_FUZZ_SECONDS:-3} # a smoke run; tools/fuzz.sh runs 600 s a target by hand
  stage "fuzz: each target ${seconds}s on its corpus (clang, libFuzzer + ASan + UBSan)"
  bash tools/fuzz.sh all "$seconds"
fi
