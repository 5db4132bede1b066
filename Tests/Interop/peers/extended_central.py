#!/usr/bin/env python3
"""Bumble central used by swift-ble's interop tests: scans with Bumble's extended scanning (LE 1M and LE Coded) for a
device named --name (joining the parts of an extended advertisement, which Bumble's host hands up one by one), checks it came in extended PDUs, connects to it (LE Extended Create Connection), reads its GAP
Device Name over GATT, and disconnects.

    extended_central.py --transport tcp-client:127.0.0.1:PORT --name NAME [--timeout SECONDS]

--also NAME waits for a second advertisement too and reports also_length=<n>, also_connectable=<0|1>.
Prints RESULT lines: found=1, legacy=0|1, primary_phy=<1|3>, sid=<n>, data_length=<n>, connected=1,
device_name=<name>, done=1; exits 0 on success.
"""
import argparse, asyncio

from bumble.core import AdvertisingData
from bumble.device import Device, DeviceConfiguration, Peer
from bumble.hci import Address
from bumble.transport import open_transport

from lab import HOSTS, fail, step


def result(key, value):
    print(f'RESULT {key}={value}', flush=True)


async def main():
    p = argparse.ArgumentParser()
    p.add_argument('--transport', required=True)
    p.add_argument('--name', required=True)
    p.add_argument('--also', help='another advertisement to wait for (its data length is reported as also_length)')
    p.add_argument('--timeout', type=float, default=15)
    args = p.parse_args()

    hci_transport = await step('open transport', open_transport(args.transport), 5)
    async with hci_transport:
        config = DeviceConfiguration()
        config.name = 'BumbleExtCentral'
        config.address = Address('F6:F5:F4:F3:F2:F1')
        device = Device.from_config_with_hci(config, hci_transport.source, hci_transport.sink)
        HOSTS.append(device.host)
        await step('power on (controller bring-up)', device.power_on(), 10)
        if not device.supports_le_extended_advertising:
            fail('the controller does not support extended advertising')
        found = asyncio.get_running_loop().create_future()
        also = asyncio.get_running_loop().create_future()
        if not args.also:
            also.set_result(None)
        parts = {}   # Bumble's host hands up each part of an extended advertisement: join them per advertiser and SID

        def on_advertisement(advertisement):
            key = (str(advertisement.address), advertisement.sid, advertisement.is_scan_response)
            data = parts.pop(key, b'') + advertisement.data_bytes
            if not advertisement.is_complete and not advertisement.is_truncated:
                parts[key] = data
                return
            name = AdvertisingData.from_bytes(data).get(AdvertisingData.COMPLETE_LOCAL_NAME)
            if isinstance(name, bytes):
                name = name.decode(errors='replace')
            if name == args.name and not found.done():
                found.set_result((advertisement, len(data)))
            if args.also and name == args.also and not also.done():
                also.set_result((advertisement, len(data)))
        device.on('advertisement', on_advertisement)
        await step('start scanning', device.start_scanning(active=False))
        advertisement, data_length = await step(f'scan for {args.name!r}', found, args.timeout)
        other = await step(f'scan for {args.also!r}', also, args.timeout)
        await step('stop scanning', device.stop_scanning())
        if other:
            result('also_length', other[1])
            result('also_connectable', int(other[0].is_connectable))
        result('found', 1)
        result('legacy', int(advertisement.is_legacy))
        result('primary_phy', advertisement.primary_phy)
        result('sid', advertisement.sid)
        result('data_length', data_length)
        connection = await step('connect', device.connect(advertisement.address), 15)
        result('connected', 1)
        peer = Peer(connection)
        await step('discover GAP', peer.discover_services(['1800']))
        characteristics = await step('discover the Device Name', peer.discover_characteristics(['2A00']))
        if not characteristics:
            fail('no Device Name characteristic')
        value = await step('read the Device Name', characteristics[0].read_value())
        result('device_name', bytes(value).decode(errors='replace'))
        await step('disconnect', connection.disconnect(), 5)
        result('done', 1)


if __name__ == '__main__':
    asyncio.run(main())
