#!/usr/bin/env bash
# Makes sure PostgreSQL's server programs (initdb, pg_ctl, postgres) and psql
# are installed: installs them from Debian's packages when missing and we
# are root, else says what to install.
set -euo pipefail

have_server() {
    if [ -n "${CANOPY_PG_BINDIR:-}" ] && [ -x "$CANOPY_PG_BINDIR/initdb" ]; then return 0; fi
    if command -v pg_config >/dev/null 2>&1 && [ -x "$(pg_config --bindir)/initdb" ]; then return 0; fi
    if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then return 0; fi
    for dir in /usr/lib/postgresql/*/bin; do
        if [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ]; then return 0; fi
    done
    return 1
}

if have_server && command -v psql >/dev/null 2>&1; then
    exit 0
fi

if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "==> installing PostgreSQL from Debian's packages"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # The package would start its own cluster; Canopy runs its own instead.
    apt-get install -y -qq postgresql postgresql-contrib >/dev/null
    have_server || { echo "PostgreSQL installed, but initdb was not found" >&2; exit 1; }
    exit 0
fi

cat >&2 <<'MSG'
PostgreSQL's server programs (initdb, pg_ctl, postgres) and psql are needed.
Install them, then run make again:
  Debian/Ubuntu (as root): apt-get install -y postgresql postgresql-contrib
  Fedora:                  dnf install postgresql-server postgresql-contrib
  macOS (Homebrew):        brew install postgresql@15
Or set CANOPY_PG_BINDIR to the directory that holds initdb.
MSG
exit 1
