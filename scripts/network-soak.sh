#!/usr/bin/env bash
# make network-soak (docs/RELIABILITY.md): the stories tier's cut-and-heal
# cycles of the gateway's link to the primary (NetworkFaultTests), run
# CANOPY_NETWORK_CYCLES times (make test runs 3), on a fresh cluster.
#   scripts/network-soak.sh [swift test arguments...]
set -uo pipefail
exec "$(dirname "$0")/test-tier.sh" stories 'NetworkFaultTests/cutAndHealCycles' "$@"
