#!/usr/bin/env bash
# Starts the app on the demo model until its engine is ready, quits, and lists what the run left in its
# temp folder (TMPDIR: an empty folder of its own, so that nothing else is counted).
# $1: the checkout; $2: its virtualenv's python; $3: the temp folder to use
set -u
rm -rf "$3" && mkdir -p "$3"
cd "$1" && git log --oneline -1
TMPDIR="$3" QT_QPA_PLATFORM=offscreen WORKBENCH_DATA_DIR=/tmp/litter-data PYTHONPATH="$1" timeout 300 "$2" -m workbench --quit-when-ready > /dev/null 2>&1
echo "app exit code: $?"
echo "left in $3 (find -printf '%y %P'; s: socket, f: file, d: folder):"
find "$3" -mindepth 1 -printf '%y %P\n' | sort
echo "sockets: $(find "$3" -type s | wc -l); entries: $(find "$3" -mindepth 1 | wc -l)"
