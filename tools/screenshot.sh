#!/usr/bin/env bash
# Regenerates resources/screenshots/: the console on a private redis-server with demo traffic,
# under Xvfb, at 1024x700, 1366x768 and 1920x1080, each in a light and a dark palette, scene by
# scene (build/tests/idem-console-shots drives them): the live console, a stale lock in the
# inspector, a purge's confirmation, the race lab, the forced interleaving taught step by step,
# a stream captured and replayed in the Replay tab, a record of the HTTP demo's gateway in the inspector,
# the connection lost, a password refused, the audit trail of several operators; and
# projector mode on a 1024x768 projector. The README's console.png, inspector.png and racelab.png
# are the 1366x768 light ones.
#   bash tools/screenshot.sh            (after tools/test.sh or tools/run.sh built the console)
set -euo pipefail
cd "$(dirname "$0")/.."
need() { command -v "$1" >/dev/null || apt-get install -y -qq "$2" >/dev/null || sudo apt-get install -y -qq "$2"; }
need xvfb-run xvfb
need pngquant pngquant
cmake --build build --target idem-console-shots >/dev/null
out=resources/screenshots
mkdir -p "$out"

every="console,inspector,gateway,confirm,racelab,teaching,replay,history,rewound,audit,disconnected,refused"
# (disconnected kills the demo's server and refused connects elsewhere: they come last)
shoot() { # size palette scenes
  xvfb-run -a -s "-screen 0 ${1}x24" build/tests/idem-console-shots --out "$out" --palette "$2" --scenes "$3" \
    --tag "$1-$2" 2>/dev/null
}
for palette in light dark; do
  shoot 1024x700 "$palette" "$every"
  shoot 1366x768 "$palette" "$every"
  shoot 1920x1080 "$palette" "console,racelab,teaching,disconnected"
  shoot 1024x768 "$palette" "projector"
done
cp "$out/console-1366x768-light.png" "$out/console.png"
cp "$out/inspector-1366x768-light.png" "$out/inspector.png"
cp "$out/racelab-1366x768-light.png" "$out/racelab.png"
# 256 colours chosen per image: a third of the size, the colours as they were
pngquant --quality 80-95 --speed 1 --force --ext .png "$out"/*.png
echo "screenshots in $out"
