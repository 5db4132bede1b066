#!/usr/bin/env bash
# Interop scenarios with Bumble (Google's Python Bluetooth stack) as the independent peer.
#
#   Tests/Interop/run.sh --controllers ble --ble PATH/TO/ble   # Bumble hosts on our virtual controllers
#   Tests/Interop/run.sh --controllers bumble                  # Bumble hosts on Bumble's controllers (harness check)
#
# Installs bumble==0.0.236 into .venv-bumble when missing, starts every process it needs on free loopback ports,
# stops all of them on exit, prints the peers' logs when a scenario fails, and ends with 'N passed, M failed'.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
kinds=ble
ble=""
while [ $# -gt 0 ]; do
    case "$1" in
        --controllers) kinds="${2//,/ }"; shift 2 ;;
        --ble) ble="$2"; shift 2 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
if [ ! -x "$ble" ]; then echo "--ble PATH to the ble binary is required" >&2; exit 2; fi

"$here/bootstrap.sh" || exit 1
py="$repo/.venv-bumble/bin/python"
logs="$repo/interop-logs"
rm -rf "$logs"; mkdir -p "$logs"
pids=()
cleanup() {
    for pid in "${pids[@]:-}"; do
        [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null
    done
    sleep 0.3
    for pid in "${pids[@]:-}"; do
        [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
    done
}
trap cleanup EXIT

free_ports() {
    "$py" - "$1" <<'PY'
import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks: s.bind(('127.0.0.1', 0))
print(' '.join(str(s.getsockname()[1]) for s in socks))
PY
}

# start_controllers NAME PORT... : starts linked controllers and waits for READY.
start_controllers() {
    local name="$1"; shift
    local out="$logs/$name-controllers.log"
    if [ "$controllers" = ble ]; then
        local args=()
        for port in "$@"; do args+=("127.0.0.1:$port"); done
        "$ble" controller --tcp "${args[@]}" > "$out" 2>&1 &
    else
        local args=()
        for port in "$@"; do args+=("tcp-server:127.0.0.1:$port"); done
        "$py" -m bumble.apps.controllers "${args[@]}" > "$out" 2>&1 &
    fi
    pids+=($!)
    for _ in $(seq 1 100); do
        if [ "$controllers" = ble ]; then grep -q "^READY" "$out" && return 0
        else (echo > "/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; fi
        sleep 0.1
    done
    echo "controllers did not start:"; cat "$out"; return 1
}

# hexof TEXT: the UTF-8 bytes of TEXT in lowercase hex.
hexof() { printf '%s' "$1" | od -An -tx1 -v | tr -d ' \n'; }

passed=0; failed=0
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() {
    echo "FAIL $1: $2"
    for f in "$logs/$1"-*.log; do echo "----- $f"; tail -60 "$f"; done
    failed=$((failed + 1))
}

# expect FILE KEY VALUE: the file has 'RESULT KEY=VALUE'.
expect() { grep -qx "RESULT $2=$3" "$1" || { echo "missing 'RESULT $2=$3' in $(basename "$1")"; return 1; }; }

scenario_full_session() {
    local name="bumble-central-to-bumble-peripheral-on-$controllers"
    read -r p1 p2 < <(free_ports 2)
    start_controllers "$name" "$p1" "$p2" || { fail "$name" "controllers"; return; }
    "$py" "$here/peers/peripheral.py" --transport "tcp-client:127.0.0.1:$p1" --run-for 30 > "$logs/$name-peripheral.log" 2>&1 &
    local peripheral=$!; pids+=($peripheral)
    for _ in $(seq 1 50); do grep -q "RESULT advertising=1" "$logs/$name-peripheral.log" && break; sleep 0.1; done
    local start=$(date +%s%N)
    timeout 60 "$py" "$here/peers/central.py" --transport "tcp-client:127.0.0.1:$p2" > "$logs/$name-central.log" 2>&1
    local rc=$?
    local took=$(( ($(date +%s%N) - start) / 1000000 ))
    sleep 0.3
    kill -TERM "$peripheral" 2>/dev/null; wait "$peripheral" 2>/dev/null
    local c="$logs/$name-central.log" p="$logs/$name-peripheral.log" ok=1
    [ $rc -eq 0 ] || { echo "central exited with $rc"; ok=0; }
    expect "$c" mtu 247 || ok=0
    if [ "$controllers" = ble ]; then
        # Our controller sends the real scan response; Bumble 0.0.236's echoes the advertising data instead.
        expect "$c" scan_response 1 || ok=0
    fi
    expect "$c" long_read 300 || ok=0
    expect "$c" manufacturer "Bumble Lab Inc." || ok=0
    expect "$c" write_with_response ok || ok=0
    expect "$c" write_without_response ok || ok=0
    expect "$c" notifications 3 || ok=0
    if [ "$controllers" = ble ]; then
        # Core 5.4, Vol 4, Part E, 7.1.6: the initiating side's Disconnection Complete carries 0x16 (terminated
        # by local host). Bumble 0.0.236's controller reports the reason sent to the peer (0x13) instead.
        expect "$c" disconnect_reason 0x16 || ok=0
    else
        expect "$c" disconnect_reason 0x13 || ok=0
    fi
    expect "$c" done 1 || ok=0
    expect "$p" connected 1 || ok=0
    expect "$p" write written-with-response || ok=0
    expect "$p" write written-without-response || ok=0
    expect "$p" subscribed 1 || ok=0
    expect "$p" disconnected 0x13 || ok=0
    if [ $ok -eq 1 ]; then pass "$name (${took} ms)"; else fail "$name" "see above"; fi
}

# Bumble's central against our peripheral (ble serve: our host, our GATT server).
scenario_bumble_central_to_ble_peripheral() {
    local name="bumble-central-to-ble-peripheral-on-$controllers"
    read -r p1 p2 < <(free_ports 2)
    start_controllers "$name" "$p1" "$p2" || { fail "$name" "controllers"; return; }
    "$ble" serve --hci "tcp:127.0.0.1:$p1" --json --run-for 30 > "$logs/$name-peripheral.log" 2>&1 &
    local peripheral=$!; pids+=($peripheral)
    for _ in $(seq 1 100); do grep -q '"event":"serving"' "$logs/$name-peripheral.log" && break; sleep 0.1; done
    timeout 60 "$py" "$here/peers/central.py" --transport "tcp-client:127.0.0.1:$p2" --target-name SwiftBLELab > "$logs/$name-central.log" 2>&1
    local rc=$?
    sleep 0.3
    kill -TERM "$peripheral" 2>/dev/null; wait "$peripheral" 2>/dev/null
    local c="$logs/$name-central.log" p="$logs/$name-peripheral.log" ok=1
    [ $rc -eq 0 ] || { echo "central exited with $rc"; ok=0; }
    expect "$c" mtu 247 || ok=0
    expect "$c" long_read 300 || ok=0
    expect "$c" manufacturer "swift-ble Lab Inc." || ok=0
    expect "$c" read_error_12345678-1234-5678-1234-56789ABCDEF3 0x0F || ok=0
    expect "$c" write_with_response ok || ok=0
    expect "$c" write_without_response ok || ok=0
    expect "$c" notifications 3 || ok=0
    expect "$c" done 1 || ok=0
    if [ "$controllers" = ble ]; then expect "$c" scan_response 1 || ok=0; fi
    # Our peripheral saw both writes, attributed to the connection, and the subscription.
    grep -q '"event":"write".*"value":"'"$(hexof 'written-with-response')"'"' "$p" || { echo "peripheral did not log the write request"; ok=0; }
    grep -q '"event":"write".*"value":"'"$(hexof 'written-without-response')"'"' "$p" || { echo "peripheral did not log the write command"; ok=0; }
    grep -q '"event":"subscription".*"notify":"true"' "$p" || { echo "peripheral did not log the subscription"; ok=0; }
    if [ $ok -eq 1 ]; then pass "$name"; else fail "$name" "see above"; fi
}

# Our central (ble explore) against Bumble's peripheral.
scenario_ble_central_to_bumble_peripheral() {
    local name="ble-central-to-bumble-peripheral-on-$controllers"
    read -r p1 p2 < <(free_ports 2)
    start_controllers "$name" "$p1" "$p2" || { fail "$name" "controllers"; return; }
    "$py" "$here/peers/peripheral.py" --transport "tcp-client:127.0.0.1:$p1" --run-for 30 > "$logs/$name-peripheral.log" 2>&1 &
    local peripheral=$!; pids+=($peripheral)
    for _ in $(seq 1 50); do grep -q "RESULT advertising=1" "$logs/$name-peripheral.log" && break; sleep 0.1; done
    timeout 60 "$ble" explore BumbleLabPeripheral --hci "tcp:127.0.0.1:$p2" --json > "$logs/$name-central.log" 2>&1
    local rc=$?
    timeout 60 "$ble" write BumbleLabPeripheral 12345678-1234-5678-1234-56789ABCDEF1 "$(hexof 'from-swift-ble')" --hci "tcp:127.0.0.1:$p2" >> "$logs/$name-central.log" 2>&1 || rc=1
    timeout 60 "$ble" subscribe BumbleLabPeripheral 2A37 --count 2 --hci "tcp:127.0.0.1:$p2" --json >> "$logs/$name-central.log" 2>&1 || rc=1
    sleep 0.3
    kill -TERM "$peripheral" 2>/dev/null; wait "$peripheral" 2>/dev/null
    local c="$logs/$name-central.log" p="$logs/$name-peripheral.log" ok=1
    [ $rc -eq 0 ] || { echo "ble exited with an error"; ok=0; }
    grep -q '"mtu":"247"' "$c" || { echo "no MTU 247"; ok=0; }
    grep -q '"uuid":"2A29".*"value":"'"$(hexof 'Bumble Lab Inc.')"'"' "$c" || { echo "manufacturer name not read"; ok=0; }
    grep -q '"uuid":"12345678-1234-5678-1234-56789ABCDEF2".*"value":"000102' "$c" || { echo "long value not read"; ok=0; }
    [ "$(grep -o '"uuid":"12345678-1234-5678-1234-56789ABCDEF2"[^}]*' "$c" | grep -o '"value":"[0-9a-f]*"' | wc -c)" -gt 600 ] || { echo "long value shorter than 300 bytes"; ok=0; }
    [ "$(grep -c '"kind":"service"' "$c")" -eq 6 ] || { echo "expected 6 services"; ok=0; }
    expect "$p" write from-swift-ble || ok=0
    [ "$(grep -c '"index":"[0-9]*","uuid":"2A37"' "$c")" -eq 2 ] || { echo "expected 2 heart-rate notifications"; ok=0; }
    if [ $ok -eq 1 ]; then pass "$name"; else fail "$name" "see above"; fi
}

# Our btsnoop capture of a full session decodes in Wireshark's tshark, with no malformed packet, and shows the
# session's ATT operations.
scenario_btsnoop_capture() {
    local name="btsnoop-capture-decodes-in-tshark"
    if ! command -v tshark > /dev/null; then fail "$name" "tshark is not installed"; return; fi
    local capture="$logs/$name.btsnoop" log="$logs/$name-tshark.log" ok=1
    timeout 60 "$ble" explore SwiftBLELab --btsnoop "$capture" > "$logs/$name-explore.log" 2>&1 || { echo "ble explore failed"; ok=0; }
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

# Our central against our peripheral, across the controllers under test (on Bumble's: our host on both ends of an
# independent controller implementation).
scenario_ble_central_to_ble_peripheral() {
    local name="ble-central-to-ble-peripheral-on-$controllers"
    read -r p1 p2 < <(free_ports 2)
    start_controllers "$name" "$p1" "$p2" || { fail "$name" "controllers"; return; }
    "$ble" serve --hci "tcp:127.0.0.1:$p1" --json --run-for 30 > "$logs/$name-peripheral.log" 2>&1 &
    local peripheral=$!; pids+=($peripheral)
    for _ in $(seq 1 100); do grep -q '"event":"serving"' "$logs/$name-peripheral.log" && break; sleep 0.1; done
    local rc=0
    timeout 60 "$ble" scan --service 180D --timeout 2 --hci "tcp:127.0.0.1:$p2" --json > "$logs/$name-scan.log" 2>&1 || rc=1
    timeout 60 "$ble" explore SwiftBLELab --hci "tcp:127.0.0.1:$p2" --json > "$logs/$name-central.log" 2>&1 || rc=1
    timeout 60 "$ble" read SwiftBLELab 12345678-1234-5678-1234-56789ABCDEF2 --hci "tcp:127.0.0.1:$p2" --json > "$logs/$name-read.log" 2>&1 || rc=1
    timeout 60 "$ble" write SwiftBLELab 12345678-1234-5678-1234-56789ABCDEF1 "$(hexof 'ours-to-ours')" --hci "tcp:127.0.0.1:$p2" >> "$logs/$name-central.log" 2>&1 || rc=1
    timeout 60 "$ble" subscribe SwiftBLELab 2A37 --count 2 --hci "tcp:127.0.0.1:$p2" --json >> "$logs/$name-central.log" 2>&1 || rc=1
    kill -TERM "$peripheral" 2>/dev/null; wait "$peripheral" 2>/dev/null
    local c="$logs/$name-central.log" p="$logs/$name-peripheral.log" ok=1
    [ $rc -eq 0 ] || { echo "ble exited with an error"; ok=0; }
    grep -q '"mtu":"247"' "$c" || { echo "no MTU 247"; ok=0; }
    grep -q '"name":"SwiftBLELab".*"services":"180D,180F"' "$logs/$name-scan.log" || { echo "ble scan --service 180D did not list SwiftBLELab"; ok=0; }
    [ "$(grep -o '"value":"[0-9a-f]*"' "$logs/$name-read.log" | wc -c)" -gt 600 ] || { echo "ble read did not return the 300-byte value"; ok=0; }
    [ "$(grep -c '"kind":"service"' "$c")" -eq 6 ] || { echo "expected 6 services"; ok=0; }
    grep -q '"uuid":"2A29".*"value":"'"$(hexof 'swift-ble Lab Inc.')"'"' "$c" || { echo "manufacturer name not read"; ok=0; }
    grep -q '"event":"write".*"value":"'"$(hexof 'ours-to-ours')"'"' "$p" || { echo "peripheral did not log the write"; ok=0; }
    [ "$(grep -c '"index":"[0-9]*","uuid":"2A37"' "$c")" -eq 2 ] || { echo "expected 2 heart-rate notifications"; ok=0; }
    if [ $ok -eq 1 ]; then pass "$name"; else fail "$name" "see above"; fi
}

# Two Bumble centrals at once against our peripheral: each write is attributed to the central that sent it.
scenario_two_bumble_centrals_to_ble_peripheral() {
    local name="two-bumble-centrals-to-ble-peripheral-on-$controllers"
    read -r p1 p2 p3 < <(free_ports 3)
    start_controllers "$name" "$p1" "$p2" "$p3" || { fail "$name" "controllers"; return; }
    "$ble" serve --hci "tcp:127.0.0.1:$p1" --json --run-for 30 > "$logs/$name-peripheral.log" 2>&1 &
    local peripheral=$!; pids+=($peripheral)
    for _ in $(seq 1 100); do grep -q '"event":"serving"' "$logs/$name-peripheral.log" && break; sleep 0.1; done
    timeout 60 "$py" "$here/peers/central.py" --transport "tcp-client:127.0.0.1:$p2" --target-name SwiftBLELab \
        --address C0:C1:C2:C3:C4:C5 --tag A > "$logs/$name-centralA.log" 2>&1 &
    local a=$!
    timeout 60 "$py" "$here/peers/central.py" --transport "tcp-client:127.0.0.1:$p3" --target-name SwiftBLELab \
        --address C0:C1:C2:C3:C4:C6 --tag B > "$logs/$name-centralB.log" 2>&1 &
    local b=$!
    local ok=1
    wait $a || { echo "central A failed"; ok=0; }
    wait $b || { echo "central B failed"; ok=0; }
    kill -TERM "$peripheral" 2>/dev/null; wait "$peripheral" 2>/dev/null
    local p="$logs/$name-peripheral.log"
    for pair in "A C0:C1:C2:C3:C4:C5" "B C0:C1:C2:C3:C4:C6"; do
        set -- $pair
        local handle
        handle=$(grep '"event":"connected"' "$p" | grep "\"peer\":\"$2\"" | head -1 | sed -E 's/.*"handle":"([0-9]+)".*/\1/')
        [ -n "$handle" ] || { echo "central $1 ($2) never connected"; ok=0; continue; }
        grep -q "\"connection\":\"$handle\",\"event\":\"write\",\"value\":\"$(hexof "written-with-response-$1")\"" "$p" \
            || { echo "the write of central $1 is not attributed to its link (handle $handle)"; ok=0; }
    done
    if [ $ok -eq 1 ]; then pass "$name"; else fail "$name" "see above"; fi
}

# A burst of 150 notifications from our peripheral to Bumble's central: none lost, in order.
scenario_notification_burst_to_bumble_central() {
    local name="notification-burst-ble-peripheral-to-bumble-central-on-$controllers"
    read -r p1 p2 < <(free_ports 2)
    start_controllers "$name" "$p1" "$p2" || { fail "$name" "controllers"; return; }
    "$ble" serve --hci "tcp:127.0.0.1:$p1" --json --run-for 40 --notify-interval 10 > "$logs/$name-peripheral.log" 2>&1 &
    local peripheral=$!; pids+=($peripheral)
    for _ in $(seq 1 100); do grep -q '"event":"serving"' "$logs/$name-peripheral.log" && break; sleep 0.1; done
    local ok=1
    timeout 60 "$py" "$here/peers/central.py" --transport "tcp-client:127.0.0.1:$p2" --target-name SwiftBLELab \
        --notifications 150 --notification-timeout 2 > "$logs/$name-central.log" 2>&1 || { echo "central failed"; ok=0; }
    kill -TERM "$peripheral" 2>/dev/null; wait "$peripheral" 2>/dev/null
    expect "$logs/$name-central.log" notifications 150 || ok=0
    if [ $ok -eq 1 ]; then pass "$name"; else fail "$name" "see above"; fi
}

scenario_btsnoop_capture
for controllers in $kinds; do
    # Three linked controllers: Bumble's stock launcher offers exactly two, so this one runs on ours.
    [ "$controllers" = ble ] && scenario_two_bumble_centrals_to_ble_peripheral
    scenario_notification_burst_to_bumble_central
    scenario_ble_central_to_ble_peripheral
    scenario_full_session
    scenario_bumble_central_to_ble_peripheral
    scenario_ble_central_to_bumble_peripheral
done
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
