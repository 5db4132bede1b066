"""CoreBluetooth-style programs (the Examples/ demos) against Bumble."""
import hashlib, os, re
from suite.engine import Check, Controllers, Do, Grep, Part, Result, Run, Scenario, Start, WaitFor, grep
from suite.common import peer, serve_bumble


# CoreBluetooth-style programs (CoreBluetoothCompat, the Examples/ demos next to ble) against Bumble, choosing the
# controller as an iOS-style program must: with SWIFT_BLE_HCI=tcp:HOST:PORT.
# battery-demo (a CBCentralManager app) against Bumble's lab peripheral: found by its Battery service and name,
# the manufacturer name read from Device Information, the battery level read.
CB_CENTRAL_TO_BUMBLE_PERIPHERAL = Scenario('cb-central-to-bumble-peripheral', [Part('', [
    Controllers(2), serve_bumble(30),
    Run('central', ['$bin/battery-demo', '--name', 'BumbleLabPeripheral', '--updates', '0'],
        env={'SWIFT_BLE_HCI': 'tcp:127.0.0.1:$p2'}, label='battery-demo')], [
    Grep('central', 'connected to BumbleLabPeripheral', 'battery-demo did not connect', whole=True, fixed=True),
    Grep('central', 'manufacturer Bumble Lab Inc.', 'manufacturer name not read', whole=True, fixed=True),
    Grep('central', '^battery level [0-9]+%$', 'battery level not read'),
    Grep('central', 'disconnected', 'no disconnection', whole=True, fixed=True),
])], needs=('ble', 'battery-demo'))


# transfer-demo's CBPeripheralManager (Apple's transfer sample) against Bumble's central: the file arrives whole
# in chunks with an EOM marker, and the reply is attributed to the identifier the peripheral gave that central.
# The name is short enough to share the advertising packet with the 128-bit service UUID: Bumble's controller
# sends a copy of the advertising data as scan response (see docs/ble-tool.md), so a name moved to the scan response
# would never be heard.
CB_PERIPHERAL_TO_BUMBLE_CENTRAL = Scenario('cb-peripheral-to-bumble-central', [Part('', [
    Do(lambda ctx: open(ctx.path('file.bin'), 'wb').write(os.urandom(6000))),
    Controllers(2),
    Start('peripheral', ['$bin/transfer-demo', '--peripheral-only', '--name', 'CBXfer', '--file',
                         '$logs/$name-file.bin', '--centrals', '1'], env={'SWIFT_BLE_HCI': 'tcp:127.0.0.1:$p1'},
          ready='^peripheral: advertising CBXfer', not_ready='transfer-demo did not start advertising'),
    Run('central', peer('transfer_central.py', '--target-name', 'CBXfer', port='$p2'), timeout=40,
        bumble='central', label='the Bumble central failed'),
    WaitFor('peripheral', '^done', 10, message='transfer-demo did not finish')], [
    Result('central', 'received', 6000),
    Result('central', 'sha256', lambda ctx: hashlib.sha256(open(ctx.path('file.bin'), 'rb').read()).hexdigest()),
    Result('central', 'reply', 'written'),
    Do(lambda ctx: ctx.values.update(identity=next(
        (l[len('RESULT who_am_i='):] for l in ctx.lines('central') if l.startswith('RESULT who_am_i=')), ''))),
    Check(lambda ctx: ctx.values['identity'], 'no identity read'),
    # The identifier of CBCentral C0:C1:C2:C3:C4:C5 (random): the address in its last group.
    Check(lambda ctx: ctx.values['identity'].endswith('-C0C1C2C3C4C5'),
          lambda ctx: f"identity {ctx.values['identity']} does not carry the central's address"),
    Check(lambda ctx: grep(ctx, 'peripheral', f'peripheral: {ctx.values["identity"]} wrote "thanks from bumble"',
                           whole=True, fixed=True),
          lambda ctx: f"the reply is not attributed to {ctx.values['identity']}"),
    Check(lambda ctx: grep(ctx, 'peripheral', '^' + re.escape(f'peripheral: sent 6000 bytes and EOM to '
                                                              f'{ctx.values["identity"]}')),
          lambda ctx: f"the peripheral did not send the whole file to {ctx.values['identity']}"),
])], needs=('ble', 'transfer-demo'))
