#!/usr/bin/env bash
# Runs two things at once: BESIDE, a shell command, in the background (give
# it its own `nice`), while COMMAND runs as the step's main work.
# make test uses it to build CanopyKit by URL and fuzz beside the stories
# tier, which waits far more than it computes (docs/TESTING.md, DECISIONS 147).
#   scripts/beside.sh 'BESIDE' COMMAND [ARGUMENTS...]
# BESIDE's output is kept in a file and printed, under a heading, once both
# have ended, so the two never interleave. The exit status is COMMAND's when
# it failed, else BESIDE's: either failing fails the step, and a message
# names each part that failed. Interrupted (INT, TERM or HUP), it stops both
# at once, prints the end of BESIDE's output, and removes the file.
set -uo pipefail
if [ $# -lt 2 ]; then
    echo "usage: scripts/beside.sh 'BESIDE' COMMAND [ARGUMENTS...]" >&2
    exit 2
fi
beside=$1
shift
log=$(mktemp "${TMPDIR:-/tmp}/canopy-beside-XXXXXX") || exit 2
background= foreground=

# Whether a job of this shell still runs (by the job table, not kill -0: a
# PID that ended may have been given to another process since).
running() { [ -n "$1" ] && jobs -rp | grep -qx "$1"; }

# On any exit: stop what still runs (each is a process group of its own),
# then drop the file.
cleanup() {
    if running "$foreground"; then
        kill -TERM -- "-$foreground" 2>/dev/null
        wait "$foreground" 2>/dev/null
    fi
    if running "$background"; then
        kill -TERM -- "-$background" 2>/dev/null
        wait "$background" 2>/dev/null
        echo "==> beside: stopped '$beside'; the end of its output:"
        tail -n 40 "$log"
    fi
    rm -f "$log"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# A script runs without job control, so a background job is not a process
# group's leader and setsid makes it one without forking: $! is the id of
# the new group. Both parts run so, and the main one in the background too,
# so that a signal interrupts `wait` at once instead of after the tier.
setsid bash -c "$beside" > "$log" 2>&1 < /dev/null &
background=$!
echo "==> beside: $beside (its output follows when both end)"
started=$(date +%s)
setsid "$@" <&0 &
foreground=$!
wait "$foreground"
status=$?
foreground=
if [ "$status" -ne 0 ]; then
    echo "==> beside: '$*' failed (exit $status); waiting for '$beside' before saying more"
elif running "$background"; then
    echo "==> beside: '$*' passed; waiting for '$beside'"
fi
wait "$background"
beside_status=$?
background=
echo "==> beside: '$beside' exit $beside_status, $(( $(date +%s) - started )) s after both started; its output:"
cat "$log"
if [ "$status" -ne 0 ]; then
    echo "==> beside: '$*' failed (exit $status)" >&2
fi
if [ "$beside_status" -ne 0 ]; then
    echo "==> beside: '$beside' failed (exit $beside_status; its output above)" >&2
fi
[ "$status" -ne 0 ] && exit "$status"
exit "$beside_status"
