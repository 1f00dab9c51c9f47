# Sourced by the measuring tools in tools/: a private redis-server in a temporary directory on a
# free loopback port, stopped and removed when the tool exits. The tool defines die() first.
#
#   private_redis [PREFIX...]   runs "PREFIX... redis-server ..." in the background (a prefix such
#                               as "taskset -c 0" or "valgrind --tool=callgrind ..."), sets port and
#                               pid, and waits up to 20 s for it to answer PING
#   $dir                        the temporary directory (the server's, and the tool's own files)
dir=$(mktemp -d)
pid=
cleanup() {
    [[ -n $pid ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    rm -rf "$dir"
}
trap cleanup EXIT

private_redis() {
    # a free loopback port: one nothing answers on
    for _ in $(seq 50); do
        port=$((20000 + RANDOM % 30000))
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || break
    done
    "$@" redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" \
        >"$dir/server.log" 2>&1 &
    pid=$!
    for _ in $(seq 200); do
        redis-cli -p "$port" PING >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    die "redis-server did not start: $(grep -v '^==' "$dir/server.log" | tail -3)" # not valgrind's lines
}
