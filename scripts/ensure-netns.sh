#!/usr/bin/env bash
# Makes sure iproute2 (ip, ss) is installed, for the network-fault tests
# (NetworkFaultTests, scripts/netns-lab.sh): installs Debian's iproute2 when
# missing and we are root, else says what to install.
set -euo pipefail

if command -v ip >/dev/null 2>&1 && command -v ss >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "==> installing iproute2 from Debian's packages"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq iproute2 >/dev/null
    exit 0
fi
cat >&2 <<MSG
iproute2 (ip, ss) is needed by the network-fault tests. Install it, then run make again:
  Debian/Ubuntu (as root): apt-get install -y iproute2
MSG
exit 1
