#!/usr/bin/env bash
# `ble web` in a real browser: Debian's Chromium (headless) driven by Playwright from PyPI, pinned, installed into
# $REPO/.venv-web when missing. Never `playwright install` (it downloads browsers): the test points Playwright at
# /usr/bin/chromium. web_test.py says what it checks; screenshots go to docs/images/web-*.png.
#
#   Tests/Web/run.sh --ble PATH/TO/bin-dir-or-ble [--images DIR]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(git -C "$here" rev-parse --show-toplevel 2>/dev/null || (cd "$here/../.." && pwd))"
venv="$repo/.venv-web"
playwright="1.65.3"
args=()
while [ $# -gt 0 ]; do
    case "$1" in
        --ble) ble="$2"; [ -d "$ble" ] && ble="$ble/ble"; args+=(--ble "$ble"); shift 2 ;;
        *) args+=("$1"); shift ;;
    esac
done
[ -x /usr/bin/chromium ] || { echo "Tests/Web: /usr/bin/chromium is missing (apt-get install chromium)" >&2; exit 1; }
if ! { [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import importlib.metadata as m; assert m.version('playwright') == '$playwright'" 2>/dev/null; }; then
    echo "Tests/Web: installing playwright==$playwright into $venv (the browser is Debian's chromium)" >&2
    [ -x "$venv/bin/python" ] || python3 -m venv "$venv" || { echo "could not create $venv (apt-get install python3-venv)" >&2; exit 1; }
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "playwright==$playwright" > "$venv/pip-install.log" 2>&1 \
        || { cat "$venv/pip-install.log" >&2; echo "pip install playwright==$playwright failed" >&2; exit 1; }
fi
exec "$venv/bin/python" "$here/web_test.py" "${args[@]}"
