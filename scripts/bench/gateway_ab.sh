#!/usr/bin/env bash
# Two builds of the gateway, A and B, against the same data: the cluster a
# `make bench` (or `bench.py --only floor`) run leaves in .bench (200,000
# records in Bench, the schema applied). Each round starts A, then B, on
# loopback with 8 clients (wrk, 3 s warm-up, 8 s measured) and prints the
# gateway's CPU per request (/proc/PID/stat, user + system) for W1 (lookup
# of one record) and W2 (records: date range, sorted, 100 rows), with wrk's
# p99 (issue 39's tail), and W2v: W2 with a new date range each request
# (AB_WORKLOADS="w1 w2" leaves it out). Rounds
# alternate, so drift on this noisy machine falls on both alike.
#   scripts/bench/gateway_ab.sh A_BINARY B_BINARY [ROUNDS]   (default 4)
# When A and B need different schemas (a build from before a migration),
# AB_A_DATA and AB_B_DATA name a data directory for each, both loaded alike
# by that build's own bench scripts (default: .bench for both). Both
# clusters stay up; only the gateways alternate. AB_A_FLAGS and AB_B_FLAGS
# add flags to each side's canopy serve (one build in two modes, as
# issue 69's AB_A_FLAGS=--no-serve-on-loop AB_B_FLAGS=--serve-on-loop with
# the same binary twice); AB_A_ENV and AB_B_ENV add environment variables
# (NAME=VALUE words: AB_B_ENV=CANOPY_CONCURRENCY_ON_LOOPS=1); AB_CLIENTS sets
# wrk's connections (default 8).
# Each workload also prints the gateway's context switches a request (every
# thread's, from /proc/PID/task/*/status).
# Needs wrk, curl and bc; stops the gateway and the cluster(s) when done.
set -uo pipefail
[ $# -ge 2 ] || { echo "usage: $0 A_BINARY B_BINARY [ROUNDS]" >&2; exit 2; }
A=$1; B=$2; ROUNDS=${3:-4}
cd "$(dirname "$0")/../.."
DATA_A=${AB_A_DATA:-.bench}; DATA_B=${AB_B_DATA:-.bench}
for data in "$DATA_A" "$DATA_B"; do
  [ -d "$data/postgres" ] || { echo "no cluster in $data: run make bench (or bench.py --only floor) first" >&2; exit 2; }
done
PORT=18500
LOOKUP='{"query":"{ lookup(scope: PRIVATE, zone: {zoneName: \"Bench\"}, recordNames: [\"r4242\"]) { recordName record { recordName fields recordChangeTag } } }"}'
RECORDS='{"query":"query($a: JSON, $c: String) { records(scope: PRIVATE, zone: {zoneName: \"Bench\"}, recordType: \"Fast\", filter: \"endDate > %@ AND endDate <= %@\", args: $a, sort: [{field: \"endDate\"}], limit: 100, cursor: $c) { records { recordName fields } cursor } }","variables":{"a":[{"type":"TIMESTAMP","value":1700300000000},{"type":"TIMESTAMP","value":55700000000000}]}}'
# The scripts for one side, with its own owner's token (each cluster has
# its own bench user): /tmp/gateway-ab-SIDE-WORKLOAD.lua.
scripts_for() {
  local side=$1 token
  token=$("$2" users token bench --json --data-dir "$3" | sed -E 's/.*"token":"([^"]+)".*/\1/')
  local head="wrk.method = \"POST\"
wrk.headers[\"Authorization\"] = \"Bearer $token\"
wrk.headers[\"Content-Type\"] = \"application/json\""
  printf '%s\nwrk.body = [[%s]]\n' "$head" "$LOOKUP" > /tmp/gateway-ab-$side-w1.lua
  printf '%s\nwrk.body = [[%s]]\n' "$head" "$RECORDS" > /tmp/gateway-ab-$side-w2.lua
  # W2v: W2 with a new date range in every request (issue 51's plan cache
  # binds new values into a plan of the same shape; wrk's W2 repeats one body).
  printf '%s\nrequest = function()\n  return wrk.format(nil, nil, nil, [[%s]] .. (1700000000000 + math.random(0, 600000000)) .. [[%s]])\nend\n' \
    "$head" "${RECORDS%%1700300000000*}" "${RECORDS#*1700300000000}" > /tmp/gateway-ab-$side-w2v.lua
}
scripts_for A "$A" "$DATA_A"
scripts_for B "$B" "$DATA_B"
TICK=$(getconf CLK_TCK)
for round in $(seq 1 "$ROUNDS"); do
  for which in A B; do
    BIN=$A; DATA=$DATA_A; [ $which = B ] && { BIN=$B; DATA=$DATA_B; }
    FLAGS=${AB_A_FLAGS:-}; [ $which = B ] && FLAGS=${AB_B_FLAGS:-}
    SIDE_ENV=${AB_A_ENV:-}; [ $which = B ] && SIDE_ENV=${AB_B_ENV:-}
    # shellcheck disable=SC2086 # the flags and variables are words
    env $SIDE_ENV "$BIN" serve --port $PORT --data-dir "$DATA" --rate-limit 1000000000 $FLAGS > /tmp/gateway-ab-serve.log 2>&1 &
    SPID=$!
    for _ in $(seq 1 120); do curl -s -o /dev/null "http://127.0.0.1:$PORT/health" && break; sleep 0.5; done
    line="$which round $round:"
    for workload in ${AB_WORKLOADS:-w1 w2 w2v}; do
      wrk -t2 -c"${AB_CLIENTS:-8}" -d3s -s /tmp/gateway-ab-$which-$workload.lua "http://127.0.0.1:$PORT/graphql" >/dev/null
      before=$(awk '{print $14+$15}' /proc/$SPID/stat)
      switches_before=$(cat /proc/$SPID/task/*/status 2>/dev/null | awk '/ctxt_switches/ {s += $2} END {print s}')
      out=$(wrk -t2 -c"${AB_CLIENTS:-8}" -d8s --latency -s /tmp/gateway-ab-$which-$workload.lua "http://127.0.0.1:$PORT/graphql")
      after=$(awk '{print $14+$15}' /proc/$SPID/stat)
      switches_after=$(cat /proc/$SPID/task/*/status 2>/dev/null | awk '/ctxt_switches/ {s += $2} END {print s}')
      reqs=$(echo "$out" | awk '/requests in/ {print $1}')
      rate=$(echo "$out" | awk '/Requests\/sec/ {printf "%.0f", $2}')
      non2xx=$(echo "$out" | awk '/Non-2xx/ {print $NF}')
      p99=$(echo "$out" | awk '$1 == "99%" {print $2}')
      line="$line ${workload^^} $rate req/s, $(echo "scale=1; ($after-$before)*1000000/$TICK/$reqs" | bc) µs/request, $(echo "scale=1; ($switches_after-$switches_before)/$reqs" | bc) switches/request ($reqs requests, p99 $p99, ${non2xx:-0} non-2xx);"
    done
    echo "$line"
    kill -TERM $SPID; wait $SPID 2>/dev/null
  done
done
"$A" cluster stop --data-dir "$DATA_A" >/dev/null 2>&1 || true
"$B" cluster stop --data-dir "$DATA_B" >/dev/null 2>&1 || true
