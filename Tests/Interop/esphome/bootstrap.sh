#!/usr/bin/env bash
# Creates (or reuses) $REPO/.venv-esphome with the judges of `ble proxy`, pinned: Home Assistant's ESPHome API
# client (aioesphomeapi), its Bluetooth manager (habluetooth), bleak's backend through a proxy (bleak-esphome) and
# the BTHome decoder of its BTHome integration (bthome-ble).
# A venv of its own: their dependencies (protobuf, noiseprotocol, cryptography, bleak...) are not Bumble's. Quiet when it is already there; on failure prints pip's log and exits 1.
set -euo pipefail
repo="$(git -C "$(dirname "$0")" rev-parse --show-toplevel 2>/dev/null || (cd "$(dirname "$0")/../../.." && pwd))"
venv="$repo/.venv-esphome"
aioesphomeapi="46.23.0"
bleak_esphome="4.1.0"
habluetooth="7.2.1"
bthome="3.25.0"
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import aioesphomeapi, importlib.metadata as m; assert m.version('aioesphomeapi') == '$aioesphomeapi' and m.version('bleak-esphome') == '$bleak_esphome' and m.version('habluetooth') == '$habluetooth' and m.version('bthome-ble') == '$bthome'" 2>/dev/null; then
    exit 0
fi
command -v python3 > /dev/null || { echo "bootstrap: python3 is not installed" >&2; exit 1; }
echo "bootstrap: installing aioesphomeapi==$aioesphomeapi, bleak-esphome==$bleak_esphome, habluetooth==$habluetooth and bthome-ble==$bthome into $venv" >&2
if [ ! -x "$venv/bin/python" ] && ! python3 -m venv "$venv" > /dev/null 2>&1; then
    echo "bootstrap: could not create the venv $venv (Debian/Ubuntu: apt-get install python3-venv)" >&2
    exit 1
fi
log="$venv/pip-install.log"
if ! "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "aioesphomeapi==$aioesphomeapi" "bleak-esphome==$bleak_esphome" "habluetooth==$habluetooth" "bthome-ble==$bthome" > "$log" 2>&1; then
    cat "$log" >&2
    echo "bootstrap: pip install aioesphomeapi==$aioesphomeapi bleak-esphome==$bleak_esphome habluetooth==$habluetooth bthome-ble==$bthome failed (log above, also in $log)" >&2
    exit 1
fi
"$venv/bin/python" -c "import aioesphomeapi, bleak_esphome, habluetooth, bthome_ble" || { echo "bootstrap: the ESPHome packages installed but do not import" >&2; exit 1; }
