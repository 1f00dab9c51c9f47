#!/usr/bin/env bash
# Runs a libFuzzer target on its corpus (docs/fuzzing.md).
#   bash tools/fuzz.sh TARGET [SECONDS]     one target, 600 s by default
#   bash tools/fuzz.sh all [SECONDS]        every target in turn (what tools/test.sh runs briefly)
# Builds build-fuzz with clang first. New inputs grow build-fuzz/corpus/TARGET (not the tree); a
# failing input is left in build-fuzz/artifacts/: keep it as tests/fuzz/corpus/TARGET/found-<what>
# once fixed, so ctest replays it in every build for ever.
set -euo pipefail
cd "$(dirname "$0")/.."
targets=(record json url eventlog capture resp duration http httpresponse)
target=${1:?"usage: tools/fuzz.sh TARGET|all [SECONDS]  (targets: ${targets[*]})"}
seconds=${2:-600}
if [ "$target" != all ] && [[ ! " ${targets[*]} " =~ " $target " ]]; then
  echo "fuzz: no target '$target' (targets: ${targets[*]})" >&2
  exit 64
fi

if [ ! -f build-fuzz/build.ninja ]; then
  CC=clang-14 CXX=clang++-14 cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DIDEM_FUZZ=ON \
    -DIDEM_WERROR=ON -DIDEM_BUILD_TESTS=OFF -DIDEM_BUILD_APPS=OFF -DIDEM_BUILD_CONSOLE=OFF >/dev/null
fi
# only the libFuzzer binaries: the corpus replays (fuzz_*_replay) run in the other builds' ctest
if [ "$target" = all ]; then run_targets=("${targets[@]}"); else run_targets=("$target"); fi
if ! cmake --build build-fuzz -j "$(nproc)" --target "${run_targets[@]/#/fuzz_}" >build-fuzz/build.log 2>&1; then
  tail -40 build-fuzz/build.log >&2
  echo "fuzz: the clang build failed (build-fuzz/build.log)" >&2
  exit 1
fi

run() {
  local t=$1 work=build-fuzz/corpus/$1
  mkdir -p "$work" build-fuzz/artifacts
  echo "== fuzz $t for ${seconds}s"
  # -timeout: a single input taking 10 s is a finding; the stats line says exec/s, cov and ft
  if ! build-fuzz/tests/fuzz/fuzz_"$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="build-fuzz/artifacts/$t-" "$work" "tests/fuzz/corpus/$t" \
      >"build-fuzz/fuzz-$t.log" 2>&1; then
    grep -v "^#" "build-fuzz/fuzz-$t.log" | tail -40 >&2
    echo "fuzz $t: FAILED; the input is in build-fuzz/artifacts/ (log: build-fuzz/fuzz-$t.log)" >&2
    return 1
  fi
  grep -E "^#[0-9]+[[:space:]]+DONE|stat::number_of_executed_units|stat::average_exec_per_sec" "build-fuzz/fuzz-$t.log" || true
}

for t in "${run_targets[@]}"; do run "$t"; done
