#!/usr/bin/env python3
"""Bumble GATT peripheral used by swift-ble's interop tests.

Advertises 'BumbleLabPeripheral' (static random D1:D2:D3:D4:D5:D6) with Heart Rate and Battery in the advertising
data and manufacturer data in the scan response. Serves Battery 180F/2A19 (read, notify), Heart Rate 180D/2A37
(notify every 0.5 s), Device Information 180A/2A29, and a custom service with a read/write/write-without-response
characteristic (...DEF1), a 300-byte value (...DEF2) and a value that needs encryption (...DEF3).

    peripheral.py --transport tcp-client:127.0.0.1:PORT [--name N] [--address A] [--run-for SECONDS]

Prints 'RESULT <key>=<value>' lines; exits 0 on SIGTERM/SIGINT or after --run-for seconds; prints
'FAILED: <step>: <why>' and exits 1 when bring-up, advertising or a notification does not complete in time.
"""
import argparse, asyncio, logging, signal, struct, sys, time

from bumble.core import AdvertisingData
from bumble.device import Device, DeviceConfiguration
from bumble.gatt import Characteristic, CharacteristicValue, Service
from bumble.hci import Address
from bumble.transport import open_transport

CUSTOM_SERVICE = '12345678-1234-5678-1234-56789ABCDEF0'
CUSTOM_WRITABLE = '12345678-1234-5678-1234-56789ABCDEF1'
CUSTOM_LONG = '12345678-1234-5678-1234-56789ABCDEF2'
CUSTOM_SECRET = '12345678-1234-5678-1234-56789ABCDEF3'
LONG_VALUE = bytes(i % 256 for i in range(300))
T0 = time.monotonic()


def log(*a):
    print(f'[peripheral {time.monotonic() - T0:7.3f}s]', *a, flush=True)


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


async def step(name, awaitable, timeout=10):
    """Awaits one step of the session; a timeout or an exception ends the run with a message naming the step
    (and the HCI command the controller left unanswered, if any)."""
    task = asyncio.ensure_future(awaitable)
    done, _ = await asyncio.wait({task}, timeout=timeout)
    if not done:
        why = waiting_for()          # before cancelling: cancelling clears the host's pending command
        task.cancel()
        fail(f'{name}: no answer within {timeout} s{why}')
    try:
        return task.result()
    except Exception as error:  # HCI_Error, ConnectionError, ProtocolError...
        fail(f'{name}: {type(error).__name__}: {error}')


async def main():
    p = argparse.ArgumentParser()
    p.add_argument('--transport', required=True)
    p.add_argument('--name', default='BumbleLabPeripheral')
    p.add_argument('--address', default='D1:D2:D3:D4:D5:D6')
    p.add_argument('--run-for', type=float, default=0)
    args = p.parse_args()

    hci_transport = await step('open transport', open_transport(args.transport), 5)
    async with hci_transport:
        config = DeviceConfiguration()
        config.name = args.name
        config.address = Address(args.address)
        config.advertising_interval_min = config.advertising_interval_max = 50
        config.advertising_data = bytes(AdvertisingData([
            (AdvertisingData.FLAGS, bytes([0x06])),
            (AdvertisingData.COMPLETE_LOCAL_NAME, args.name.encode()),
            (AdvertisingData.INCOMPLETE_LIST_OF_16_BIT_SERVICE_CLASS_UUIDS, struct.pack('<HH', 0x180D, 0x180F)),
        ]))
        config.scan_response_data = bytes(AdvertisingData([
            (AdvertisingData.MANUFACTURER_SPECIFIC_DATA, bytes.fromhex('ffff') + b'scanrsp'),
        ]))
        device = Device.from_config_with_hci(config, hci_transport.source, hci_transport.sink)
        HOSTS.append(device.host)

        battery_level = [87]
        battery = Characteristic('2A19', Characteristic.Properties.READ | Characteristic.Properties.NOTIFY,
                                 Characteristic.READABLE, CharacteristicValue(read=lambda c: bytes(battery_level)))
        hrm = Characteristic('2A37', Characteristic.Properties.NOTIFY, Characteristic.READABLE, bytes([0, 60]))
        manufacturer = Characteristic('2A29', Characteristic.Properties.READ, Characteristic.READABLE, b'Bumble Lab Inc.')
        writable_value = [b'initial']

        def on_write(connection, value):
            log(f'write {bytes(value)!r}')
            print(f'RESULT write={bytes(value).decode(errors="replace")}', flush=True)
            writable_value[0] = bytes(value)

        writable = Characteristic(
            CUSTOM_WRITABLE,
            Characteristic.Properties.READ | Characteristic.Properties.WRITE | Characteristic.Properties.WRITE_WITHOUT_RESPONSE,
            Characteristic.READABLE | Characteristic.WRITEABLE,
            CharacteristicValue(read=lambda c: writable_value[0], write=on_write))
        long_char = Characteristic(CUSTOM_LONG, Characteristic.Properties.READ, Characteristic.READABLE, LONG_VALUE)
        secret = Characteristic(CUSTOM_SECRET, Characteristic.Properties.READ,
                                Characteristic.Permissions.READ_REQUIRES_ENCRYPTION, b'top-secret')
        device.add_services([Service('180F', [battery]), Service('180D', [hrm]), Service('180A', [manufacturer]),
                             Service(CUSTOM_SERVICE, [writable, long_char, secret])])

        def on_connection(connection):
            log(f'connected to {connection.peer_address}')
            print('RESULT connected=1', flush=True)
            connection.on('disconnection', lambda reason: print(f'RESULT disconnected=0x{reason:02X}', flush=True))
            connection.on('connection_att_mtu_update', lambda *a: print(f'RESULT mtu={connection.att_mtu}', flush=True))
        device.on('connection', on_connection)
        hrm.on('subscription', lambda conn, notify, indicate: print(f'RESULT subscribed={int(notify)}', flush=True))

        await step('power on (controller bring-up)', device.power_on())
        print('RESULT powered_on=1', flush=True)
        await step('start advertising', device.start_advertising(auto_restart=True))
        log(f'advertising as {args.name!r} from {args.address}')
        print('RESULT advertising=1', flush=True)

        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            asyncio.get_running_loop().add_signal_handler(sig, stop.set)
        deadline = time.monotonic() + args.run_for if args.run_for else None
        bpm = 60
        while not stop.is_set() and (deadline is None or time.monotonic() < deadline):
            try:
                await asyncio.wait_for(stop.wait(), 0.5)
            except asyncio.TimeoutError:
                pass
            bpm = 60 + (bpm - 59) % 40
            hrm.value = bytes([0x00, bpm])
            if device.connections:
                sending = asyncio.ensure_future(device.notify_subscribers(hrm, hrm.value))
                done, _ = await asyncio.wait({sending}, timeout=5)
                if not done:
                    fail(f'notify heart rate: not sent within 5 s (ACL flow control stalled?){waiting_for()}')
                if sending.exception() is not None:  # the link went down between the check and the send
                    log(f'notification not sent: {sending.exception()!r}')
        log('stopping')


if __name__ == '__main__':
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(main())
