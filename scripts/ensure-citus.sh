#!/usr/bin/env bash
# Makes sure Citus 13.2 (distributed PostgreSQL) is installed into the
# PostgreSQL the embedded cluster runs, for the Citus test tier and
# `canopy cluster start --citus` (docs/CITUS.md). Citus is not in Debian:
# when it is missing and we are root, this builds it from the source release
# kept beside the checkout (../shared/vendor/citus/build.sh, about 2-7 minutes
# on 2 cores); once installed, later runs on the machine find it and do
# nothing. Its build dependencies upgrade Debian's PostgreSQL 15 in place,
# so make test runs this before any cluster starts.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

installed() {
    command -v pg_config >/dev/null 2>&1 &&
        grep -qs "default_version = '13.2" "$(pg_config --sharedir)/extension/citus.control" &&
        [ -f "$(pg_config --pkglibdir)/citus.so" ]
}

installed && exit 0
vendor=${CANOPY_CITUS_SOURCE:-$root/../shared/vendor/citus}
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1 && [ -x "$vendor/build.sh" ]; then
    echo "==> building Citus 13.2.2 from $vendor (once per machine)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    started=$(date +%s)
    "$vendor/build.sh"
    installed || { echo "ensure-citus.sh: Citus was built, but $(pg_config --pkglibdir)/citus.so or its control file is missing" >&2; exit 1; }
    echo "==> Citus installed in $(( $(date +%s) - started )) s"
    exit 0
fi
cat >&2 <<MSG
Citus 13.2 is needed by the Citus test tier (scripts/test-tier.sh citus) and
canopy cluster start --citus. Install it, then run make again:
  - from Citus's own packages for your PostgreSQL (https://docs.citusdata.com), or
  - as root, from the source release beside this checkout:
      $vendor/build.sh
    (set CANOPY_CITUS_SOURCE to the folder that holds build.sh if it is elsewhere)
MSG
exit 1
