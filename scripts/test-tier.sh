#!/usr/bin/env bash
# Runs one tier of the server's tests (docs/TESTING.md) against a fresh
# PostgreSQL cluster of its own: initdb in a temporary folder, which is
# stopped and removed when the run ends, failed or not. No tier meets
# another's databases, so none are left to drop and no stale cluster is
# ever recovered.
#   scripts/test-tier.sh TIER [FILTER] [swift test arguments...]
# TIER is one of
#   pure      Server/Tests/PureTests: no PostgreSQL, no other process; parallel
#   database  Server/Tests/DatabaseTests: PostgreSQL and the in-process gateway; parallel
#   stories   Server/Tests/StoryTests: whatever starts a process (canopy serve,
#             Chromium, Node, Python, pg_auto_failover, namespaces); serial
#   latency   Server/Tests/LatencyTests: every latency bound, alone; serial
#   citus     Server/Tests/CitusTests: a Citus coordinator and two workers
#             (canopy cluster start --citus --workers 2; Citus must be
#             installed: scripts/ensure-citus.sh); serial
#   citus-gateway
#             the database tier's gateway suites named in
#             scripts/citus-gateway-suites.txt, each test's database a
#             distributed Citus database (CANOPY_TEST_GATEWAY_ON_CITUS=1)
#             on a coordinator and two workers of the tier's own; serial.
#             With CANOPY_CITUS_GATEWAY_SKIP_SLOW=1 (make test), not the
#             entries marked "slow: " (make test-citus-gateway runs all)
#   on-loop   the database tier's suites listed in scripts/on-loop-suites.txt
#             (all of them with CANOPY_ON_LOOP_ALL=1: make test-on-loop),
#             every gateway serving on its sockets' loops (--serve-on-loop,
#             CANOPY_TEST_SERVE_ON_LOOP=1, issue 69) and served live; parallel
# FILTER (optional) narrows the tier to the tests whose `Suite/test` name
# matches it, a regular expression: scripts/test-tier.sh database SubscriptionTests
# Further arguments go to swift test (make test passes --skip-build after
# its one build).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
usage() {
    sed -n '2,/^set /p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
}
[ $# -ge 1 ] || { usage; exit 2; }
tier=$1
shift
case "$tier" in
    pure) target=PureTests; order=() ;;
    database) target=DatabaseTests; order=() ;;
    stories) target=StoryTests; order=(--no-parallel) ;;
    latency) target=LatencyTests; order=(--no-parallel) ;;
    citus) target=CitusTests; order=(--no-parallel) ;;
    citus-gateway) target=DatabaseTests; order=(--no-parallel); export CANOPY_TEST_GATEWAY_ON_CITUS=1 ;;
    on-loop) target=DatabaseTests; order=(); export CANOPY_TEST_SERVE_ON_LOOP=1 ;;
    *) echo "test-tier.sh: no tier \"$tier\" (pure, database, on-loop, stories, latency, citus or citus-gateway)" >&2; usage; exit 2 ;;
esac
filter="^$target\\."
if [ "$tier" = citus-gateway ]; then
    # Entries marked "slow: " run unless CANOPY_CITUS_GATEWAY_SKIP_SLOW is
    # set, as make test sets it beside the stories (DECISIONS 185).
    list=$(grep -v '^#' "$root/scripts/citus-gateway-suites.txt" | grep -v '^$')
    if [ -n "${CANOPY_CITUS_GATEWAY_SKIP_SLOW:-}" ]; then
        list=$(printf '%s\n' "$list" | grep -v '^slow: ')
    fi
    suites=$(printf '%s\n' "$list" | sed 's/^slow: //' | paste -sd'|')
    filter="^$target\\.($suites)"
fi
if [ "$tier" = on-loop ] && [ -z "${CANOPY_ON_LOOP_ALL:-}" ]; then
    suites=$(grep -v '^#' "$root/scripts/on-loop-suites.txt" | grep -v '^$' | paste -sd'|')
    filter="^$target\\.($suites)"
fi
if [ $# -ge 1 ] && [ "${1#-}" = "$1" ]; then
    filter="^$target\\..*($1)"
    shift
fi

cluster=$(mktemp -d "${TMPDIR:-/tmp}/canopy-$tier-XXXXXX")
chmod 755 "$cluster"
export CANOPY_TEST_DATA_DIR="$cluster/data"
canopy=${CANOPY_BIN:-$root/.build/debug/canopy}
cleanup() {
    # CANOPY_TEST_KEEP_LOGS=DIR: the cluster's server logs are copied there
    # before the cluster is removed (docs/TESTING.md).
    if [ -n "${CANOPY_TEST_KEEP_LOGS:-}" ] && [ -d "$CANOPY_TEST_DATA_DIR" ]; then
        mkdir -p "$CANOPY_TEST_KEEP_LOGS"
        cp "$CANOPY_TEST_DATA_DIR"/postgresql.log "$CANOPY_TEST_KEEP_LOGS/" 2>/dev/null || true
        for w in "$CANOPY_TEST_DATA_DIR"/workers/*/; do
            [ -f "$w/postgresql.log" ] && cp "$w/postgresql.log" "$CANOPY_TEST_KEEP_LOGS/worker-$(basename "$w").log"
        done
    fi
    if [ -d "$CANOPY_TEST_DATA_DIR" ] && [ -x "$canopy" ]; then
        "$canopy" cluster stop --data-dir "$CANOPY_TEST_DATA_DIR" >/dev/null 2>&1 || true
    fi
    rm -rf "$cluster"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
started=$(date +%s)
echo "==> tier $tier: $target, a fresh cluster in $CANOPY_TEST_DATA_DIR"
if [ "$tier" = citus ] || [ "$tier" = citus-gateway ]; then
    # The coordinator and its workers first: the tests find them running.
    "$canopy" cluster start --citus --workers 2 --data-dir "$CANOPY_TEST_DATA_DIR" || exit 1
fi
"$root/scripts/swift-test.sh" "${order[@]}" --filter "$filter" "$@"
status=$?
if [ $status -ne 0 ]; then
    # What the cluster's servers said of a failed run, before it is removed:
    # a crashed or restarted server is otherwise invisible (the tests only
    # see their connections go).
    for log in "$CANOPY_TEST_DATA_DIR"/postgresql.log "$CANOPY_TEST_DATA_DIR"/workers/*/postgresql.log; do
        [ -f "$log" ] || continue
        lines=$(grep -E -A1 "PANIC|terminated by signal|was terminated" "$log" | head -20)
        [ -n "$lines" ] || lines=$(grep -E "FATAL" "$log" | grep -v -E "the database system is (starting|shutting) down" | tail -5)
        [ -n "$lines" ] && printf '==> %s (its last server events):\n%s\n' "${log#$CANOPY_TEST_DATA_DIR/}" "$lines"
    done
fi
echo "==> tier $tier: exit $status after $(( $(date +%s) - started )) s"
exit $status
