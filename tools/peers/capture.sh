#!/usr/bin/env bash
# Captures other idempotency libraries' Redis records into tests/data/peers/<profile>.json.
#
#   bash tools/peers/capture.sh [OUTDIR]          # OUTDIR defaults to tests/data/peers
#   PEERS_ONLY=powertools,express-idempotency bash tools/peers/capture.sh
#
# Run by hand, not by CI. Needs node (20+), npm (reaching the npm registry), redis-server, python3
# (standard library only, for powertools-python) and ruby with oj (apt-get install ruby-oj, for
# idempotent-request; skipped without it). Installs the versions pinned in tools/peers/package.json
# into a temporary directory, starts a private redis-server on a free loopback port there, runs
# capture.mjs, and removes both at the end, also on error or Ctrl-C. See tools/peers/FORMATS.md.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
outdir="${1:-$root/tests/data/peers}"
mkdir -p "$outdir"
outdir="$(cd "$outdir" && pwd)"

for tool in node npm redis-server redis-cli; do
    command -v "$tool" >/dev/null || { echo "capture.sh: $tool is not installed" >&2; exit 2; }
done

work="$(mktemp -d "${TMPDIR:-/tmp}/idem-peers.XXXXXX")"
redis_pid=""
cleanup() {
    local rc=$?
    if [[ -n "$redis_pid" ]] && kill -0 "$redis_pid" 2>/dev/null; then
        kill "$redis_pid" 2>/dev/null || true
        wait "$redis_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "capture.sh: installing the pinned npm packages (tools/peers/package.json) into $work (npm install)"
cp "$here/package.json" "$here/capture.mjs" "$work/"
(cd "$work" && npm install --no-audit --no-fund --loglevel=error >"$work/npm-install.log" 2>&1) || {
    cat "$work/npm-install.log" >&2
    echo "capture.sh: npm install failed" >&2
    exit 1
}

free_port() {
    node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close();});'
}

mkdir -p "$work/redis"
port=""
for attempt in 1 2 3 4 5; do
    port="$(free_port)"
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work/redis" \
        --daemonize no --logfile "$work/redis/redis.log" &
    redis_pid=$!
    for _ in $(seq 1 100); do
        if redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null | grep -q PONG; then break; fi
        kill -0 "$redis_pid" 2>/dev/null || break
        sleep 0.05
    done
    # The PONG must come from our server (the port may have been taken in between).
    if kill -0 "$redis_pid" 2>/dev/null &&
        [[ "$(redis-cli -h 127.0.0.1 -p "$port" info server 2>/dev/null | tr -d '\r' | sed -n 's/^process_id://p')" == "$redis_pid" ]]; then
        break
    fi
    kill "$redis_pid" 2>/dev/null || true
    wait "$redis_pid" 2>/dev/null || true
    redis_pid=""
    [[ $attempt == 5 ]] && { echo "capture.sh: could not start redis-server" >&2; exit 1; }
done
echo "capture.sh: private redis-server $(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p') pid $redis_pid on 127.0.0.1:$port (dir $work/redis)"

(cd "$work" && PEERS_REDIS_PORT="$port" PEERS_OUTDIR="$outdir" node capture.mjs)
echo "capture.sh: corpus in $outdir"
