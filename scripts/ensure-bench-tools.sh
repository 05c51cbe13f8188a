#!/usr/bin/env bash
# Makes sure wrk (the HTTP load tool make bench drives the gateway with) and
# pgbench (the ceiling) are installed: from Debian's packages when missing
# and we are root, else says what to install.
set -euo pipefail
missing=()
command -v wrk >/dev/null 2>&1 || missing+=(wrk)
command -v pgbench >/dev/null 2>&1 || missing+=(postgresql-contrib)
if [ ${#missing[@]} -eq 0 ]; then exit 0; fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "==> installing ${missing[*]} from Debian's packages"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${missing[@]}" >/dev/null
    exit 0
fi
echo "make bench needs: ${missing[*]} (apt-get install ${missing[*]})" >&2
exit 1
