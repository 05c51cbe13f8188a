#!/usr/bin/env bash
# The SHA-256 of Canopy's Citus patches (scripts/citus/patches/*.patch, in
# order): what scripts/citus/build-patched.sh records beside the installed
# extension, and scripts/ensure-citus.sh compares.
set -euo pipefail
cat "$(cd "$(dirname "$0")" && pwd)"/patches/*.patch | sha256sum | cut -d' ' -f1
