#!/usr/bin/env bash
# Interop scenarios with Bumble (Google's Python Bluetooth stack, bumble==0.0.236) as the independent peer.
#
#   Tests/Interop/run.sh [--controllers bumble|ble|ble,bumble] [--ble PATH/TO/ble] [--central PATH/TO/interop-central]
#                        [--only TEXT] [--snoop]
#                        [--lab-args "--no-ext-adv --fragment-rx --acl-num 4 ..."]
#
#   --controllers  whose linked virtual controllers the hosts attach to: Bumble's (peers/lab_controllers.py) or ours
#                  (`ble controller --tcp 127.0.0.1:P1 127.0.0.1:P2`); a comma list runs every scenario on each.
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
#
# Installs Bumble into $REPO/.venv-bumble when missing (bootstrap.sh), picks free loopback ports from the OS, starts
# every process in its own process group and stops every one of them on exit, prints the logs of a failed scenario,
# and ends with the line 'N passed, M failed' (exit status 1 when anything failed). Logs: $REPO/interop-logs/.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(git -C "$here" rev-parse --show-toplevel 2>/dev/null || (cd "$here/../.." && pwd))"
kinds=""
ble=""
central_bin=""
only=""
snoop=0
lab_args=""
while [ $# -gt 0 ]; do
    case "$1" in
        --controllers) kinds="${2//,/ }"; shift 2 ;;
        --ble) ble="$2"; shift 2 ;;
        --central) central_bin="$2"; shift 2 ;;
        --only) only="$2"; shift 2 ;;
        --snoop) snoop=1; shift ;;
        --lab-args) lab_args="$2"; shift 2 ;;
        -h|--help) sed -n '2,26p' "$0"; exit 0 ;;
        *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
if [ -n "$ble" ]; then
    [ -x "$ble" ] || { echo "--ble $ble: not an executable (build it: swift build --product ble)" >&2; exit 2; }
    ble="$(cd "$(dirname "$ble")" && pwd)/$(basename "$ble")"
fi
[ -n "$central_bin" ] || { [ -n "$ble" ] && [ -x "$(dirname "$ble")/interop-central" ] && central_bin="$(dirname "$ble")/interop-central"; }
if [ -n "$central_bin" ]; then
    [ -x "$central_bin" ] || { echo "--central $central_bin: not an executable (swift build --product interop-central)" >&2; exit 2; }
    central_bin="$(cd "$(dirname "$central_bin")" && pwd)/$(basename "$central_bin")"
fi
[ -n "$kinds" ] || { if [ -n "$ble" ]; then kinds=ble; else kinds=bumble; fi; }
for kind in $kinds; do
    case "$kind" in
        bumble) ;;
        ble) [ -n "$ble" ] || { echo "--controllers ble needs --ble PATH/TO/ble" >&2; exit 2; } ;;
        *) echo "--controllers: '$kind' is neither bumble nor ble" >&2; exit 2 ;;
    esac
done

"$here/bootstrap.sh" || exit 1
py="$repo/.venv-bumble/bin/python"
logs="$repo/interop-logs"
rm -rf "$logs"; mkdir -p "$logs"
# Our tool keeps bonds in $XDG_DATA_HOME/swift-ble/bonds.json on a real controller: here, in the logs, so a run never
# touches the user's bonds and starts from none (scenarios that pair pass --bonds files of their own).
export XDG_DATA_HOME="$logs/xdg-data"

# ---------------------------------------------------------------------------------------------------------------
# Processes: every background process leads its own process group (setsid), so stopping it stops its children too.
pids=()
start_bg() {   # start_bg LOG COMMAND...: starts COMMAND in the background, output to LOG; its pid in $last_pid
    local out="$1"; shift
    setsid "$@" > "$out" 2>&1 < /dev/null &
    last_pid=$!
    pids+=("$last_pid")
}
run_fg() {     # run_fg LOG SECONDS COMMAND...: runs COMMAND to completion (killed after SECONDS), output appended
               # to LOG; returns its exit status (124: timed out). Waiting with the 'wait' builtin keeps run.sh
               # responsive to Ctrl-C / SIGTERM, and the EXIT trap then stops COMMAND too.
    local out="$1" seconds="$2"; shift 2
    setsid timeout -k 2 "$seconds" "$@" >> "$out" 2>&1 < /dev/null &
    local pid=$!
    pids+=("$pid")
    wait "$pid"
    local status=$?
    forget "$pid"
    return $status
}
forget() {     # forget PID: drop a reaped process from the cleanup list (its pid may be reused later)
    local kept=() pid
    for pid in "${pids[@]}"; do [ "$pid" = "$1" ] || kept+=("$pid"); done
    pids=("${kept[@]}")
}
stop_bg() {    # stop_bg PID: SIGTERM to its group, up to 3 s to exit cleanly (flushes captures), then SIGKILL
    local pid="$1"
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 1 30); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    forget "$pid"
}
cleanup() {
    local pid
    for pid in "${pids[@]}"; do kill -TERM -- "-$pid" 2>/dev/null; done
    sleep 0.3
    for pid in "${pids[@]}"; do kill -KILL -- "-$pid" 2>/dev/null; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

wait_for() {   # wait_for FILE REGEX SECONDS PID: until FILE has a line matching REGEX; fails if PID exits first
    local deadline=$(( $(date +%s%N) + $3 * 1000000000 ))
    while [ "$(date +%s%N)" -lt $deadline ]; do
        grep -qE "$2" "$1" 2>/dev/null && return 0
        kill -0 "$4" 2>/dev/null || { grep -qE "$2" "$1" 2>/dev/null; return; }
        sleep 0.05
    done
    return 1
}

free_ports() {   # free_ports N: N loopback ports the OS just handed out (bound to port 0, then released)
    "$py" - "$1" <<'PY'
import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks: s.bind(('127.0.0.1', 0))
print(' '.join(str(s.getsockname()[1]) for s in socks))
PY
}

# start_controllers NAME PORT...: linked controllers of kind $controllers, one per port; waits for READY (10 s).
start_controllers() {
    local name="$1"; shift
    local out="$logs/$name-controllers.log"
    if [ "$controllers" = ble ]; then
        local args=()
        for port in "$@"; do args+=(--tcp "127.0.0.1:$port"); done
        [ "${large_acl:-0}" -eq 1 ] && args+=(--acl-size 251 --acl-count 8)
        if [ $snoop -eq 1 ]; then   # ble controller does not create the directory (and records nothing without it)
            mkdir -p "$logs/$name-controller-snoop"; args+=(--snoop-dir "$logs/$name-controller-snoop")
        fi
        start_bg "$out" "$ble" controller "${args[@]}"
    else
        local extra=()
        read -r -a extra <<< "$lab_args"
        [ $snoop -eq 1 ] && extra+=(--snoop-dir "$logs/$name-controller-snoop")
        [ "${large_acl:-0}" -eq 1 ] && extra+=(--acl-len 251 --acl-num 8)
        start_bg "$out" "$py" "$here/peers/lab_controllers.py" "$@" "${extra[@]}"
    fi
    controllers_pid=$last_pid
    wait_for "$out" "^READY" 10 "$controllers_pid" && return 0
    echo "controllers ($controllers) did not print READY within 10 s"
    return 1
}

# bumble_env ROLE: the environment a Bumble peer runs with (a btsnoop capture with --snoop).
bumble_env() {
    if [ $snoop -eq 1 ]; then echo "BUMBLE_SNOOPER=btsnoop:file:$logs/$name-$1.btsnoop"; else echo "BUMBLE_SNOOPER="; fi
}

# decode_captures: with --snoop, turns every btsnoop capture of the scenario into a readable HCI trace.
decode_captures() {
    [ $snoop -eq 1 ] || return 0
    local capture
    for capture in "$logs/$name"-*.btsnoop "$logs/$name"-controller-snoop/*.btsnoop; do
        [ -s "$capture" ] && "$py" "$here/hci_trace.py" "$capture" > "${capture%.btsnoop}.hci.txt" 2>&1
    done
}

# hexof TEXT: the UTF-8 bytes of TEXT in lowercase hex.
hexof() { printf '%s' "$1" | od -An -tx1 -v | tr -d ' \n'; }

# ---------------------------------------------------------------------------------------------------------------
passed=0; failed=0; skipped=0
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() {
    echo "FAIL $1: $2"
    local f
    for f in "$logs/$1"-*.log "$logs/$1"-*.hci.txt; do
        [ -f "$f" ] || continue
        echo "----- $f (last 150 lines)"; tail -150 "$f"
    done
    echo "----- end of $1"
    failed=$((failed + 1))
}
skip() { echo "SKIP $1: $2"; skipped=$((skipped + 1)); }
needs_ble() { [ -n "$ble" ] || { skip "$1" "needs --ble PATH/TO/ble"; return 1; }; }
selected() { [ -z "$only" ] || [[ "$1" == *"$only"* ]]; }
millis() { echo $(( $(date +%s%N) / 1000000 )); }

# expect FILE KEY VALUE: the file has the line 'RESULT KEY=VALUE'.
expect() { grep -qxF "RESULT $2=$3" "$1" || { echo "missing 'RESULT $2=$3' in $(basename "$1")"; return 1; }; }

# ---------------------------------------------------------------------------------------------------------------
# lab_session CENTRAL PERIPHERAL (each bumble or ble): the whole session of the issue between one central and one
# peripheral on two linked controllers of kind $controllers. Centrals: peers/central.py --full (Bumble's host) or
# interop-central (ours, public async API). Peripherals: peers/peripheral.py (Bumble's host) or `ble serve` (ours);
# both serve the lab layout (SampleDevice.lab). Both centrals print the same RESULT keys, checked below.
scenario_lab_session() {
    local who_central="$1" who_peripheral="$2"
    name="lab-session-$who_central-central-to-$who_peripheral-peripheral-on-$controllers"
    selected "$name" || return 0
    if [ "$who_central" = ble ] && [ -z "$central_bin" ]; then skip "$name" "needs --central PATH/TO/interop-central"; return 0; fi
    if [ "$who_peripheral" = ble ] || [ "$controllers" = ble ]; then needs_ble "$name" || return 0; fi
    local start; start=$(millis)
    read -r p1 p2 < <(free_ports 2)
    start_controllers "$name" "$p1" "$p2" || { fail "$name" "controllers"; stop_bg "$controllers_pid"; return; }
    local c="$logs/$name-central.log" p="$logs/$name-peripheral.log" ok=1 target
    if [ "$who_peripheral" = ble ]; then
        target=SwiftBLELab
        start_bg "$p" "$ble" serve --hci "tcp:127.0.0.1:$p1" --json --run-for 60 --notify-interval 200
    else
        target=BumbleLabPeripheral
        start_bg "$p" env "$(bumble_env peripheral)" "$py" "$here/peers/peripheral.py" \
            --transport "tcp-client:127.0.0.1:$p1" --run-for 60
    fi
    local peripheral=$last_pid
    if ! wait_for "$p" '"event":"serving"|^RESULT advertising=1' 15 "$peripheral"; then
        echo "the peripheral did not start advertising"; ok=0
    else
        local rc
        if [ "$who_central" = ble ]; then
            run_fg "$c" 60 "$central_bin" --hci "tcp:127.0.0.1:$p2" --target "$target" --btsnoop "$logs/$name-ours.btsnoop"
        else
            run_fg "$c" 60 env "$(bumble_env central)" "$py" "$here/peers/central.py" \
                --transport "tcp-client:127.0.0.1:$p2" --target-name "$target" --full
        fi
        rc=$?
        [ $rc -eq 0 ] || { echo "the central exited with status $rc$([ $rc -eq 124 ] && echo ' (killed by the 60 s timeout)'): $(grep '^FAILED' "$c")"; ok=0; }
        sleep 0.3
    fi
    stop_bg "$peripheral"
    stop_bg "$controllers_pid"
    decode_captures
    if [ $ok -eq 1 ]; then
        # What the scan decoded. Bumble 0.0.236's controller answers a scan request with a copy of the advertising
        # data, so the scan response's manufacturer data ('scanrsp') is seen on our controllers only.
        local manufacturer=""
        if [ "$who_peripheral" = ble ]; then
            manufacturer="FFFF:$(hexof lab)"
            [ "$controllers" = ble ] && manufacturer="$manufacturer,FFFF:$(hexof scanrsp)"
        else
            [ "$controllers" = ble ] && manufacturer="FFFF:$(hexof scanrsp)"
        fi
        expect "$c" scan_name "$target" || ok=0
        expect "$c" scan_services 180D,180F || ok=0
        expect "$c" scan_manufacturer "$manufacturer" || ok=0
        expect "$c" scan_nonmatching 0 || ok=0
        expect "$c" scan_matching 1 || ok=0
        expect "$c" connected 1 || ok=0
        expect "$c" mtu 247 || ok=0
        expect "$c" services 6 || ok=0
        # The discovered tree equals the one the peripheral reports of itself (handles, properties, UUIDs).
        "$py" "$here/gatt_tree.py" "$c" > "$logs/$name-tree-discovered.txt" || { echo "the central printed no tree"; ok=0; }
        "$py" "$here/gatt_tree.py" "$p" > "$logs/$name-tree-served.txt" || { echo "the peripheral printed no tree"; ok=0; }
        if ! diff "$logs/$name-tree-discovered.txt" "$logs/$name-tree-served.txt" > "$logs/$name-tree.diff"; then
            echo "discovered tree differs from the peripheral's own (< central, > peripheral):"; cat "$logs/$name-tree.diff"; ok=0
        fi
        if [ "$who_peripheral" = ble ]; then expect "$c" manufacturer "swift-ble Lab Inc." || ok=0
        else expect "$c" manufacturer "Bumble Lab Inc." || ok=0; fi
        expect "$c" long_read_300 ok || ok=0
        expect "$c" long_read_512 ok || ok=0
        # An unencrypted read of the protected value: our server holds no key for the central, so Insufficient
        # Authentication (Core 5.4, Vol 3, Part C, 10.3.1); Bumble's answers Insufficient Encryption either way.
        if [ "$who_peripheral" = ble ]; then expect "$c" read_error_12345678-1234-5678-1234-56789ABCDEF3 0x05 || ok=0
        else expect "$c" read_error_12345678-1234-5678-1234-56789ABCDEF3 0x0F || ok=0; fi
        expect "$c" write_with_response ok || ok=0
        expect "$c" write_without_response ok || ok=0
        expect "$c" long_write_512 ok || ok=0
        # Core 5.4, Vol 3, Part F, 3.2.9: attribute values are at most 512 octets. Our client refuses a longer write
        # before sending it; Bumble's sends it and the server must answer Invalid Attribute Value Length (0x0D).
        if [ "$who_central" = ble ]; then expect "$c" long_write_600 refused || ok=0
        else expect "$c" long_write_600 0x0D || ok=0; fi
        expect "$c" long_write_600_kept 1 || ok=0
        expect "$c" burst 200 || ok=0
        expect "$c" indications 5 || ok=0
        expect "$c" notifications 3 || ok=0
        # Core 5.4, Vol 4, Part E, 7.1.6: the side that disconnects gets 0x16 (terminated by local host); Bumble
        # 0.0.236's controller reports the reason it sent to the peer (0x13) instead.
        if [ "$controllers" = ble ]; then expect "$c" disconnect_reason 0x16 || ok=0
        else expect "$c" disconnect_reason 0x13 || ok=0; fi
        expect "$c" reconnected 1 || ok=0
        # GATT caching (Core 5.4, Vol 3, Part G, 7.3): our central's cached reconnection takes one round trip (the
        # Database Hash read), against either server's hash; Bumble's central recomputes our server's hash itself.
        if [ "$who_central" = ble ]; then expect "$c" cached_discovery_round_trips 1 || ok=0
        else expect "$c" database_hash ok || ok=0; fi
        expect "$c" reconnect_read ok || ok=0
        expect "$c" peer_disconnect_reason 0x13 || ok=0
        expect "$c" reconnected_after_peer_disconnect 1 || ok=0
        if [ "$who_central" = ble ]; then
            expect "$c" auto_reconnected 1 || ok=0
            expect "$c" subscription_restored 1 || ok=0
            expect "$c" stayed_disconnected 1 || ok=0
        fi
        expect "$c" done 1 || ok=0
        # The peripheral's side of it.
        local value512; value512=$("$py" -c 'print(bytes((13 * i + 5) % 256 for i in range(512)).hex())')
        if [ "$who_peripheral" = ble ]; then
            grep -q '"event":"write".*"value":"'"$(hexof written-with-response)"'"' "$p" || { echo "ble serve did not log the write request"; ok=0; }
            grep -q '"event":"write".*"value":"'"$(hexof written-without-response)"'"' "$p" || { echo "ble serve did not log the write command"; ok=0; }
            grep -q '"event":"write".*"value":"'"$value512"'"' "$p" || { echo "ble serve did not log the 512-byte long write"; ok=0; }
            [ "$(grep -c '"event":"write".*"value":"000102030405' "$p")" -eq 0 ] || { echo "ble serve stored the 600-byte write"; ok=0; }
            grep -q '"event":"burst","sent":200}' "$p" || { echo "ble serve did not log 200 burst notifications sent"; ok=0; }
            grep -q '"confirmed":5,.*"event":"indications"' "$p" || { echo "ble serve did not log 5 confirmed indications"; ok=0; }
            grep -q '"event":"disconnecting"' "$p" || { echo "ble serve did not disconnect on the control point"; ok=0; }
            grep -q '"event":"disconnected".*(0x13)",.*"reason_code":19}' "$p" || { echo "ble serve did not log the central's disconnection (0x13)"; ok=0; }
            [ "$(grep -c '"event":"connected"' "$p")" -ge 3 ] || { echo "ble serve saw fewer than 3 connections"; ok=0; }
        else
            expect "$p" write written-with-response || ok=0
            expect "$p" write written-without-response || ok=0
            [ "$(grep -c '^RESULT long_write=' "$p")" -eq 1 ] && expect "$p" long_write 512 || { echo "the peripheral stored a write other than the 512-byte one"; ok=0; }
            expect "$p" burst_sent 200 || ok=0
            expect "$p" indications_confirmed 5 || ok=0
            expect "$p" control_disconnect 1 || ok=0
            expect "$p" disconnected 0x13 || ok=0
            [ "$(grep -c '^RESULT connected=1' "$p")" -ge 3 ] || { echo "the peripheral saw fewer than 3 connections"; ok=0; }
        fi
    fi
    # Our central always records its HCI traffic; a failure shows it decoded (commands, events, ACL counts).
    if [ $ok -eq 0 ] && [ -s "$logs/$name-ours.btsnoop" ]; then
        "$py" "$here/hci_trace.py" "$logs/$name-ours.btsnoop" > "$logs/$name-ours.hci.txt" 2>&1
    fi
    if [ $ok -eq 1 ]; then pass "$name ($(( $(millis) - start )) ms)"; else fail "$name" "see above"; fi
}

# Our central (ble explore, write, subscribe) against Bumble's peripheral.
scenario_ble_central_to_bumble_peripheral() {
    name="ble-central-to-bumble-peripheral-on-$controllers"
    selected "$name" || return 0
    needs_ble "$name" || return 0
    local start; start=$(millis)
    read -r p1 p2 < <(free_ports 2)
    start_controllers "$name" "$p1" "$p2" || { fail "$name" "controllers"; stop_bg "$controllers_pid"; return; }
    local c="$logs/$name-central.log" p="$logs/$name-peripheral.log" ok=1 rc=0
    start_bg "$p" env "$(bumble_env peripheral)" "$py" "$here/peers/peripheral.py" \
        --transport "tcp-client:127.0.0.1:$p1" --run-for 30
    local peripheral=$last_pid
    if ! wait_for "$p" "^RESULT advertising=1" 15 "$peripheral"; then
        echo "peripheral did not start advertising"; ok=0
    else
        run_fg "$c" 30 "$ble" explore BumbleLabPeripheral --hci "tcp:127.0.0.1:$p2" --json || rc=1
        run_fg "$c" 30 "$ble" write BumbleLabPeripheral 12345678-1234-5678-1234-56789ABCDEF1 "$(hexof 'from-swift-ble')" --hci "tcp:127.0.0.1:$p2" || rc=1
        run_fg "$c" 30 "$ble" subscribe BumbleLabPeripheral 2A37 --count 2 --hci "tcp:127.0.0.1:$p2" --json || rc=1
        sleep 0.3
    fi
    stop_bg "$peripheral"
    stop_bg "$controllers_pid"
    decode_captures
    if [ $ok -eq 1 ]; then
        [ $rc -eq 0 ] || { echo "ble exited with an error"; ok=0; }
        grep -q '"mtu":247,' "$c" || { echo "no MTU 247"; ok=0; }
        grep -q '"uuid":"2A29".*"value":"'"$(hexof 'Bumble Lab Inc.')"'"' "$c" || { echo "manufacturer name not read"; ok=0; }
        grep -q '"uuid":"12345678-1234-5678-1234-56789ABCDEF2".*"value":"000102' "$c" || { echo "long value not read"; ok=0; }
        [ "$(grep -o '"uuid":"12345678-1234-5678-1234-56789ABCDEF2"[^}]*' "$c" | grep -o '"value":"[0-9a-f]*"' | wc -c)" -gt 600 ] || { echo "long value shorter than 300 bytes"; ok=0; }
        [ "$(grep -c '"kind":"service"' "$c")" -eq 6 ] || { echo "expected 6 services"; ok=0; }
        expect "$p" write from-swift-ble || ok=0
        [ "$(grep -c '"index":[0-9]*,"uuid":"2A37"' "$c")" -eq 2 ] || { echo "expected 2 heart-rate notifications"; ok=0; }
    fi
    if [ $ok -eq 1 ]; then pass "$name ($(( $(millis) - start )) ms)"; else fail "$name" "see above"; fi
}

# Our central against our peripheral, across the controllers under test (on Bumble's: our host on both ends of an
# independent controller implementation).
scenario_ble_central_to_ble_peripheral() {
    name="ble-central-to-ble-peripheral-on-$controllers"
    selected "$name" || return 0
    needs_ble "$name" || return 0
    local start; start=$(millis)
    read -r p1 p2 < <(free_ports 2)
    start_controllers "$name" "$p1" "$p2" || { fail "$name" "controllers"; stop_bg "$controllers_pid"; return; }
    local c="$logs/$name-central.log" p="$logs/$name-peripheral.log" ok=1 rc=0
    start_bg "$p" "$ble" serve --hci "tcp:127.0.0.1:$p1" --json --run-for 30
    local peripheral=$last_pid
    if ! wait_for "$p" '"event":"serving"' 15 "$peripheral"; then
        echo "ble serve did not start serving"; ok=0
    else
        run_fg "$logs/$name-scan.log" 30 "$ble" scan --service 180D --timeout 2 --hci "tcp:127.0.0.1:$p2" --json || rc=1
        run_fg "$c" 30 "$ble" explore SwiftBLELab --hci "tcp:127.0.0.1:$p2" --json || rc=1
        run_fg "$logs/$name-read.log" 30 "$ble" read SwiftBLELab 12345678-1234-5678-1234-56789ABCDEF2 --hci "tcp:127.0.0.1:$p2" --json || rc=1
        run_fg "$c" 30 "$ble" write SwiftBLELab 12345678-1234-5678-1234-56789ABCDEF1 "$(hexof 'ours-to-ours')" --hci "tcp:127.0.0.1:$p2" || rc=1
        run_fg "$c" 30 "$ble" subscribe SwiftBLELab 2A37 --count 2 --hci "tcp:127.0.0.1:$p2" --json || rc=1
    fi
    stop_bg "$peripheral"
    stop_bg "$controllers_pid"
    decode_captures
    if [ $ok -eq 1 ]; then
        [ $rc -eq 0 ] || { echo "ble exited with an error"; ok=0; }
        grep -q '"mtu":247,' "$c" || { echo "no MTU 247"; ok=0; }
        grep -qE '"connectable":true,.*"name":"SwiftBLELab","rssi":-?[0-9]+,"services":\["180D","180F"\]' "$logs/$name-scan.log" || { echo "ble scan --service 180D did not list SwiftBLELab"; ok=0; }
        [ "$(grep -o '"value":"[0-9a-f]*"' "$logs/$name-read.log" | wc -c)" -gt 600 ] && grep -q '"length":300,' "$logs/$name-read.log" \
            || { echo "ble read did not return the 300-byte value"; ok=0; }
        [ "$(grep -c '"kind":"service"' "$c")" -eq 6 ] || { echo "expected 6 services"; ok=0; }
        grep -q '"uuid":"2A29".*"value":"'"$(hexof 'swift-ble Lab Inc.')"'"' "$c" || { echo "manufacturer name not read"; ok=0; }
        grep -q '"event":"write".*"value":"'"$(hexof 'ours-to-ours')"'"' "$p" || { echo "peripheral did not log the write"; ok=0; }
        [ "$(grep -c '"index":[0-9]*,"uuid":"2A37"' "$c")" -eq 2 ] || { echo "expected 2 heart-rate notifications"; ok=0; }
    fi
    if [ $ok -eq 1 ]; then pass "$name ($(( $(millis) - start )) ms)"; else fail "$name" "see above"; fi
}

# Two Bumble centrals at once against our peripheral, on three linked controllers: each write is attributed to the
# central that sent it.
scenario_two_bumble_centrals_to_ble_peripheral() {
    name="two-bumble-centrals-to-ble-peripheral-on-$controllers"
    selected "$name" || return 0
    needs_ble "$name" || return 0
    local start; start=$(millis)
    read -r p1 p2 p3 < <(free_ports 3)
    start_controllers "$name" "$p1" "$p2" "$p3" || { fail "$name" "controllers"; stop_bg "$controllers_pid"; return; }
    local p="$logs/$name-peripheral.log" ok=1
    start_bg "$p" "$ble" serve --hci "tcp:127.0.0.1:$p1" --json --run-for 30
    local peripheral=$last_pid
    if ! wait_for "$p" '"event":"serving"' 15 "$peripheral"; then
        echo "ble serve did not start serving"; ok=0
    else
        start_bg "$logs/$name-centralA.log" timeout -k 2 45 env "$(bumble_env centralA)" "$py" "$here/peers/central.py" \
            --transport "tcp-client:127.0.0.1:$p2" --target-name SwiftBLELab --address C0:C1:C2:C3:C4:C5 --tag A
        local a=$last_pid
        if [ "$controllers" = bumble ]; then
            # Bumble's air has no connection-establishment check: when two CONNECT_INDs reach one advertiser
            # together, the second initiator believes it is connected to a peripheral that never saw it, and
            # waits forever. Start B once A is connected (the two GATT sessions still overlap).
            wait_for "$logs/$name-centralA.log" "^RESULT connected=1" 15 "$a"
        fi
        start_bg "$logs/$name-centralB.log" timeout -k 2 45 env "$(bumble_env centralB)" "$py" "$here/peers/central.py" \
            --transport "tcp-client:127.0.0.1:$p3" --target-name SwiftBLELab --address C0:C1:C2:C3:C4:C6 --tag B
        local b=$last_pid
        wait "$a" || { echo "central A failed"; ok=0; }
        forget "$a"
        wait "$b" || { echo "central B failed"; ok=0; }
        forget "$b"
    fi
    stop_bg "$peripheral"
    stop_bg "$controllers_pid"
    decode_captures
    if [ $ok -eq 1 ]; then
        local tag address handle
        for tag in A B; do
            address=C0:C1:C2:C3:C4:C5; [ $tag = B ] && address=C0:C1:C2:C3:C4:C6
            handle=$(grep '"event":"connected"' "$p" | grep "\"peer\":\"$address\"" | head -1 | sed -E 's/.*"handle":([0-9]+)[,}].*/\1/')
            [ -n "$handle" ] || { echo "central $tag ($address) never connected"; ok=0; continue; }
            grep -q "\"connection\":$handle,\"event\":\"write\",\"value\":\"$(hexof "written-with-response-$tag")\"" "$p" \
                || { echo "the write of central $tag is not attributed to its link (handle $handle)"; ok=0; }
        done
    fi
    if [ $ok -eq 1 ]; then pass "$name ($(( $(millis) - start )) ms)"; else fail "$name" "see above"; fi
}

# Bumble's central against the characteristics `ble serve`'s application answers: a counter computed per read, a
# write refused with application error 0x80, a write answered late, a reliable write set applied all or nothing.
scenario_application_answers() {
    name="application-answers-bumble-central-to-ble-peripheral-on-$controllers"
    selected "$name" || return 0
    needs_ble "$name" || return 0
    local start; start=$(millis)
    read -r p1 p2 < <(free_ports 2)
    start_controllers "$name" "$p1" "$p2" || { fail "$name" "controllers"; stop_bg "$controllers_pid"; return; }
    local c="$logs/$name-central.log" p="$logs/$name-peripheral.log" ok=1
    start_bg "$p" "$ble" serve --hci "tcp:127.0.0.1:$p1" --json --run-for 30
    local peripheral=$last_pid
    if ! wait_for "$p" '"event":"serving"' 15 "$peripheral"; then
        echo "ble serve did not start serving"; ok=0
    else
        run_fg "$c" 30 env "$(bumble_env central)" "$py" "$here/peers/app_client.py" --transport "tcp-client:127.0.0.1:$p2" \
            || { echo "the Bumble central failed"; ok=0; }
    fi
    stop_bg "$peripheral"
    stop_bg "$controllers_pid"
    decode_captures
    if [ $ok -eq 1 ]; then
        expect "$c" counter_computed 1 || ok=0
        expect "$c" refused_error 0x80 || ok=0
        expect "$c" refused_kept 1 || ok=0
        expect "$c" guarded_write 1 || ok=0
        expect "$c" slow_answered 1 || ok=0
        expect "$c" set_refused_error 0x80 || ok=0
        expect "$c" set_refused_nothing_written 1 || ok=0
        expect "$c" set_applied_whole 1 || ok=0
        grep -q '"event":"counter"' "$p" || { echo "the peripheral's application did not log the counter reads"; ok=0; }
        [ "$(grep -c '"event":"refused"' "$p")" -eq 2 ] || { echo "the peripheral's application did not log two refusals"; ok=0; }
    fi
    if [ $ok -eq 1 ]; then pass "$name ($(( $(millis) - start )) ms)"; else fail "$name" "see above"; fi
}

# Our btsnoop capture of a full session (ble explore in its own virtual world) decodes in Wireshark's tshark, with
# no malformed packet, and shows the session's ATT operations.
scenario_btsnoop_capture() {
    name="btsnoop-capture-decodes-in-tshark"
    selected "$name" || return 0
    needs_ble "$name" || return 0
    if ! command -v tshark > /dev/null; then skip "$name" "tshark is not installed (apt-get install tshark)"; return; fi
    local capture="$logs/$name.btsnoop" log="$logs/$name-tshark.log" ok=1
    run_fg "$logs/$name-explore.log" 60 "$ble" explore SwiftBLELab --btsnoop "$capture" || { echo "ble explore failed"; ok=0; }
    local malformed
    malformed=$(tshark -r "$capture" -Y "_ws.malformed || _ws.expert.severity == error" 2>/dev/null | wc -l)
    [ "$malformed" -eq 0 ] || { echo "$malformed malformed packet(s)"; ok=0; }
    tshark -r "$capture" -Y btatt -T fields -e btatt.opcode > "$log" 2>/dev/null
    # MTU exchange, Read By Group Type, Read By Type, Find Information, Read, Read Blob: requests and responses.
    for op in 0x02 0x03 0x10 0x11 0x08 0x09 0x04 0x05 0x0a 0x0b 0x0c 0x0d; do
        grep -qx "$op" "$log" || { echo "no ATT opcode $op in the capture"; ok=0; }
    done
    [ "$(tshark -r "$capture" 2>/dev/null | wc -l)" -gt 50 ] || { echo "capture too short"; ok=0; }
    if [ $ok -eq 1 ]; then pass "$name"; else fail "$name" "see above"; fi
}

# run_split OUT ERR SECONDS COMMAND...: like run_fg, but standard output to OUT and standard error to ERR (replaced).
run_split() {
    local out="$1" err="$2" seconds="$3"; shift 3
    setsid timeout -k 2 "$seconds" "$@" > "$out" 2> "$err" < /dev/null &
    local pid=$!
    pids+=("$pid")
    wait "$pid"
    local status=$?
    forget "$pid"
    return $status
}

# The ble tool's errors on the embedded virtual world: a runtime error prints 'error: <message>' on standard error,
# without the usage text, and exits 2 (not found, timed out), 3 (a protocol error: ATT, GATT, HCI) or 1 (anything
# else, such as a controller that cannot be reached); a command-line mistake prints the usage text and exits 64. After
# the ATT error, and when interrupted, the command still disconnects cleanly (its capture shows HCI Disconnect and its
# completion).
scenario_cli_errors_and_exit_codes() {
    name="cli-errors-and-exit-codes"
    selected "$name" || return 0
    needs_ble "$name" || return 0
    local start; start=$(millis)
    local ok=1 port secret=12345678-1234-5678-1234-56789ABCDEF3 long=12345678-1234-5678-1234-56789ABCDEF2
    read -r port < <(free_ports 1)   # nothing listens there
    # cli_case LABEL STATUS STDERR-REGEX USAGE ARGS...: `ble ARGS` exits with STATUS and its standard error matches
    # STDERR-REGEX (extended; empty: nothing on standard error); with USAGE=usage it shows the usage text, with
    # USAGE=- it must not (and says at most one line).
    cli_case() {
        local label="$1" want="$2" regex="$3" usage="$4"; shift 4
        local out="$logs/$name-$label-stdout.log" err="$logs/$name-$label.log" status=0
        run_split "$out" "$err" 60 "$ble" "$@" || status=$?
        [ "$status" -eq "$want" ] || { echo "$label: 'ble $*' exited with $status, expected $want"; ok=0; }
        if [ -z "$regex" ]; then
            [ ! -s "$err" ] || { echo "$label: standard error is not empty: $(head -3 "$err")"; ok=0; }
        else
            grep -qE -e "$regex" "$err" || { echo "$label: standard error does not match '$regex': $(head -3 "$err")"; ok=0; }
        fi
        if [ "$usage" = usage ]; then
            grep -q '^Usage: ble ' "$err" || { echo "$label: no usage text for a command-line mistake"; ok=0; }
        else
            ! grep -qi 'usage' "$err" || { echo "$label: usage text printed for a runtime error"; ok=0; }
            [ "$(wc -l < "$err")" -le 1 ] || { echo "$label: more than one line on standard error ($(wc -l < "$err"))"; ok=0; }
        fi
    }
    cli_case not-found 2 "^error: no device 'NoSuchDevice' found within 2 s$" - read NoSuchDevice 2A29 --timeout 2
    cli_case no-characteristic 2 '^error: SwiftBLELab has no characteristic 2A99$' - read SwiftBLELab 2A99
    # --no-pair: the refusal is the answer (no key for us, so Insufficient Authentication: Core 5.4, Vol 3, Part C, 10.3.1).
    cli_case att-error 3 "^error: reading $secret on SwiftBLELab: .*Insufficient Authentication \(0x05\)" - \
        read SwiftBLELab "$secret" --no-pair --btsnoop "$logs/$name-att-error.btsnoop"
    cli_case att-error-json 3 "^error: reading $secret on SwiftBLELab: " - read SwiftBLELab "$secret" --json --no-pair
    # Without it the tool pairs (Just Works) and reads; the value needing an authenticated key stays refused: a
    # MITM pairing fails with Authentication Requirements, since neither side can show or type a passkey.
    cli_case pairs-on-demand 0 '' - read SwiftBLELab "$secret" --json
    grep -q '"event":"paired"' "$logs/$name-pairs-on-demand-stdout.log" && grep -q '"value":"746f702d736563726574"' "$logs/$name-pairs-on-demand-stdout.log" \
        || { echo "ble read did not pair and read $secret: $(head -3 "$logs/$name-pairs-on-demand-stdout.log")"; ok=0; }
    cli_case mitm-needed 3 "Insufficient Authentication \(0x05\).*securing the link failed: .*Authentication Requirements \(0x03\)" - \
        read SwiftBLELab 12345678-1234-5678-1234-56789ABCDEFB
    cli_case unreachable-controller 1 "^error: no controller at tcp:127.0.0.1:$port: .*refused" - \
        explore SwiftBLELab --hci "tcp:127.0.0.1:$port"
    cli_case not-hex 64 "'zz' is not hex" usage write SwiftBLELab 2A29 zz
    cli_case unknown-option 64 "--bogus" usage read SwiftBLELab 2A29 --bogus
    cli_case bad-hci 64 "--hci nowhere" usage scan --hci nowhere
    cli_case help 0 '' - read --help
    grep -q '^USAGE: ble read ' "$logs/$name-help-stdout.log" || { echo "help: ble read --help printed no usage on standard output"; ok=0; }
    cli_case success 0 '' - read SwiftBLELab "$long"
    [ ! -s "$logs/$name-att-error-json-stdout.log" ] || { echo "att-error-json: a result on standard output"; ok=0; }
    # The long value is printed whole in text output too (it is not printable text, so it is 600 hex digits).
    grep -qx '000102[0-9a-f]*292a2b' "$logs/$name-success-stdout.log" && [ "$(tr -d '\n' < "$logs/$name-success-stdout.log" | wc -c)" -eq 600 ] \
        || { echo "ble read did not print the 300-byte value whole: $(head -c 200 "$logs/$name-success-stdout.log")"; ok=0; }
    # After the ATT error: HCI Disconnect, and the controller's Disconnection Complete, before the tool exits.
    "$py" "$here/hci_trace.py" "$logs/$name-att-error.btsnoop" --events > "$logs/$name-att-error.hci.txt" 2>&1
    grep -q '0x0406 DISCONNECT .*Status SUCCESS' "$logs/$name-att-error.hci.txt" \
        && grep -q 'DISCONNECTION_COMPLETE: status=SUCCESS' "$logs/$name-att-error.hci.txt" \
        || { echo "ble read did not disconnect cleanly after the ATT error"; ok=0; }
    # ble explore goes on after a value it cannot read, says why in the characteristic's line, and disconnects.
    cli_case explore 0 '' - explore SwiftBLELab --json --no-pair --btsnoop "$logs/$name-explore.btsnoop"
    grep -qE '^\{"att_error":5,"error":"[^"]*Insufficient Authentication[^"]*","handle":[0-9]+,"kind":"characteristic","properties":\["read"\],"uuid":"'"$secret"'"\}$' \
        "$logs/$name-explore-stdout.log" || { echo "ble explore did not report the refused read of $secret"; ok=0; }
    "$py" "$here/hci_trace.py" "$logs/$name-explore.btsnoop" --events > "$logs/$name-explore.hci.txt" 2>&1
    grep -q 'DISCONNECTION_COMPLETE: status=SUCCESS' "$logs/$name-explore.hci.txt" || { echo "ble explore did not disconnect"; ok=0; }
    # Interrupted (SIGINT) while subscribed: it still disconnects and powers off, then exits with 130, saying nothing.
    local out="$logs/$name-interrupted-stdout.log" err="$logs/$name-interrupted.log" status=0 pid
    setsid "$ble" subscribe SwiftBLELab 2A37 --count 1000 --json --btsnoop "$logs/$name-interrupted.btsnoop" > "$out" 2> "$err" < /dev/null &
    pid=$!
    pids+=("$pid")
    wait_for "$out" '"index":1,' 15 "$pid" || { echo "interrupted: no notification before the interruption"; ok=0; }
    kill -INT "$pid" 2>/dev/null
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && { echo "interrupted: still running 5 s after SIGINT"; kill -KILL "$pid"; ok=0; }
    wait "$pid" || status=$?
    forget "$pid"
    [ "$status" -eq 130 ] || { echo "interrupted: exited with $status, expected 130"; ok=0; }
    [ ! -s "$err" ] || { echo "interrupted: said something on standard error: $(head -3 "$err")"; ok=0; }
    "$py" "$here/hci_trace.py" "$logs/$name-interrupted.btsnoop" --events > "$logs/$name-interrupted.hci.txt" 2>&1
    grep -q 'DISCONNECTION_COMPLETE: status=SUCCESS' "$logs/$name-interrupted.hci.txt" || { echo "interrupted: ble subscribe did not disconnect"; ok=0; }
    if [ $ok -eq 1 ]; then pass "$name ($(( $(millis) - start )) ms)"; else fail "$name" "see above"; fi
}

# The ble tool's --json output on the embedded virtual world uses JSON's own types: every line is one JSON object,
# numbers are numbers (rssi, mtu, handles, lengths, indexes), booleans booleans, lists arrays, strings only for text
# and hex; ble read carries the whole long value.
scenario_cli_json_types() {
    name="cli-json-types"
    selected "$name" || return 0
    needs_ble "$name" || return 0
    local start; start=$(millis)
    local ok=1 long=12345678-1234-5678-1234-56789ABCDEF2 f
    run_fg "$logs/$name-scan.log" 30 "$ble" scan --json --timeout 2 || { echo "ble scan failed"; ok=0; }
    run_fg "$logs/$name-explore.log" 30 "$ble" explore SwiftBLELab --json || { echo "ble explore failed"; ok=0; }
    run_fg "$logs/$name-read.log" 30 "$ble" read SwiftBLELab "$long" --json || { echo "ble read failed"; ok=0; }
    run_fg "$logs/$name-write.log" 30 "$ble" write SwiftBLELab 12345678-1234-5678-1234-56789ABCDEF1 "$(hexof typed)" --json || { echo "ble write failed"; ok=0; }
    run_fg "$logs/$name-subscribe.log" 30 "$ble" subscribe SwiftBLELab 2A37 --count 2 --json || { echo "ble subscribe failed"; ok=0; }
    grep -qE '^\{"address":"([0-9A-F]{2}:){5}[0-9A-F]{2}","addressType":"public","connectable":true,"manufacturer":\[\{"companyID":65535,"data":"'"$(hexof lab)"'"\}.*\],"name":"SwiftBLELab","rssi":-[0-9]+,"services":\["180D","180F"\]\}$' \
        "$logs/$name-scan.log" || { echo "ble scan --json: no typed line for SwiftBLELab"; ok=0; }
    grep -qE '^\{"event":"connected","mtu":247,"peer":"[0-9A-F:]{17}"\}$' "$logs/$name-explore.log" || { echo "ble explore --json: no MTU 247 as a number"; ok=0; }
    grep -qE '^\{"handle":[0-9]+,"kind":"characteristic","properties":\["read","notify"\],"uuid":"2A19","value":"[0-9a-f]{2}"\}$' "$logs/$name-explore.log" \
        || { echo "ble explore --json: the battery level line is not typed"; ok=0; }
    grep -qE '^\{"end":[0-9]+,"kind":"service","start":[0-9]+,"uuid":"180D"\}$' "$logs/$name-explore.log" || { echo "ble explore --json: service handles are not numbers"; ok=0; }
    grep -qE '^\{"handle":[0-9]+,"length":300,"uuid":"'"$long"'","value":"000102[0-9a-f]{594}"\}$' "$logs/$name-read.log" \
        || { echo "ble read --json did not carry the 300-byte value whole"; ok=0; }
    grep -qE '^\{"handle":[0-9]+,"uuid":"12345678-1234-5678-1234-56789ABCDEF1","with_response":true,"written":5\}$' "$logs/$name-write.log" \
        || { echo "ble write --json is not typed"; ok=0; }
    [ "$(grep -cE '^\{"index":[12],"uuid":"2A37","value":"[0-9a-f]+"\}$' "$logs/$name-subscribe.log")" -eq 2 ] || { echo "ble subscribe --json: indexes are not numbers"; ok=0; }
    # Every line of every command is one JSON object whose numbers, booleans and arrays have JSON's types.
    for f in "$logs/$name"-*.log; do
        "$py" - "$f" <<'PY' || { echo "$(basename "$f"): not typed JSON lines"; ok=0; }
import json, sys
numbers = {'rssi', 'mtu', 'handle', 'start', 'end', 'length', 'written', 'index', 'att_error', 'companyID'}
def check(value, key=None):
    if key in numbers: assert isinstance(value, int) and not isinstance(value, bool), (key, value)
    if key in ('connectable', 'with_response'): assert isinstance(value, bool), (key, value)
    if key in ('services', 'properties', 'manufacturer'): assert isinstance(value, list), (key, value)
    if isinstance(value, dict):
        for k, v in value.items(): check(v, k)
    elif isinstance(value, list):
        for v in value: check(v)
lines = [l for l in open(sys.argv[1]) if l.strip()]
assert lines, 'no output'
for line in lines: check(json.loads(line))
PY
    done
    if [ $ok -eq 1 ]; then pass "$name ($(( $(millis) - start )) ms)"; else fail "$name" "see above"; fi
}

# LE credit based channels between our host (HCIHost, through L2CAPInteropTests in the test bundle built next to
# the ble binary) and Bumble's (peers/l2cap_peer.py): 64 KB echoed each way, three enhanced channels in one request.
scenario_l2cap_channels() {
    name="l2cap-channels-ble-host-and-bumble-host-on-$controllers"
    selected "$name" || return 0
    needs_ble "$name" || return 0
    # The build's scratch directory: ble is in SCRATCH/<triple>/debug or SCRATCH/debug.
    local bin_dir scratch
    bin_dir="$(dirname "$ble")"
    scratch="$(dirname "$bin_dir")"
    [[ "$(basename "$scratch")" == *-* ]] && scratch="$(dirname "$scratch")"
    if ! ls "$bin_dir"/*PackageTests* > /dev/null 2>&1; then skip "$name" "needs the test bundle (swift build --build-tests)"; return 0; fi
    local start; start=$(millis)
    read -r p1 p2 < <(free_ports 2)
    start_controllers "$name" "$p1" "$p2" || { fail "$name" "controllers"; stop_bg "$controllers_pid"; return; }
    local b="$logs/$name-bumble.log" t="$logs/$name-ours.log" ok=1
    start_bg "$b" env "$(bumble_env bumble)" "$py" "$here/peers/l2cap_peer.py" --transport "tcp-client:127.0.0.1:$p1" --run-for 60
    local peer=$last_pid
    if ! wait_for "$b" "^READY" 15 "$peer"; then
        echo "the Bumble peer did not start"; ok=0
    else
        run_fg "$t" 120 env BLE_INTEROP_L2CAP_PORT="$p2" swift test --package-path "$repo" --scratch-path "$scratch" \
            --skip-build --filter L2CAPInteropTests || { echo "L2CAPInteropTests failed"; ok=0; }
        wait_for "$b" "^RESULT bumble_to_ours=" 10 "$peer"
    fi
    stop_bg "$peer"
    stop_bg "$controllers_pid"
    decode_captures
    if [ $ok -eq 1 ]; then
        grep -q "Test echoBothWaysWithBumble() passed" "$t" || { echo "the test did not run"; ok=0; }
        expect "$b" bumble_to_ours ok || ok=0
    fi
    if [ $ok -eq 1 ]; then pass "$name ($(( $(millis) - start )) ms)"; else fail "$name" "see above"; fi
}

# ---------------------------------------------------------------------------------------------------------------
# Pairing (LE Security Manager) between Bumble's host (peers/pairing_peer.py) and ours (`ble serve`, `ble pair`,
# `ble read`, `ble bonds`), and Bumble with itself. Every case runs on fresh linked controllers; the peripheral serves
# ...DEF3 (needs encryption, 'top-secret') and ...DEFB (needs authentication, 'authenticated').
pairing_secret=12345678-1234-5678-1234-56789ABCDEF3
pairing_authenticated=12345678-1234-5678-1234-56789ABCDEFB

# expect_json FILE KEY=VALUE...: some line of FILE is a JSON object holding every KEY with VALUE, compared as JSON
# (true, 16 and "justWorks" must be a boolean, a number and a string), whatever the order of the keys.
expect_json() {
    local file="$1"; shift
    "$py" - "$file" "$@" <<'PY' && return 0
import json, sys
wanted = {}
for pair in sys.argv[2:]:
    key, _, value = pair.partition('=')
    try:
        wanted[key] = json.loads(value)
    except ValueError:
        wanted[key] = value
for line in open(sys.argv[1], errors='replace'):
    try:
        obj = json.loads(line)
    except ValueError:
        continue
    if isinstance(obj, dict) and all(k in obj and obj[k] == v and type(obj[k]) is type(v) for k, v in wanted.items()):
        sys.exit(0)
sys.exit(1)
PY
    echo "no JSON line with $* in $(basename "$file")"
    return 1
}

# json_count FILE KEY=VALUE: how many JSON lines of FILE have KEY equal to the string VALUE.
json_count() { grep -cE "\"$(echo "$2" | cut -d= -f1)\":\"$(echo "$2" | cut -d= -f2-)\"" "$1"; }

# pairing_case PART: linked controllers for one case of scenario $name; sets p1 (peripheral) and p2 (central) and
# the logs $server, $client, $client2. Bumble's controllers give every new client a fresh controller, so one pair of
# them serves all the cases of a scenario (process start-up is most of a case's time); ours start afresh per case.
pairing_case() {
    part="$1"; server_pid=""
    server="$logs/$name-$part-peripheral.log"; client="$logs/$name-$part-central.log"; client2="$logs/$name-$part-central2.log"
    [ "$controllers" = bumble ] && [ -n "$controllers_pid" ] && kill -0 "$controllers_pid" 2>/dev/null && return 0
    read -r p1 p2 < <(free_ports 2)
    start_controllers "$name-$part" "$p1" "$p2" || { echo "$part: controllers"; ok=0; stop_bg "$controllers_pid"; controllers_pid=""; return 1; }
}
# ours_bonds ARGS...: prints ARGS, plus a bond file of the case's own when ARGS have no --bonds (our tool never
# touches its default bond store here, and no bond leaks from one case into the next).
ours_bonds() {
    local arg
    for arg in "$@"; do [ "$arg" = --bonds ] && { printf '%s\n' "$@"; return; }; done
    printf '%s\n' "$@" --bonds "$logs/$name-$part-bonds-ours.json"
}
# pairing_serve KIND ARGS...: the peripheral on p1, KIND ble (`ble serve --name SwiftBLEPair --json`) or bumble
# (pairing_peer.py --name BumblePair); waits until it advertises.
pairing_serve() {
    local kind="$1" args; shift
    if [ "$kind" = ble ]; then
        mapfile -t args < <(ours_bonds "$@"); set -- "${args[@]}"
        start_bg "$server" "$ble" serve --hci "tcp:127.0.0.1:$p1" --name SwiftBLEPair --json --run-for 30 "$@"
    else
        start_bg "$server" env "$(bumble_env "$part-peripheral")" "$py" "$here/peers/pairing_peer.py" --role peripheral \
            --transport "tcp-client:127.0.0.1:$p1" --name BumblePair --run-for 30 "$@"
    fi
    server_pid=$last_pid
    wait_for "$server" '"event":"serving"|^RESULT advertising=1' 15 "$server_pid" && return 0
    echo "$part: the peripheral did not start advertising"; ok=0; return 1
}
# pairing_central LOG TARGET ARGS...: Bumble's central (pairing_peer.py --role central) on p2; fails the case unless
# it ran every step.
pairing_central() {
    local out="$1" target="$2"; shift 2
    run_fg "$out" 30 env "$(bumble_env "$part-central")" "$py" "$here/peers/pairing_peer.py" --role central \
        --transport "tcp-client:127.0.0.1:$p2" --name "$target" "$@" || { echo "$part: the Bumble central failed: $(grep '^FAILED' "$out")"; ok=0; }
}
# pairing_ble STATUS ARGS...: `ble ARGS --hci (p2)`, output to $client (standard error to $client.err); the exit
# status must be STATUS.
pairing_ble() {
    local want="$1" status=0 args; shift
    mapfile -t args < <(ours_bonds "$@"); set -- "${args[@]}"
    echo "\$ ble $*" >> "$client"
    run_split "$client.out" "$client.err" 30 "$ble" "$@" --hci "tcp:127.0.0.1:$p2" || status=$?
    cat "$client.out" >> "$client"; cat "$client.err" >> "$client"
    [ "$status" -eq "$want" ] || { echo "$part: 'ble $*' exited with $status, expected $want: $(head -3 "$client.err")"; ok=0; }
}
pairing_done() {
    [ -n "$server_pid" ] && stop_bg "$server_pid"
    server_pid=""
    [ "$controllers" = bumble ] && [ "${1:-}" != last ] && return 0
    [ -n "$controllers_pid" ] && stop_bg "$controllers_pid"
    controllers_pid=""
}

# Bumble's central pairs with Bumble's peripheral: the peer itself and, on our controllers, their LE encryption.
scenario_pairing_bumble_to_bumble() {
    name="pairing-bumble-central-to-bumble-peripheral-on-$controllers"
    selected "$name" || return 0
    # On Bumble's controllers this would be Bumble against itself: it runs on ours, where it checks our controllers'
    # LE encryption (keys compared, EDIV/Rand, Encryption Change) with an independent host on both ends.
    [ "$controllers" = ble ] || return 0
    needs_ble "$name" || return 0
    local start; start=$(millis)
    local ok=1 part p1 p2 server client client2 server_pid controllers_pid="" hex; hex=$(hexof top-secret)
    pairing_case sc-just-works && pairing_serve bumble && pairing_central "$client" BumblePair --pair \
        --read-before $pairing_secret --read $pairing_secret
    pairing_done
    expect "$client" read_before 0x0F || ok=0
    expect "$client" "paired=1 sc=1 authenticated=0 key_size=16 bonded" 1 || ok=0
    expect "$server" "paired=1 sc=1 authenticated=0 key_size=16 bonded" 1 || ok=0
    expect "$client" read_DEF3 "$hex" || ok=0
    pairing_case sc-numeric-comparison && pairing_serve bumble --io yesno --mitm && pairing_central "$client" BumblePair \
        --io yesno --mitm --pair
    pairing_done
    expect "$server" method numeric_comparison || ok=0
    expect "$client" "paired=1 sc=1 authenticated=1 key_size=16 bonded" 1 || ok=0
    [ "$(grep '^RESULT compare=' "$client")" = "$(grep '^RESULT compare=' "$server")" ] || { echo "$part: the two sides compared different numbers"; ok=0; }
    pairing_case sc-passkey-central-enters && pairing_serve bumble --io display --mitm --passkey 123456 \
        && pairing_central "$client" BumblePair --io keyboard --passkey 123456 --pair
    pairing_done
    expect "$server" passkey 123456 || ok=0
    expect "$server" "paired=1 sc=1 authenticated=1 key_size=16 bonded" 1 || ok=0
    pairing_case legacy-passkey-peripheral-enters && pairing_serve bumble --io keyboard --passkey 123456 \
        && pairing_central "$client" BumblePair --legacy --io display --mitm --passkey 123456 --pair
    pairing_done
    expect "$client" passkey 123456 || ok=0
    expect "$server" "paired=1 sc=0 authenticated=1 key_size=16 bonded" 1 || ok=0
    pairing_case wrong-passkey && pairing_serve bumble --io display --mitm --passkey 123456 \
        && pairing_central "$client" BumblePair --io keyboard --passkey 000000 --pair --read $pairing_secret
    pairing_done
    expect "$client" pairing_failed 0x04 || ok=0
    expect "$server" pairing_failed 0x04 || ok=0
    expect "$client" read_DEF3 0x0F || ok=0
    rm -f "$logs/$name-keys-"*.json
    pairing_case bonded-reconnect && pairing_serve bumble --legacy --keystore "$logs/$name-keys-peripheral.json" \
        && pairing_central "$client" BumblePair --keystore "$logs/$name-keys-central.json" --pair \
        && pairing_central "$client2" BumblePair --keystore "$logs/$name-keys-central.json" --encrypt --read $pairing_secret
    pairing_done last
    expect "$client" "paired=1 sc=0 authenticated=0 key_size=16 bonded" 1 || ok=0
    expect "$client2" "encrypted=1 paired_this_link" 0 || ok=0
    expect "$client2" read_DEF3 "$hex" || ok=0
    [ "$(grep -c '^RESULT paired=1' "$server")" -eq 1 ] && expect "$server" "encrypted=1 paired_this_link" 0 \
        || { echo "$part: the peripheral did not encrypt the second link with the bond alone"; ok=0; }
    decode_captures
    if [ $ok -eq 1 ]; then pass "$name ($(( $(millis) - start )) ms)"; else fail "$name" "see above"; fi
}

# Bumble's central pairs with `ble serve`: SC Just Works (protected reads refused before, served after; the
# authenticated one still refused after Just Works), Numeric Comparison, Passkey Entry with each side entering,
# legacy Just Works and Passkey, a wrong passkey (0x04 on both sides), and a bonded reconnection that encrypts with
# the stored key.
scenario_pairing_bumble_central_to_ble_peripheral() {
    name="pairing-bumble-central-to-ble-peripheral-on-$controllers"
    selected "$name" || return 0
    needs_ble "$name" || return 0
    local start; start=$(millis)
    local ok=1 part p1 p2 server client client2 server_pid controllers_pid="" hex; hex=$(hexof top-secret)
    pairing_case sc-just-works && pairing_serve ble && pairing_central "$client" SwiftBLEPair --pair \
        --read-before $pairing_secret --read $pairing_secret --read $pairing_authenticated
    pairing_done
    # Our server holds no key for this central: Insufficient Authentication (Core 5.4, Vol 3, Part C, 10.3.1).
    expect "$client" read_before 0x05 || ok=0
    expect "$client" "paired=1 sc=1 authenticated=0 key_size=16 bonded" 1 || ok=0
    expect "$client" "encrypted=1 paired_this_link" 1 || ok=0
    expect "$client" read_DEF3 "$hex" || ok=0
    # An unauthenticated (Just Works) key does not open an attribute that needs authentication.
    expect "$client" read_DEFB 0x05 || ok=0
    expect_json "$server" event=paired method=justWorks secure_connections=true authenticated=false key_size=16 bonded=true || ok=0
    pairing_case sc-numeric-comparison && pairing_serve ble --io yesno && pairing_central "$client" SwiftBLEPair \
        --io yesno --mitm --pair --read $pairing_authenticated
    pairing_done
    expect "$client" method numeric_comparison || ok=0
    expect "$client" "paired=1 sc=1 authenticated=1 key_size=16 bonded" 1 || ok=0
    expect "$client" read_DEFB "$(hexof authenticated)" || ok=0
    expect_json "$server" event=paired method=numericComparison secure_connections=true authenticated=true || ok=0
    pairing_case sc-passkey-bumble-enters && pairing_serve ble --io display --passkey 123456 \
        && pairing_central "$client" SwiftBLEPair --io keyboard --mitm --passkey 123456 --pair
    pairing_done
    expect_json "$server" event=passkey passkey=123456 || ok=0
    expect "$client" "paired=1 sc=1 authenticated=1 key_size=16 bonded" 1 || ok=0
    expect_json "$server" event=paired method=passkeyEntry secure_connections=true authenticated=true || ok=0
    pairing_case sc-passkey-ble-enters && pairing_serve ble --io keyboard --passkey 123456 \
        && pairing_central "$client" SwiftBLEPair --io display --mitm --passkey 123456 --pair
    pairing_done
    expect "$client" passkey 123456 || ok=0
    expect "$client" "paired=1 sc=1 authenticated=1 key_size=16 bonded" 1 || ok=0
    expect_json "$server" event=paired method=passkeyEntry secure_connections=true authenticated=true || ok=0
    pairing_case legacy-just-works && pairing_serve ble && pairing_central "$client" SwiftBLEPair --legacy --pair \
        --read $pairing_secret
    pairing_done
    expect "$client" "paired=1 sc=0 authenticated=0 key_size=16 bonded" 1 || ok=0
    expect "$client" read_DEF3 "$hex" || ok=0
    expect_json "$server" event=paired method=justWorks secure_connections=false authenticated=false || ok=0
    pairing_case legacy-passkey && pairing_serve ble --io display --passkey 123456 \
        && pairing_central "$client" SwiftBLEPair --legacy --io keyboard --mitm --passkey 123456 --pair
    pairing_done
    expect_json "$server" event=passkey passkey=123456 || ok=0
    expect "$client" "paired=1 sc=0 authenticated=1 key_size=16 bonded" 1 || ok=0
    expect_json "$server" event=paired method=passkeyEntry secure_connections=false authenticated=true || ok=0
    pairing_case wrong-passkey && pairing_serve ble --io display --passkey 123456 \
        && pairing_central "$client" SwiftBLEPair --io keyboard --mitm --passkey 000000 --pair --read $pairing_secret
    pairing_done
    expect "$client" pairing_failed 0x04 || ok=0
    expect "$client" read_DEF3 0x05 || ok=0
    expect_json "$server" event=pairing_failed reason=4 || ok=0
    [ "$(json_count "$server" event=paired)" -eq 0 ] || { echo "$part: ble serve reported a pairing"; ok=0; }
    rm -f "$logs/$name-bonds-"*
    pairing_case bonded-reconnect && pairing_serve ble --bonds "$logs/$name-bonds-ours.json" \
        && pairing_central "$client" SwiftBLEPair --keystore "$logs/$name-bonds-bumble.json" --pair \
        && pairing_central "$client2" SwiftBLEPair --keystore "$logs/$name-bonds-bumble.json" --encrypt --read $pairing_secret
    pairing_done last
    expect "$client" "paired=1 sc=1 authenticated=0 key_size=16 bonded" 1 || ok=0
    expect "$client2" "encrypted=1 paired_this_link" 0 || ok=0
    expect "$client2" read_DEF3 "$hex" || ok=0
    expect_json "$server" event=encrypted bonded=true || ok=0
    [ "$(json_count "$server" event=paired)" -eq 1 ] || { echo "$part: ble serve paired more than once (or never)"; ok=0; }
    decode_captures
    if [ $ok -eq 1 ]; then pass "$name ($(( $(millis) - start )) ms)"; else fail "$name" "see above"; fi
}

# `ble pair` / `ble read` / `ble bonds` with Bumble's peripheral: a protected read refused (--no-pair) then paired
# and served, SC Numeric Comparison, Passkey Entry with each side entering, legacy Just Works and Passkey, a wrong
# passkey (exit 3, 0x04 on both sides), a bond stored, reused without pairing, listed and removed.
scenario_pairing_ble_central_to_bumble_peripheral() {
    name="pairing-ble-central-to-bumble-peripheral-on-$controllers"
    selected "$name" || return 0
    needs_ble "$name" || return 0
    local start; start=$(millis)
    local ok=1 part p1 p2 server client client2 server_pid controllers_pid="" hex; hex=$(hexof top-secret)
    pairing_case protected-read && pairing_serve bumble && {
        pairing_ble 3 read BumblePair $pairing_secret --no-pair
        grep -qiE "Insufficient Encryption \(0x0f\)" "$client.err" || { echo "$part: ble read --no-pair did not report 0x0F"; ok=0; }
        pairing_ble 0 read BumblePair $pairing_secret --json
        expect_json "$client.out" uuid=$pairing_secret value="$hex" || ok=0
    }
    pairing_done
    expect "$server" "paired=1 sc=1 authenticated=0 key_size=16 bonded" 1 || ok=0
    expect "$server" "encrypted=1 paired_this_link" 1 || ok=0
    pairing_case sc-numeric-comparison && pairing_serve bumble --io yesno && pairing_ble 0 pair BumblePair --io yesno --mitm --json
    pairing_done
    expect_json "$client" event=paired method=numericComparison secure_connections=true authenticated=true key_size=16 || ok=0
    expect "$server" method numeric_comparison || ok=0
    expect "$server" "paired=1 sc=1 authenticated=1 key_size=16 bonded" 1 || ok=0
    pairing_case sc-passkey-bumble-enters && pairing_serve bumble --io keyboard --passkey 123456 \
        && pairing_ble 0 pair BumblePair --io display --passkey 123456 --mitm --json
    pairing_done
    expect_json "$client" event=passkey passkey=123456 || ok=0
    expect_json "$client" event=paired method=passkeyEntry secure_connections=true authenticated=true || ok=0
    expect "$server" "paired=1 sc=1 authenticated=1 key_size=16 bonded" 1 || ok=0
    pairing_case sc-passkey-ble-enters && pairing_serve bumble --io display --passkey 123456 \
        && pairing_ble 0 pair BumblePair --io keyboard --passkey 123456 --mitm --json
    pairing_done
    expect "$server" passkey 123456 || ok=0
    expect_json "$client" event=paired method=passkeyEntry secure_connections=true authenticated=true || ok=0
    expect "$server" "paired=1 sc=1 authenticated=1 key_size=16 bonded" 1 || ok=0
    pairing_case legacy-just-works && pairing_serve bumble && pairing_ble 0 pair BumblePair --legacy --json
    pairing_done
    expect_json "$client" event=paired method=justWorks secure_connections=false authenticated=false || ok=0
    expect "$server" "paired=1 sc=0 authenticated=0 key_size=16 bonded" 1 || ok=0
    pairing_case legacy-passkey && pairing_serve bumble --io display --passkey 123456 \
        && pairing_ble 0 pair BumblePair --legacy --io keyboard --passkey 123456 --mitm --json
    pairing_done
    expect "$server" passkey 123456 || ok=0
    expect_json "$client" event=paired method=passkeyEntry secure_connections=false authenticated=true || ok=0
    expect "$server" "paired=1 sc=0 authenticated=1 key_size=16 bonded" 1 || ok=0
    pairing_case wrong-passkey && pairing_serve bumble --io display --passkey 123456 \
        && pairing_ble 3 pair BumblePair --io keyboard --passkey 000000 --mitm
    pairing_done
    grep -qxF 'error: pairing with BumblePair failed: Confirm Value Failed (0x04)' "$client.err" && [ "$(wc -l < "$client.err")" -eq 1 ] \
        || { echo "$part: ble pair did not say 'error: pairing with BumblePair failed: Confirm Value Failed (0x04)' alone: $(head -3 "$client.err")"; ok=0; }
    expect "$server" pairing_failed 0x04 || ok=0
    local bonds="$logs/$name-bonds-ours.json"
    rm -f "$logs/$name-bonds-"*
    pairing_case bonded-reconnect && pairing_serve bumble --keystore "$logs/$name-bonds-bumble.json" && {
        pairing_ble 0 pair BumblePair --bonds "$bonds" --json
        expect_json "$client" event=paired bonded=true || ok=0
        client="$client2"   # the second link
        pairing_ble 0 pair BumblePair --bonds "$bonds" --json
        expect_json "$client" event=encrypted bonded=true || ok=0
        [ "$(json_count "$client" event=paired)" -eq 0 ] || { echo "$part: ble pair paired again instead of using the bond"; ok=0; }
        pairing_ble 0 read BumblePair $pairing_secret --bonds "$bonds" --json
        expect_json "$client.out" uuid=$pairing_secret value="$hex" || ok=0
        run_fg "$client" 10 "$ble" bonds list --bonds "$bonds" --json || { echo "$part: ble bonds list failed"; ok=0; }
        grep -q 'D1:D2:D3:D4:D5:D6' "$client" || { echo "$part: ble bonds list does not list the Bumble peripheral"; ok=0; }
        run_fg "$client" 10 "$ble" bonds remove D1:D2:D3:D4:D5:D6 --bonds "$bonds" || { echo "$part: ble bonds remove failed"; ok=0; }
        run_split "$client.out" "$client.err" 10 "$ble" bonds list --bonds "$bonds" --json || { echo "$part: ble bonds list failed"; ok=0; }
        ! grep -q 'D1:D2:D3:D4:D5:D6' "$client.out" || { echo "$part: the bond is still listed after ble bonds remove"; ok=0; }
    }
    pairing_done last
    [ "$(grep -c '^RESULT paired=1' "$server")" -eq 1 ] || { echo "$part: the Bumble peripheral paired more than once (or never)"; ok=0; }
    [ "$(grep -c '^RESULT encrypted=1 paired_this_link=0$' "$server")" -ge 2 ] \
        || { echo "$part: the Bumble peripheral did not see two links encrypted with the bond alone"; ok=0; }
    decode_captures
    if [ $ok -eq 1 ]; then pass "$name ($(( $(millis) - start )) ms)"; else fail "$name" "see above"; fi
}

# LE credit based channels between `ble l2cap` and Bumble's host (peers/l2cap_bench.py), 1 MB echoed each way,
# byte-identical, with the throughput of each pairing against Bumble with itself over the same controllers in the same
# run; and a Bumble client that sends past its credits to `ble l2cap serve --hold` gets its channel closed.
scenario_l2cap_cli() {
    name="l2cap-cli-and-bumble-on-$controllers"
    selected "$name" || return 0
    needs_ble "$name" || return 0
    local start; start=$(millis)
    local ok=1 bytes=1048576 part p1 p2 server client large_acl=1   # 251-byte controller buffers: one per K-frame
    # l2cap_part PART SERVER-KIND CLIENT-KIND [EXTRA...]: one pairing on fresh linked controllers (kinds: ble, bumble,
    # hold, violate); logs in $logs/$name-PART-{server,client}.log.
    l2cap_part() {
        part="$1"; local server_kind="$2" client_kind="$3"
        read -r p1 p2 < <(free_ports 2)
        start_controllers "$name-$part" "$p1" "$p2" || { ok=0; stop_bg "$controllers_pid"; return; }
        server="$logs/$name-$part-server.log"; client="$logs/$name-$part-client.log"
        case "$server_kind" in
            ble) start_bg "$server" "$ble" l2cap serve --psm 0x0080 --echo --hci "tcp:127.0.0.1:$p1" --json --run-for 120 ;;
            hold) start_bg "$server" "$ble" l2cap serve --psm 0x0080 --hold --credits 4 --hci "tcp:127.0.0.1:$p1" --json --run-for 60 ;;
            bumble) start_bg "$server" env "$(bumble_env "$part-server")" "$py" "$here/peers/l2cap_bench.py" --role server \
                        --transport "tcp-client:127.0.0.1:$p1" --name SwiftBLEL2CAP --run-for 120 ;;
        esac
        local server_pid=$last_pid
        if ! wait_for "$server" '"event":"serving"|^READY' 15 "$server_pid"; then
            echo "$part: the server did not start"; ok=0
        else
            case "$client_kind" in
                ble) run_fg "$client" 120 "$ble" l2cap connect SwiftBLEL2CAP --psm 0x0080 --bytes $bytes --expect-echo \
                         --hci "tcp:127.0.0.1:$p2" --json || { echo "$part: ble l2cap connect failed"; ok=0; } ;;
                bumble) run_fg "$client" 120 env "$(bumble_env "$part-client")" "$py" "$here/peers/l2cap_bench.py" --role client \
                            --transport "tcp-client:127.0.0.1:$p2" --bytes $bytes || { echo "$part: the Bumble client failed"; ok=0; } ;;
                violate) run_fg "$client" 60 env "$(bumble_env "$part-client")" "$py" "$here/peers/l2cap_bench.py" --role client \
                             --transport "tcp-client:127.0.0.1:$p2" --violate || { echo "$part: the Bumble client failed"; ok=0; } ;;
            esac
        fi
        stop_bg "$server_pid"
        stop_bg "$controllers_pid"
    }
    # rate FILE: the MB/s (both directions) a client reported.
    rate() { grep -ohE '"event":"echo".*"mb_per_s":[0-9.]+|^RESULT mb_per_s=[0-9.]+' "$1" | grep -oE '[0-9.]+$' | tail -1; }
    l2cap_part ours-to-bumble bumble ble
    grep -qE '"event":"echo".*"identical":true' "$client" || { echo "ours-to-bumble: the echo of 1 MB is not identical"; ok=0; }
    local ours_to_bumble; ours_to_bumble=$(rate "$client")
    l2cap_part bumble-to-ours ble bumble
    expect "$client" identical 1 || ok=0
    expect "$client" bytes $bytes || ok=0
    grep -qE "^\{\"bytes\":$bytes,.*\"event\":\"closed\"" "$server" || { echo "bumble-to-ours: ble l2cap serve did not count 1 MB"; ok=0; }
    local bumble_to_ours; bumble_to_ours=$(rate "$client")
    l2cap_part bumble-to-bumble bumble bumble
    expect "$client" identical 1 || ok=0
    local reference; reference=$(rate "$client")
    l2cap_part violation hold violate
    expect "$client" violation_disconnected 1 || ok=0
    if [ $ok -eq 1 ]; then
        echo "l2cap on $controllers controllers, 1 MB each way: ours→Bumble $ours_to_bumble MB/s, Bumble→ours $bumble_to_ours MB/s, Bumble→Bumble $reference MB/s" \
            | tee "$logs/$name-figures.txt"
        pass "$name ($(( $(millis) - start )) ms)"
    else
        fail "$name" "see above"
    fi
}

# A Bumble scanner decodes the iBeacon our `ble beacon` advertises (its own decoder, peers/beacon_scanner.py): the
# same UUID, major, minor and measured power, non-connectable.
scenario_bumble_scanner_decodes_ble_ibeacon() {
    name="bumble-scanner-decodes-ble-ibeacon-on-$controllers"
    selected "$name" || return 0
    needs_ble "$name" || return 0
    local start; start=$(millis)
    read -r p1 p2 < <(free_ports 2)
    start_controllers "$name" "$p1" "$p2" || { fail "$name" "controllers"; stop_bg "$controllers_pid"; return; }
    local b="$logs/$name-beacon.log" s="$logs/$name-scanner.log" ok=1 rc=0
    local uuid=E2C56DB5-DFFB-48D2-B060-D0F5A71096E0
    start_bg "$b" "$ble" beacon --ibeacon "$uuid" --major 4660 --minor 22136 --power -59 --hci "tcp:127.0.0.1:$p1" --json --run-for 30
    local beacon=$last_pid
    if ! wait_for "$b" '"event":"advertising"' 15 "$beacon"; then
        echo "ble beacon did not start advertising"; ok=0
    else
        run_fg "$s" 30 env "$(bumble_env scanner)" "$py" "$here/peers/beacon_scanner.py" \
            --transport "tcp-client:127.0.0.1:$p2" --want ibeacon --timeout 10 || rc=1
    fi
    stop_bg "$beacon"
    stop_bg "$controllers_pid"
    decode_captures
    if [ $ok -eq 1 ]; then
        [ $rc -eq 0 ] || { echo "the scanner exited with an error: $(grep '^FAILED' "$s")"; ok=0; }
        expect "$s" ibeacon_uuid "$uuid" || ok=0
        expect "$s" ibeacon_major 4660 || ok=0
        expect "$s" ibeacon_minor 22136 || ok=0
        expect "$s" ibeacon_power -59 || ok=0
        expect "$s" ibeacon_connectable 0 || ok=0
        expect "$s" done 1 || ok=0
    fi
    if [ $ok -eq 1 ]; then pass "$name ($(( $(millis) - start )) ms)"; else fail "$name" "see above"; fi
}

# Our `ble range --json` ranges a Bumble beacon (peers/beacon_advertiser.py) rotating an iBeacon, an Eddystone-URL, an
# Eddystone-UID and an Eddystone-TLM frame built by Bumble's side: each identified, with a distance and a proximity,
# numbers as numbers, and the TLM telemetry attached to the UID beacon that precedes it.
scenario_ble_ranges_bumble_beacons() {
    name="ble-ranges-bumble-beacons-on-$controllers"
    selected "$name" || return 0
    needs_ble "$name" || return 0
    local start; start=$(millis)
    read -r p1 p2 < <(free_ports 2)
    start_controllers "$name" "$p1" "$p2" || { fail "$name" "controllers"; stop_bg "$controllers_pid"; return; }
    local a="$logs/$name-advertiser.log" r="$logs/$name-range.log" ok=1 rc=0
    local uuid=2F234454-CF6D-4A0F-ADF2-F4911BA9FFA6
    start_bg "$a" env "$(bumble_env advertiser)" "$py" "$here/peers/beacon_advertiser.py" --transport "tcp-client:127.0.0.1:$p1" \
        --ibeacon "$uuid:7:9:-59" --eddystone-url https://swift.org --eddystone-uid edd1ebeac04e5defa017:0123456789ab \
        --eddystone-tlm --dwell 0.3 --run-for 40
    local advertiser=$last_pid
    if ! wait_for "$a" '^RESULT advertising=1' 15 "$advertiser"; then
        echo "the Bumble beacon did not start advertising"; ok=0
    else
        run_fg "$r" 30 "$ble" range --json --run-for 6 --hci "tcp:127.0.0.1:$p2" || rc=1
    fi
    stop_bg "$advertiser"
    stop_bg "$controllers_pid"
    decode_captures
    if [ $ok -eq 1 ]; then
        [ $rc -eq 0 ] || { echo "ble range exited with an error"; ok=0; }
        local number='-?[0-9]+(\.[0-9]+)?'
        grep -qE '"identifier":"ibeacon:'"$uuid"':7:9","format":"ibeacon","uuid":"'"$uuid"'","major":7,"minor":9,"measured_power":-59,"rssi":-?[0-9]+,"smoothed_rssi":'"$number"',"distance":'"$number"',"accuracy":'"$number"',"proximity":"(immediate|near|far)"' "$r" \
            || { echo "ble range did not range the Bumble iBeacon (7, 9) with a distance"; ok=0; }
        grep -qE '"identifier":"eddystone-url:https://swift.org".*"measured_power":-59,.*"distance":'"$number" "$r" \
            || { echo "ble range did not range the Bumble Eddystone-URL"; ok=0; }
        grep -qE '"identifier":"eddystone-uid:edd1ebeac04e5defa017:0123456789ab".*"distance":'"$number" "$r" \
            || { echo "ble range did not range the Bumble Eddystone-UID"; ok=0; }
        # The TLM frame follows the UID frame in the rotation: its telemetry joins the UID beacon.
        grep -qE '"identifier":"eddystone-uid:edd1ebeac04e5defa017:0123456789ab".*"battery_mv":3000,"temperature":22.50,"advertising_count":[0-9]+,"uptime":'"$number" "$r" \
            || { echo "ble range did not show the Bumble beacon's TLM telemetry (3000 mV, 22.5 °C) on its UID"; ok=0; }
    fi
    if [ $ok -eq 1 ]; then pass "$name ($(( $(millis) - start )) ms)"; else fail "$name" "see above"; fi
}

# ---------------------------------------------------------------------------------------------------------------
# CoreBluetooth-style programs (CoreBluetoothCompat, the Examples/ demos) against Bumble, choosing the controller as an
# iOS-style program must: with SWIFT_BLE_HCI=tcp:HOST:PORT. The demo binaries sit next to `ble`.

# battery-demo (a CBCentralManager app) against Bumble's lab peripheral: found by its Battery service and name, the
# manufacturer name read from Device Information, the battery level read.
scenario_cb_central_to_bumble_peripheral() {
    name="cb-central-to-bumble-peripheral-on-$controllers"
    selected "$name" || return 0
    needs_ble "$name" || return 0
    local demo; demo="$(dirname "$ble")/battery-demo"
    [ -x "$demo" ] || { skip "$name" "no battery-demo next to $ble"; return 0; }
    local start; start=$(millis)
    read -r p1 p2 < <(free_ports 2)
    start_controllers "$name" "$p1" "$p2" || { fail "$name" "controllers"; stop_bg "$controllers_pid"; return; }
    local c="$logs/$name-central.log" p="$logs/$name-peripheral.log" ok=1 rc=0
    start_bg "$p" env "$(bumble_env peripheral)" "$py" "$here/peers/peripheral.py" \
        --transport "tcp-client:127.0.0.1:$p1" --run-for 30
    local peripheral=$last_pid
    if ! wait_for "$p" "^RESULT advertising=1" 15 "$peripheral"; then
        echo "peripheral did not start advertising"; ok=0
    else
        run_fg "$c" 30 env SWIFT_BLE_HCI="tcp:127.0.0.1:$p2" "$demo" --name BumbleLabPeripheral --updates 0 || rc=1
    fi
    stop_bg "$peripheral"
    stop_bg "$controllers_pid"
    decode_captures
    if [ $ok -eq 1 ]; then
        [ $rc -eq 0 ] || { echo "battery-demo exited with an error"; ok=0; }
        grep -qx "connected to BumbleLabPeripheral" "$c" || { echo "battery-demo did not connect"; ok=0; }
        grep -qx "manufacturer Bumble Lab Inc." "$c" || { echo "manufacturer name not read"; ok=0; }
        grep -qE "^battery level [0-9]+%$" "$c" || { echo "battery level not read"; ok=0; }
        grep -qx "disconnected" "$c" || { echo "no disconnection"; ok=0; }
    fi
    if [ $ok -eq 1 ]; then pass "$name ($(( $(millis) - start )) ms)"; else fail "$name" "see above"; fi
}

# transfer-demo's CBPeripheralManager (Apple's transfer sample) against Bumble's central: the file arrives whole in
# chunks with an EOM marker, and the reply is attributed to the identifier the peripheral gave that central. The name
# is short enough to share the advertising packet with the 128-bit service UUID: Bumble's controller sends a copy of
# the advertising data as scan response (see the README), so a name moved to the scan response would never be heard.
scenario_cb_peripheral_to_bumble_central() {
    name="cb-peripheral-to-bumble-central-on-$controllers"
    selected "$name" || return 0
    needs_ble "$name" || return 0
    local demo; demo="$(dirname "$ble")/transfer-demo"
    [ -x "$demo" ] || { skip "$name" "no transfer-demo next to $ble"; return 0; }
    local start; start=$(millis)
    read -r p1 p2 < <(free_ports 2)
    start_controllers "$name" "$p1" "$p2" || { fail "$name" "controllers"; stop_bg "$controllers_pid"; return; }
    local c="$logs/$name-central.log" p="$logs/$name-peripheral.log" ok=1
    local file="$logs/$name-file.bin"
    head -c 6000 /dev/urandom > "$file"
    start_bg "$p" env SWIFT_BLE_HCI="tcp:127.0.0.1:$p1" "$demo" --peripheral-only --name CBXfer --file "$file" --centrals 1
    local peripheral=$last_pid
    if ! wait_for "$p" "^peripheral: advertising CBXfer" 15 "$peripheral"; then
        echo "transfer-demo did not start advertising"; ok=0
    else
        run_fg "$c" 40 env "$(bumble_env central)" "$py" "$here/peers/transfer_central.py" \
            --transport "tcp-client:127.0.0.1:$p2" --target-name CBXfer || { echo "the Bumble central failed"; ok=0; }
        wait_for "$p" "^done" 10 "$peripheral" || { echo "transfer-demo did not finish"; ok=0; }
    fi
    stop_bg "$peripheral"
    stop_bg "$controllers_pid"
    decode_captures
    if [ $ok -eq 1 ]; then
        expect "$c" received 6000 || ok=0
        expect "$c" sha256 "$(sha256sum "$file" | cut -d' ' -f1)" || ok=0
        expect "$c" reply written || ok=0
        local identity; identity=$(sed -n 's/^RESULT who_am_i=//p' "$c")
        [ -n "$identity" ] || { echo "no identity read"; ok=0; }
        # The identifier of CBCentral C0:C1:C2:C3:C4:C5 (random): the address in its last group.
        [[ "$identity" == *-C0C1C2C3C4C5 ]] || { echo "identity $identity does not carry the central's address"; ok=0; }
        grep -qxF "peripheral: $identity wrote \"thanks from bumble\"" "$p" || { echo "the reply is not attributed to $identity"; ok=0; }
        grep -q "^peripheral: sent 6000 bytes and EOM to $identity" "$p" || { echo "the peripheral did not send the whole file to $identity"; ok=0; }
    fi
    if [ $ok -eq 1 ]; then pass "$name ($(( $(millis) - start )) ms)"; else fail "$name" "see above"; fi
}

# ---------------------------------------------------------------------------------------------------------------
began=$(millis)
scenario_btsnoop_capture
scenario_cli_errors_and_exit_codes
scenario_cli_json_types
for controllers in $kinds; do
    for lab_central in bumble ble; do
        for lab_peripheral in bumble ble; do scenario_lab_session "$lab_central" "$lab_peripheral"; done
    done
    scenario_two_bumble_centrals_to_ble_peripheral
    scenario_application_answers
    scenario_ble_central_to_ble_peripheral
    scenario_ble_central_to_bumble_peripheral
    scenario_bumble_scanner_decodes_ble_ibeacon
    scenario_ble_ranges_bumble_beacons
    scenario_l2cap_channels
    scenario_l2cap_cli
    scenario_pairing_bumble_to_bumble
    scenario_pairing_bumble_central_to_ble_peripheral
    scenario_pairing_ble_central_to_bumble_peripheral
    scenario_cb_central_to_bumble_peripheral
    scenario_cb_peripheral_to_bumble_central
done
echo "interop: $(( $(millis) - began )) ms, $skipped skipped, logs in $logs"
echo "$passed passed, $failed failed"
[ $failed -eq 0 ] && [ $passed -gt 0 ]
