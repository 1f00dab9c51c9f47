#!/usr/bin/env bash
# Refreshes the README's screenshots: the console on its embedded demo server under Xvfb, the
# main window, a stale lock selected so the inspector shows its record, and the race lab after
# firing all four strategies.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v xdotool >/dev/null || { apt-get install -y -qq xdotool >/dev/null || sudo apt-get install -y -qq xdotool; }
out=resources/screenshots
mkdir -p "$out"
audit=$(mktemp)
xvfb-run -a -s "-screen 0 1320x860x24" bash -c "
  build/app/idem-console --audit-file '$audit' & pid=\$!
  sleep 12
  xdotool search --sync --name 'idem console' windowmove 0 0 windowsize 1320 860
  sleep 1
  import -window root '$out/console.png'
  xdotool mousemove 259 107 click 1   # the 'Stale' counter: show stale locks only
  sleep 1
  xdotool mousemove 120 340 click 1   # the first row
  sleep 2
  import -window root '$out/inspector.png'
  xdotool mousemove 89 71 click 1     # the Race lab tab
  sleep 1
  xdotool mousemove 108 366 click 1   # Fire: all four strategies
  sleep 25
  import -window root '$out/racelab.png'
  kill \$pid; wait \$pid || true
"
rm -f "$audit"
echo "screenshots in $out"
