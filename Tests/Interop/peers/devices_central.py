#!/usr/bin/env python3
"""Bumble GATT central against one of the simulated devices of `ble serve --device NAME`: it finds the device by its
advertised name, checks the advertised and discovered services against its own table of the device, reads the Device
Name and a characteristic of the device's profile, subscribes to what the device notifies or indicates (the glucose
meter: its measurements and its Record Access Control Point, then asks for every stored record) and waits for a value.

    devices_central.py --transport tcp-client:127.0.0.1:PORT --device glucose

Prints 'RESULT <key>=<value>' per step (advertised, services, name, read, subscribed, value, done); the first failure
prints 'FAILED: ...' and exits 1.
"""
import argparse, asyncio

from bumble.core import AdvertisingData, UUID
from bumble.device import Device, DeviceConfiguration, Peer
from bumble.hci import Address
from bumble.transport import open_transport

import lab
from lab import HOSTS, fail


def u16(value):
    return UUID.from_16_bits(value)


SCALE_SERVICE = UUID('7D2E0001-5C3A-4B8E-9F41-5357424C4553')
SCALE_STREAM = UUID('7D2E0002-5C3A-4B8E-9F41-5357424C4553')
LAB_SERVICE = UUID('12345678-1234-5678-1234-56789ABCDEF0')

# device: (advertised name, services it must publish, a characteristic to read or None, what to subscribe to (the
# first must deliver a value), writes after subscribing)
DEVICES = {
    'lab': ('SwiftBLELab', [u16(0x180F), u16(0x180D), u16(0x180A), LAB_SERVICE], u16(0x2A29), [u16(0x2A37)], []),
    'heart-rate': ('SwiftBLE HRM', [u16(0x180D), u16(0x180F), u16(0x180A)], u16(0x2A38), [u16(0x2A37)], []),
    'battery': ('SwiftBLE Battery', [u16(0x180F), u16(0x180A)], u16(0x2A19), [u16(0x2A19)], []),
    'blood-pressure': ('SwiftBLE BPM', [u16(0x1810), u16(0x180A)], u16(0x2A49), [u16(0x2A35), u16(0x2A36)], []),
    'thermometer': ('SwiftBLE Thermometer', [u16(0x1809), u16(0x180A)], u16(0x2A1D), [u16(0x2A1C), u16(0x2A1E)], []),
    'weight-scale': ('SwiftBLE Weight', [u16(0x181D), u16(0x180A)], u16(0x2A9E), [u16(0x2A9D)], []),
    'body-composition': ('SwiftBLE Body', [u16(0x181D), u16(0x181B), u16(0x180A)], u16(0x2A9B), [u16(0x2A9C)], []),
    'glucose': ('SwiftBLE Glucose', [u16(0x1808), u16(0x180A)], u16(0x2A51), [u16(0x2A18), u16(0x2A52)],
                [(u16(0x2A52), bytes([0x01, 0x01]))]),
    'current-time': ('SwiftBLE Clock', [u16(0x1805), u16(0x180A)], u16(0x2A2B), [u16(0x2A2B)], []),
    'band': ('SwiftBLE Band', [UUID.from_16_bits(0xFEE0), u16(0x1802)], u16(0xFF06), [u16(0xFF06)], []),
    'piano': ('SwiftBLE Piano', [u16(0xFFE0), u16(0xFFE1)], None, [u16(0xFFE2)], []),
    'scale': ('SwiftBLE Scale', [SCALE_SERVICE], None, [SCALE_STREAM], []),
}


def result(key, value):
    print(f'RESULT {key}={value}', flush=True)


def check(condition, what):
    if not condition:
        fail(what)


async def step(name, awaitable, timeout=10):
    return await lab.step(name, awaitable, timeout)


async def main():
    p = argparse.ArgumentParser()
    p.add_argument('--transport', required=True)
    p.add_argument('--device', required=True, choices=sorted(DEVICES))
    p.add_argument('--value-timeout', type=float, default=10)
    args = p.parse_args()
    name, services, readable, subscriptions, writes = DEVICES[args.device]
    hci_transport = await step('open transport', open_transport(args.transport), 5)
    async with hci_transport:
        config = DeviceConfiguration()
        config.name = 'BumbleDevicesCentral'
        config.address = Address('C0:C1:C2:C3:C4:C8')
        device = Device.from_config_with_hci(config, hci_transport.source, hci_transport.sink)
        HOSTS.append(device.host)
        await step('power on', device.power_on())
        found = asyncio.get_running_loop().create_future()
        advertised = set()

        def on_advertisement(adv):
            uuids = set()
            for kind in (AdvertisingData.COMPLETE_LIST_OF_16_BIT_SERVICE_CLASS_UUIDS,
                         AdvertisingData.INCOMPLETE_LIST_OF_16_BIT_SERVICE_CLASS_UUIDS,
                         AdvertisingData.COMPLETE_LIST_OF_128_BIT_SERVICE_CLASS_UUIDS,
                         AdvertisingData.INCOMPLETE_LIST_OF_128_BIT_SERVICE_CLASS_UUIDS):
                uuids.update(adv.data.get(kind) or [])
            # By name; or by its first service, when the name went to the scan response (the scale's 128-bit UUID
            # leaves no room for it) and the controller does not deliver scan responses (Bumble's copies the
            # advertising data instead). The device is alone on the air with this central.
            by_name = adv.data.get(AdvertisingData.COMPLETE_LOCAL_NAME) == name
            if not by_name and services[0] not in uuids:
                return
            advertised.update(uuids)
            if not found.done():
                found.set_result((adv.address, 'name' if by_name else 'service'))
        device.on('advertisement', on_advertisement)
        await step('start scanning', device.start_scanning(active=True))
        target, found_by = await step(f'scan for {name!r}', found)
        result('found_by', found_by)
        await step('stop scanning', device.stop_scanning())
        check(services[0] in advertised, f'{name} does not advertise {services[0]} (advertised {sorted(map(str, advertised))})')
        result('advertised', ','.join(sorted(str(u) for u in advertised)))

        connection = await step('connect', device.connect(target))
        peer = Peer(connection)
        await step('exchange MTU', peer.request_mtu(247))
        await step('discover all', peer.discover_all())
        published = [service.uuid for service in peer.services]
        missing = [str(u) for u in services if u not in published]
        check(not missing, f'services missing: {missing} (published {[str(u) for u in published]})')
        if args.device == 'weight-scale':
            check(u16(0x181B) not in published, 'the weight scale publishes Body Composition')
        result('services', len(services))

        def characteristic(uuid):
            matches = peer.get_characteristics_by_uuid(uuid)
            check(matches, f'no characteristic {uuid}')
            return matches[0]
        device_name = bytes(await step('read Device Name', characteristic(u16(0x2A00)).read_value()))
        check(device_name == name.encode(), f'Device Name {device_name!r}')
        result('name', device_name.decode())
        if readable is not None:
            value = bytes(await step(f'read {readable}', characteristic(readable).read_value()))
            check(len(value) > 0, f'{readable} read empty')
            result('read', value.hex())

        got = asyncio.Queue()
        first, *others = [characteristic(uuid) for uuid in subscriptions]
        await step(f'subscribe to {first.uuid}', first.subscribe(lambda value: got.put_nowait(bytes(value))))
        for other in others:
            await step(f'subscribe to {other.uuid}', other.subscribe(lambda value: None))
        result('subscribed', len(subscriptions))
        for uuid, value in writes:
            await step(f'write {uuid}', characteristic(uuid).write_value(value, with_response=True))
            result('wrote', value.hex())
        value = await step(f'a value of {first.uuid}', got.get(), args.value_timeout)
        check(len(value) > 0, f'an empty value of {first.uuid}')
        result('value', value.hex())
        await step('unsubscribe', first.unsubscribe())
        await step('disconnect', connection.disconnect(), 5)
        result('done', 1)


if __name__ == '__main__':
    asyncio.run(main())
