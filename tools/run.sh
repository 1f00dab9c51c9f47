#!/usr/bin/env bash
# One command for the main job: installs dependencies, builds, and opens the console. With no
# --url it starts its own redis-server on a free loopback port with demo traffic (stopped on
# exit). Extra arguments go to idem-console: --url redis://host:6379/0, --namespace NAME,
# --read-only. For a terminal-only demo: build/app/idemctl demo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup-debian.sh >&2
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >&2
cmake --build build -j "$(nproc)" >&2
if [ -z "${DISPLAY:-}" ] && [ -z "${WAYLAND_DISPLAY:-}" ]; then
  echo "run: no display (DISPLAY/WAYLAND_DISPLAY unset); starting the console under xvfb-run would show" \
       "nothing. On a desktop run this again; in a terminal try: build/app/idemctl demo" >&2
  exit 1
fi
exec build/app/idem-console "$@"
