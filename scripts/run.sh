#!/usr/bin/env bash
# make run: start the embedded cluster, migrate, make a demo user, print a
# first request, and serve until Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=.build/debug/canopy
export CANOPY_DATA_DIR="${CANOPY_DATA_DIR:-.canopy}"
PORT="${CANOPY_PORT:-8080}"

"$BIN" migrate up
# The demo user's token is kept in the data directory and used again while
# it is live ("canopy users tokens demo" lists it, not revoked), so each run
# does not mint another; a new one only for a new cluster or after a revoke.
TOKEN_FILE="$CANOPY_DATA_DIR/demo.token"
TOKEN=""
if [ -s "$TOKEN_FILE" ]; then
    TOKEN=$(cat "$TOKEN_FILE")
    # The prefix is cnp_ and 16 hex digits; the secret after it may hold "_" too.
    PREFIX=$(printf '%s' "$TOKEN" | cut -d_ -f1-2)
    "$BIN" users tokens demo --json 2>/dev/null | grep -q "\"prefix\":\"$PREFIX\",\"revoked\":null" || TOKEN=""
fi
if [ -z "$TOKEN" ]; then
    if ! JSON=$("$BIN" users add demo --email demo@example.com --json 2>/dev/null); then
        JSON=$("$BIN" users token demo --json)
    fi
    TOKEN=$(printf '%s' "$JSON" | sed -E 's/.*"token":"([^"]+)".*/\1/')
    (umask 077; printf '%s\n' "$TOKEN" > "$TOKEN_FILE")
fi

cat <<MSG

Canopy is starting on http://127.0.0.1:$PORT (embedded PostgreSQL in $CANOPY_DATA_DIR).
A first request, as the demo user:

  curl -s http://127.0.0.1:$PORT/graphql \\
    -H 'Authorization: Bearer $TOKEN' \\
    -H 'Content-Type: application/json' \\
    -d '{"query": "{ me { userRecordName name email } }"}'

Or open the console in a browser, http://127.0.0.1:$PORT/ , and sign in with that token
(a second person for sharing: $BIN users add bob --email bob@example.com --data-dir $CANOPY_DATA_DIR).

Look at the data as that user sees it:  $BIN psql --as demo --data-dir $CANOPY_DATA_DIR
Stop with Ctrl-C; the cluster keeps running for the next command (make stop stops it).

MSG
if [ -t 0 ] && [ -t 1 ]; then
    # In a terminal, serve runs in a process group of its own, given the
    # terminal: Ctrl-C then reaches serve alone, which stops gracefully, and
    # make (not interrupted) ends quietly instead of "*** [run] Interrupt".
    set -m
    "$BIN" serve --port "$PORT" &
    fg %1 >/dev/null
    exit $?
fi
exec "$BIN" serve --port "$PORT"
