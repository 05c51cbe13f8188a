#!/usr/bin/env bash
# Makes sure Node 20 or later is installed (CanopyJS's tests run under its
# built-in test runner, with --experimental-websocket), and TypeScript's
# compiler (the tests compile the declarations, `canopy schema typescript`'s
# output and the README's examples with tsc --strict), and npm (the package
# test packs CanopyJS and installs it offline): Debian's nodejs, npm and
# node-typescript when missing and we are root, else says what to install.
set -euo pipefail
major() { node --version 2>/dev/null | sed -E 's/^v([0-9]+).*/\1/'; }
ready() { command -v node >/dev/null 2>&1 && [ "$(major)" -ge 20 ] && command -v tsc >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; }
if ready; then exit 0; fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "==> installing nodejs and node-typescript from Debian's packages"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq nodejs node-typescript >/dev/null
    # npm (the package test packs and installs CanopyJS) comes with some nodejs packages, apart in others.
    command -v npm >/dev/null 2>&1 || apt-get install -y -qq npm >/dev/null
    if ready; then exit 0; fi
    echo "Debian's nodejs is $(node --version); CanopyJS's tests need Node 20 or later and tsc" >&2
    exit 1
fi
echo "CanopyJS's tests need Node 20 or later and TypeScript's tsc (apt-get install nodejs node-typescript)" >&2
exit 1
