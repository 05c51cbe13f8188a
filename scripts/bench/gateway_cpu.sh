#!/usr/bin/env bash
# The gateway's CPU time per W1 lookup (from /proc/PID/stat, user + system),
# for comparing two builds on this noisy machine where valgrind's callgrind
# crashes on the Swift runtime and perf has no hardware counters.
#   scripts/bench/gateway_cpu.sh REPO_ROOT PORT CANOPY_BINARY
# Starts its own embedded cluster in /tmp/cg/data-PORT, one user, one record,
# then 3 rounds of 8 s of wrk (4 connections) after a 3 s warm-up; prints
# requests, non-2xx answers and gateway CPU ms per request for each round.
# Needs wrk and curl; stops the server and the cluster when done.
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: $0 REPO_ROOT PORT CANOPY_BINARY" >&2; exit 2; }
mkdir -p /tmp/cg
ROOT=$1; PORT=$2; BIN=$3
export CANOPY_DATA_DIR=/tmp/cg/data-$PORT
cd "$ROOT"
"$BIN" migrate up >/dev/null
JSON=$("$BIN" users add cg --json 2>/dev/null || "$BIN" users token cg --json)
TOKEN=$(printf '%s' "$JSON" | sed -E 's/.*"token":"([^"]+)".*/\1/')
# One user drives far past a person's rate: keep the limiter on the path
# but never refusing (builds from before issue 20 have no such flag).
EXTRA=()
if "$BIN" serve --help 2>/dev/null | grep -q -- --rate-limit; then EXTRA=(--rate-limit 1000000000); fi
"$BIN" serve --port "$PORT" "${EXTRA[@]}" > /tmp/cg/serve-$PORT.log 2>&1 &
SPID=$!
q() { curl -s "http://127.0.0.1:$PORT/graphql" -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -d "$1"; }
for i in $(seq 1 60); do curl -s -o /dev/null "http://127.0.0.1:$PORT/health" && break; sleep 1; done
q '{"query":"mutation { saveZone(zoneName: \"Bench\") { zoneName } }"}' >/dev/null
q '{"query":"mutation { modifyRecords(scope: PRIVATE, zone: {zoneName: \"Bench\"}, save: [{recordName: \"r4242\", recordType: \"Fast\", fields: {kg: 70}}]) { saved { recordName } } }"}' >/dev/null
cat > /tmp/cg/lookup-$PORT.lua <<LUA
wrk.method = "POST"
wrk.headers["Authorization"] = "Bearer $TOKEN"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"query":"{ lookup(scope: PRIVATE, zone: {zoneName: \\\\"Bench\\\\"}, recordNames: [\\\\"r4242\\\\"]) { recordName record { recordName fields recordChangeTag } } }"}'
LUA
q "$(sed -n 's/^wrk.body = .\(.*\).$/\1/p' /tmp/cg/lookup-$PORT.lua | sed 's/\\\\/\\/g')" | head -c 200; echo
wrk -t1 -c4 -d3s -s /tmp/cg/lookup-$PORT.lua "http://127.0.0.1:$PORT/graphql" >/dev/null  # warm up
TICK=$(getconf CLK_TCK)
for round in 1 2 3; do
  before=$(awk '{print $14+$15}' /proc/$SPID/stat)
  out=$(wrk -t1 -c4 -d8s -s /tmp/cg/lookup-$PORT.lua "http://127.0.0.1:$PORT/graphql")
  after=$(awk '{print $14+$15}' /proc/$SPID/stat)
  reqs=$(echo "$out" | awk '/requests in/ {print $1}')
  non2xx=$(echo "$out" | awk '/Non-2xx/ {print $NF}')
  echo "round $round: $reqs requests, ${non2xx:-0} non-2xx, gateway CPU $(( (after-before)*1000/TICK )) ms, $(echo "scale=3; ($after-$before)*1000/$TICK/$reqs" | bc) ms/request"
done
kill -TERM $SPID; wait $SPID || true
"$BIN" cluster stop >/dev/null 2>&1 || true
