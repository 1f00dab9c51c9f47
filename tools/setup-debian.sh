#!/usr/bin/env bash
# Installs what idem needs to build, test and run on Debian 12 (bookworm). Idempotent.
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config
  libhiredis-dev nlohmann-json3-dev libssl-dev openssl
  qt6-base-dev qt6-charts-dev libqt6opengl6-dev qtkeychain-qt6-dev libgl-dev
  redis-server redis-tools
  postgresql-15 libpq-dev
  clang-14 libclang-rt-14-dev
  xvfb xauth imagemagick
  nginx wrk # idem-gateway-bench --nginx: nginx as upstream and as a plain reverse proxy, wrk as the load
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  SUDO="sudo"
fi
echo "setup: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
# Debian's packages start a system redis-server and PostgreSQL cluster; idem never needs them (its
# tests start private ones: initdb as the "postgres" user postgresql-15 makes, when run as root)
