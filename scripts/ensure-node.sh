#!/usr/bin/env bash
# Makes sure Node 20 or later is installed (CanopyJS's tests run under its
# built-in test runner, with --experimental-websocket): Debian's nodejs
# when missing and we are root, else says what to install.
set -euo pipefail
major() { node --version 2>/dev/null | sed -E 's/^v([0-9]+).*/\1/'; }
if command -v node >/dev/null 2>&1 && [ "$(major)" -ge 20 ]; then exit 0; fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "==> installing nodejs from Debian's packages"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq nodejs >/dev/null
    if [ "$(major)" -ge 20 ]; then exit 0; fi
    echo "Debian's nodejs is $(node --version); CanopyJS's tests need Node 20 or later" >&2
    exit 1
fi
echo "CanopyJS's tests need Node 20 or later (apt-get install nodejs)" >&2
exit 1
