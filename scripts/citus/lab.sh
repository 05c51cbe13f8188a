#!/usr/bin/env bash
# A Citus coordinator and two workers on loopback, for the design's proof runs
# (docs/CITUS.md) until `canopy cluster start --citus` exists (issue 67).
#   scripts/citus/lab.sh start DIR [PORT]   initdb (once) and start three nodes on PORT (9700), PORT+1, PORT+2;
#                                           database `lab` with citus on each, the workers added
#   scripts/citus/lab.sh stop DIR
# Needs PostgreSQL 15 with Citus 13 installed (docs/CITUS.md says how) and runs the
# servers as the postgres OS user when started as root. Then:
#   scripts/citus/owner-clock-race.py "host=127.0.0.1 port=9700 user=postgres dbname=lab" --citus --move
set -euo pipefail
[ $# -ge 2 ] || { sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
action=$1 dir=$2 port=${3:-9700}
bin=$(pg_config --bindir)
as_postgres() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
[ -f "$(pg_config --pkglibdir)/citus.so" ] || { echo "lab.sh: Citus is not installed in $(pg_config --pkglibdir)" >&2; exit 1; }
case "$action" in
start)
    mkdir -p "$dir"
    [ "$(id -u)" != 0 ] || chown postgres "$dir"
    i=0
    for node in coordinator worker1 worker2; do
        p=$((port + i)); i=$((i + 1))
        if [ ! -d "$dir/$node" ]; then
            echo "==> initdb $dir/$node (port $p)"
            as_postgres "$bin/initdb" -D "$dir/$node" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null
            cat >> "$dir/$node/postgresql.conf" <<CONF
port = $p
listen_addresses = '127.0.0.1'
unix_socket_directories = '$dir'
shared_preload_libraries = 'citus'
max_connections = 40
shared_buffers = 32MB
max_prepared_transactions = 20
citus.max_background_task_executors_per_node = 1
CONF
            fresh=1
        fi
        as_postgres "$bin/pg_ctl" -D "$dir/$node" -l "$dir/$node.log" -w start >/dev/null
    done
    if [ "${fresh:-0}" = 1 ]; then
        for p in $port $((port + 1)) $((port + 2)); do
            as_postgres psql -q -h 127.0.0.1 -p "$p" -U postgres -c "CREATE DATABASE lab" -c "\\c lab" -c "CREATE EXTENSION citus"
        done
        as_postgres psql -q -h 127.0.0.1 -p "$port" -U postgres -d lab \
            -c "SELECT citus_set_coordinator_host('127.0.0.1', $port)" \
            -c "SELECT citus_add_node('127.0.0.1', $((port + 1)))" -c "SELECT citus_add_node('127.0.0.1', $((port + 2)))" >/dev/null
    fi
    as_postgres psql -h 127.0.0.1 -p "$port" -U postgres -d lab -Atc "SELECT 'workers: ' || string_agg(node_name || ':' || node_port, ', ') FROM citus_get_active_worker_nodes()"
    ;;
stop)
    for node in coordinator worker1 worker2; do
        [ -d "$dir/$node" ] && as_postgres "$bin/pg_ctl" -D "$dir/$node" -m fast stop >/dev/null || true
    done
    ;;
*) echo "lab.sh: start or stop" >&2; exit 2 ;;
esac
