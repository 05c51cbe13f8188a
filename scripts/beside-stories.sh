#!/usr/bin/env bash
# What make test runs beside the stories tier (scripts/beside.sh runs this
# in the background; docs/TESTING.md, DECISIONS 147 and 176), two lanes at
# once:
#   1. CanopyKit added by URL (a build, at nice 19), then every parser of
#      outside input under libFuzzer for 10 s (scripts/fuzz/fuzz.py);
#   2. the citus-gateway tier but for its suites marked "slow: ", then the
#      on-loop tier's listed suites, each its test binary run itself
#      (CANOPY_TEST_DIRECT=1: the stories' `swift test` holds .build's
#      lock; make test-citus-gateway and make test-on-loop run them all).
# Each lane's output is kept in a file of its own and printed, under a
# heading, when both have ended. Exits non-zero, naming the lane, when
# either failed.
#   scripts/beside-stories.sh
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2
logs=$(mktemp -d "${TMPDIR:-/tmp}/canopy-beside-stories-XXXXXX") || exit 2
trap 'rm -rf "$logs"' EXIT

( nice -n 19 scripts/canopykit-by-url.sh && python3 scripts/fuzz/fuzz.py --seconds 10 ) > "$logs/build-and-fuzz" 2>&1 &
lane=$!
CANOPY_TEST_DIRECT=1 CANOPY_CITUS_GATEWAY_SKIP_SLOW=1 scripts/test-tier.sh citus-gateway --skip-build > "$logs/citus-gateway" 2>&1
tier=$?
# The on-loop tier after it, in the same lane: its fresh cluster starts
# when the citus-gateway tier's has gone (the lane ended minutes before
# the stories in loaded runs; docs/TESTING.md, "Wall time").
CANOPY_TEST_DIRECT=1 scripts/test-tier.sh on-loop --skip-build > "$logs/on-loop" 2>&1
on_loop=$?
wait "$lane"
build_and_fuzz=$?

echo "==> CanopyKit by URL, then fuzzing: exit $build_and_fuzz"
cat "$logs/build-and-fuzz"
echo "==> the citus-gateway tier: exit $tier"
cat "$logs/citus-gateway"
echo "==> the on-loop tier: exit $on_loop"
cat "$logs/on-loop"
status=0
if [ "$build_and_fuzz" -ne 0 ]; then
    echo "==> beside the stories: CanopyKit by URL or fuzzing failed (exit $build_and_fuzz; above)" >&2
    status=1
fi
if [ "$tier" -ne 0 ]; then
    echo "==> beside the stories: the citus-gateway tier failed (exit $tier; above)" >&2
    status=1
fi
if [ "$on_loop" -ne 0 ]; then
    echo "==> beside the stories: the on-loop tier failed (exit $on_loop; above)" >&2
    status=1
fi
exit $status
