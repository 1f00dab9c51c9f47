#!/usr/bin/env bash
# One command for the main job: installs dependencies, builds, and runs the demo on a private
# redis-server (duplicate deliveries racing through `idemctl run`). Extra arguments go to the demo,
# e.g. tools/run.sh --ids 10 --duplicates 8, or --url redis://host:6379/0 for a server of yours.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup-debian.sh >&2
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >&2
cmake --build build -j "$(nproc)" >&2
exec build/app/idemctl demo "$@"
