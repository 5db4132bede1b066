#!/usr/bin/env python3
"""Bumble peer for swift-ble's LE credit based channel interop test (Tests/BLEHostTests/L2CAPInteropTests.swift).

Advertises 'BumbleL2CAP' from static random address D1:D2:D3:D4:D5:D6 and:
  * serves an echo on SPSM 0x0080 (MTU 1024, MPS 100, 8 credits): every SDU comes back as it arrived;
  * once a central connects, opens a channel to the central's SPSM 0x0081 (MTU 512, MPS 64, 4 credits), sends
    --bytes bytes in SDUs of at most the central's MTU, expects them echoed back, and prints
    'RESULT bumble_to_ours=ok' (or the mismatch).

    l2cap_peer.py --transport tcp-client:127.0.0.1:PORT [--bytes N] [--run-for SECONDS]

Exits 0 on SIGTERM/SIGINT or after --run-for seconds.
"""
import argparse, asyncio, signal, struct, time

from bumble.core import AdvertisingData
from bumble.device import Device, DeviceConfiguration
from bumble.hci import Address
from bumble.l2cap import LeCreditBasedChannelSpec
from bumble.transport import open_transport

T0 = time.monotonic()


def log(*a):
    print(f'[l2cap-peer {time.monotonic() - T0:7.3f}s]', *a, flush=True)


def pattern(count, seed):
    return bytes(((i * 13 + (i >> 8)) ^ seed) & 0xFF for i in range(count))


async def main():
    p = argparse.ArgumentParser()
    p.add_argument('--transport', required=True)
    p.add_argument('--bytes', type=int, default=65536)
    p.add_argument('--run-for', type=float, default=0)
    args = p.parse_args()

    async with await open_transport(args.transport) as hci_transport:
        config = DeviceConfiguration()
        config.name = 'BumbleL2CAP'
        config.address = Address('D1:D2:D3:D4:D5:D6')
        config.advertising_interval_min = config.advertising_interval_max = 50
        config.advertising_data = bytes(AdvertisingData([
            (AdvertisingData.FLAGS, bytes([0x06])),
            (AdvertisingData.COMPLETE_LOCAL_NAME, b'BumbleL2CAP'),
        ]))
        device = Device.from_config_with_hci(config, hci_transport.source, hci_transport.sink)

        def on_echo_channel(channel):
            log(f'echo channel open: ours {channel.source_cid:#06x}, theirs {channel.destination_cid:#06x}, '
                f'peer MTU {channel.peer_mtu}, peer MPS {channel.peer_mps}')
            channel.sink = channel.write

        device.create_l2cap_server(LeCreditBasedChannelSpec(psm=0x0080, mtu=1024, mps=100, max_credits=8),
                                   handler=on_echo_channel)

        async def exercise(connection):
            await asyncio.sleep(0.5)
            try:
                channel = await connection.create_l2cap_channel(
                    spec=LeCreditBasedChannelSpec(psm=0x0081, mtu=512, mps=64, max_credits=4))
            except Exception as error:  # noqa: BLE001 - reported, not raised
                print(f'RESULT bumble_to_ours=open-failed:{error!r}', flush=True)
                return
            log(f'channel to 0x0081 open, peer MTU {channel.peer_mtu}')
            received = bytearray()
            done = asyncio.get_running_loop().create_future()

            def on_sdu(sdu):
                received.extend(sdu)
                if len(received) >= args.bytes and not done.done():
                    done.set_result(None)

            channel.sink = on_sdu
            data = pattern(args.bytes, 0x3C)
            for offset in range(0, len(data), channel.peer_mtu):
                channel.write(data[offset:offset + channel.peer_mtu])
                await channel.drain()
            try:
                await asyncio.wait_for(done, 30)
            except asyncio.TimeoutError:
                print(f'RESULT bumble_to_ours=timeout:{len(received)}', flush=True)
                return
            print(f'RESULT bumble_to_ours={"ok" if bytes(received) == data else "mismatch"}', flush=True)
            await channel.disconnect()

        device.on('connection', lambda connection: asyncio.ensure_future(exercise(connection)))
        await device.power_on()
        await device.start_advertising(auto_restart=True)
        print('READY', flush=True)

        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        if args.run_for > 0:
            loop.call_later(args.run_for, stop.set)
        await stop.wait()


if __name__ == '__main__':
    asyncio.run(main())
