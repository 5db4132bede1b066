#!/bin/sh
# PID 1 of scripts/bluez-test's guest (busybox sh): the kernel's host and BlueZ on hci0, `ble` on hci1 through the
# HCI user channel, both adapters virtual controllers of `ble controller --vhci 2` on one air. Everything the host
# reads goes to the serial console: "BT ..." lines, "BT RESULT|scenario|PASS or FAIL|value seen", "BT BUILT name" for
# each scenario this guest knows, and the logs between "BT-FILE-BEGIN name" and "BT-FILE-END".
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
mkdir -p /run/dbus /var/lib/bluetooth
chmod 700 /var/lib/bluetooth
export HOME=/root PATH=/usr/sbin:/usr/bin:/bin
cd /tmp

KERNEL=00:5B:00:00:00:01   # hci0, the kernel's (the first vhci controller)
OURS=00:5B:00:00:00:02     # hci1, ble's

say() { echo "BT $*"; }
result() { echo "BT RESULT|$1|$2|$3"; }
only="$(cat /only)"
# wanted NAME: announces the scenario as built, and says whether --only lets it run
wanted() {
    echo "BT BUILT $1"
    [ -z "$only" ] && return 0
    case "$1" in *"$only"*) return 0 ;; esac
    return 1
}
# wait_for FILE PATTERN SECONDS [COUNT]: until FILE has COUNT (default 1) lines matching PATTERN
wait_for() {
    local n=0 count="${4:-1}" c
    while :; do
        c=$(grep -c -- "$2" "$1" 2>/dev/null)
        [ "${c:-0}" -ge "$count" ] && break
        n=$((n + 1)); [ $n -gt $(( $3 * 10 )) ] && return 1; sleep 0.1
    done
    return 0
}
stop() { kill "$1" 2>/dev/null; wait "$1" 2>/dev/null; }
# stop_ble PID: SIGINT, which ble answers by disconnecting and closing its capture
stop_ble() { kill -INT "$1" 2>/dev/null; wait "$1" 2>/dev/null; }
# state: what the kernel says of hci0 (for a failure's report)
state() { say "hci0 state: $(btmgmt --index 0 info 2>&1 | grep 'current settings' | tr -s '\t ' ' ') links: $(btmgmt --index 0 con 2>&1 | tr '\n' ' ')"; }
hex4() { printf '0x%04x' "$1"; }
# handle FILE UUID: the value handle `ble serve --json` listed for a characteristic
handle() { grep "\"kind\":\"characteristic\"" "$1" | grep "\"uuid\":\"$2\"" | sed 's/.*"handle":\([0-9]*\).*/\1/' | head -1; }

# ble1 OUT ARGS...: `ble ARGS --hci hci1` in the foreground (OUT.out, OUT.err), retried while the kernel holds the
# adapter (it powers a new or released adapter on for its own setup; the user channel is refused meanwhile) or has
# not yet brought it back after the last user-channel socket closed (ENODEV for a moment)
ble1() {
    local out="$1" n=0 status; shift
    while :; do
        timeout 90 ble "$@" --hci hci1 --btsnoop "$out.snoop" > "$out.out" 2> "$out.err"
        status=$?
        grep -q "adapter busy\|no such adapter" "$out.err" || break
        n=$((n + 1)); [ $n -ge 30 ] && break
        sleep 0.5
    done
    return $status
}
# ble1_bg OUT READY ARGS...: the same in the background until OUT.out has a READY line; sets bgpid
ble1_bg() {
    local out="$1" ready="$2" n=0 m; shift 2
    while :; do
        ble "$@" --hci hci1 --btsnoop "$out.snoop" > "$out.out" 2> "$out.err" &
        bgpid=$!
        m=0
        until grep -q "$ready" "$out.out" 2>/dev/null || ! kill -0 $bgpid 2>/dev/null; do
            m=$((m + 1)); [ $m -gt 150 ] && break; sleep 0.1
        done
        grep -q "$ready" "$out.out" && return 0
        stop $bgpid
        n=$((n + 1)); [ $n -ge 30 ] && return 1
        sleep 0.5
    done
}

# btgatt-client driven line by line through a FIFO (it reads one line per poll wake-up: one command at a time)
gc_start() {
    rm -f /tmp/gc.in; mkfifo /tmp/gc.in
    btgatt-client "$@" < /tmp/gc.in > /tmp/gc.log 2>&1 &
    gcpid=$!
    exec 3> /tmp/gc.in
}
# gc COMMAND PATTERN: sends COMMAND and waits up to 10 s for one more line matching PATTERN
gc() {
    local before
    before=$(grep -c -- "$2" /tmp/gc.log)
    echo "$1" >&3
    wait_for /tmp/gc.log "$2" 10 $((before + 1))
}
gc_stop() { exec 3>&-; sleep 0.5; stop $gcpid; }

# btgatt-server on hci0 (one connection, then it exits), its input held open through a FIFO
gs_start() {
    local log="$1"; shift
    rm -f /tmp/gs.in; mkfifo /tmp/gs.in
    btgatt-server -i hci0 "$@" < /tmp/gs.in > "$log" 2>&1 &
    gspid=$!
    exec 4> /tmp/gs.in
    sleep 0.5   # (it says "Started listening" only at exit: its output to a file is buffered)
}
gs_stop() { exec 4>&-; stop $gspid; }

# btmgmt on hci0 as an agent: interactive, reading a FIFO, so that the kernel's confirm and passkey requests can be
# answered (agent_answer PATTERN ANSWER)
agent_start() {
    rm -f /tmp/agent.in; mkfifo /tmp/agent.in
    btmgmt --index 0 < /tmp/agent.in > /tmp/agent.log 2>&1 &
    agentpid=$!
    exec 5> /tmp/agent.in
    agent_responder &
    responderpid=$!
}
agent_stop() { stop $responderpid; exec 5>&-; stop $agentpid; }
# agent_responder: answers each of the kernel's requests as btmgmt prints them: "yes" to a confirmation, the passkey
# in /tmp/agent.passkey to a passkey request (runs in the background)
agent_responder() {
    local handled=0 count line
    while :; do
        count=$(grep -c "User Confirm\|Passkey Request" /tmp/agent.log 2>/dev/null)
        if [ "${count:-0}" -gt "$handled" ]; then
            handled=$((handled + 1))
            line="$(grep "User Confirm\|Passkey Request" /tmp/agent.log | sed -n "${handled}p")"
            case "$line" in
                *"Passkey Request"*) cat /tmp/agent.passkey >&5 ;;
                *) echo yes >&5 ;;
            esac
        fi
        sleep 0.2
    done
}
mgmt() { btmgmt --index 0 "$@" >> /tmp/btmgmt.log 2>&1; }
kernel_advertise() { mgmt power on; mgmt connectable on; mgmt advertising on; }
# no_links: the kernel keeps an LE link it made for a socket after the socket closes, and a central link stops
# "advertising on" from taking effect until it is set again: disconnects whatever hci0 lists, waits (10 s at most)
# until it lists nothing, and turns advertising off if it was on
no_links() {
    local n=0 peer
    while :; do
        peer="$(btmgmt --index 0 con 2>/dev/null | awk '/type/ { print $1; exit }')"
        [ -z "$peer" ] && break
        n=$((n + 1)); [ $n -gt 10 ] && { say "hci0 still has a connection: $(btmgmt --index 0 con 2>&1 | tr '\n' ' ')"; return 1; }
        mgmt disconnect -t 1 "$peer"
        sleep 1
    done
    mgmt advertising off
    return 0
}

# start_bluetoothd: the guest's system bus and bluetoothd (once), bluetoothdpid set
start_bluetoothd() {
    [ -n "${bluetoothdpid:-}" ] && kill -0 "$bluetoothdpid" 2>/dev/null && return 0
    if [ ! -S /run/dbus/system_bus_socket ]; then
        dbus-daemon --config-file=/etc/dbus-1/system.conf --nofork --nopidfile > /tmp/dbus.log 2>&1 &
        n=0; until [ -S /run/dbus/system_bus_socket ] || [ $n -gt 50 ]; do n=$((n + 1)); sleep 0.1; done
    fi
    /usr/libexec/bluetooth/bluetoothd -n -d >> /tmp/bluetoothd.log 2>&1 &
    bluetoothdpid=$!
    wait_for /tmp/bluetoothd.log "Adapter /org/bluez/hci0 registered" 15
    sleep 1
}

# bluetoothctl_on FIFO FD LOG: a bluetoothctl reading FIFO, written through descriptor FD, its output in LOG; its
# process id in bluetoothctlpid
bluetoothctl_on() {
    rm -f "$1"; mkfifo "$1"
    bluetoothctl < "$1" > "$3" 2>&1 &
    bluetoothctlpid=$!
    eval "exec $2> $1"
}

# ctl_start LOG: an interactive bluetoothctl reading a FIFO (fd 6), its output in LOG; ctl COMMAND PATTERN SECONDS
# sends a command and waits for one more line matching PATTERN; ctl_stop ends it
ctl_start() {
    ctllog="$1"
    bluetoothctl_on /tmp/ctl.in 6 "$ctllog"
    ctlpid=$bluetoothctlpid
}
ctl() {
    local before
    before=$(grep -c -- "$2" "$ctllog")
    echo "$1" >&6
    wait_for "$ctllog" "$2" "${3:-10}" $((before + 1))
}
ctl_stop() { exec 6>&-; sleep 0.5; stop $ctlpid; }

# ctl_agent_start LOG: bluetoothctl in the background as bluetoothd's default agent (NoInputNoOutput), as a desktop
# session has one; ctl_agent_stop ends it
ctl_agent_start() {
    agentctllog="$1"
    bluetoothctl_on /tmp/agentctl.in 7 "$agentctllog"
    agentctlpid=$bluetoothctlpid
    echo "agent NoInputNoOutput" >&7; wait_for "$agentctllog" "Agent registered" 10
    echo "default-agent" >&7; wait_for "$agentctllog" "Default agent request successful" 10
    # bluetoothd asks its agent to authorize a pairing the peer starts (Just Works as responder): the user says yes
    ( handled=0
      while :; do
          count=$(grep -c "Request authorization\|Request confirmation" "$agentctllog" 2>/dev/null)
          if [ "${count:-0}" -gt "$handled" ]; then handled=$((handled + 1)); sleep 0.2; echo yes >&7; fi
          sleep 0.2
      done ) &
    agentyespid=$!
}
ctl_agent_stop() { stop $agentyespid; exec 7>&-; stop $agentctlpid; }

say "kernel $(uname -r) $(uname -m)"
start=$(date +%s)
for module in $(cat /modules); do
    insmod "$module" || say "insmod $module failed"
done
btmon -w /tmp/btmon.snoop > /dev/null 2>&1 &
btmonpid=$!
ble controller --vhci 2 --snoop-dir /tmp/ctl > /tmp/controller.log 2> /tmp/controller.err &
controllerpid=$!
n=0
until grep -q '^READY' /tmp/controller.log 2>/dev/null; do
    n=$((n + 1)); [ $n -gt 100 ] && break; sleep 0.1
done
say "controller $(cat /tmp/controller.log) $(cat /tmp/controller.err)"
sleep 1
say "btmgmt $(btmgmt --version 2>&1 | head -1); adapters: $(ls /sys/class/bluetooth | tr '\n' ' ')"

# 1. BlueZ's GATT client (btgatt-client through the kernel's L2CAP on hci0) against `ble serve` on hci1
if wanted btgatt-client-to-ble-serve; then
    name=btgatt-client-to-ble-serve
    if ble1_bg /tmp/s1-serve '"event":"serving"' serve --json --run-for 120; then
        serve=$bgpid
        h_rw=$(hex4 "$(handle /tmp/s1-serve.out 12345678-1234-5678-1234-56789ABCDEF1)")
        h_long=$(hex4 "$(handle /tmp/s1-serve.out 12345678-1234-5678-1234-56789ABCDEF2)")
        h_hr=$(hex4 "$(handle /tmp/s1-serve.out 2A37)")
        mgmt power on
        gc_start -i hci0 -d $OURS -t public
        if wait_for /tmp/gc.log "GATT discovery procedures complete" 20; then
            gc "read-value $h_rw" "Read value"; r1="$(grep "Read value" /tmp/gc.log | tail -1)"
            gc "read-long-value $h_long 0" "Read value"; r2="$(grep "Read value" /tmp/gc.log | tail -1)"
            gc "write-value $h_rw 0x62 0x6c 0x75 0x65 0x7a" "Write successful"; w="$(grep -c "Write successful" /tmp/gc.log)"
            gc "read-value $h_rw" "Read value"; r3="$(grep "Read value" /tmp/gc.log | tail -1)"
            gc "register-notify $h_hr" "Registered notify handler"
            wait_for /tmp/gc.log "Handle Value Not/Ind: $h_hr" 10 3
        fi
        gc_stop
        cp /tmp/gc.log /tmp/s1-gc.log
        no_links
        stop_ble $serve
        services=$(grep -c "type: primary" /tmp/gc.log)
        notes=$(grep -c "Handle Value Not/Ind: $h_hr" /tmp/gc.log)
        say "s1 services=$services read=[$r1] long=[$(echo "$r2" | cut -c1-40)...] written=$w reread=[$r3] notifications=$notes"
        if [ "$services" -eq 6 ] && grep -q "0000180d-0000-1000-8000-00805f9b34fb" /tmp/gc.log \
            && echo "$r1" | grep -q "(7 bytes): 69 6e 69 74 69 61 6c" \
            && echo "$r2" | grep -q "(300 bytes): 00 01 02 .* 29 2a 2b" \
            && [ "$w" -ge 1 ] && echo "$r3" | grep -q "(5 bytes): 62 6c 75 65 7a" && [ "$notes" -ge 3 ]; then
            result $name PASS "6 services (180D among them); 'initial' read; 300-byte long read; 'bluez' written and read back; $notes heart-rate notifications"
        else
            result $name FAIL "services=$services read=[$r1] written=$w reread=[$r3] notifications=$notes"
        fi
    else
        result $name FAIL "ble serve did not start on hci1: $(head -c 200 /tmp/s1-serve.err)"
    fi
fi

# 2a. ble as central against btgatt-server (heart rate on), the kernel advertising on hci0
if wanted ble-to-btgatt-server; then
    name=ble-to-btgatt-server
    no_links
    kernel_advertise
    say "s2a hci0: $(btmgmt --index 0 info 2>&1 | grep -i settings | tr '\n' ' ')"   # (btgatt-server refuses a powered-off adapter: "Invalid adapter: Network is down")
    gs_start /tmp/s2a-server1.log -r
    ble1 /tmp/s2a-explore explore $KERNEL --timeout 15
    gs_stop
    gs_start /tmp/s2a-server2.log -r
    ble1 /tmp/s2a-subscribe subscribe $KERNEL 2A37 --count 3 --json --timeout 15
    gs_stop
    gs_start /tmp/s2a-server3.log -v
    ble1 /tmp/s2a-write write $KERNEL 2A00 73776966742d626c65 --timeout 15
    wstatus=$?
    sleep 0.5
    gs_stop
    devname="$(grep "2A00 (Device Name)" /tmp/s2a-explore.out | sed 's/.*= "\([^"]*\)".*/\1/')"
    hrs=$(grep -c '"decoded"' /tmp/s2a-subscribe.out)
    say "s2a device name [$devname], heart rate notifications $hrs, write exit $wstatus"
    if grep -q "service 180D (Heart Rate)" /tmp/s2a-explore.out \
        && [ "$devname" = "Very Long Test Device Name For Testing ATT Protocol Operations On GATT Server" ] \
        && [ "$hrs" -ge 3 ] && [ $wstatus -eq 0 ] && grep -q "wrote 9 byte(s) with response" /tmp/s2a-write.out \
        && grep -q "Write Req - handle: 0x0003" /tmp/s2a-server3.log && grep -q "GAP Device Name Write called" /tmp/s2a-server3.log; then
        result $name PASS "180D found; the 77-byte Device Name read whole; $hrs heart-rate notifications; 9 bytes written to 2A00 (the server's write callback ran)"
    else
        result $name FAIL "devname=[$devname] notifications=$hrs write=$wstatus"
        state
    fi
fi

# 3. Pairing with the kernel's SMP (no bluetoothd: btmgmt sets the kernel's IO capability and SC support, and an
# interactive btmgmt answers the kernel's requests: the kernel asks user space to confirm even Just Works as responder)
if wanted pairing-kernel-smp; then
    name=pairing-kernel-smp
    no_links
    mgmt bondable on
    mgmt io-cap 3
    mgmt sc on
    kernel_advertise
    agent_start
    bonds=/tmp/bonds.json
    # confirms LOG: the kernel's confirmation requests btmgmt printed (and answered) so far, without colours
    confirms() { sed 's/\x1b\[[0-9;]*m//g' /tmp/agent.log | grep -o "User Confirm [0-9]* hint [0-9]" | tail -1; }
    # SC Just Works, ble central
    ble1 /tmp/s3-sc pair $KERNEL --bonds $bonds --timeout 15
    line="$(grep "paired with" /tmp/s3-sc.out)"
    if echo "$line" | grep -q "Just Works, LE Secure Connections, unauthenticated, 16-octet key, bonded"; then
        result "$name sc-just-works" PASS "$line (the kernel, NoInputNoOutput, asked user space: $(confirms))"
    else
        result "$name sc-just-works" FAIL "$(cat /tmp/s3-sc.out /tmp/s3-sc.err | tr '\n' ' ')"
    fi
    no_links; mgmt advertising on
    # A new link encrypts with the bond: no pairing
    before=$(grep -c "User Confirm" /tmp/agent.log)
    ble1 /tmp/s3-bond pair $KERNEL --bonds $bonds --timeout 15
    line="$(grep "encrypted with the bond" /tmp/s3-bond.out)"
    if [ -n "$line" ] && ! grep -q "paired with" /tmp/s3-bond.out && [ "$(grep -c "User Confirm" /tmp/agent.log)" -eq "$before" ]; then
        result "$name bonded-reconnection" PASS "$line"
    else
        result "$name bonded-reconnection" FAIL "$(cat /tmp/s3-bond.out /tmp/s3-bond.err | tr '\n' ' ')"
    fi
    no_links; mgmt advertising on
    # LE legacy Just Works (the kernel's SC off)
    mgmt sc off
    ble1 /tmp/s3-legacy pair $KERNEL --bonds $bonds --legacy --force --timeout 15
    line="$(grep "paired with" /tmp/s3-legacy.out)"
    if echo "$line" | grep -q "Just Works, LE legacy.*bonded"; then
        result "$name legacy-just-works" PASS "$line (the kernel asked: $(confirms))"
    else
        result "$name legacy-just-works" FAIL "$(cat /tmp/s3-legacy.out /tmp/s3-legacy.err | tr '\n' ' ')"
    fi
    no_links; mgmt advertising on
    # SC Passkey Entry: the kernel KeyboardOnly asks user space for the passkey ble displays
    mgmt sc on
    mgmt io-cap 2
    echo 123456 > /tmp/agent.passkey
    ble1 /tmp/s3-passkey pair $KERNEL --bonds $bonds --io display --passkey 123456 --mitm --force --timeout 15
    line="$(grep "paired with" /tmp/s3-passkey.out)"
    if echo "$line" | grep -q "Passkey Entry (responder input), LE Secure Connections, authenticated.*bonded" && grep -q "Passkey Request" /tmp/agent.log; then
        result "$name sc-passkey-kernel-enters" PASS "$line; btmgmt entered 123456 for the kernel"
    else
        result "$name sc-passkey-kernel-enters" FAIL "$(cat /tmp/s3-passkey.out /tmp/s3-passkey.err | tr '\n' ' ')"
    fi
    no_links
    # A wrong passkey fails on both sides
    echo 654321 > /tmp/agent.passkey
    mgmt advertising on
    ble1 /tmp/s3-wrong pair $KERNEL --bonds $bonds --io display --passkey 123456 --mitm --force --timeout 15
    wstatus=$?
    if [ $wstatus -eq 3 ] && grep -q "Confirm Value Failed (0x04)" /tmp/s3-wrong.err; then
        result "$name sc-passkey-wrong" PASS "exit 3: $(cat /tmp/s3-wrong.err)"
    else
        result "$name sc-passkey-wrong" FAIL "exit $wstatus: $(cat /tmp/s3-wrong.out /tmp/s3-wrong.err | tr '\n' ' ')"
    fi
    no_links
    mgmt io-cap 3
    # The kernel as central: btmgmt pair to ble serve (SC Just Works), ble serve keeping the bond
    if ble1_bg /tmp/s3-serve '"event":"serving"' serve --json --bonds /tmp/serve-bonds.json --run-for 60; then
        serve=$bgpid
        mgmt unpair -t 1 $OURS   # (the bond of the scenarios above: "Already Paired" otherwise)
        timeout 40 btmgmt --index 0 pair -c 3 -t 1 $OURS > /tmp/s3-kpair.log 2>&1
        sleep 1
        no_links
        stop_ble $serve
        paired="$(grep '"event":"paired"' /tmp/s3-serve.out | head -1)"
        if grep -q "Paired with $OURS" /tmp/s3-kpair.log && echo "$paired" | grep -q '"bonded":true'; then
            result "$name kernel-central-to-ble-serve" PASS "btmgmt: $(grep "Paired with" /tmp/s3-kpair.log); ble serve: $paired"
        else
            result "$name kernel-central-to-ble-serve" FAIL "btmgmt: $(cat /tmp/s3-kpair.log | tr '\n' ' ') ble: $paired"
        fi
    else
        result "$name kernel-central-to-ble-serve" FAIL "ble serve did not start: $(head -c 200 /tmp/s3-serve.err)"
    fi
    agent_stop
fi

# 4. LE credit based channels with l2test (the kernel's L2CAP sockets), both ways, then ble's channel again with an
# ATT server (btgatt-server) on the kernel's side of the same link
if wanted l2cap-coc-l2test; then
    name=l2cap-coc-l2test
    no_links
    mgmt power on
    # the kernel connects to ble l2cap serve and sends 10 SDUs of 200 bytes
    if ble1_bg /tmp/s4-serve '"event":"serving"' l2cap serve --psm 0x0081 --json --run-for 60; then
        serve=$bgpid
        # (no -i: the kernel routes from the one LE adapter it has up, hci0; hci1 is on the user channel)
        timeout 30 l2test -s -V le_public -P 129 -N 10 -b 200 $OURS > /tmp/s4-l2test-send.log 2>&1
        wait_for /tmp/s4-serve.out '"event":"closed"' 10
        no_links
        stop_ble $serve
        closed="$(grep '"event":"closed"' /tmp/s4-serve.out | head -1)"
        bytes="$(echo "$closed" | sed 's/.*"bytes":\([0-9]*\).*/\1/')"
        sdus="$(echo "$closed" | sed 's/.*"sdus":\([0-9]*\).*/\1/')"
        if [ "$bytes" = 2000 ] && [ "$sdus" = 10 ] && grep -q "Connected to $OURS" /tmp/s4-l2test-send.log; then
            result "$name kernel-to-ble" PASS "l2test -s sent 10 x 200 bytes to PSM 0x81; ble l2cap serve received $bytes bytes in $sdus SDUs"
        else
            result "$name kernel-to-ble" FAIL "ble: [$closed] l2test: $(tr '\n' ' ' < /tmp/s4-l2test-send.log | head -c 300)"
        fi
    else
        result "$name kernel-to-ble" FAIL "ble l2cap serve did not start: $(head -c 200 /tmp/s4-serve.err)"
    fi
    # ble connects to l2test listening on the kernel (which advertises) and sends 10000 bytes
    for variant in without-att with-att; do
        no_links
        l2test -d -V le_public -P 130 -i hci0 > /tmp/s4-l2test-$variant.log 2>&1 &
        l2testpid=$!
        [ $variant = with-att ] && gs_start /tmp/s4-btgatt-server.log
        kernel_advertise
        sleep 0.5
        ble1 /tmp/s4-connect-$variant l2cap connect $KERNEL --psm 0x0082 --bytes 10000 --timeout 15
        cstatus=$?
        sleep 1
        stop $l2testpid
        [ $variant = with-att ] && gs_stop
        got=$(grep -o "Received [0-9]* bytes" /tmp/s4-l2test-$variant.log | awk '{ n += $2 } END { print n + 0 }')
        sent="$(grep "^sent" /tmp/s4-connect-$variant.out)"
        if [ $cstatus -eq 0 ] && echo "$sent" | grep -q "sent 10000 bytes, 10000 delivered" && [ "$got" = 10000 ]; then
            result "$name ble-to-kernel-$variant" PASS "ble: $(echo "$sent" | cut -d'(' -f1); l2test -d received $got bytes$([ $variant = with-att ] && echo ", btgatt-server on the same link")"
        else
            result "$name ble-to-kernel-$variant" FAIL "exit $cstatus [$sent] l2test got $got: $(cat /tmp/s4-connect-$variant.err | head -c 200)"
        fi
    done
    no_links
fi

# 2b. ble as central against bluetoothd's own GATT server (D-Bus system bus and bluetoothd started here)
if wanted ble-to-bluetoothd-gatt; then
    name=ble-to-bluetoothd-gatt
    no_links
    start_bluetoothd
    kernel_advertise
    ble1 /tmp/s2b-explore explore $KERNEL --timeout 15
    devname="$(grep "2A00 (Device Name)" /tmp/s2b-explore.out | sed 's/.*= "\([^"]*\)".*/\1/')"
    services="$(grep "^service" /tmp/s2b-explore.out | cut -d' ' -f2 | tr '\n' ' ')"
    say "s2b device name [$devname] services [$services]"
    if [ "$devname" = BlueZLab ] && grep -q "service 1801" /tmp/s2b-explore.out; then
        result $name PASS "services $services; Device Name 'BlueZLab' (main.conf's Name)"
    else
        result $name FAIL "devname=[$devname] services=[$services] $(head -c 200 /tmp/s2b-explore.err)"
        state
    fi
fi

# 5. bluetoothctl (over bluetoothd, started by 2b) as central against ble serve: connect, read, write, notify, pair
if wanted bluetoothctl-to-ble-serve; then
    name=bluetoothctl-to-ble-serve
    if [ -z "${bluetoothdpid:-}" ] || ! kill -0 "$bluetoothdpid" 2>/dev/null; then
        result $name FAIL "bluetoothd is not running (scenario ble-to-bluetoothd-gatt starts it)"
    elif ble1_bg /tmp/s5-serve '"event":"serving"' serve --json --run-for 120; then
        serve=$bgpid
        no_links
        ctl_start /tmp/s5-bluetoothctl.log
        plain() { sed 's/\x1b\[[0-9;]*m//g' /tmp/s5-bluetoothctl.log; }
        dev=/org/bluez/hci0/dev_00_5B_00_00_00_02
        ctl "select $KERNEL" "Controller" 5
        ctl "agent NoInputNoOutput" "Agent registered" 5
        ctl "default-agent" "Default agent request successful" 5
        ctl "power on" "Changing power on succeeded" 5
        ctl "scan le" "Device $OURS" 20
        ctl "scan off" "Discovery stopped" 5
        ctl "connect $OURS" "Connection successful" 20 && wait_for /tmp/s5-bluetoothctl.log "ServicesResolved: yes" 20
        ctl "menu gatt" "Menu gatt" 5
        ctl "select-attribute 12345678-1234-5678-1234-56789abcdef1" "56789abcdef1" 5
        ctl "read" "69 6e 69 74 69 61 6c" 10; r1=$?
        ctl "write \"0x63 0x74 0x6c\"" "Attempting to write" 10
        sleep 1
        ctl "read" "63 74 6c 74 69 61 6c\|63 74 6c " 10; r2=$?
        ctl "select-attribute 00002a37-0000-1000-8000-00805f9b34fb" "00002a37" 5
        ctl "notify on" "Notify started" 10
        # (bluetoothd's object path names the characteristic by its declaration handle, the one before its value)
        hrchar=$(printf 'char%04x' $(( $(handle /tmp/s5-serve.out 2A37) - 1 )))
        wait_for /tmp/s5-bluetoothctl.log "$hrchar Value:" 10 3
        notes=$(plain | grep -c "$hrchar Value:")
        ctl "notify off" "Notify stopped" 10
        ctl "back" "Menu main" 5
        ctl "pair $OURS" "Pairing successful\|Failed to pair" 30
        ctl "menu gatt" "Menu gatt" 5
        ctl "select-attribute 12345678-1234-5678-1234-56789abcdef3" "56789abcdef3" 5
        ctl "read" "74 6f 70 2d 73 65 63 72 65 74" 10; r3=$?
        ctl "back" "Menu main" 5
        ctl "disconnect $OURS" "Successful disconnected\|Disconnection successful" 10
        ctl_stop
        stop_ble $serve
        paired="$(grep '"event":"paired"' /tmp/s5-serve.out | head -1)"
        written="$(grep '"event":"write"' /tmp/s5-serve.out | head -1)"
        say "s5 read=$r1 reread=$r2 notifications=$notes secret=$r3 paired=[$paired] written=[$written]"
        if [ $r1 -eq 0 ] && [ $r2 -eq 0 ] && [ "$notes" -ge 3 ] && plain | grep -q "Pairing successful" && [ $r3 -eq 0 ] \
            && echo "$written" | grep -q '"value":"63746c"'; then
            result $name PASS "'initial' read; 'ctl' written (ble serve saw 63746c) and read back; $notes heart-rate notifications; paired ($(echo "$paired" | grep -o '"method":"[a-zA-Z]*"'), bonded); 'top-secret' read encrypted"
        else
            result $name FAIL "read=$r1 reread=$r2 notifications=$notes pairing=$(plain | grep -o "Pairing successful\|Failed to pair.*" | head -1) secret=$r3 written=[$written]"
        fi
    else
        result $name FAIL "ble serve did not start: $(head -c 200 /tmp/s5-serve.err)"
    fi
fi

# 7. bleak (the Python library, on bluetoothd over D-Bus: the path a Linux Python user takes) as central against ble
# serve: scan, connect, services, read, write and read back, three notifications, pair, an encrypted read
if wanted bleak-on-bluetoothd; then
    name=bleak-on-bluetoothd
    start_bluetoothd
    no_links
    mgmt power on
    mgmt unpair -t 1 $OURS
    cat > /tmp/bleak_central.py <<'PY'
import asyncio, sys
from bleak import BleakClient, BleakScanner

ADDRESS, RW, SECRET, HR = sys.argv[1], "12345678-1234-5678-1234-56789abcdef1", "12345678-1234-5678-1234-56789abcdef3", "00002a37-0000-1000-8000-00805f9b34fb"

async def main():
    device = await BleakScanner.find_device_by_address(ADDRESS, timeout=20)
    if device is None:
        print("NOT FOUND"); return 1
    print("FOUND", device.address, device.name, flush=True)
    async with BleakClient(device, timeout=30) as client:
        print("SERVICES", len(client.services.services), " ".join(sorted(s.uuid[4:8] for s in client.services)), flush=True)
        print("READ", (await client.read_gatt_char(RW)).hex(), flush=True)
        await client.write_gatt_char(RW, b"bleak", response=True)
        print("REREAD", (await client.read_gatt_char(RW)).hex(), flush=True)
        values, enough = [], asyncio.Event()
        def on_value(_, data):
            values.append(bytes(data))
            if len(values) >= 3: enough.set()
        await client.start_notify(HR, on_value)
        await asyncio.wait_for(enough.wait(), 15)
        await client.stop_notify(HR)
        print("NOTIFIED", len(values), " ".join(v.hex() for v in values[:3]), flush=True)
        await client.pair()
        print("PAIRED", flush=True)
        print("SECRET", (await client.read_gatt_char(SECRET)).hex(), flush=True)
    return 0

sys.exit(asyncio.run(main()))
PY
    # a default agent, as a desktop session has one: bluetoothd refuses the kernel's Just Works confirmation without
    # (bleak's pair() asks bluetoothd to pair and brings no agent of its own)
    ctl_agent_start /tmp/s7-agent.log
    if ble1_bg /tmp/s7-serve '"event":"serving"' serve --json --run-for 120; then
        serve=$bgpid
        DBUS_SYSTEM_BUS_ADDRESS=unix:path=/run/dbus/system_bus_socket PYTHONPATH=/usr/lib/bleak-site \
            timeout 90 python3 /tmp/bleak_central.py $OURS > /tmp/s7-bleak.log 2>&1
        bstatus=$?
        no_links
        stop_ble $serve
        written="$(grep '"event":"write"' /tmp/s7-serve.out | head -1)"
        paired="$(grep '"event":"paired"' /tmp/s7-serve.out | head -1)"
        say "s7 bleak exit $bstatus: $(tr '\n' ' ' < /tmp/s7-bleak.log | head -c 600)"
        if [ $bstatus -eq 0 ] && grep -q "^SERVICES .*180d" /tmp/s7-bleak.log && grep -q "^READ 696e697469616c$" /tmp/s7-bleak.log \
            && grep -q "^REREAD 626c65616b" /tmp/s7-bleak.log && grep -q "^NOTIFIED 3 " /tmp/s7-bleak.log \
            && grep -q "^PAIRED" /tmp/s7-bleak.log && grep -q "^SECRET 746f702d736563726574$" /tmp/s7-bleak.log \
            && echo "$written" | grep -q '"value":"626c65616b"' && echo "$paired" | grep -q '"bonded":true'; then
            result $name PASS "bleak 3.1.0: $(grep "^SERVICES" /tmp/s7-bleak.log | cut -d' ' -f2) services; 'initial' read; 'bleak' written (ble serve saw 626c65616b) and read back; 3 notifications; paired ($(echo "$paired" | grep -o '"method":"[a-zA-Z]*"'), bonded); 'top-secret' read"
        else
            result $name FAIL "exit $bstatus: $(tr '\n' ' ' < /tmp/s7-bleak.log | tail -c 400) written=[$written] paired=[$paired]"
        fi
    else
        result $name FAIL "ble serve did not start: $(head -c 200 /tmp/s7-serve.err)"
    fi
    ctl_agent_stop
fi

# 8. The kernel's extended advertising (one instance of btmgmt add-ext-adv-params/-data: connectable, 2M secondary
# PHY, 61 octets of data, more than a legacy PDU carries) heard by ble's scan as an extended report, then connected to
# (the connection made from the extended advertisement) and explored: bluetoothd's GATT server (started by 2b) answers
if wanted kernel-ext-adv; then
    name=kernel-ext-adv
    start_bluetoothd
    no_links
    mgmt power on
    mgmt advertising off
    # a Complete Local Name of 59 characters: 61 octets of advertising data
    extname="swift-ble meets the kernel: extended advertising, 2M, conn."
    exthex="$(printf '%02x09' $(( ${#extname} + 1 )))$(printf '%s' "$extname" | od -An -tx1 | tr -d ' \n')"
    mgmt add-ext-adv-params -c -g -P 2M 1
    mgmt add-ext-adv-data -d "$exthex" 1
    say "s8 btmgmt: $(grep -i "ext\|instance" /tmp/btmgmt.log | tail -3 | tr '\n' ' ')"
    ble1 /tmp/s8-scan scan --json --timeout 5
    heard="$(grep "\"$KERNEL\"" /tmp/s8-scan.out | head -1)"
    ble1 /tmp/s8-explore explore $KERNEL --timeout 15
    estatus=$?
    mgmt rm-adv 1
    no_links
    say "s8 heard=[$heard] explore exit $estatus"
    if echo "$heard" | grep -q '"extended":true' && echo "$heard" | grep -q "$extname" \
        && echo "$heard" | grep -q '"secondaryPHY":"2M"' && [ $estatus -eq 0 ] && grep -q "service 1801" /tmp/s8-explore.out; then
        result $name PASS "heard as an extended report (secondary PHY 2M, the 59-character name whole); connected and explored: $(grep "^service" /tmp/s8-explore.out | cut -d' ' -f2 | tr '\n' ' ')"
    else
        result $name FAIL "heard=[$heard] explore exit $estatus: $(head -c 200 /tmp/s8-explore.err)"
        state
    fi
fi

# 9. Enhanced ATT with BlueZ (main.conf: [GATT] Channels = 3; Linux 6.1 takes enhanced credit based channels only
# with the bluetooth module's enable_ecred set). ble as client pairs with the kernel, opens two EATT bearers to
# bluetoothd's GATT server and reads the Device Name over every bearer at once; then bluetoothd as client, on a
# bonded link it encrypts as it connects, opens its two EATT bearers to ble serve --eatt (Server Supported Features
# with the EATT bit), and a read goes through
if wanted eatt-bluez; then
    name=eatt-bluez
    echo Y > /sys/module/bluetooth/parameters/enable_ecred
    start_bluetoothd
    no_links
    mgmt power on
    mgmt bondable on
    mgmt io-cap 3
    mgmt sc on
    mgmt unpair -t 1 $OURS
    ctl_agent_start /tmp/s9-agent.log
    kernel_advertise
    ebonds=/tmp/eatt-bonds.json
    rm -f $ebonds
    ble1 /tmp/s9-read read $KERNEL 2A00 --bonds $ebonds --eatt 2 --json --timeout 20
    rstatus=$?
    eatt="$(grep '"event":"eatt"' /tmp/s9-read.out | head -1)"
    no_links
    say "s9 ble central: exit $rstatus [$eatt] $(head -c 300 /tmp/s9-read.err)"
    if [ $rstatus -eq 0 ] && echo "$eatt" | grep -q '"bearers":2' && echo "$eatt" | grep -q '"reads":3' \
        && echo "$eatt" | grep -q '"identical":true'; then
        result "$name ble-central" PASS "paired, 2 EATT bearers opened to bluetoothd's GATT server, the Device Name read 3 times at once, every value the same"
    else
        result "$name ble-central" FAIL "exit $rstatus [$eatt] $(head -c 300 /tmp/s9-read.err)"
        state
    fi
    # bluetoothd as client, bonded by the pairing above (an LE Secure Connections key serves either role), with
    # ble serve --eatt keeping the same bond: a first connection (encrypted with the bond as it connects) where
    # bluetoothd learns Server Supported Features, then a connection after bluetoothd restarted, where it opens its
    # EATT bearers
    sbonds=$ebonds
    if ble1_bg /tmp/s9-serve '"event":"serving"' serve --json --eatt --bonds $sbonds --run-for 150; then
        serve=$bgpid
        ctl_start /tmp/s9-bluetoothctl.log
        ctl "scan le" "Device $OURS" 20
        ctl "scan off" "Discovery stopped" 5
        ctl "connect $OURS" "Connection successful" 20 && wait_for /tmp/s9-bluetoothctl.log "ServicesResolved: yes" 20
        ctl "disconnect $OURS" "Successful disconnected\|Disconnection successful" 10
        # BlueZ 5.66 opens EATT when a device's GATT client first becomes ready with the server's EATT bit known:
        # known from its attribute cache after a restart (in one run it kept the features of the first connection,
        # before it had read Server Supported Features), as after a reboot
        sleep 1
        stop $bluetoothdpid; bluetoothdpid=""
        start_bluetoothd
        wait_for /tmp/s9-bluetoothctl.log "NEW\] Controller" 10 2   # bluetoothctl found the new bluetoothd
        mgmt power on   # (bluetoothd powers its adapters off as it exits; AutoEnable is off)
        ctl "connect $OURS" "Connection successful" 20 && wait_for /tmp/s9-bluetoothctl.log "ServicesResolved: yes" 20 2
        wait_for /tmp/s9-serve.out '"event":"eatt"' 15
        ctl "menu gatt" "Menu gatt" 5
        ctl "select-attribute 12345678-1234-5678-1234-56789abcdef1" "56789abcdef1" 5
        ctl "read" "69 6e 69 74 69 61 6c" 10; r9=$?
        ctl "back" "Menu main" 5
        ctl "disconnect $OURS" "Successful disconnected\|Disconnection successful" 10
        ctl_stop
        no_links
        stop_ble $serve
        eatt="$(grep '"event":"eatt"' /tmp/s9-serve.out | tail -1)"
        encrypted="$(grep '"event":"encrypted"' /tmp/s9-serve.out | tail -1)"
        say "s9 bluetoothd central: read $r9 [$eatt] [$encrypted]"
        if [ $r9 -eq 0 ] && echo "$eatt" | grep -q '"bearers":2' && echo "$encrypted" | grep -q '"bonded":true'; then
            result "$name bluetoothd-central" PASS "bluetoothd, bonded, opened 2 EATT bearers to ble serve on the encrypted link; 'initial' read"
        else
            result "$name bluetoothd-central" FAIL "read=$r9 eatt=[$eatt] encrypted=[$encrypted]"
        fi
    else
        result "$name bluetoothd-central" FAIL "ble serve did not start: $(head -c 200 /tmp/s9-serve.err)"
    fi
    ctl_agent_stop
fi

# 6. Privacy, both sides with IRKs: the kernel (btmgmt privacy on, a fixed IRK) advertises from a resolvable private
# address; ble, with --privacy, finds it by name, pairs and bonds through it (both distribute their IRKs); the kernel
# takes a new private address (its privacy set again with the same IRK, which expires the old one) and ble, asked
# for the identity address, finds the new one through the bond's IRK and encrypts with the bond. Then the kernel, as
# central, finds ble serve --privacy (advertising from its own private address) by ble's identity address and
# encrypts with the bond. bluetoothd stops first: without an agent it would refuse the kernel's confirmations.
if wanted privacy-rpa; then
    name=privacy-rpa
    [ -n "${bluetoothdpid:-}" ] && stop $bluetoothdpid; bluetoothdpid=""
    no_links
    irk=5b0e1f2a3c4d5e6f708192a3b4c5d6e7
    mgmt power off
    mgmt privacy on $irk
    mgmt bondable on
    mgmt io-cap 3
    mgmt sc on
    mgmt name PrivLab
    mgmt power on
    mgmt unpair -t 1 $OURS
    kernel_advertise
    agent_start
    pbonds=/tmp/privacy-bonds.json
    rm -f $pbonds
    ble1 /tmp/s6-pair pair PrivLab --privacy --bonds $pbonds --timeout 20
    line1="$(grep "paired with" /tmp/s6-pair.out)"
    rpa1="$(echo "$line1" | sed -n 's/^paired with \([0-9A-F:]*\).*/\1/p')"
    no_links
    # a new private address: privacy set again (same IRK) marks the current one expired
    mgmt power off
    mgmt privacy on $irk
    mgmt power on
    kernel_advertise
    ble1 /tmp/s6-bond pair $KERNEL --privacy --bonds $pbonds --timeout 20
    line2="$(grep "encrypted with the bond" /tmp/s6-bond.out)"
    rpa2="$(echo "$line2" | sed -n 's/^encrypted with the bond of \([0-9A-F:]*\).*/\1/p')"
    no_links
    # resolvable private: the two most significant bits of the address 0b01 (first digit 4 to 7)
    private() { case "$1" in [4-7]?:*) return 0 ;; esac; return 1; }
    say "s6 first [$line1] second [$line2]"
    if echo "$line1" | grep -q "(identity $KERNEL).*bonded" && echo "$line2" | grep -q "(identity $KERNEL)" \
        && private "$rpa1" && private "$rpa2" && [ "$rpa1" != "$rpa2" ] && ! grep -q "paired with" /tmp/s6-bond.out; then
        result "$name ble-central" PASS "paired through $rpa1 (identity $KERNEL, bonded, IRKs exchanged); after the kernel's new address $rpa2 found by identity and encrypted with the bond, no pairing"
    else
        result "$name ble-central" FAIL "first [$line1 $(head -c 200 /tmp/s6-pair.err)] second [$line2 $(head -c 200 /tmp/s6-bond.err)]"
        state
    fi
    # the kernel as central: it finds ble serve --privacy by ble's identity address through the IRK ble gave it
    mgmt advertising off
    if ble1_bg /tmp/s6-serve '"event":"serving"' serve --json --privacy --bonds $pbonds --run-for 60; then
        serve=$bgpid
        gc_start -i hci0 -d $OURS -t public -s medium
        wait_for /tmp/gc.log "GATT discovery procedures complete" 30
        wait_for /tmp/s6-serve.out '"event":"encrypted"' 10
        kcon="$(btmgmt --index 0 con 2>&1 | tr '\n' ' ')"
        gc_stop
        cp /tmp/gc.log /tmp/s6-gc.log
        no_links
        stop_ble $serve
        connected="$(grep '"event":"connected"' /tmp/s6-serve.out | head -1)"
        peer="$(echo "$connected" | sed -n 's/.*"peer":"\([0-9A-F:]*\)".*/\1/p')"
        encrypted="$(grep '"event":"encrypted"' /tmp/s6-serve.out | head -1)"
        say "s6 kernel central: kernel links [$kcon] ble serve [$connected] [$encrypted]"
        if grep -q "GATT discovery procedures complete" /tmp/s6-gc.log && echo "$encrypted" | grep -q '"bonded":true' \
            && private "$peer" && ! grep -q '"event":"paired"' /tmp/s6-serve.out; then
            result "$name kernel-central" PASS "btgatt-client reached ble serve --privacy by its identity $OURS; the kernel connected from $peer (private) and encrypted with the bond, no pairing"
        else
            result "$name kernel-central" FAIL "gatt=[$(grep -c "discovery procedures complete" /tmp/s6-gc.log)] connected=[$connected] encrypted=[$encrypted] $(tail -3 /tmp/s6-gc.log | tr '\n' ' ')"
        fi
    else
        result "$name kernel-central" FAIL "ble serve --privacy did not start: $(head -c 200 /tmp/s6-serve.err)"
    fi
    agent_stop
    mgmt power off
    mgmt privacy off
    mgmt power on
fi

dmesg > /tmp/dmesg.log
say "done in $(( $(date +%s) - start )) s"
kill -INT $btmonpid $controllerpid 2>/dev/null
wait $btmonpid $controllerpid 2>/dev/null
for f in /tmp/*.log /tmp/*.out /tmp/*.err; do
    [ -f "$f" ] || continue
    echo "BT-FILE-BEGIN ${f#/tmp/}"
    tail -n 4000 "$f"
    echo "BT-FILE-END"
done
for f in /tmp/ctl/*.btsnoop; do
    echo "BT-FILE-BEGIN ${f#/tmp/ctl/}.snoop.b64"
    base64 "$f"
    echo "BT-FILE-END"
done
for f in /tmp/*.snoop; do
    echo "BT-FILE-BEGIN ${f#/tmp/}.b64"
    base64 "$f"
    echo "BT-FILE-END"
done
poweroff -f
