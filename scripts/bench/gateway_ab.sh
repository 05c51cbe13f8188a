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
# Needs wrk, curl and bc; stops the gateway and the cluster when done.
set -uo pipefail
[ $# -ge 2 ] || { echo "usage: $0 A_BINARY B_BINARY [ROUNDS]" >&2; exit 2; }
A=$1; B=$2; ROUNDS=${3:-4}
cd "$(dirname "$0")/../.."
[ -d .bench/postgres ] || { echo "no .bench cluster: run make bench (or bench.py --only floor) first" >&2; exit 2; }
PORT=18500
TOKEN=$("$B" users token bench --json --data-dir .bench | sed -E 's/.*"token":"([^"]+)".*/\1/')
LOOKUP='{"query":"{ lookup(scope: PRIVATE, zone: {zoneName: \"Bench\"}, recordNames: [\"r4242\"]) { recordName record { recordName fields recordChangeTag } } }"}'
RECORDS='{"query":"query($a: JSON, $c: String) { records(scope: PRIVATE, zone: {zoneName: \"Bench\"}, recordType: \"Fast\", filter: \"endDate > %@ AND endDate <= %@\", args: $a, sort: [{field: \"endDate\"}], limit: 100, cursor: $c) { records { recordName fields } cursor } }","variables":{"a":[{"type":"TIMESTAMP","value":1700300000000},{"type":"TIMESTAMP","value":55700000000000}]}}'
script() {
  cat <<LUA
wrk.method = "POST"
wrk.headers["Authorization"] = "Bearer $TOKEN"
wrk.headers["Content-Type"] = "application/json"
wrk.body = [[$1]]
LUA
}
script "$LOOKUP" > /tmp/gateway-ab-w1.lua
script "$RECORDS" > /tmp/gateway-ab-w2.lua
# W2v: W2 with a new date range in every request (issue 51's plan cache
# binds new values into a plan of the same shape; wrk's W2 repeats one body).
RECORDS_HEAD=${RECORDS%%1700300000000*}
RECORDS_TAIL=${RECORDS#*1700300000000}
cat > /tmp/gateway-ab-w2v.lua <<LUA
wrk.method = "POST"
wrk.headers["Authorization"] = "Bearer $TOKEN"
wrk.headers["Content-Type"] = "application/json"
request = function()
  return wrk.format(nil, nil, nil, [[$RECORDS_HEAD]] .. (1700000000000 + math.random(0, 600000000)) .. [[$RECORDS_TAIL]])
end
LUA
TICK=$(getconf CLK_TCK)
for round in $(seq 1 "$ROUNDS"); do
  for which in A B; do
    BIN=$A; [ $which = B ] && BIN=$B
    "$BIN" serve --port $PORT --data-dir .bench --rate-limit 1000000000 > /tmp/gateway-ab-serve.log 2>&1 &
    SPID=$!
    for _ in $(seq 1 120); do curl -s -o /dev/null "http://127.0.0.1:$PORT/health" && break; sleep 0.5; done
    line="$which round $round:"
    for workload in ${AB_WORKLOADS:-w1 w2 w2v}; do
      wrk -t2 -c8 -d3s -s /tmp/gateway-ab-$workload.lua "http://127.0.0.1:$PORT/graphql" >/dev/null
      before=$(awk '{print $14+$15}' /proc/$SPID/stat)
      out=$(wrk -t2 -c8 -d8s --latency -s /tmp/gateway-ab-$workload.lua "http://127.0.0.1:$PORT/graphql")
      after=$(awk '{print $14+$15}' /proc/$SPID/stat)
      reqs=$(echo "$out" | awk '/requests in/ {print $1}')
      non2xx=$(echo "$out" | awk '/Non-2xx/ {print $NF}')
      p99=$(echo "$out" | awk '$1 == "99%" {print $2}')
      line="$line ${workload^^} $(echo "scale=1; ($after-$before)*1000000/$TICK/$reqs" | bc) µs/request ($reqs requests, p99 $p99, ${non2xx:-0} non-2xx);"
    done
    echo "$line"
    kill -TERM $SPID; wait $SPID 2>/dev/null
  done
done
"$B" cluster stop --data-dir .bench >/dev/null 2>&1 || true
