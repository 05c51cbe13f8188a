#!/usr/bin/env bash
# Makes sure Citus 13.2 (distributed PostgreSQL) is installed into the
# PostgreSQL the embedded cluster runs, for the Citus test tiers and
# `canopy cluster start --citus` (docs/CITUS.md), with Canopy's patches
# (scripts/citus/patches/; DECISIONS 175). Citus is not in Debian: when it
# is missing, or was built without the current patches, and we are root,
# this builds it from the source release kept beside the checkout
# (../shared/vendor/citus, by scripts/citus/build-patched.sh: about 7
# minutes on 2 cores); once installed, later runs on the machine find it and
# do nothing. Its build dependencies upgrade Debian's PostgreSQL 15 in place,
# so make test runs this before any cluster starts.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

installed() {
    command -v pg_config >/dev/null 2>&1 &&
        grep -qs "default_version = '13.2" "$(pg_config --sharedir)/extension/citus.control" &&
        [ -f "$(pg_config --pkglibdir)/citus.so" ] &&
        [ "$(cat "$(pg_config --sharedir)/extension/citus.canopy-patches" 2>/dev/null)" = "$("$root/scripts/citus/patches-digest.sh")" ]
}

installed && exit 0
vendor=${CANOPY_CITUS_SOURCE:-$root/../shared/vendor/citus}
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1 && [ -f "$vendor/citus-13.2.2.tar.gz" ]; then
    echo "==> building Citus 13.2.2 from $vendor with Canopy's patches (once per machine)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    started=$(date +%s)
    "$root/scripts/citus/build-patched.sh" "$vendor"
    installed || { echo "ensure-citus.sh: Citus was built, but $(pg_config --pkglibdir)/citus.so or its control file is missing" >&2; exit 1; }
    echo "==> Citus installed in $(( $(date +%s) - started )) s"
    exit 0
fi
cat >&2 <<MSG
Citus 13.2 with Canopy's patches (scripts/citus/patches/, DECISIONS 175) is
needed by the Citus test tiers (scripts/test-tier.sh citus, citus-gateway) and
canopy cluster start --citus. As root, build it from the source release
beside this checkout, then run make again:
    $root/scripts/citus/build-patched.sh $vendor
(set CANOPY_CITUS_SOURCE to the folder that holds citus-13.2.2.tar.gz if it
is elsewhere)
MSG
exit 1
