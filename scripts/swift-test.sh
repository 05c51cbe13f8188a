#!/usr/bin/env bash
# Runs `swift test` with the given arguments and, when it fails, repeats
# the failed tests and their recorded issues at the very end of the output:
# a run of hundreds of tests prints the failure far above the last screen,
# and CI logs are often read from the tail.
#   scripts/swift-test.sh [swift test arguments...]
# The server's package is Server/, built into the repository's .build
# (the Makefile's SERVER_PACKAGE; DECISIONS 127).
#
# A watchdog: when the run prints nothing for CANOPY_TEST_STALL_SECONDS
# (900), every thread of the test process is printed (gdb) and the run is
# killed, so a hung test fails in minutes with where it hung, instead of
# holding CI until its own limit. Output is line-buffered (stdbuf), so
# nothing printed before a kill is lost in a buffer.
#
# CANOPY_TEST_DIRECT=1 (after a build): the built test binary is run itself,
# not through `swift test`, which holds the scratch folder's lock for its
# whole run; --skip-build is dropped. make test runs the citus-gateway tier
# so, beside the stories tier's own `swift test` (DECISIONS 176).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
package_arguments=${SERVER_PACKAGE:-"--package-path $root/Server --scratch-path $root/.build"}
stall=${CANOPY_TEST_STALL_SECONDS:-900}
log=$(mktemp "${TMPDIR:-/tmp}/canopy-test-XXXXXX.log")
status_file=$(mktemp "${TMPDIR:-/tmp}/canopy-test-XXXXXX.status")
trap 'rm -f "$log" "$status_file"' EXIT
buffer=()
command -v stdbuf >/dev/null && buffer=(stdbuf -oL -eL)
(
    # shellcheck disable=SC2086 # the package arguments are words
    if [ "${CANOPY_TEST_DIRECT:-0}" = 1 ]; then
        arguments=()
        for argument in "$@"; do [ "$argument" = --skip-build ] || arguments+=("$argument"); done
        NO_COLOR=1 "${buffer[@]}" "$root/.build/debug/canopyPackageTests.xctest" --testing-library swift-testing "${arguments[@]}" 2>&1
    else
        "${buffer[@]}" ${SWIFT:-swift} test $package_arguments "$@" 2>&1
    fi
    echo "$?" > "$status_file"
) | tee "$log" &
runner=$!

# This run's own test processes: the descendants of this script only, as
# make test runs two test binaries at once (the stories' and, beside them,
# the citus-gateway tier's), and a stalled one must not take the other.
test_processes() {
    local pid ancestor
    for pid in $(pgrep -f "PackageTests\.xctest|swiftpm-testing-helper"); do
        ancestor=$pid
        while [ -n "$ancestor" ] && [ "$ancestor" -gt 1 ]; do
            if [ "$ancestor" = "$$" ]; then
                echo "$pid"
                break
            fi
            ancestor=$(ps -o ppid= -p "$ancestor" 2>/dev/null | tr -d " ")
        done
    done
}

last_size=-1
quiet=0
# Polled each second, so a run that ends is not waited on for long (each
# step of make test lost up to 10 s to a 10 s poll).
while kill -0 "$runner" 2>/dev/null; do
    sleep 1
    size=$(stat -c %s "$log" 2>/dev/null || echo 0)
    if [ "$size" != "$last_size" ]; then
        last_size=$size
        quiet=0
        continue
    fi
    quiet=$((quiet + 1))
    if [ "$quiet" -ge "$stall" ]; then
        echo
        echo "==> swift test printed nothing for ${stall} s: the test process's threads, then it is killed"
        for pid in $(test_processes); do
            if command -v gdb >/dev/null; then
                timeout 300 gdb -p "$pid" -batch -ex "thread apply all bt 30" 2>/dev/null \
                    | grep -E "^Thread|^#" | grep -vE " in (__GI_|__futex|futex_|__pthread_cond|syscall|epoll_wait|___pthread)" | head -1500
            fi
            echo "==> test processes' children:"
            ps -o pid,etimes,args --ppid "$pid" 2>/dev/null | cut -c1-240
            kill -KILL "$pid" 2>/dev/null
        done
        break
    fi
done
wait "$runner"
status=$(cat "$status_file" 2>/dev/null)
status=${status:-1}
if [ "$status" -ne 0 ]; then
    echo
    echo "==> swift test $* failed (exit $status); what failed:"
    grep -E "✘|recorded an issue|error:|Fatal error|fatal error|XCTAssert|failed \(|printed nothing for" "$log" \
        | grep -v "^✘ Test run with" | head -60
fi
exit "$status"
