#!/usr/bin/env bash
# Makes sure pg_auto_failover (pg_autoctl and its PostgreSQL extension) is
# installed, for the failover tests (FailoverTests, scripts/auto-failover.sh):
# installs Debian's pg-auto-failover-cli and postgresql-N-auto-failover for
# the installed PostgreSQL N when missing and we are root, else says what
# to install.
set -euo pipefail

bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
major=$(basename "$(dirname "${bindir:-/15/x}")")
if command -v pg_autoctl >/dev/null 2>&1 && [ -f "/usr/share/postgresql/$major/extension/pgautofailover.control" ]; then
    exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "==> installing pg_auto_failover from Debian's packages"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq pg-auto-failover-cli "postgresql-$major-auto-failover" >/dev/null
    command -v pg_autoctl >/dev/null || { echo "pg_auto_failover installed, but pg_autoctl was not found" >&2; exit 1; }
    exit 0
fi
cat >&2 <<MSG
pg_auto_failover is needed by the failover tests. Install it, then run make again:
  Debian/Ubuntu (as root): apt-get install -y pg-auto-failover-cli postgresql-$major-auto-failover
MSG
exit 1
