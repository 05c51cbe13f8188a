#!/usr/bin/env bash
# Runs `swift test` with the given arguments and, when it fails, repeats
# the failed tests and their recorded issues at the very end of the output:
# a run of hundreds of tests prints the failure far above the last screen,
# and CI logs are often read from the tail.
#   scripts/swift-test.sh [swift test arguments...]
# The server's package is Server/, built into the repository's .build
# (the Makefile's SERVER_PACKAGE; DECISIONS 127).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
package_arguments=${SERVER_PACKAGE:-"--package-path $root/Server --scratch-path $root/.build"}
log=$(mktemp "${TMPDIR:-/tmp}/canopy-test-XXXXXX.log")
trap 'rm -f "$log"' EXIT
# shellcheck disable=SC2086 # the package arguments are words
${SWIFT:-swift} test $package_arguments "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
if [ "$status" -ne 0 ]; then
    echo
    echo "==> swift test $* failed (exit $status); what failed:"
    grep -E "✘|recorded an issue|error:|Fatal error|fatal error|XCTAssert|failed \(" "$log" \
        | grep -v "^✘ Test run with" | head -60
fi
exit "$status"
