#!/usr/bin/env bash
# What idem's scripts cost Redis itself, in instructions per request, against the one-key reference
# script of idem-bench, all counted in one run of a private redis-server under valgrind's callgrind.
# Instruction counts repeat run after run (to within about 1 %), however noisy the machine: the
# steady companion of idem-bench's round-trip ratios.
#
#   tools/server-instructions.sh [BUILD_DIR] [REQUESTS]      (defaults: build 2000; about a minute)
#
# Needs valgrind (callgrind_control), redis-server, redis-cli, redis-benchmark and a built idem-bench.
set -euo pipefail

build=${1:-build}
n=${2:-2000}
bench="$build/app/idem-bench"
die() { echo "server-instructions: $*" >&2; exit 1; }
[[ $n =~ ^[0-9]+$ ]] && ((n >= 500 && n <= 1000000)) || die "REQUESTS is a whole number from 500 to 1000000"
[[ -x $bench ]] || die "no $bench (build first, or give the build directory)"
for tool in valgrind callgrind_control redis-server redis-cli redis-benchmark; do
    command -v "$tool" >/dev/null || die "$tool is not installed"
done

source "$(dirname "$0")/private-redis.sh"
private_redis valgrind --tool=callgrind --callgrind-out-file="$dir/cg.%p"

url="redis://127.0.0.1:$port/0"
sha=$(redis-cli -p "$port" SCRIPT LOAD "return redis.call('HSET', KEYS[1], 'state', ARGV[1])")
# warm up: idem's scripts loaded, the server's allocator and dictionaries past their first growth
"$bench" --url "$url" --load fresh --requests 500 --namespace warm >/dev/null
redis-benchmark -p "$port" -c 1 -n "$n" -r 100000000 EVALSHA "$sha" 1 'warm:{__rand_int__}' v >/dev/null

# instructions redis-server executed while "$@" ran, per request
count() {
    local requests=$1
    shift
    callgrind_control -z "$pid" >/dev/null 2>&1
    "$@" >/dev/null
    callgrind_control -d "$pid" >/dev/null 2>&1
    local dump total
    dump=$(ls -t "$dir"/cg."$pid".* | head -1)
    total=$(awk '/^(summary|totals):/ { print $2; exit }' "$dump")
    echo $((total / requests))
}

ref=$(count "$n" redis-benchmark -p "$port" -c 1 -n "$n" -r 100000000 EVALSHA "$sha" 1 'ref:{__rand_int__}' v)
refP=$(count "$n" redis-benchmark -p "$port" -c 1 -n "$n" -P 16 -r 100000000 EVALSHA "$sha" 1 'refp:{__rand_int__}' v)
fresh=$(count "$n" "$bench" --url "$url" --load fresh --requests "$n" --namespace load)
dups=$(count "$n" "$bench" --url "$url" --load duplicates --requests "$n" --namespace load)
nb=$((n / 16 * 16)) # whole batches of 16
batch=$(count "$nb" "$bench" --url "$url" --load batch --requests "$nb" --namespace load)

ratio() { awk -v r="$1" -v x="$2" 'BEGIN { printf "%.2f", r / x }'; }
echo "instructions per request in redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/'), $n requests each (callgrind)"
printf '%-58s %9s %7s\n' "" "instr." "ratio"
printf '%-58s %9d\n' "reference: EVALSHA of the one-key HSET script, -c 1" "$ref"
printf '%-58s %9d\n' "reference: the same, -c 1 -P 16" "$refP"
printf '%-58s %9d %7s\n' "(a) execute(), new id: per round trip (acquire, complete)" $((fresh / 2)) "$(ratio "$ref" $((fresh / 2)))"
printf '%-58s %9d %7s\n' "(a) execute(), duplicate (acquire)" "$dups" "$(ratio "$ref" "$dups")"
printf '%-58s %9d %7s\n' "(b) acquireBatch, per id (16 ids per call)" "$batch" "$(ratio "$refP" "$batch")"
echo "ratio = reference / idem: the share of the reference's server work idem's scripts would fit in"
