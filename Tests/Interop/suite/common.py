"""What many scenarios share: the lab device's characteristics and the command lines of the peers and of ble."""
from suite.engine import Start, hexof


BLE, PY, CENTRAL = '$ble', '$py', '$central'
SECRET = '12345678-1234-5678-1234-56789ABCDEF3'          # needs encryption: 'top-secret'
AUTHENTICATED = '12345678-1234-5678-1234-56789ABCDEFB'   # needs an authenticated key: 'authenticated'
LONG = '12345678-1234-5678-1234-56789ABCDEF2'            # 300 bytes
WRITABLE = '12345678-1234-5678-1234-56789ABCDEF1'
SERVING = '"event":"serving"'
ADVERTISING = '^RESULT advertising=1'
SERVING_OR_ADVERTISING = '"event":"serving"|^RESULT advertising=1'
TOP_SECRET = hexof('top-secret')
VALUE_512 = bytes((13 * i + 5) % 256 for i in range(512)).hex()


def peer(script, *args, port='$p1'):
    """A Bumble peer from peers/ on the controller at port."""
    return [PY, f'$peers/{script}', '--transport', f'tcp-client:127.0.0.1:{port}', *args]


def ble(*args, port='$p2'):
    """The ble tool on the controller at port."""
    return [BLE, *args, '--hci', f'tcp:127.0.0.1:{port}']


def serve_ble(run_for=30, *args):
    return Start('peripheral', [BLE, 'serve', '--hci', 'tcp:127.0.0.1:$p1', '--json', '--run-for', str(run_for), *args],
                 ready=SERVING, not_ready='ble serve did not start serving')


def serve_bumble(run_for=30):
    return Start('peripheral', peer('peripheral.py', '--run-for', str(run_for)), bumble=True, ready=ADVERTISING,
                 not_ready='peripheral did not start advertising')


# -- the lab session: the whole session between one central and one peripheral, each Bumble's host
# (peers/central.py --full, peers/peripheral.py) or ours (interop-central on the public async API, `ble serve`); both
# serve the lab layout (SampleDevice.lab) and both centrals print the same RESULT keys.
