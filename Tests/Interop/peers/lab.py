"""What peers/central.py and peers/peripheral.py share: the lab layout (the UUIDs and values of swift-ble's
SampleDevice.lab, which `ble serve` runs), the TREE key of a UUID, and steps with timeouts that name the HCI command
a controller left unanswered."""
import asyncio, struct, sys

CUSTOM_SERVICE = '12345678-1234-5678-1234-56789ABCDEF0'
CUSTOM_WRITABLE = '12345678-1234-5678-1234-56789ABCDEF1'
CUSTOM_LONG = '12345678-1234-5678-1234-56789ABCDEF2'
CUSTOM_SECRET = '12345678-1234-5678-1234-56789ABCDEF3'
CUSTOM_LONG_WRITABLE = '12345678-1234-5678-1234-56789ABCDEF4'
CUSTOM_BURST = '12345678-1234-5678-1234-56789ABCDEF5'
CUSTOM_INDICATE = '12345678-1234-5678-1234-56789ABCDEF6'
CUSTOM_CONTROL = '12345678-1234-5678-1234-56789ABCDEF7'
LONG_VALUE = bytes(i % 256 for i in range(300))
LONG_WRITABLE_VALUE = bytes((7 * i + 3) % 256 for i in range(512))
BURST_COUNT = 200
INDICATION_COUNT = 5


def burst_value(index):
    """Notification `index` of a burst: the index (LE16), then (index + k) mod 256, 200 bytes in all."""
    return struct.pack('<H', index) + bytes((index + k) % 256 for k in range(2, 200))


def uuid_key(uuid):
    """'2A29' for a 16-bit UUID, '12345678-1234-5678-1234-56789ABCDEF2' for a 128-bit one."""
    text = uuid.to_hex_str()
    if len(text) != 32:
        return text
    return '-'.join((text[:8], text[8:12], text[12:16], text[16:20], text[20:]))


def fail(what):
    print(f'FAILED: {what}', flush=True)
    sys.exit(1)


HOSTS = []   # the Bumble host, once created, so a timeout can name the HCI command left unanswered


def waiting_for():
    """', still waiting for the answer to HCI command X (0xOPCODE)' when a command is outstanding."""
    command = HOSTS[0].pending_command if HOSTS else None
    if command is None:
        return ''
    return f', still waiting for the answer to {command.name} (0x{command.op_code:04X})'


async def step(name, awaitable, timeout=10, passthrough=()):
    """Awaits one step of the session; a timeout or an exception ends the run with a message naming the step
    (and the HCI command the controller left unanswered, if any). Exceptions of the `passthrough` types are
    raised to the caller instead."""
    task = asyncio.ensure_future(awaitable)
    done, _ = await asyncio.wait({task}, timeout=timeout)
    if not done:
        why = waiting_for()          # before cancelling: cancelling clears the host's pending command
        task.cancel()
        fail(f'{name}: no answer within {timeout} s{why}')
    try:
        return task.result()
    except passthrough:
        raise
    except Exception as error:  # HCI_Error, ConnectionError, ProtocolError...
        fail(f'{name}: {type(error).__name__}: {error}')
