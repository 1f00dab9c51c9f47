#!/usr/bin/env bash
# How long a loopback round trip takes across two CPUs depending on how the client waits, against
# redis-benchmark in the same run: a private redis-server on the first CPU, every client on the
# second, runs alternating, medians printed. The README's figures on redis-benchmark's lead come
# from this. The last rows stay busy for a while after sending (work that does not touch the
# socket): on a VM whose idle vCPUs halt, a client that sleeps later is woken sooner.
#   tools/wait-styles.sh [RUNS]        (default 6; about a minute)
# Needs cc, taskset, redis-server, redis-cli, redis-benchmark; at least two CPUs.
set -euo pipefail
runs=${1:-6}
die() { echo "wait-styles: $*" >&2; exit 1; }
[[ $runs =~ ^[0-9]+$ ]] && ((runs >= 1 && runs <= 100)) || die "RUNS is a whole number from 1 to 100"
for tool in cc taskset redis-server redis-cli redis-benchmark; do
    command -v "$tool" >/dev/null || die "$tool is not installed"
done
cpus=($(taskset -pc $$ | sed 's/.*: //' | tr ',' '\n' | while read -r r; do
    if [[ $r == *-* ]]; then seq "${r%-*}" "${r#*-}"; else echo "$r"; fi
done))
((${#cpus[@]} >= 2)) || die "needs two CPUs"
source "$(dirname "$0")/private-redis.sh"
cc -O2 -o "$dir/wait-styles" "$(dirname "$0")/wait-styles.c"
private_redis taskset -c "${cpus[0]}"

client() { taskset -c "${cpus[1]}" "$@"; }
names=("blocking read()" "epoll_wait, then read()" "redis-benchmark's sequence of calls" \
       "blocking read() with SO_RCVTIMEO" "spinning 30 us on recv(), then epoll")
# style 5: blocking read() after N microseconds of work that does not touch the socket
busy=(5 10 20)
declare -A samples
for _ in $(seq "$runs"); do
    for style in 0 1 2 3 4; do
        samples[$style]+="$(client "$dir/wait-styles" "$port" "$style") "
    done
    for b in "${busy[@]}"; do
        samples[busy$b]+="$(client "$dir/wait-styles" "$port" 5 16000 "$b") "
    done
    rps=$(client redis-benchmark -p "$port" -c 1 -n 16000 -t ping_mbulk --csv | tail -1 | cut -d'"' -f4)
    samples[rb]+="$(awk -v r="$rps" 'BEGIN { printf "%.1f", 1e6 / r }') "
done
median() { tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo "PING round trip across two CPUs (server on CPU ${cpus[0]}, clients on CPU ${cpus[1]}), median of $runs runs:"
printf '  %-52s %6s us\n' "redis-benchmark -c 1 -t ping_mbulk" "$(echo "${samples[rb]}" | median)"
for style in 0 1 2 3 4; do
    printf '  %-52s %6s us\n' "C client: ${names[$style]}" "$(echo "${samples[$style]}" | median)"
done
for b in "${busy[@]}"; do
    printf '  %-52s %6s us\n' "C client: $b us busy after write(), blocking read()" "$(echo "${samples[busy$b]}" | median)"
done
