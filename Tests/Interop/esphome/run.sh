#!/usr/bin/env bash
# `ble proxy` against Home Assistant's ESPHome API client (aioesphomeapi, pinned in bootstrap.sh, installed into
# $REPO/.venv-esphome when missing): encryption, refusals, raw advertisements, a connection with its services, reads,
# writes, descriptors, notifications, ATT errors and slot accounting (proxy_test.py says what it checks).
#
#   Tests/Interop/esphome/run.sh --ble PATH/TO/ble [--log FILE]
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(git -C "$here" rev-parse --show-toplevel 2>/dev/null || (cd "$here/../../.." && pwd))"
"$here/bootstrap.sh" || exit 1
# Bumble's lab peripheral and RootCanal, for the scenarios with a Bumble device (.venv-bumble).
"$here/../bootstrap.sh" || exit 1
exec "$repo/.venv-esphome/bin/python" "$here/proxy_test.py" "$@"
