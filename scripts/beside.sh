#!/usr/bin/env bash
# Runs two things at once: BESIDE, a shell command, in the background (give
# it its own `nice`), while COMMAND runs in the foreground as usual.
# make test uses it to build CanopyKit by URL and fuzz beside the stories
# tier, which waits far more than it computes (docs/TESTING.md).
#   scripts/beside.sh 'BESIDE' COMMAND [ARGUMENTS...]
# BESIDE's output is kept in a file and printed, under a heading, once both
# have ended, so the two never interleave. The exit status is COMMAND's when
# it failed, else BESIDE's: either failing fails the step, and the message
# says which. Interrupted, it stops BESIDE too.
set -uo pipefail
if [ $# -lt 2 ]; then
    echo "usage: scripts/beside.sh 'BESIDE' COMMAND [ARGUMENTS...]" >&2
    exit 2
fi
beside=$1
shift
log=$(mktemp "${TMPDIR:-/tmp}/canopy-beside-XXXXXX")
# Its own process group, so that an interruption can stop all of it.
setsid bash -c "$beside" > "$log" 2>&1 < /dev/null &
pid=$!
stop() { kill -TERM -- "-$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -f "$log"; }
trap 'stop; exit 130' INT TERM
echo "==> beside: $beside (its output follows when both end)"
started=$(date +%s)
"$@"
status=$?
if kill -0 "$pid" 2>/dev/null; then
    echo "==> beside: waiting for '$beside' to end"
fi
wait "$pid"
beside_status=$?
trap - INT TERM
echo "==> beside: '$beside' exit $beside_status, $(( $(date +%s) - started )) s after both started; its output:"
cat "$log"
rm -f "$log"
if [ "$status" -ne 0 ]; then
    echo "==> beside: '$*' failed (exit $status)" >&2
    exit "$status"
fi
if [ "$beside_status" -ne 0 ]; then
    echo "==> beside: '$beside' failed (exit $beside_status; its output above)" >&2
    exit "$beside_status"
fi
