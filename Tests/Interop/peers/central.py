#!/usr/bin/env python3
"""Bumble GATT central used by swift-ble's interop tests: scan, connect, MTU 247, discover, read everything
(including the 300-byte value), write with and without response, take 3 heart-rate notifications, disconnect.
Every step has a timeout; every check prints 'RESULT <key>=<value>'; any failure exits non-zero."""
import argparse, asyncio, logging, sys, time

from bumble.att import ATT_Error
from bumble.core import AdvertisingData, UUID
from bumble.device import Device, DeviceConfiguration, Peer
from bumble.gatt import Characteristic
from bumble.hci import Address
from bumble.transport import open_transport

CUSTOM_WRITABLE = UUID('12345678-1234-5678-1234-56789ABCDEF1')
CUSTOM_LONG = UUID('12345678-1234-5678-1234-56789ABCDEF2')
T0 = time.monotonic()


def log(*a):
    print(f'[central {time.monotonic() - T0:7.3f}s]', *a, flush=True)


def result(key, value):
    print(f'RESULT {key}={value}', flush=True)


def check(condition, what):
    if not condition:
        print(f'FAILED: {what}', flush=True)
        sys.exit(1)


async def main():
    p = argparse.ArgumentParser()
    p.add_argument('--transport', required=True)
    p.add_argument('--address', default='C0:C1:C2:C3:C4:C5')
    p.add_argument('--target-name', default='BumbleLabPeripheral')
    p.add_argument('--tag', default='', help='appended to the written values, to tell centrals apart')
    p.add_argument('--notifications', type=int, default=3, help='heart-rate notifications to wait for')
    p.add_argument('--notification-timeout', type=float, default=5)
    args = p.parse_args()

    async with await open_transport(args.transport) as hci_transport:
        config = DeviceConfiguration()
        config.name = 'BumbleLabCentral'
        config.address = Address(args.address)
        device = Device.from_config_with_hci(config, hci_transport.source, hci_transport.sink)
        await device.power_on()

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
        await device.start_scanning(active=True, filter_duplicates=False)
        target = await asyncio.wait_for(found, 10)
        await asyncio.sleep(0.3)
        await device.stop_scanning()
        result('found', target)
        result('scan_response', int(seen['scan_response']))

        connection = await asyncio.wait_for(device.connect(target), 10)
        result('connected', 1)
        disconnected = asyncio.get_running_loop().create_future()
        connection.on('disconnection', lambda reason: disconnected.done() or disconnected.set_result(reason))
        peer = Peer(connection)

        mtu = await asyncio.wait_for(peer.request_mtu(247), 10)
        result('mtu', mtu)
        await asyncio.wait_for(peer.discover_all(), 10)
        services = [str(s.uuid) for s in peer.services]
        result('services', len(services))
        log('services:', services)

        reads = 0
        for service in peer.services:
            for ch in service.characteristics:
                if ch.properties & Characteristic.Properties.READ:
                    try:
                        value = await asyncio.wait_for(ch.read_value(), 10)
                        reads += 1
                        if ch.uuid == CUSTOM_LONG:
                            check(bytes(value) == bytes(i % 256 for i in range(300)), 'long value')
                            result('long_read', len(value))
                        if ch.uuid == UUID.from_16_bits(0x2A29):
                            result('manufacturer', bytes(value).decode())
                    except ATT_Error as e:
                        result(f'read_error_{ch.uuid}', f'0x{e.error_code:02X}')
        result('reads', reads)

        w = peer.get_characteristics_by_uuid(CUSTOM_WRITABLE)[0]
        with_response = b'written-with-response' + (b'-' + args.tag.encode() if args.tag else b'')
        await asyncio.wait_for(w.write_value(with_response, with_response=True), 10)
        back = await asyncio.wait_for(w.read_value(), 10)
        check(bytes(back) == with_response or bool(args.tag), 'write with response read-back')
        result('write_with_response', 'ok')
        await w.write_value(b'written-without-response', with_response=False)
        for _ in range(50):
            back = await asyncio.wait_for(w.read_value(), 10)
            if bytes(back) == b'written-without-response':
                break
            await asyncio.sleep(0.02)
        check(bytes(back) == b'written-without-response', 'write without response read-back')
        result('write_without_response', 'ok')

        hrm = peer.get_characteristics_by_uuid(UUID.from_16_bits(0x2A37))[0]
        got = asyncio.Queue()
        await asyncio.wait_for(hrm.subscribe(lambda value: got.put_nowait(bytes(value))), 10)
        previous = None
        for _ in range(args.notifications):
            value = await asyncio.wait_for(got.get(), args.notification_timeout)
            check(len(value) == 2 and value[0] == 0, f'heart rate notification {value.hex()}')
            # The sample peripherals count 60..99 then wrap: each value follows the previous one (none lost).
            if previous is not None:
                check(value[1] == previous + 1 or (previous == 99 and value[1] == 60), f'notification order {previous} -> {value[1]}')
            previous = value[1]
        result('notifications', args.notifications)
        await asyncio.wait_for(hrm.unsubscribe(), 10)

        await connection.disconnect()
        reason = await asyncio.wait_for(disconnected, 5)
        result('disconnect_reason', f'0x{reason:02X}')
        result('done', 1)


if __name__ == '__main__':
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(asyncio.wait_for(main(), 60))
