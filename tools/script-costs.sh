#!/usr/bin/env bash
# What the pieces of a script cost Redis, in instructions per EVALSHA, counted with callgrind in a
# private redis-server: each snippet runs 2000 times from redis-benchmark with the shape of idem's
# acquire (two keys, four arguments), and is printed against "return 1" with the same shape. The
# README's per-call figures (what a redis.call, a field, a table reply costs) come from this.
#
#   tools/script-costs.sh                (about a minute)
#
# Needs valgrind (callgrind_control), redis-server, redis-cli, redis-benchmark.
set -euo pipefail
n=2000
die() { echo "script-costs: $*" >&2; exit 1; }
for tool in valgrind callgrind_control redis-server redis-cli redis-benchmark; do
    command -v "$tool" >/dev/null || die "$tool is not installed"
done
source "$(dirname "$0")/private-redis.sh"
private_redis valgrind --tool=callgrind --callgrind-out-file="$dir/cg.%p"
cli() { redis-cli -p "$port" "$@"; }

# 100 000 completed records shaped like idem's (seven fields), for the snippets that read one
cli EVAL "for i = 0, 99999 do
  local k = 'done:{' .. string.format('%012d', i) .. '}'
  redis.call('HSET', k, 'state', 'COMPLETED', 'token', 'tok-0123456789abcdef01234567', 'fence', '1700000000123456',
             'started_ms', '1700000000123', 'lease_until_ms', '1700000000456', 'response', 'ok load-1234',
             'finished_ms', '1700000000200')
  redis.call('PEXPIRE', k, 3600000)
end" 0 >/dev/null

# script $2 run $3 times on keys with prefix $1 (new: fresh random keys; done: the records), in
# shape $4: acquire's two keys and four arguments (the default), one-key (the record alone, four
# arguments) or one-key-5 (five)
calls() {
    local range=100000000 shape=${4:-acquire}
    [[ $1 == done ]] && range=100000
    local keys=("$1:{__rand_int__}" "$1:{__rand_int__}:m")
    [[ $shape != acquire ]] && keys=("$1:{__rand_int__}")
    local args=(30000 40000 '' tok-0123456789abcdef01234567)
    [[ $shape == one-key-5 ]] && args+=(x)
    redis-benchmark -p "$port" -c 1 -n "$3" -r "$range" EVALSHA "$2" "${#keys[@]}" "${keys[@]}" "${args[@]}" >/dev/null
}
# instructions per call of script $2 on keys with prefix $1
count() {
    local sha dump total
    sha=$(cli SCRIPT LOAD "$2")
    calls "$1" "$sha" 200 "${3:-}" # warm up
    callgrind_control -z "$pid" >/dev/null 2>&1
    calls "$1" "$sha" "$n" "${3:-}"
    callgrind_control -d "$pid" >/dev/null 2>&1
    dump=$(ls -t "$dir"/cg."$pid".* | head -1)
    total=$(awk '/^(summary|totals):/ { print $2; exit }' "$dump")
    echo $((total / n))
}

base=$(count new "return 1")
printf '%-62s %8s\n' "EVALSHA, 2 keys + 4 arguments: return 1 (the base)" "$base"
row() { # label, keys (new|done), script
    local c
    c=$(count "$2" "$3")
    printf '%-62s %+8d\n' "$1" $((c - base))
}
five="redis.call('HSET', KEYS[1], 'state', 'STARTED', 'token', ARGV[4], 'fence', '1700000000123456', 'started_ms', '1700000000123', 'lease_until_ms', '1700000000456')"
one=$(count new "return 1" one-key)
printf '%-62s %+8d\n' "a key less (EVALSHA, 1 key + 4 arguments: return 1)" $((one - base))
printf '%-62s %+8d\n' "an argument more (EVALSHA, 1 key + 5 arguments: return 1)" $(($(count new "return 1" one-key-5) - one))
row "redis.call('TIME')" new "redis.call('TIME') return 1"
row "EXISTS of both keys (absent)" new "redis.call('EXISTS', KEYS[1], KEYS[2]) return 1"
row "HSET of one field, new key" new "redis.call('HSET', KEYS[1], 'state', 'STARTED') return 1"
row "HSET of five fields, new key" new "$five return 1"
row "HSET of five fields + PEXPIRE, new key" new "$five redis.call('PEXPIRE', KEYS[1], ARGV[2]) return 1"
row "SET NX PX of a 70-byte string, new key" new "redis.call('SET', KEYS[1], 'STARTED tok-0123456789abcdef01234567 1700000000123456 1700000000123 1700000000456', 'NX', 'PX', ARGV[2]) return 1"
row "HMGET of 3 fields (state, fence, response), stored record" done "redis.call('HMGET', KEYS[1], 'state', 'fence', 'response') return 1"
row "HMGET of 4 fields (+ fp, absent), stored record" done "redis.call('HMGET', KEYS[1], 'state', 'fp', 'fence', 'response') return 1"
row "a number passed to redis.call (HSET one field, number)" new "redis.call('HSET', KEYS[1], 'state', 1700000000123456) return 1"
row "reply: a table of one string" new "return {'ACQUIRED'}"
row "reply: a table of six (a string, five integers)" new "return {'ACQUIRED', 1700000000123456, 1, 1700000000456, 0, 1700000000123}"
row "reply: a table of six, grown element by element" new "local t = {} for i = 1, 6 do t[i] = i end return t"
row "reply: one string of 52 bytes" new "return 'ACQUIRED 1700000000123456 1 1700000000456 0 1700000000123'"
row "string.format('%d', n) of a 13-digit number" new "local s = string.format('%d', 1700000000456) return 1"
row "the same number made a string by concatenation (n .. '')" new "local s = 1700000000456 .. '' return 1"
row "a string argument made a number (ARGV[1] + 0)" new "local x = ARGV[1] + 0 return 1"
row "s:sub(1, 3) of a 6-character string" new "local x = ARGV[1]:sub(1, 3) return 1"
row "a 42-byte string made by concatenating five" new "local x = ARGV[4] .. ' 1 ' .. ARGV[1] .. ' ' .. ARGV[2] return 1"
row "a closure that captures nothing (made, not called)" new "local function f(a) return a end return 1"
row "a closure that captures eight locals (made, not called)" new "local a, b, c, d, e, g, h, i = 1, 2, 3, 4, 5, 6, 7, 8
local function f() return a, b, c, d, e, g, h, i end return 1"
echo "instructions per EVALSHA in redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/'), $n calls each (callgrind); rows: more than the base"
