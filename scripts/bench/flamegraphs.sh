#!/usr/bin/env bash
# Flame graphs of `canopy serve` under W1 (lookup of one record) and W2
# (records: date range, sorted, 100 rows), 8 clients over loopback, on the
# cluster a `make bench` (or `bench.py --only floor|speed`) run leaves in
# .bench. perf samples the gateway for 8 s at 999 Hz with DWARF call
# graphs; scripts/bench/flamegraph.py folds and draws them.
#   scripts/bench/flamegraphs.sh [BINARY] [LABEL]
# writes docs/images/flame-LABEL-w1.svg and -w2.svg (default: the release
# build, label "now"), keeps the folded stacks in .bench/flame-LABEL-*.folded
# and prints where the CPU went by Canopy module.
# Needs perf (linux-perf), wrk and curl. Stops the gateway and the cluster.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${1:-.build/release/canopy}; LABEL=${2:-now}
[ -d .bench/postgres ] || { echo "no .bench cluster: run make bench (or bench.py --only speed) first" >&2; exit 2; }
command -v perf >/dev/null || { echo "perf is needed: apt-get install linux-perf" >&2; exit 2; }
PORT=18600
"$BIN" cluster start --data-dir .bench >/dev/null
TOKEN=$("$BIN" users token bench --json --data-dir .bench | sed -E 's/.*"token" *: *"([^"]+)".*/\1/')
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
python3 - "$TOKEN" "$WORK" <<'PY'
import sys; sys.path.insert(0, "scripts/bench")
from drivers import wrk_script
from workloads import LOOKUP, RECORDS_ARGS, records_query
token, work = sys.argv[1], sys.argv[2]
open(f"{work}/w1.lua", "w").write(wrk_script(token, LOOKUP))
open(f"{work}/w2.lua", "w").write(wrk_script(token, records_query(), RECORDS_ARGS))
PY
mkdir -p docs/images
for workload in w1 w2; do
  "$BIN" serve --port $PORT --data-dir .bench --rate-limit 1000000000 > "$WORK/serve.log" 2>&1 &
  SPID=$!
  for _ in $(seq 1 120); do curl -s -o /dev/null "http://127.0.0.1:$PORT/health" && break; sleep 0.5; done
  wrk -t2 -c8 -d3s -s "$WORK/$workload.lua" "http://127.0.0.1:$PORT/graphql" >/dev/null
  perf record -F 999 -g --call-graph dwarf,32768 -p $SPID -o "$WORK/perf.data" -- sleep 8 >/dev/null 2>&1 &
  PERF=$!
  out=$(wrk -t2 -c8 -d8s -s "$WORK/$workload.lua" "http://127.0.0.1:$PORT/graphql")
  wait $PERF
  kill -TERM $SPID; wait $SPID 2>/dev/null || true
  if echo "$out" | grep -q Non-2xx; then echo "$workload: the gateway answered errors: $out" >&2; exit 1; fi
  perf script -i "$WORK/perf.data" 2>/dev/null > "$WORK/perf.txt"
  # The folded stacks stay in .bench, to redraw or to query (flamegraph.py top).
  python3 scripts/bench/flamegraph.py fold < "$WORK/perf.txt" > ".bench/flame-$LABEL-$workload.folded"
  python3 scripts/bench/flamegraph.py svg --title "canopy serve, ${workload^^}, 8 clients ($LABEL)" \
    < ".bench/flame-$LABEL-$workload.folded" > "docs/images/flame-$LABEL-$workload.svg"
  echo "== ${workload^^} ($LABEL): $(echo "$out" | awk '/Requests\/sec/ {print $2}') requests/s under perf; CPU by module:"
  python3 scripts/bench/flamegraph.py fold --modules < "$WORK/perf.txt" | python3 scripts/bench/flamegraph.py modules --count 8
  echo "   docs/images/flame-$LABEL-$workload.svg"
done
"$BIN" cluster stop --data-dir .bench >/dev/null 2>&1 || true
