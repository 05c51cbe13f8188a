#!/usr/bin/env bash
# Makes sure headless Chromium and its WebDriver are installed (the browser
# tests drive them through Selenium): from Debian's packages when missing
# and we are root, else says what to install.
set -euo pipefail
if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then exit 0; fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "==> installing chromium and chromium-driver from Debian's packages"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq chromium chromium-driver >/dev/null
    exit 0
fi
echo "the browser tests need chromium and chromium-driver (apt-get install chromium chromium-driver)" >&2
exit 1
