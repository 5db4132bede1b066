#!/usr/bin/env python3
"""Bumble beacon scanner used by swift-ble's interop tests: scans passively and decodes, with its own code, the
first iBeacon it hears (Apple manufacturer data 4C 00, type 02, length 15: proximity UUID, major and minor big-endian,
measured power signed) and the first Eddystone frame (service data of FEAA: UID, URL with its scheme and expansion
codes, TLM).

    beacon_scanner.py --transport tcp-client:127.0.0.1:PORT [--want ibeacon,eddystone] [--timeout SECONDS]

Prints 'RESULT <key>=<value>' lines: ibeacon_uuid, ibeacon_major, ibeacon_minor, ibeacon_power, ibeacon_connectable,
ibeacon_rssi; eddystone_frame, eddystone_url or eddystone_namespace and eddystone_instance, eddystone_power; then
'RESULT done=1'. Exits 1 ('FAILED: ...') when a wanted format is not heard within the timeout.
"""
import argparse, asyncio, struct, uuid

from bumble.device import Device, DeviceConfiguration
from bumble.hci import Address
from bumble.transport import open_transport

from lab import HOSTS, fail, step

SCHEMES = ['http://www.', 'https://www.', 'http://', 'https://']
EXPANSIONS = ['.com/', '.org/', '.edu/', '.net/', '.info/', '.biz/', '.gov/',
              '.com', '.org', '.edu', '.net', '.info', '.biz', '.gov']


def result(key, value):
    print(f'RESULT {key}={value}', flush=True)


def decode_ibeacon(value):
    """(uuid, major, minor, power) from the manufacturer specific data, or None."""
    if len(value) != 25 or value[:4] != bytes([0x4C, 0x00, 0x02, 0x15]):
        return None
    major, minor, power = struct.unpack('>HHb', value[20:25])
    return str(uuid.UUID(bytes=value[4:20])).upper(), major, minor, power


def decode_eddystone(value):
    """A dict for service data of UUID FEAA (16-bit UUID little-endian first), or None."""
    if len(value) < 3 or value[:2] != bytes([0xAA, 0xFE]):
        return None
    frame = value[2:]
    if frame[0] == 0x00 and len(frame) == 20:
        return {'frame': 'uid', 'power': struct.unpack('b', frame[1:2])[0],
                'namespace': frame[2:12].hex(), 'instance': frame[12:18].hex()}
    if frame[0] == 0x10 and len(frame) >= 3:
        if frame[2] >= len(SCHEMES):
            return None
        url = SCHEMES[frame[2]]
        for b in frame[3:]:
            url += EXPANSIONS[b] if b < len(EXPANSIONS) else chr(b)
        return {'frame': 'url', 'power': struct.unpack('b', frame[1:2])[0], 'url': url}
    if frame[0] == 0x20 and len(frame) == 14 and frame[1] == 0:
        battery, temperature, count, uptime = struct.unpack('>HhII', frame[2:14])
        return {'frame': 'tlm', 'battery': battery, 'temperature': temperature / 256, 'count': count, 'uptime': uptime}
    return None


async def main():
    p = argparse.ArgumentParser()
    p.add_argument('--transport', required=True)
    p.add_argument('--address', default='C8:C9:CA:CB:CC:CD')
    p.add_argument('--want', default='ibeacon')
    p.add_argument('--timeout', type=float, default=10)
    args = p.parse_args()
    wanted = set(args.want.split(','))

    hci_transport = await step('open transport', open_transport(args.transport), 5)
    async with hci_transport:
        config = DeviceConfiguration()
        config.name = 'BumbleBeaconScanner'
        config.address = Address(args.address)
        device = Device.from_config_with_hci(config, hci_transport.source, hci_transport.sink)
        HOSTS.append(device.host)
        await step('power on (controller bring-up)', device.power_on(), 10)
        done = asyncio.get_running_loop().create_future()
        heard = set()

        def on_advertisement(adv):
            for ad_type, value in adv.data.ad_structures:
                if ad_type == 0xFF and 'ibeacon' not in heard:
                    decoded = decode_ibeacon(bytes(value))
                    if decoded:
                        heard.add('ibeacon')
                        u, major, minor, power = decoded
                        result('ibeacon_uuid', u)
                        result('ibeacon_major', major)
                        result('ibeacon_minor', minor)
                        result('ibeacon_power', power)
                        result('ibeacon_connectable', int(adv.is_connectable))
                        result('ibeacon_rssi', adv.rssi)
                if ad_type == 0x16 and 'eddystone' not in heard:
                    decoded = decode_eddystone(bytes(value))
                    if decoded and decoded['frame'] in ('uid', 'url'):
                        heard.add('eddystone')
                        for key, v in decoded.items():
                            result(f'eddystone_{key}', v)
            if wanted <= heard and not done.done():
                done.set_result(True)

        device.on('advertisement', on_advertisement)
        await step('start scanning', device.start_scanning(active=False, filter_duplicates=False))
        try:
            await asyncio.wait_for(done, args.timeout)
        except asyncio.TimeoutError:
            fail(f'heard {sorted(heard)} of {sorted(wanted)} within {args.timeout} s')
        await step('stop scanning', device.stop_scanning())
        result('done', 1)


if __name__ == '__main__':
    asyncio.run(main())
