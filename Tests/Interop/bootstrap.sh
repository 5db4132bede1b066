#!/usr/bin/env bash
# Creates (or reuses) the project's Bumble venv at $REPO/.venv-bumble with the pinned Bumble version and Android's
# RootCanal controller (PyPI rootcanal; 1.10.0 is the newest whose binary runs on Debian 12's glibc 2.36), and
# paho-mqtt, the independent MQTT client that watches and drives `ble gateway` in the gateway scenarios.
# Quiet and fast (one import check) when it is already there; on failure prints pip's log and exits 1.
set -euo pipefail
repo="$(git -C "$(dirname "$0")" rev-parse --show-toplevel 2>/dev/null || (cd "$(dirname "$0")/../.." && pwd))"
venv="$repo/.venv-bumble"
version="0.0.236"
rootcanal="1.10.0"
paho="2.1.0"
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import bumble, importlib.metadata as m; assert m.version('bumble') == '$version' and m.version('rootcanal') == '$rootcanal' and m.version('paho-mqtt') == '$paho'" 2>/dev/null; then
    exit 0
fi
command -v python3 > /dev/null || { echo "bootstrap: python3 is not installed" >&2; exit 1; }
echo "bootstrap: installing bumble==$version, rootcanal==$rootcanal and paho-mqtt==$paho into $venv" >&2
if [ ! -x "$venv/bin/python" ] && ! python3 -m venv "$venv" > /dev/null 2>&1; then
    python3 -m venv "$venv" >&2 || true
    echo "bootstrap: could not create the venv $venv (Debian/Ubuntu: apt-get install python3-venv)" >&2
    exit 1
fi
log="$venv/pip-install.log"
if ! "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "bumble==$version" "rootcanal==$rootcanal" "paho-mqtt==$paho" > "$log" 2>&1; then
    cat "$log" >&2
    echo "bootstrap: pip install bumble==$version rootcanal==$rootcanal paho-mqtt==$paho failed (log above, also in $log)" >&2
    exit 1
fi
"$venv/bin/python" -c "import bumble, rootcanal, paho.mqtt.client" || { echo "bootstrap: bumble, rootcanal or paho-mqtt installed but does not import" >&2; exit 1; }
