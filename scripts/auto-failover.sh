#!/usr/bin/env bash
# A PostgreSQL cluster under pg_auto_failover on this machine, for tests and
# for trying failover by hand (docs/DEPLOYMENT.md): a monitor and two data
# nodes on loopback, synchronous replication between the nodes.
#
#   scripts/auto-failover.sh up DIR            make (first time) and start; prints the
#                                              multi-host admin URL on its last line
#   scripts/auto-failover.sh state DIR         the monitor's view of the nodes
#   scripts/auto-failover.sh kill-primary DIR  kill -9 the primary node: its pg_autoctl
#                                              keeper and its postmaster (the machine
#                                              is lost); prints the node's name
#   scripts/auto-failover.sh down DIR          stop everything (the files stay)
#
# Needs Debian's pg-auto-failover-cli and postgresql-15-auto-failover
# (scripts/ensure-postgres.sh installs them). As root, everything runs as
# the postgres user. The monitor is tuned to fail over in seconds, not the
# default half minute (health checks every second; a node unhealthy after 2 s;
# the old primary given 3 s to demote).
set -euo pipefail

command=${1:-}
dir=${2:-}
if [ -z "$command" ] || [ -z "$dir" ]; then
    sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
fi
bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
export PATH="$bindir:$PATH"
command -v pg_autoctl >/dev/null || { echo "pg_autoctl not found: apt-get install -y pg-auto-failover-cli postgresql-15-auto-failover" >&2; exit 1; }

as_server() {
    if [ "$(id -u)" = "0" ]; then
        runuser -u postgres -- env PATH="$PATH" XDG_CONFIG_HOME="$dir/config" XDG_DATA_HOME="$dir/share" "$@"
    else
        env XDG_CONFIG_HOME="$dir/config" XDG_DATA_HOME="$dir/share" "$@"
    fi
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Starts `pg_autoctl run` for one node in a session (and process group) of
# its own, whose id goes to DIR/NAME.pid: the keeper and the postmaster it
# starts are in that group.
run_node() {
    local name=$1
    if [ "$(id -u)" = "0" ]; then
        setsid runuser -u postgres -- env PATH="$PATH" XDG_CONFIG_HOME="$dir/config" XDG_DATA_HOME="$dir/share" \
            pg_autoctl run --pgdata "$dir/$name" >>"$dir/$name.log" 2>&1 &
    else
        setsid env XDG_CONFIG_HOME="$dir/config" XDG_DATA_HOME="$dir/share" \
            pg_autoctl run --pgdata "$dir/$name" >>"$dir/$name.log" 2>&1 &
    fi
    echo $! >"$dir/$name.pid"
}

# Signals a node's process group, never our own.
signal_node() {
    local signal=$1 name=$2 group
    [ -f "$dir/$name.pid" ] || return 0
    group=$(ps -o pgid= -p "$(cat "$dir/$name.pid")" 2>/dev/null | tr -d ' ' || true)
    [ -n "$group" ] && [ "$group" = "$(cat "$dir/$name.pid")" ] || return 0
    kill "-$signal" -- "-$group" 2>/dev/null || true
}

# The monitor's state as "name reported assigned" lines.
states() {
    as_server pg_autoctl show state --pgdata "$dir/monitor" --json 2>/dev/null | python3 -c '
import json, sys
try:
    nodes = json.load(sys.stdin)
except ValueError:
    sys.exit(0)
for node in nodes:
    print(node["nodename"], node["current_group_state"], node["assigned_group_state"], node["nodehost"] + ":" + str(node["nodeport"]))
'
}

wait_for() {   # wait_for SECONDS PYTHON-CONDITION-ON-"states"
    local deadline=$((SECONDS + $1))
    until states | python3 -c "import sys; lines = [l.split() for l in sys.stdin]; sys.exit(0 if ($2) else 1)"; do
        if [ $SECONDS -ge $deadline ]; then
            echo "pg_auto_failover did not reach the expected state within $1 s; now:" >&2
            states >&2 || true
            exit 1
        fi
        sleep 0.5
    done
}

case "$command" in
up)
    mkdir -p "$dir"
    [ "$(id -u)" = "0" ] && chown postgres "$dir"
    if [ ! -f "$dir/ports" ]; then
        echo "$(free_port) $(free_port) $(free_port)" >"$dir/ports"
    fi
    read -r monitor_port port1 port2 <"$dir/ports"
    if [ ! -f "$dir/monitor/PG_VERSION" ]; then
        echo "==> creating the monitor on port $monitor_port" >&2
        as_server pg_autoctl create monitor --pgdata "$dir/monitor" --pgport "$monitor_port" \
            --hostname 127.0.0.1 --auth trust --no-ssl >>"$dir/monitor.log" 2>&1
        cat >>"$dir/monitor/postgresql.conf" <<'CONF'
# Added by scripts/auto-failover.sh: fail over in seconds.
pgautofailover.health_check_period = 1000
pgautofailover.health_check_timeout = 1000
pgautofailover.health_check_max_retries = 1
pgautofailover.health_check_retry_delay = 500
pgautofailover.node_considered_unhealthy_timeout = 2000
pgautofailover.primary_demote_timeout = 3000
CONF
    fi
    run_node monitor
    monitor_url="postgres://autoctl_node@127.0.0.1:$monitor_port/pg_auto_failover?sslmode=disable"
    for i in $(seq 1 60); do
        as_server pg_autoctl show state --pgdata "$dir/monitor" >/dev/null 2>&1 && break
        sleep 0.5
    done
    for node in 1 2; do
        port=$([ $node = 1 ] && echo "$port1" || echo "$port2")
        if [ ! -f "$dir/node$node/PG_VERSION" ]; then
            echo "==> creating node$node on port $port" >&2
            as_server pg_autoctl create postgres --pgdata "$dir/node$node" --pgport "$port" --hostname 127.0.0.1 \
                --name "node$node" --auth trust --no-ssl --dbname canopy --monitor "$monitor_url" >>"$dir/node$node.log" 2>&1
        fi
        run_node "node$node"
        if [ $node = 1 ]; then
            wait_for 60 'any(l[1] == "primary" or l[1] == "single" for l in lines)'
        fi
    done
    wait_for 120 'sorted(l[1] for l in lines) == ["primary", "secondary"] and all(l[1] == l[2] for l in lines)'
    states >&2
    echo "postgres://postgres@127.0.0.1:$port1,127.0.0.1:$port2/canopy?target_session_attrs=read-write"
    ;;
state)
    states
    ;;
kill-primary)
    primary=$(states | awk '$2 == "primary" || $2 == "wait_primary" || $2 == "single" { print $1; exit }')
    [ -n "$primary" ] || { echo "no primary to kill" >&2; exit 1; }
    postmaster=$(head -1 "$dir/$primary/postmaster.pid")
    signal_node KILL "$primary"
    kill -9 "$postmaster" 2>/dev/null || true
    echo "$primary"
    ;;
down)
    for name in node2 node1 monitor; do signal_node TERM "$name"; done
    sleep 1
    for name in node2 node1 monitor; do
        if [ -f "$dir/$name/postmaster.pid" ]; then
            as_server pg_ctl stop -D "$dir/$name" -m immediate >/dev/null 2>&1 || true
        fi
        signal_node KILL "$name"
        rm -f "$dir/$name.pid"
    done
    ;;
*)
    echo "unknown command '$command': up, state, kill-primary or down" >&2
    exit 2
    ;;
esac
