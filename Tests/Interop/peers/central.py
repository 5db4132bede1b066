#!/usr/bin/env python3
"""Bumble GATT central used by swift-ble's interop tests: scan, connect, MTU 247, discover, read everything
(including the 300-byte value), write with and without response, take 3 heart-rate notifications, disconnect.

    central.py --transport tcp-client:127.0.0.1:PORT [--target-name BumbleLabPeripheral] [--address C0:C1:C2:C3:C4:C5]
               [--tag A] [--notifications 3] [--notification-timeout 5]

Every step has a timeout; every check prints 'RESULT <key>=<value>'; the first failure prints 'FAILED: <step>: <why>'
and exits 1. Exits 0 after 'RESULT done=1'.
"""
import argparse, asyncio, logging, sys, time

from bumble.att import ATT_Error
from bumble.core import AdvertisingData, UUID
from bumble.device import Device, DeviceConfiguration, Peer
from bumble.gatt import Characteristic
from bumble.hci import Address
from bumble.transport import open_transport

CUSTOM_WRITABLE = UUID('12345678-1234-5678-1234-56789ABCDEF1')
CUSTOM_LONG = UUID('12345678-1234-5678-1234-56789ABCDEF2')
LONG_VALUE = bytes(i % 256 for i in range(300))
T0 = time.monotonic()


def log(*a):
    print(f'[central {time.monotonic() - T0:7.3f}s]', *a, flush=True)


def result(key, value):
    print(f'RESULT {key}={value}', flush=True)


def fail(what):
    print(f'FAILED: {what}', flush=True)
    sys.exit(1)


def uuid_key(uuid):
    """'2A29' for a 16-bit UUID, '12345678-1234-5678-1234-56789ABCDEF2' for a 128-bit one."""
    text = uuid.to_hex_str()
    if len(text) != 32:
        return text
    return '-'.join((text[:8], text[8:12], text[12:16], text[16:20], text[20:]))


def check(condition, what):
    if not condition:
        fail(what)


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
    except ATT_Error:
        raise
    except Exception as error:  # HCI_Error, ConnectionError, ProtocolError...
        fail(f'{name}: {type(error).__name__}: {error}')


async def main():
    p = argparse.ArgumentParser()
    p.add_argument('--transport', required=True)
    p.add_argument('--address', default='C0:C1:C2:C3:C4:C5')
    p.add_argument('--target-name', default='BumbleLabPeripheral')
    p.add_argument('--tag', default='', help='appended to the written values, to tell centrals apart')
    p.add_argument('--notifications', type=int, default=3, help='heart-rate notifications to wait for')
    p.add_argument('--notification-timeout', type=float, default=5)
    args = p.parse_args()

    hci_transport = await step('open transport', open_transport(args.transport), 5)
    async with hci_transport:
        config = DeviceConfiguration()
        config.name = 'BumbleLabCentral'
        config.address = Address(args.address)
        device = Device.from_config_with_hci(config, hci_transport.source, hci_transport.sink)
        HOSTS.append(device.host)
        await step('power on (controller bring-up)', device.power_on(), 10)
        result('powered_on', 1)

        found = asyncio.get_running_loop().create_future()
        seen = {'scan_response': False}

        def on_advertisement(adv):
            name = adv.data.get(AdvertisingData.COMPLETE_LOCAL_NAME)
            if adv.is_scan_response and adv.data.get(AdvertisingData.MANUFACTURER_SPECIFIC_DATA):
                seen['scan_response'] = True
            if name == args.target_name and not found.done():
                result('rssi', adv.rssi)
                found.set_result(adv.address)
        device.on('advertisement', on_advertisement)
        await step('start scanning', device.start_scanning(active=True, filter_duplicates=False))
        target = await step(f'scan for {args.target_name!r}', found, 10)
        await asyncio.sleep(0.3)    # let the scan response of the target arrive too
        await step('stop scanning', device.stop_scanning())
        result('found', target)
        result('scan_response', int(seen['scan_response']))

        connection = await step('connect', device.connect(target), 10)
        result('connected', 1)
        disconnected = asyncio.get_running_loop().create_future()
        connection.on('disconnection', lambda reason: disconnected.done() or disconnected.set_result(reason))
        peer = Peer(connection)

        mtu = await step('exchange MTU', peer.request_mtu(247))
        result('mtu', mtu)
        await step('discover all', peer.discover_all())
        services = [uuid_key(s.uuid) for s in peer.services]
        result('services', len(services))
        log('services:', services)

        reads = 0
        for service in peer.services:
            for ch in service.characteristics:
                if not ch.properties & Characteristic.Properties.READ:
                    continue
                try:
                    value = bytes(await step(f'read {ch.uuid}', ch.read_value()))
                except ATT_Error as e:
                    result(f'read_error_{uuid_key(ch.uuid)}', f'0x{e.error_code:02X}')
                    continue
                reads += 1
                result(f'read_{uuid_key(ch.uuid)}', value.hex() if len(value) <= 32 else f'{len(value)}-bytes')
                if ch.uuid == CUSTOM_LONG:
                    check(value == LONG_VALUE, f'long value: got {len(value)} bytes {value[:16].hex()}...')
                    result('long_read', len(value))
                if ch.uuid == UUID.from_16_bits(0x2A29):
                    result('manufacturer', value.decode(errors='replace'))
        result('reads', reads)

        writable = peer.get_characteristics_by_uuid(CUSTOM_WRITABLE)
        check(writable, f'no characteristic {CUSTOM_WRITABLE}')
        w = writable[0]
        with_response = b'written-with-response' + (b'-' + args.tag.encode() if args.tag else b'')
        await step('write with response', w.write_value(with_response, with_response=True))
        back = bytes(await step('read back', w.read_value()))
        # With several centrals (--tag) another one may have written in between.
        check(back == with_response or bool(args.tag), f'write with response read back {back!r}')
        result('write_with_response', 'ok')
        await step('write without response', w.write_value(b'written-without-response', with_response=False))
        for _ in range(50):
            back = bytes(await step('read back', w.read_value()))
            if back == b'written-without-response':
                break
            await asyncio.sleep(0.02)
        check(back == b'written-without-response', f'write without response read back {back!r}')
        result('write_without_response', 'ok')

        heart_rate = peer.get_characteristics_by_uuid(UUID.from_16_bits(0x2A37))
        check(heart_rate, 'no heart rate measurement characteristic')
        hrm = heart_rate[0]
        got = asyncio.Queue()
        await step('subscribe to 2A37', hrm.subscribe(lambda value: got.put_nowait(bytes(value))))
        previous = None
        for n in range(args.notifications):
            value = await step(f'heart rate notification {n + 1}', got.get(), args.notification_timeout)
            check(len(value) == 2 and value[0] == 0, f'heart rate notification {value.hex()}')
            # The sample peripherals count 60..99 then wrap: each value follows the previous one (none lost).
            if previous is not None:
                check(value[1] == previous + 1 or (previous == 99 and value[1] == 60),
                      f'notification order {previous} -> {value[1]}')
            previous = value[1]
        result('notifications', args.notifications)
        await step('unsubscribe', hrm.unsubscribe())

        await step('disconnect', connection.disconnect(), 5)
        reason = await step('disconnection complete', disconnected, 5)
        result('disconnect_reason', f'0x{reason:02X}')
        result('done', 1)


if __name__ == '__main__':
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(main())
