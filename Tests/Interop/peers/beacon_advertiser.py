#!/usr/bin/env python3
"""Bumble beacon used by swift-ble's interop tests: advertises, non-connectable, an iBeacon and Eddystone frames built
with its own code, rotating between them.

    beacon_advertiser.py --transport tcp-client:127.0.0.1:PORT [--ibeacon UUID:MAJOR:MINOR:POWER]
                         [--eddystone-url URL] [--eddystone-uid NAMESPACE:INSTANCE] [--eddystone-power DBM]
                         [--eddystone-tlm] [--dwell SECONDS] [--interval MS] [--run-for SECONDS]

--eddystone-tlm adds an unencrypted TLM frame to the rotation: battery 3000 mV, 22.5 °C, the advertising PDU count
(estimated from the interval) and the uptime, both current each time the frame goes on the air.

Prints 'RESULT advertising=1' once the first frame is on the air, 'RESULT frame=<hex>' for each frame's advertising
data, and exits 0 after --run-for seconds or on SIGTERM.
"""
import argparse, asyncio, signal, struct, time, uuid

from bumble.device import AdvertisingType, Device, DeviceConfiguration
from bumble.hci import Address
from bumble.transport import open_transport

from lab import HOSTS, fail, step

SCHEMES = ['http://www.', 'https://www.', 'http://', 'https://']
EXPANSIONS = ['.com/', '.org/', '.edu/', '.net/', '.info/', '.biz/', '.gov/',
              '.com', '.org', '.edu', '.net', '.info', '.biz', '.gov']


def result(key, value):
    print(f'RESULT {key}={value}', flush=True)


def ad(*structures):
    return b''.join(bytes([len(data) + 1, ad_type]) + data for ad_type, data in structures)


def ibeacon(spec):
    u, major, minor, power = spec.split(':')[0:1] + spec.split(':')[1:]
    body = bytes([0x4C, 0x00, 0x02, 0x15]) + uuid.UUID(u).bytes + struct.pack('>HHb', int(major), int(minor), int(power))
    return ad((0x01, b'\x06'), (0xFF, body))


def eddystone(frame):
    return ad((0x01, b'\x06'), (0x03, b'\xaa\xfe'), (0x16, b'\xaa\xfe' + frame))


def encode_url(url):
    for code in sorted(range(len(SCHEMES)), key=lambda c: -len(SCHEMES[c])):
        if url.startswith(SCHEMES[code]):
            out, rest = bytes([code]), url[len(SCHEMES[code]):]
            break
    else:
        fail(f'no scheme in {url}')
    while rest:
        for code in sorted(range(len(EXPANSIONS)), key=lambda c: -len(EXPANSIONS[c])):
            if rest.startswith(EXPANSIONS[code]):
                out += bytes([code])
                rest = rest[len(EXPANSIONS[code]):]
                break
        else:
            out += rest[0].encode()
            rest = rest[1:]
    return out


async def main():
    p = argparse.ArgumentParser()
    p.add_argument('--transport', required=True)
    p.add_argument('--address', default='E1:E2:E3:E4:E5:E6')
    p.add_argument('--ibeacon')
    p.add_argument('--eddystone-url')
    p.add_argument('--eddystone-uid')
    p.add_argument('--eddystone-power', type=int, default=-18)
    p.add_argument('--eddystone-tlm', action='store_true')
    p.add_argument('--dwell', type=float, default=0.5)
    p.add_argument('--interval', type=float, default=100)
    p.add_argument('--run-for', type=float, default=0)
    args = p.parse_args()

    frames = []
    if args.ibeacon:
        frames.append(ibeacon(args.ibeacon))
    if args.eddystone_url:
        frames.append(eddystone(bytes([0x10]) + struct.pack('b', args.eddystone_power) + encode_url(args.eddystone_url)))
    if args.eddystone_uid:
        namespace, instance = args.eddystone_uid.split(':')
        frames.append(eddystone(bytes([0x00]) + struct.pack('b', args.eddystone_power) + bytes.fromhex(namespace)
                                + bytes.fromhex(instance) + b'\x00\x00'))
    started = time.monotonic()

    def tlm():
        """Version 0: battery mV, temperature 8.8 fixed point, PDU count, uptime in 0.1 s, all big-endian."""
        uptime = time.monotonic() - started
        return eddystone(bytes([0x20, 0x00]) + struct.pack('>HhII', 3000, int(22.5 * 256),
                                                          int(uptime * 1000 / args.interval), int(uptime * 10)))
    if args.eddystone_tlm:
        frames.append(tlm)
    if not frames:
        fail('no frame to advertise')

    hci_transport = await step('open transport', open_transport(args.transport), 5)
    async with hci_transport:
        config = DeviceConfiguration()
        config.name = 'BumbleBeacon'
        config.address = Address(args.address)
        device = Device.from_config_with_hci(config, hci_transport.source, hci_transport.sink)
        HOSTS.append(device.host)
        await step('power on (controller bring-up)', device.power_on(), 10)
        for frame in frames:
            result('frame', (frame() if callable(frame) else frame).hex())
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        if args.run_for > 0:
            loop.call_later(args.run_for, stop.set)
        index = 0
        while not stop.is_set():
            await step('start advertising', device.start_advertising(
                advertising_type=AdvertisingType.UNDIRECTED,
                advertising_data=frames[index]() if callable(frames[index]) else frames[index],
                advertising_interval_min=args.interval, advertising_interval_max=args.interval), 10)
            if index == 0:
                result('advertising', 1)
            index = (index + 1) % len(frames)
            if len(frames) == 1:
                await stop.wait()
            else:
                try:
                    await asyncio.wait_for(stop.wait(), args.dwell)
                except asyncio.TimeoutError:
                    pass
        await device.stop_advertising()


if __name__ == '__main__':
    asyncio.run(main())
