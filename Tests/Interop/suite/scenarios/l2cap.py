"""LE credit based channels between our host or the ble tool and Bumble's host."""
import hashlib, os, random, re
from suite.engine import Controllers, Do, Grep, Json, Part, Result, Run, Scenario, Start, WaitFor
from suite.common import BLE, ble, peer


# -- LE credit based channels between `ble l2cap` and Bumble's host (peers/l2cap_bench.py), 1 MB echoed each way,
# byte-identical, with the throughput of each pairing against Bumble with itself over the same controllers in the
# same run; a Bumble client that sends past its credits to `ble l2cap serve --hold` gets its channel closed. The
# controllers have 251-byte buffers: one per K-frame.

L2CAP_BYTES = 1048576
L2CAP_SERVERS = {
    'ble': [BLE, 'l2cap', 'serve', '--psm', '0x0080', '--echo', '--hci', 'tcp:127.0.0.1:$p1', '--json',
            '--run-for', '120'],
    'hold': [BLE, 'l2cap', 'serve', '--psm', '0x0080', '--hold', '--credits', '4', '--hci', 'tcp:127.0.0.1:$p1',
             '--json', '--run-for', '60'],
    'bumble': peer('l2cap_bench.py', '--role', 'server', '--name', 'SwiftBLEL2CAP', '--run-for', '120'),
}
L2CAP_CLIENTS = {   # (argv, time limit, what fails)
    'ble': (ble('l2cap', 'connect', 'SwiftBLEL2CAP', '--psm', '0x0080', '--bytes', str(L2CAP_BYTES), '--expect-echo',
                '--json'), 120, 'ble l2cap connect'),
    'bumble': (peer('l2cap_bench.py', '--role', 'client', '--bytes', str(L2CAP_BYTES), port='$p2'), 120,
               'the Bumble client'),
    'violate': (peer('l2cap_bench.py', '--role', 'client', '--violate', port='$p2'), 60, 'the Bumble client'),
}


def l2cap_part(name, server, client, checks):
    argv, limit, who = L2CAP_CLIENTS[client]
    return Part(name, [
        Controllers(2, large_acl=True),
        Start('server', L2CAP_SERVERS[server], bumble=server == 'bumble', ready='"event":"serving"|^READY',
              not_ready='$part: the server did not start'),
        Run('client', argv, timeout=limit, bumble='client' if client != 'ble' else None, label=f'$part: {who}'),
    ], checks)


def rate(key):
    """Records the MB/s (both directions) the part's client reported, as key."""
    def record(ctx):
        values = [m for line in ctx.lines('client')
                  for m in re.findall(r'(?:"event":"echo".*"mb_per_s":|^RESULT mb_per_s=)([0-9.]+)', line)]
        ctx.values[key] = values[-1] if values else ''
    return Do(record)


def send_file_part():
    """`ble l2cap connect --send FILE`: 1 MiB one way, no echo, to a Bumble server that counts and hashes what it
    receives; the channel closes (and the link drops) right after the last send, so every byte must have been
    delivered before the Disconnection Request and HCI Disconnect went (issue 23: the last 4096 bytes were lost)."""
    def make_file(ctx):
        data = random.Random(23).randbytes(L2CAP_BYTES)
        with open(ctx.path('send.bin'), 'wb') as f:
            f.write(data)
        ctx.values['send_sha256'] = hashlib.sha256(data).hexdigest()
    return Part('', [
        Do(make_file),
        Controllers(2, large_acl=True),
        Start('server', peer('l2cap_bench.py', '--role', 'server', '--count', '--name', 'SwiftBLEL2CAP', '--run-for', '120'),
              bumble=True, ready='^READY', not_ready='the Bumble server did not start'),
        Run('client', ble('l2cap', 'connect', 'SwiftBLEL2CAP', '--psm', '0x0080', '--send', '$logs/$prefix-send.bin',
                          '--json'), timeout=120, label='ble l2cap connect --send'),
        WaitFor('server', '^RESULT received_sha256=', 15)], [
        Result('server', 'received_bytes', L2CAP_BYTES),
        Result('server', 'received_sha256', lambda ctx: ctx.values.get('send_sha256', '')),
        Json('client', {'event': 'sent', 'bytes': L2CAP_BYTES, 'delivered': L2CAP_BYTES}),
    ])


def l2cap_figures(ctx):
    line = (f'l2cap on {ctx.kind.name} controllers, 1 MB each way: ours→Bumble {ctx.values["ours_to_bumble"]} MB/s, '
            f'Bumble→ours {ctx.values["bumble_to_ours"]} MB/s, Bumble→Bumble {ctx.values["reference"]} MB/s')
    print(line)
    with open(os.path.join(ctx.h.logs, f'{ctx.name}-figures.txt'), 'w') as f:
        f.write(line + '\n')


# -- the scenario table.

# -- `ble gateway`: what radios hear, published to a Mosquitto broker of the scenario's own, watched and driven by
# paho-mqtt (peers/mqtt_observer.py), an MQTT client that is not ours.



# LE credit based channels between our HCIHost (L2CAPInteropTests, in the test bundle built next to ble) and
# Bumble's host (peers/l2cap_peer.py): 64 KB echoed each way, three enhanced channels in one request.
L2CAP_CHANNELS_BLE_HOST_AND_BUMBLE_HOST = Scenario('l2cap-channels-ble-host-and-bumble-host', [Part('', [
    Controllers(2),
    Start('bumble', peer('l2cap_peer.py', '--run-for', '60'), bumble=True, ready='^READY',
          not_ready='the Bumble peer did not start'),
    Run('ours', ['swift', 'test', '--package-path', lambda ctx: ctx.h.repo, '--scratch-path',
                 lambda ctx: ctx.h.scratch(), '--skip-build', '--filter', 'L2CAPInteropTests'],
        env={'BLE_INTEROP_L2CAP_PORT': '$p2'}, timeout=120, label='L2CAPInteropTests failed'),
    WaitFor('bumble', '^RESULT bumble_to_ours=', 10)], [
    Grep('ours', 'Test echoBothWaysWithBumble\\(\\) passed', 'the test did not run'),
    Result('bumble', 'bumble_to_ours', 'ok'),
])], needs=('ble', 'test-bundle'))


L2CAP_CLI_AND_BUMBLE = Scenario('l2cap-cli-and-bumble', [
    l2cap_part('ours-to-bumble', 'bumble', 'ble', [
        Grep('client', '"event":"echo".*"identical":true', 'ours-to-bumble: the echo of 1 MB is not identical'),
        rate('ours_to_bumble')]),
    l2cap_part('bumble-to-ours', 'ble', 'bumble', [
        Result('client', 'identical', 1), Result('client', 'bytes', L2CAP_BYTES),
        Grep('server', f'^\\{{"bytes":{L2CAP_BYTES},.*"event":"closed"', 'bumble-to-ours: ble l2cap serve did not count 1 MB'),
        rate('bumble_to_ours')]),
    l2cap_part('bumble-to-bumble', 'bumble', 'bumble', [Result('client', 'identical', 1), rate('reference')]),
    l2cap_part('violation', 'hold', 'violate', [Result('client', 'violation_disconnected', 1)]),
], needs=('ble',), on_pass=l2cap_figures)


# -- nothing lost at close: 1 MiB sent one way with `ble l2cap connect --send`, counted and hashed by Bumble.
L2CAP_CLI_SEND_FILE_TO_BUMBLE = Scenario('l2cap-cli-send-file-to-bumble', [send_file_part()], needs=('ble',))
