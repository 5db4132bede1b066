#!/usr/bin/env python3
"""Bumble GATT central used by swift-ble's interop tests: scan, connect, MTU 247, discover, read everything
(including the 300-byte value), write with and without response, take 3 heart-rate notifications, disconnect.

With --full (against a peripheral with the whole lab layout: peers/peripheral.py or `ble serve`), the session that
swift-ble's interop-central runs too, with the same RESULT keys: what the scan decoded (name, services, manufacturer
data of the advertising data and scan response), the discovered tree as 'TREE ...' lines, long reads of 300 and 512
bytes, a 512-byte long write, a 600-byte one (the server must refuse it: Invalid Attribute Value Length), a burst of
200 notifications and 5 indications (in order), disconnect, reconnect, a disconnection by the peripheral (its control
point) and a reconnection after it.

    central.py --transport tcp-client:127.0.0.1:PORT [--target-name BumbleLabPeripheral] [--address C0:C1:C2:C3:C4:C5]
               [--tag A] [--notifications 3] [--notification-timeout 5]

Every step has a timeout; every check prints 'RESULT <key>=<value>'; the first failure prints 'FAILED: <step>: <why>'
and exits 1. Exits 0 after 'RESULT done=1'.
"""
import argparse, asyncio, logging, struct, time

from bumble import att, crypto, gatt
from bumble.att import ATT_Error
from bumble.profiles import gatt_service
from bumble.core import AdvertisingData, UUID
from bumble.device import Device, DeviceConfiguration, Peer
from bumble.gatt import Characteristic
from bumble.hci import Address
from bumble.transport import open_transport

from lab import (BURST_COUNT, HOSTS, INDICATION_COUNT, LONG_VALUE, LONG_WRITABLE_VALUE, burst_value, fail, uuid_key,
                 waiting_for)
import lab

CUSTOM_WRITABLE = UUID(lab.CUSTOM_WRITABLE)
CUSTOM_LONG = UUID(lab.CUSTOM_LONG)
CUSTOM_LONG_WRITABLE = UUID(lab.CUSTOM_LONG_WRITABLE)
CUSTOM_BURST = UUID(lab.CUSTOM_BURST)
CUSTOM_INDICATE = UUID(lab.CUSTOM_INDICATE)
CUSTOM_CONTROL = UUID(lab.CUSTOM_CONTROL)
NOBODY = UUID('9E5D0000-7A3B-4C1D-9E8F-0123456789AB')
T0 = time.monotonic()


def log(*a):
    print(f'[central {time.monotonic() - T0:7.3f}s]', *a, flush=True)


def result(key, value):
    print(f'RESULT {key}={value}', flush=True)


def check(condition, what):
    if not condition:
        fail(what)


async def step(name, awaitable, timeout=10):
    """lab.step; an ATT error is the caller's to handle."""
    return await lab.step(name, awaitable, timeout, passthrough=(ATT_Error,))


async def main():
    p = argparse.ArgumentParser()
    p.add_argument('--transport', required=True)
    p.add_argument('--address', default='C0:C1:C2:C3:C4:C5')
    p.add_argument('--target-name', default='BumbleLabPeripheral')
    p.add_argument('--tag', default='', help='appended to the written values, to tell centrals apart')
    p.add_argument('--notifications', type=int, default=3, help='heart-rate notifications to wait for')
    p.add_argument('--notification-timeout', type=float, default=5)
    p.add_argument('--full', action='store_true', help='the whole lab session (see above)')
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
        seen = {'scan_response': False, 'address': None, 'structures': [], 'nobody': set()}

        def on_advertisement(adv):
            name = adv.data.get(AdvertisingData.COMPLETE_LOCAL_NAME)
            uuids = adv.data.get(AdvertisingData.INCOMPLETE_LIST_OF_128_BIT_SERVICE_CLASS_UUIDS) or []
            uuids += adv.data.get(AdvertisingData.COMPLETE_LIST_OF_128_BIT_SERVICE_CLASS_UUIDS) or []
            if NOBODY in uuids:
                seen['nobody'].add(str(adv.address))
            if name == args.target_name and seen['address'] is None:
                seen['address'] = adv.address
            if seen['address'] is not None and adv.address == seen['address']:
                # The target's structures, advertising data and scan response merged (a repeat adds nothing).
                for structure in adv.data.ad_structures:
                    if structure not in seen['structures']:
                        seen['structures'].append(structure)
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
        if args.full:
            names = [bytes(d).decode(errors='replace') for t, d in seen['structures']
                     if t == AdvertisingData.COMPLETE_LOCAL_NAME]
            services = []
            for t, d in seen['structures']:
                if t in (AdvertisingData.INCOMPLETE_LIST_OF_16_BIT_SERVICE_CLASS_UUIDS,
                         AdvertisingData.COMPLETE_LIST_OF_16_BIT_SERVICE_CLASS_UUIDS):
                    services += [f'{v:04X}' for v in struct.unpack(f'<{len(d) // 2}H', bytes(d))]
            manufacturer = [f'{struct.unpack_from("<H", bytes(d))[0]:04X}:{bytes(d)[2:].hex()}'
                            for t, d in seen['structures'] if t == AdvertisingData.MANUFACTURER_SPECIFIC_DATA]
            result('scan_name', ','.join(names))
            result('scan_services', ','.join(dict.fromkeys(services)))
            result('scan_manufacturer', ','.join(manufacturer))
            # Bumble's host has no service filter: decide from what it decoded, as a filtering scanner would.
            result('scan_nonmatching', len(seen['nobody']))
            result('scan_matching', int('180F' in services))

        connection = await step('connect', device.connect(target), 10)
        result('connected', 1)
        disconnected = asyncio.get_running_loop().create_future()
        connection.on('disconnection', lambda reason: disconnected.done() or disconnected.set_result(reason))
        peer = Peer(connection)

        mtu = await step('exchange MTU', peer.request_mtu(247))
        result('mtu', mtu)
        await step('discover all', peer.discover_all())
        services = [uuid_key(s.uuid) for s in peer.services]
        if args.full:
            for service in peer.services:
                print(f'TREE service {service.handle}-{service.end_group_handle} {uuid_key(service.uuid)}', flush=True)
                for ch in service.characteristics:
                    print(f'TREE characteristic {ch.handle} {int(ch.properties)} {uuid_key(ch.uuid)}', flush=True)
                    for d in ch.descriptors:
                        print(f'TREE descriptor {d.handle} {uuid_key(d.type)}', flush=True)
        result('services', len(services))
        log('services:', services)
        if args.full:
            await check_database_hash(peer)

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
                    result('long_read_300', 'ok')
                if ch.uuid == CUSTOM_LONG_WRITABLE:
                    check(value == LONG_WRITABLE_VALUE, f'512-byte value: got {len(value)} bytes {value[:16].hex()}...')
                    result('long_read_512', 'ok')
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
        if args.full:
            await full_session(device, peer, target, mtu)

        await step('disconnect', connection.disconnect(), 5)
        reason = await step('disconnection complete', disconnected, 5)
        result('disconnect_reason', f'0x{reason:02X}')
        if args.full:
            await reconnections(device, target)
        result('done', 1)


async def check_database_hash(peer):
    """Reads the peer's Database Hash and computes it again from every attribute Find Information lists and the values
    of the declarations, with Bumble's own Generic Attribute service code and AES-CMAC (Core 5.4, Vol 3, Part G,
    7.3.1): 'database_hash ok' when they agree."""
    found = peer.get_characteristics_by_uuid(gatt.GATT_DATABASE_HASH_CHARACTERISTIC)
    if not found:
        result('database_hash', 'absent')
        return
    served = bytes(await step('read the Database Hash', found[0].read_value()))
    rebuilt = []
    for proxy in await step('discover every attribute', peer.gatt_client.discover_attributes()):
        value = b''
        if proxy.type in (gatt.GATT_PRIMARY_SERVICE_ATTRIBUTE_TYPE, gatt.GATT_SECONDARY_SERVICE_ATTRIBUTE_TYPE,
                          gatt.GATT_INCLUDE_ATTRIBUTE_TYPE, gatt.GATT_CHARACTERISTIC_ATTRIBUTE_TYPE,
                          gatt.GATT_CHARACTERISTIC_EXTENDED_PROPERTIES_DESCRIPTOR):
            value = bytes(await step(f'read attribute {proxy.handle}', peer.gatt_client.read_value(proxy.handle)))
        attribute = att.Attribute(proxy.type, att.Attribute.Permissions.READABLE, value)
        attribute.handle = proxy.handle
        rebuilt.append(attribute)
    message = b''.join(gatt_service.GenericAttributeProfileService.get_attribute_data(a) for a in rebuilt)
    computed = crypto.aes_cmac(m=message, k=bytes(16))[::-1]
    result('database_hash', 'ok' if served == computed else f'served-{served.hex()}-computed-{computed.hex()}')


def only(peer, uuid):
    found = peer.get_characteristics_by_uuid(uuid)
    check(found, f'no characteristic {uuid}')
    return found[0]


async def full_session(device, peer, target, mtu):
    """Long writes, the notification burst and the indications (before the first disconnection)."""
    long_writable = only(peer, CUSTOM_LONG_WRITABLE)
    value512 = bytes((13 * i + 5) % 256 for i in range(512))
    await step('long write of 512 bytes', long_writable.write_value(value512, with_response=True))
    back = bytes(await step('read back 512 bytes', long_writable.read_value()))
    check(back == value512, f'long write read back {len(back)} bytes {back[:16].hex()}...')
    result('long_write_512', 'ok')
    try:
        await step('long write of 600 bytes', long_writable.write_value(bytes(i % 256 for i in range(600)), with_response=True))
        fail('a 600-byte write was accepted')
    except ATT_Error as e:
        result('long_write_600', f'0x{e.error_code:02X}')
    back = bytes(await step('read back after the 600-byte write', long_writable.read_value()))
    result('long_write_600_kept', int(back == value512))

    burst = only(peer, CUSTOM_BURST)
    got = asyncio.Queue()
    await step('subscribe to the burst', burst.subscribe(lambda value: got.put_nowait(bytes(value))))
    length = min(200, mtu - 3)
    for index in range(BURST_COUNT):
        value = await step(f'burst notification {index + 1}', got.get(), 5)
        expected = burst_value(index)[:length]
        check(value == expected, f'burst notification {index + 1}: {len(value)} bytes {value[:8].hex()}..., '
                                 f'expected {expected[:8].hex()}...')
    result('burst', BURST_COUNT)
    await step('unsubscribe from the burst', burst.unsubscribe())

    indicating = only(peer, CUSTOM_INDICATE)
    got = asyncio.Queue()
    await step('subscribe to indications', indicating.subscribe(lambda value: got.put_nowait(bytes(value)), prefer_notify=False))
    for index in range(INDICATION_COUNT):
        value = await step(f'indication {index + 1}', got.get(), 5)
        check(value == struct.pack('<H', index), f'indication {index + 1}: {value.hex()}')
    result('indications', INDICATION_COUNT)
    await step('unsubscribe from indications', indicating.unsubscribe())


async def reconnect(device, target, what):
    connection = await step(what, device.connect(target), 10)
    disconnected = asyncio.get_running_loop().create_future()
    connection.on('disconnection', lambda reason: disconnected.done() or disconnected.set_result(reason))
    peer = Peer(connection)
    await step('exchange MTU', peer.request_mtu(247))
    await step('discover services', peer.discover_services())
    for service in peer.services:
        await step('discover characteristics', service.discover_characteristics())
    return connection, peer, disconnected


async def reconnections(device, target):
    """Reconnect; let the peripheral disconnect (control point); reconnect again; disconnect."""
    connection, peer, disconnected = await reconnect(device, target, 'reconnect')
    result('reconnected', 1)
    back = bytes(await step('read after reconnecting', only(peer, CUSTOM_WRITABLE).read_value()))
    check(back == b'written-without-response', f'after reconnecting, the writable value reads {back!r}')
    result('reconnect_read', 'ok')
    try:
        await step('write to the control point', only(peer, CUSTOM_CONTROL).write_value(b'disconnect', with_response=True))
    except Exception as error:   # the Write Response may be overtaken by the disconnection
        log(f'control point write: {error!r}')
    reason = await step('disconnection by the peripheral', disconnected, 5)
    result('peer_disconnect_reason', f'0x{reason:02X}')
    connection, peer, disconnected = await reconnect(device, target, 'reconnect after the peripheral disconnected')
    back = bytes(await step('read after reconnecting', only(peer, CUSTOM_WRITABLE).read_value()))
    check(back == b'written-without-response', f'after reconnecting again, the writable value reads {back!r}')
    result('reconnected_after_peer_disconnect', 1)
    await step('final disconnect', connection.disconnect(), 5)
    await step('final disconnection complete', disconnected, 5)


if __name__ == '__main__':
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(main())
