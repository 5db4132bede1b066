"""GATT between our host and Bumble's in both roles: the lab session, several centrals, the simulated devices, application answers, clones and replays."""
import os, re, subprocess
from suite.engine import Check, Controllers, Count, Do, Exit, Grep, HERE, MatchedChars, Part, Result, Run, Scenario, Sleep, Start, Stop, WaitFor, grep, hexof
from suite.common import BLE, CENTRAL, LONG, SECRET, SERVING, SERVING_OR_ADVERTISING, VALUE_512, WRITABLE, ble, peer, serve_ble, serve_bumble


def lab_session(central, peripheral):
    ours_c, ours_p = central == 'ble', peripheral == 'ble'
    target = 'SwiftBLELab' if ours_p else 'BumbleLabPeripheral'

    def scan_manufacturer(ctx):
        # Bumble 0.0.236's controller answers a scan request with a copy of the advertising data, so the scan
        # response's manufacturer data ('scanrsp') is heard on controllers that send it only.
        data = [f'FFFF:{hexof("lab")}'] if ours_p else []
        if ctx.kind.scan_response_heard:
            data.append(f'FFFF:{hexof("scanrsp")}')
        return ','.join(data)

    def same_tree(ctx):
        # The discovered tree equals the one the peripheral reports of itself (handles, properties, UUIDs).
        trees = []
        for role, who in (('central', 'the central'), ('peripheral', 'the peripheral')):
            out = ctx.path(f'tree-{"discovered" if role == "central" else "served"}.txt')
            with open(out, 'wb') as f:
                if subprocess.run([ctx.h.py, os.path.join(HERE, 'gatt_tree.py'), ctx.path(role)], stdout=f,
                                  stdin=subprocess.DEVNULL).returncode != 0:
                    ctx.problem(f'{who} printed no tree')
            trees.append(out)
        diff = subprocess.run(['diff', *trees], capture_output=True, text=True).stdout
        with open(ctx.path('tree.diff'), 'w') as f:
            f.write(diff)
        if diff:
            ctx.problem("discovered tree differs from the peripheral's own (< central, > peripheral):\n" + diff.rstrip())

    if ours_p:
        start = Start('peripheral', [BLE, 'serve', '--hci', 'tcp:127.0.0.1:$p1', '--json', '--run-for', '60',
                                     '--notify-interval', '200'], ready=SERVING_OR_ADVERTISING,
                      not_ready='the peripheral did not start advertising')
    else:
        start = Start('peripheral', peer('peripheral.py', '--run-for', '60'), bumble=True,
                      ready=SERVING_OR_ADVERTISING, not_ready='the peripheral did not start advertising')
    if ours_c:
        run = Run('central', [CENTRAL, '--hci', 'tcp:127.0.0.1:$p2', '--target', target,
                              '--btsnoop', '$logs/$name-ours.btsnoop'], timeout=60, label='the central')
    else:
        run = Run('central', peer('central.py', '--target-name', target, '--full', port='$p2'), timeout=60,
                  bumble='central', label='the central')
    c = 'central'
    checks = [
        Result(c, 'scan_name', target),
        Result(c, 'scan_services', '180D,180F'),
        Result(c, 'scan_manufacturer', scan_manufacturer),
        Result(c, 'scan_nonmatching', 0),
        Result(c, 'scan_matching', 1),
        Result(c, 'connected', 1),
        Result(c, 'mtu', 247),
        Result(c, 'services', 6),
        Do(same_tree),
        Result(c, 'manufacturer', 'swift-ble Lab Inc.' if ours_p else 'Bumble Lab Inc.'),
        Result(c, 'long_read_300', 'ok'),
        Result(c, 'long_read_512', 'ok'),
        # An unencrypted read of the protected value: our server holds no key for the central, so Insufficient
        # Authentication (Core 5.4, Vol 3, Part C, 10.3.1); Bumble's answers Insufficient Encryption either way.
        Result(c, f'read_error_{SECRET}', '0x05' if ours_p else '0x0F'),
        Result(c, 'write_with_response', 'ok'),
        Result(c, 'write_without_response', 'ok'),
        Result(c, 'long_write_512', 'ok'),
        # Core 5.4, Vol 3, Part F, 3.2.9: attribute values are at most 512 octets. Our client refuses a longer write
        # before sending it; Bumble's sends it and the server must answer Invalid Attribute Value Length (0x0D).
        Result(c, 'long_write_600', 'refused' if ours_c else '0x0D'),
        Result(c, 'long_write_600_kept', 1),
        Result(c, 'burst', 200),
        Result(c, 'indications', 5),
        Result(c, 'notifications', 3),
        # Core 5.4, Vol 4, Part E, 7.1.6: the side that disconnects gets 0x16 (terminated by local host).
        Result(c, 'disconnect_reason', lambda ctx: ctx.kind.local_disconnect_reason),
        Result(c, 'reconnected', 1),
        # GATT caching (Core 5.4, Vol 3, Part G, 7.3): our central's cached reconnection takes one round trip (the
        # Database Hash read), against either server's hash; Bumble's central recomputes our server's hash itself.
        Result(c, 'cached_discovery_round_trips', 1) if ours_c else Result(c, 'database_hash', 'ok'),
        Result(c, 'reconnect_read', 'ok'),
        Result(c, 'peer_disconnect_reason', '0x13'),
        Result(c, 'reconnected_after_peer_disconnect', 1),
    ]
    if ours_c:
        checks += [Result(c, 'auto_reconnected', 1), Result(c, 'subscription_restored', 1),
                   Result(c, 'stayed_disconnected', 1)]
    checks.append(Result(c, 'done', 1))
    # The peripheral's side of it.
    p = 'peripheral'
    if ours_p:
        checks += [
            Grep(p, f'"event":"write".*"value":"{hexof("written-with-response")}"', 'ble serve did not log the write request'),
            Grep(p, f'"event":"write".*"value":"{hexof("written-without-response")}"', 'ble serve did not log the write command'),
            Grep(p, f'"event":"write".*"value":"{VALUE_512}"', 'ble serve did not log the 512-byte long write'),
            Count(p, '"event":"write".*"value":"000102030405', '==', 0, 'ble serve stored the 600-byte write'),
            Grep(p, '"event":"burst","sent":200}', 'ble serve did not log 200 burst notifications sent'),
            Grep(p, '"confirmed":5,.*"event":"indications"', 'ble serve did not log 5 confirmed indications'),
            Grep(p, '"event":"disconnecting"', 'ble serve did not disconnect on the control point'),
            Grep(p, r'"event":"disconnected".*\(0x13\)",.*"reason_code":19}',
                 "ble serve did not log the central's disconnection (0x13)"),
            Count(p, '"event":"connected"', '>=', 3, 'ble serve saw fewer than 3 connections'),
        ]
    else:
        checks += [
            Result(p, 'write', 'written-with-response'),
            Result(p, 'write', 'written-without-response'),
            Count(p, '^RESULT long_write=', '==', 1, 'the peripheral stored a write other than the 512-byte one'),
            Result(p, 'long_write', 512),
            Result(p, 'burst_sent', 200),
            Result(p, 'indications_confirmed', 5),
            Result(p, 'control_disconnect', 1),
            Result(p, 'disconnected', '0x13'),
            Count(p, '^RESULT connected=1', '>=', 3, 'the peripheral saw fewer than 3 connections'),
        ]
    needs = (('central',) if ours_c else ()) + (('ble',) if ours_p else ())
    return Scenario(f'lab-session-{central}-central-to-{peripheral}-peripheral',
                    [Part('', [Controllers(2), start, run, Sleep(0.3)], checks)], needs=needs)


# -- two Bumble centrals at once against our peripheral, on three linked controllers: each write is attributed to
# the central that sent it.

def writes_attributed(ctx):
    for tag, address in (('A', 'C0:C1:C2:C3:C4:C5'), ('B', 'C0:C1:C2:C3:C4:C6')):
        handle = None
        for line in ctx.lines('peripheral'):
            if '"event":"connected"' in line and f'"peer":"{address}"' in line:
                m = re.search(r'"handle":([0-9]+)[,}]', line)
                handle = m and m.group(1)
                break
        if not handle:
            ctx.problem(f'central {tag} ({address}) never connected')
            continue
        if not grep(ctx, 'peripheral', f'"connection":{handle},"event":"write","value":"'
                                       f'{hexof("written-with-response-" + tag)}"', fixed=True):
            ctx.problem(f'the write of central {tag} is not attributed to its link (handle {handle})')


def two_centrals():
    def central(tag, port, address):
        return Start(f'central{tag}', peer('central.py', '--target-name', 'SwiftBLELab', '--address', address,
                                           '--tag', tag, port=port), bumble=True, limit=45)
    return Scenario('two-bumble-centrals-to-ble-peripheral', [Part('', [
        Controllers(3), serve_ble(30),
        central('A', '$p2', 'C0:C1:C2:C3:C4:C5'),
        # Without arbitration the second initiator of two simultaneous CONNECT_INDs waits forever for a peripheral
        # that never saw it: start B once A is connected (the two GATT sessions still overlap).
        WaitFor('centralA', '^RESULT connected=1', 15, when=lambda ctx: not ctx.kind.arbitrates_connects),
        central('B', '$p3', 'C0:C1:C2:C3:C4:C6'),
        Exit('centralA', message='central A failed'),
        Exit('centralB', message='central B failed'),
    ], [Do(writes_attributed)])], needs=('ble',))


# -- every simulated device of `ble serve --device NAME` against a Bumble central (peers/devices_central.py, which
# has its own table of what each device publishes): found by its name and services, discovered, the Device Name and a
# profile characteristic read, subscribed to (the glucose meter: its records asked for through the Record Access
# Control Point) and a value received; `ble serve` logs the connection, the subscription (and the RACP request).

SIMULATED_DEVICES = {'lab': 'SwiftBLELab', 'heart-rate': 'SwiftBLE HRM', 'battery': 'SwiftBLE Battery',
                     'blood-pressure': 'SwiftBLE BPM', 'thermometer': 'SwiftBLE Thermometer',
                     'weight-scale': 'SwiftBLE Weight', 'body-composition': 'SwiftBLE Body', 'glucose': 'SwiftBLE Glucose',
                     'current-time': 'SwiftBLE Clock', 'band': 'SwiftBLE Band', 'piano': 'SwiftBLE Piano',
                     'scale': 'SwiftBLE Scale'}


def device_part(device, name):
    p = 'peripheral'
    checks = [
        Result('central', 'name', name),
        Result('central', 'done', 1),
        Grep(p, f'"event":"serving".*"name":"{name}"', f'{device}: ble serve did not serve as {name}'),
        Grep(p, '"event":"connected"', f'{device}: ble serve did not log the connection'),
        Grep(p, '"event":"subscription".*"notify":true|"event":"subscription".*"indicate":true',
             f'{device}: ble serve did not log the subscription'),
        Grep(p, '"event":"disconnected"', f'{device}: ble serve did not log the disconnection'),
    ]
    if device == 'glucose':
        checks.append(Grep(p, '"event":"racp".*"request":"report stored records"',
                           'glucose: ble serve did not log the RACP request'))
    return Part(device, [
        Controllers(2),
        Start('peripheral', [BLE, 'serve', '--device', device, '--hci', 'tcp:127.0.0.1:$p1', '--json', '--run-for', '40',
                             '--notify-interval', '100'], ready=SERVING, not_ready=f'ble serve --device {device} did not start'),
        Run('central', peer('devices_central.py', '--device', device, port='$p2'), timeout=40, bumble='central',
            label=f'the Bumble central against {device}'),
        Sleep(0.3)], checks)


def same_tree(ctx, first, second):
    """Whether two `ble explore --json` logs show the same database and values (addresses masked: the clone and the
    replay run on another controller); on a difference, ctx.values['detail'] says where."""
    def tree(role):
        return [re.sub(r'([0-9A-F]{2}:){5}[0-9A-F]{2}', 'ADDRESS', line) for line in ctx.lines(role) if '"kind":' in line]
    a, b = tree(first), tree(second)
    if a == b and a:
        return True
    diff = [f'{x} | {y}' for x, y in zip(a, b) if x != y][:2]
    ctx.values['detail'] = f'{len(a)} lines against {len(b)}; first differences: {diff}'
    return False


def simulated_devices():
    return Scenario('ble-serve-devices-to-bumble-central',
                    [device_part(device, name) for device, name in SIMULATED_DEVICES.items()],
                    needs=('ble',), shared_controllers=True)


# -- `ble`'s errors on the embedded virtual world: a runtime error prints 'error: <message>' on standard error,
# without the usage text, and exits 2 (not found, timed out), 3 (a protocol error: ATT, GATT, HCI) or 1 (anything
# else, such as a controller that cannot be reached); a command-line mistake prints the usage text and exits 64.
# After the ATT error, and when interrupted, the command still disconnects cleanly (its capture shows HCI Disconnect
# and its completion).



# Bumble's central against the characteristics `ble serve`'s application answers: a counter computed per read,
# a write refused with application error 0x80, a write answered late, a reliable write set all or nothing.
APPLICATION_ANSWERS_BUMBLE_CENTRAL_TO_BLE_PERIPHERAL = Scenario('application-answers-bumble-central-to-ble-peripheral', [Part('', [
    Controllers(2), serve_ble(30),
    Run('central', peer('app_client.py', port='$p2'), bumble='central', label='the Bumble central failed')], [
    Result('central', 'counter_computed', 1),
    Result('central', 'refused_error', '0x80'),
    Result('central', 'refused_kept', 1),
    Result('central', 'guarded_write', 1),
    Result('central', 'slow_answered', 1),
    Result('central', 'set_refused_error', '0x80'),
    Result('central', 'set_refused_nothing_written', 1),
    Result('central', 'set_applied_whole', 1),
    Grep('peripheral', '"event":"counter"', "the peripheral's application did not log the counter reads"),
    Count('peripheral', '"event":"refused"', '==', 2, "the peripheral's application did not log two refusals"),
])], needs=('ble',))


# Our central against our peripheral, across the controllers under test (on Bumble's: our host on both ends of an
# independent controller implementation).
BLE_CENTRAL_TO_BLE_PERIPHERAL = Scenario('ble-central-to-ble-peripheral', [Part('', [
    Controllers(2), serve_ble(30),
    Run('scan', ble('scan', '--service', '180D', '--timeout', '2', '--json')),
    Run('central', ble('explore', 'SwiftBLELab', '--json')),
    Run('read', ble('read', 'SwiftBLELab', LONG, '--json')),
    Run('central', ble('write', 'SwiftBLELab', WRITABLE, hexof('ours-to-ours'))),
    Run('central', ble('subscribe', 'SwiftBLELab', '2A37', '--count', '2', '--json'))], [
    Grep('central', '"mtu":247,', 'no MTU 247'),
    Grep('scan', '"connectable":true,.*"name":"SwiftBLELab","rssi":-?[0-9]+,"services":\\["180D","180F"\\]',
         'ble scan --service 180D did not list SwiftBLELab'),
    Check(lambda ctx: sum(len(m) + 1 for line in ctx.lines('read')
                          for m in re.findall('"value":"[0-9a-f]*"', line)) > 600
          and grep(ctx, 'read', '"length":300,'), 'ble read did not return the 300-byte value'),
    Count('central', '"kind":"service"', '==', 6, 'expected 6 services'),
    Grep('central', f'"uuid":"2A29".*"value":"{hexof("swift-ble Lab Inc.")}"', 'manufacturer name not read'),
    Grep('peripheral', f'"event":"write".*"value":"{hexof("ours-to-ours")}"', 'peripheral did not log the write'),
    Count('central', '"index":[0-9]*,"uuid":"2A37"', '==', 2, 'expected 2 heart-rate notifications'),
])], needs=('ble',))


# Our central (ble explore, write, subscribe) against Bumble's peripheral.
BLE_CENTRAL_TO_BUMBLE_PERIPHERAL = Scenario('ble-central-to-bumble-peripheral', [Part('', [
    Controllers(2), serve_bumble(30),
    Run('central', ble('explore', 'BumbleLabPeripheral', '--json')),
    Run('central', ble('write', 'BumbleLabPeripheral', WRITABLE, hexof('from-swift-ble'))),
    Run('central', ble('subscribe', 'BumbleLabPeripheral', '2A37', '--count', '2', '--json')),
    Sleep(0.3)], [
    Grep('central', '"mtu":247,', 'no MTU 247'),
    Grep('central', f'"uuid":"2A29".*"value":"{hexof("Bumble Lab Inc.")}"', 'manufacturer name not read'),
    Grep('central', f'"uuid":"{LONG}".*"value":"000102', 'long value not read'),
    MatchedChars('central', (f'"uuid":"{LONG}"[^}}]*', '"value":"[0-9a-f]*"'), 600,
                 'long value shorter than 300 bytes'),
    Count('central', '"kind":"service"', '==', 6, 'expected 6 services'),
    Result('peripheral', 'write', 'from-swift-ble'),
    Count('central', '"index":[0-9]*,"uuid":"2A37"', '==', 2, 'expected 2 heart-rate notifications'),
])], needs=('ble',))


# Cloning and replaying a device that is not ours: `ble explore --save --btsnoop` against Bumble's lab
# peripheral, which then goes away; `ble serve --gatt` serves the clone and `ble serve --replay` the capture, on the
# same controller; the same explore against each prints the same database (handles, declarations, values, the
# refusals) as against the original. The explore pairs where Bumble refuses a value for security, and so must
# the clone and the replay.
CLONE_AND_REPLAY_BUMBLE_PERIPHERAL = Scenario('clone-and-replay-bumble-peripheral', [Part('', [
    Controllers(2), serve_bumble(40),
    Run('original', ble('explore', 'BumbleLabPeripheral', '--json', '--save', '$logs/$prefix-clone.json',
                        '--btsnoop', '$logs/$prefix-capture.btsnoop', '--bonds', '$logs/$prefix-bonds-1.json'),
        timeout=40, label='ble explore --save against Bumble'),
    Stop('peripheral'),
    Start('clone', [BLE, 'serve', '--gatt', '$logs/$prefix-clone.json', '--hci', 'tcp:127.0.0.1:$p1', '--json',
                    '--run-for', '40', '--bonds', '$logs/$prefix-bonds-2.json'],
          ready=SERVING, not_ready='ble serve --gatt did not serve the clone'),
    Run('of-clone', ble('explore', 'BumbleLabPeripheral', '--json', '--bonds', '$logs/$prefix-bonds-3.json'),
        timeout=40, label='ble explore of the clone'),
    Stop('clone'),
    Start('replay', [BLE, 'serve', '--replay', '$logs/$prefix-capture.btsnoop', '--hci', 'tcp:127.0.0.1:$p1', '--json',
                     '--run-for', '40', '--bonds', '$logs/$prefix-bonds-4.json'],
          ready=SERVING, not_ready='ble serve --replay did not serve the capture'),
    Run('of-replay', ble('explore', 'BumbleLabPeripheral', '--json', '--bonds', '$logs/$prefix-bonds-5.json'),
        timeout=40, label='ble explore of the replay')], [
    Count('original', '"kind":"service"', '>=', 5, 'the explore of Bumble found fewer than 5 services'),
    Grep('original', '"event":"saved"', 'ble explore --save did not save'),
    Check(lambda ctx: same_tree(ctx, 'original', 'of-clone'), lambda ctx: f"the clone explores differently from Bumble: {ctx.values.get('detail')}"),
    Check(lambda ctx: same_tree(ctx, 'original', 'of-replay'), lambda ctx: f"the replay explores differently from Bumble: {ctx.values.get('detail')}"),
    Grep('replay', '"event":"replay".*"skipped_records":0', 'ble serve --replay skipped records of the capture'),
])], needs=('ble',))
