#!/usr/bin/env bash
# make fuzz-http (docs/FUZZING.md): the generated-request property of the
# stories tier (GeneratedRequestTests) with a long budget, on a fresh
# cluster of its own. Reads CANOPY_GENERATED_SEED, CANOPY_GENERATED_EXAMPLES
# and CANOPY_GENERATED_SECONDS (make test runs 150 examples with seed 48).
#   scripts/fuzz-http.sh [swift test arguments...]
set -uo pipefail
exec "$(dirname "$0")/test-tier.sh" stories 'GeneratedRequestTests' "$@"
