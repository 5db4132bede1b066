#!/usr/bin/env bash
# Creates (or reuses) $REPO/.venv-esphome with Home Assistant's ESPHome API client, aioesphomeapi (the judge of
# `ble proxy`), pinned. A venv of its own: its dependencies (protobuf, noiseprotocol, cryptography...) are not
# Bumble's. Quiet when it is already there; on failure prints pip's log and exits 1.
set -euo pipefail
repo="$(git -C "$(dirname "$0")" rev-parse --show-toplevel 2>/dev/null || (cd "$(dirname "$0")/../../.." && pwd))"
venv="$repo/.venv-esphome"
aioesphomeapi="46.23.0"
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import aioesphomeapi, importlib.metadata as m; assert m.version('aioesphomeapi') == '$aioesphomeapi'" 2>/dev/null; then
    exit 0
fi
command -v python3 > /dev/null || { echo "bootstrap: python3 is not installed" >&2; exit 1; }
echo "bootstrap: installing aioesphomeapi==$aioesphomeapi into $venv" >&2
if [ ! -x "$venv/bin/python" ] && ! python3 -m venv "$venv" > /dev/null 2>&1; then
    echo "bootstrap: could not create the venv $venv (Debian/Ubuntu: apt-get install python3-venv)" >&2
    exit 1
fi
log="$venv/pip-install.log"
if ! "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "aioesphomeapi==$aioesphomeapi" > "$log" 2>&1; then
    cat "$log" >&2
    echo "bootstrap: pip install aioesphomeapi==$aioesphomeapi failed (log above, also in $log)" >&2
    exit 1
fi
"$venv/bin/python" -c "import aioesphomeapi" || { echo "bootstrap: aioesphomeapi installed but does not import" >&2; exit 1; }
