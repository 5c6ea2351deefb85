#!/usr/bin/env bash
# The dashboard's browser tests: headless Chromium (Debian's chromium and chromium-driver)
# driven by Selenium against a real `nimbus serve` (BrowserTests/). Installs what is missing
# (idempotent), builds `nimbus` unless NIMBUS_BIN names one, and runs pytest. The tests'
# fixtures start the server on a free loopback port and stop it whatever happens.
#
#   bash scripts/browser-tests.sh                 # run the tests
#   bash scripts/browser-tests.sh --screenshots   # also save docs/screenshots/*.png
set -euo pipefail
cd "$(dirname "$0")/.."
export SWIFT_DETERMINISTIC_HASHING=1

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

if ! command -v chromedriver >/dev/null || ! command -v curl >/dev/null \
    || ! { command -v chromium >/dev/null || command -v chromium-browser >/dev/null; }; then
    packages="chromium chromium-driver curl"
    apt() { as_root env DEBIAN_FRONTEND=noninteractive apt-get "$@"; }
    apt install -y $packages || { apt update && apt install -y $packages; }
fi

VENV=.venv-browser
if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c 'import selenium, pytest' 2>/dev/null; then
    "$VENV/bin/pip" install --quiet selenium pytest
fi

if [ -z "${NIMBUS_BIN:-}" ]; then
    swift build --product nimbus
    export NIMBUS_BIN="$PWD/.build/debug/nimbus"
fi

if [ "${1:-}" = "--screenshots" ]; then
    export NIMBUS_SCREENSHOTS="$PWD/docs/screenshots"
fi

cd BrowserTests
exec "../$VENV/bin/python" -m pytest -v -p no:cacheprovider test_dashboard.py test_signin_popup.py
