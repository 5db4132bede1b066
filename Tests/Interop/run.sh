#!/usr/bin/env bash
# Interop scenarios with Bumble (Google's Python Bluetooth stack, bumble==0.0.236) as the independent peer.
#
#   Tests/Interop/run.sh [--controllers ble|bumble|rootcanal|ble,bumble,rootcanal] [--ble PATH/TO/ble] [--central PATH/TO/interop-central]
#                        [--only TEXT] [--snoop]
#                        [--lab-args "--no-ext-adv --fragment-rx --acl-num 4 ..."] [--logs DIR] [--skip-once]
#
#   --controllers  whose linked virtual controllers the hosts attach to: Bumble's (peers/lab_controllers.py), ours
#                  (`ble controller --tcp 127.0.0.1:P1 127.0.0.1:P2`) or Android's RootCanal 1.10.0
#                  (peers/rootcanal_controllers.py); a comma list runs every scenario on each.
#                  Default: ble when --ble is given, else bumble.
#   --ble PATH     the ble binary (swift build --product ble; then "$(swift build --show-bin-path)/ble"). Scenarios
#                  that need it (our controllers, our host) are skipped without it.
#   --central PATH swift-ble's scripted central (the interop-central product, Tests/Interop/SwiftCentral). Default: next
#                  to the ble binary. Lab sessions with our central are skipped without it.
#   --only TEXT    run only the scenarios whose name contains TEXT.
#   --snoop        the Bumble hosts (BUMBLE_SNOOPER) and the controllers (--snoop-dir) write btsnoop captures and
#                  hci_trace.py decodes each into interop-logs/<scenario>-<role>.hci.txt (controllers' in
#                  <scenario>-controller-snoop/): every HCI command, its parameters and its outcome.
#   --lab-args     extra options for Bumble's controllers (peers/lab_controllers.py --help), e.g. --no-ext-adv makes
#                  the Bumble hosts use the legacy advertising/scanning commands, as on a controller without them.
#   --logs DIR     where the logs go (emptied first; default $REPO/interop-logs), so two runs can go side by side.
#   --skip-once    skip the scenarios that run once per run rather than on each controller kind (for the second of
#                  two runs side by side, as scripts/test does).
#
# Installs Bumble and RootCanal into $REPO/.venv-bumble when missing (bootstrap.sh), then runs interop.py (the suite/ package: the
# scenario table and the engine) with the venv's python: it picks free loopback ports from the OS, starts every process in its own
# process group and stops every one of them on exit, prints the logs of a failed scenario, and ends with the line
# 'N passed, M failed' (exit status 1 when anything failed or nothing ran). Logs: $REPO/interop-logs/.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(git -C "$here" rev-parse --show-toplevel 2>/dev/null || (cd "$here/../.." && pwd))"
# The help needs no Bumble: print it before bootstrapping (skipping the values of options that take one).
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
    case "${args[i]}" in
        --controllers|--ble|--central|--only|--lab-args|--logs) i=$((i + 1)) ;;
        -h|--help) sed -n '2,28p' "$0"; exit 0 ;;
    esac
done
"$here/bootstrap.sh" || exit 1
exec "$repo/.venv-bumble/bin/python" "$here/interop.py" "$@"
