#!/usr/bin/env bash
# A gateway's network on one machine, for the network-fault tests
# (docs/RELIABILITY.md, "Network faults") and for trying them by hand:
# three network namespaces of its own, a gateway's and two PostgreSQL
# servers' (a primary and a streaming replica), joined by veth pairs whose
# addresses exist only inside those namespaces:
#
#   gateway 10.231.1.1 <-> 10.231.1.2 primary
#   gateway 10.231.2.1 <-> 10.231.2.2 replica
#
# Nothing here has an address outside the lab's namespaces. The servers
# also listen on Unix sockets in DIR, which cross namespaces: the tests set
# up and check the database through them while a link is cut, and the
# replica streams from the primary through one.
#
#   scripts/netns-lab.sh up DIR                 make and start; prints KEY=VALUE lines:
#                                               GATEWAY_NS (run the gateway there),
#                                               PRIMARY_URL, REPLICA_URL (from the gateway's
#                                               namespace), ADMIN_URL, REPLICA_ADMIN_URL
#                                               (Unix sockets, from anywhere)
#   scripts/netns-lab.sh cut DIR primary|replica   the server's end of the link set down:
#                                               packets stop both ways, nobody is told
#                                               (a partition; the gateway's TCP hangs)
#   scripts/netns-lab.sh heal DIR primary|replica  the link up again
#   scripts/netns-lab.sh freeze DIR primary     SIGSTOP the postmaster and every backend
#                                               (a frozen server: it accepts, never answers)
#   scripts/netns-lab.sh thaw DIR primary       SIGCONT them
#   scripts/netns-lab.sh down DIR               stop the servers, delete the namespaces
#                                               (the files stay)
#
# Needs root (namespaces, veth), iproute2 and PostgreSQL 15's server
# programs (scripts/ensure-postgres.sh); the servers run as postgres.
set -euo pipefail

command=${1:-}
dir=${2:-}
if [ -z "$command" ] || [ -z "$dir" ]; then
    sed -n '2,31p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
fi
[ "$(id -u)" = "0" ] || { echo "netns-lab.sh needs root (ip netns, veth)" >&2; exit 1; }
bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -n "$bindir" ] || { echo "PostgreSQL's server programs are not installed (scripts/ensure-postgres.sh)" >&2; exit 1; }
export PATH="$bindir:$PATH"
dir=$(realpath -m "$dir")

# Names from the folder, so labs in different folders do not meet; an
# interface name holds at most 15 characters.
id=$(printf '%s' "$dir" | sha256sum | cut -c1-6)
gateway_ns="cnp$id-gw"
primary_ns="cnp$id-pri"
replica_ns="cnp$id-rep"
port=5432

ns_of() {
    case $1 in
        primary) echo "$primary_ns" ;;
        replica) echo "$replica_ns" ;;
        *) echo "no such server: $1 (primary or replica)" >&2; exit 2 ;;
    esac
}
# The server's end of its link to the gateway.
server_end() {
    case $1 in
        primary) echo "c${id}p1" ;;
        replica) echo "c${id}r1" ;;
    esac
}

as_postgres() {
    runuser -u postgres -- env PATH="$PATH" "$@"
}

link() {
    local server=$1 gateway_address=$2 server_address=$3
    local ns gateway_end end
    ns=$(ns_of "$server")
    end=$(server_end "$server")
    gateway_end="c${id}${server:0:1}0"
    ip link add "$gateway_end" type veth peer name "$end"
    ip link set "$gateway_end" netns "$gateway_ns"
    ip link set "$end" netns "$ns"
    ip -n "$gateway_ns" addr add "$gateway_address/30" dev "$gateway_end"
    ip -n "$ns" addr add "$server_address/30" dev "$end"
    ip -n "$gateway_ns" link set "$gateway_end" up
    ip -n "$ns" link set "$end" up
}

settings() {
    local address=$1 sockets=$2
    cat <<EOF

# Added by scripts/netns-lab.sh: the lab's link and a Unix socket in its folder.
listen_addresses = '$address'
port = $port
unix_socket_directories = '$sockets'
max_connections = 100
shared_buffers = 64MB
log_min_messages = warning
log_line_prefix = '%m [%p] %q%u@%d '
EOF
}

start_server() {
    local server=$1
    ip netns exec "$(ns_of "$server")" runuser -u postgres -- env PATH="$PATH" \
        pg_ctl -D "$dir/$server" -l "$dir/logs/$server.log" -w -t 60 start >/dev/null
}

postmaster_pid() {
    head -1 "$dir/$1/postmaster.pid"
}

# The postmaster and its children (the backends, the WAL writer, ...).
server_pids() {
    local postmaster
    postmaster=$(postmaster_pid "$1")
    echo "$postmaster" $(pgrep -P "$postmaster" || true)
}

case $command in
up)
    mkdir -p "$dir"
    chmod 755 "$dir"
    install -d -o postgres -m 755 "$dir/logs"
    for ns in "$gateway_ns" "$primary_ns" "$replica_ns"; do
        ip netns list | grep -qw "^$ns" || ip netns add "$ns"
        ip -n "$ns" link set lo up
    done
    ip -n "$gateway_ns" link show "c${id}p0" >/dev/null 2>&1 || link primary 10.231.1.1 10.231.1.2
    ip -n "$gateway_ns" link show "c${id}r0" >/dev/null 2>&1 || link replica 10.231.2.1 10.231.2.2

    if [ ! -f "$dir/primary/PG_VERSION" ]; then
        rm -rf "$dir/primary"
        install -d -o postgres -m 700 "$dir/primary"
        install -d -o postgres -m 755 "$dir/primary-run" "$dir/replica-run"
        as_postgres initdb -D "$dir/primary" -U canopy_admin --auth=trust --encoding=UTF8 --no-locale --no-sync >"$dir/logs/initdb.log"
        settings 10.231.1.2 "$dir/primary-run" >>"$dir/primary/postgresql.conf"
        cat >"$dir/primary/pg_hba.conf" <<EOF
# The lab's: trust on its own socket and its own links only.
local all all trust
local replication all trust
host all all 10.231.0.0/16 trust
EOF
    fi
    [ -f "$dir/primary/postmaster.pid" ] || start_server primary
    as_postgres psql -h "$dir/primary-run" -p $port -U canopy_admin -d postgres -qAtc \
        "SELECT 1 FROM pg_database WHERE datname = 'canopy'" | grep -q 1 \
        || as_postgres createdb -h "$dir/primary-run" -p $port -U canopy_admin canopy

    if [ ! -f "$dir/replica/PG_VERSION" ]; then
        rm -rf "$dir/replica"
        install -d -o postgres -m 700 "$dir/replica"
        as_postgres pg_basebackup -h "$dir/primary-run" -p $port -U canopy_admin -D "$dir/replica" -R -X stream -c fast >/dev/null
        chmod 700 "$dir/replica"
        settings 10.231.2.2 "$dir/replica-run" >>"$dir/replica/postgresql.conf"
    fi
    [ -f "$dir/replica/postmaster.pid" ] || start_server replica

    echo "GATEWAY_NS='$gateway_ns'"
    echo "PRIMARY_URL='postgres://canopy_admin@10.231.1.2:$port/canopy'"
    echo "REPLICA_URL='postgres://canopy_admin@10.231.2.2:$port/canopy'"
    echo "ADMIN_URL='postgres://canopy_admin@/canopy?host=$dir/primary-run&port=$port'"
    echo "REPLICA_ADMIN_URL='postgres://canopy_admin@/canopy?host=$dir/replica-run&port=$port'"
    ;;
cut)
    ip -n "$(ns_of "${3:?primary or replica}")" link set "$(server_end "$3")" down
    ;;
heal)
    ip -n "$(ns_of "${3:?primary or replica}")" link set "$(server_end "$3")" up
    ;;
freeze)
    ns_of "${3:?primary or replica}" >/dev/null
    # The postmaster first, so it forks nothing new meanwhile.
    kill -STOP $(server_pids "$3")
    ;;
thaw)
    ns_of "${3:?primary or replica}" >/dev/null
    pids=$(server_pids "$3")
    # Children first, then the postmaster.
    kill -CONT $(echo "$pids" | cut -d' ' -f2-) 2>/dev/null || true
    kill -CONT "$(postmaster_pid "$3")"
    ;;
down)
    for server in replica primary; do
        if [ -f "$dir/$server/postmaster.pid" ]; then
            kill -CONT $(server_pids "$server") 2>/dev/null || true
            as_postgres pg_ctl -D "$dir/$server" -m immediate -w stop >/dev/null 2>&1 || true
        fi
    done
    for ns in "$gateway_ns" "$primary_ns" "$replica_ns"; do
        ip netns del "$ns" 2>/dev/null || true
    done
    ;;
*)
    echo "unknown command: $command (up, cut, heal, freeze, thaw, down)" >&2
    exit 2
    ;;
esac
