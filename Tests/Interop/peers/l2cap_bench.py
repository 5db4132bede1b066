#!/usr/bin/env python3
"""Bumble LE credit based channel peer for swift-ble's `ble l2cap` scenarios, in either role, with throughput.

  server: advertises --name, serves an echo on --psm (every SDU back as it came) and prints 'READY'.
  server --count: takes what arrives without sending anything back; when the channel (or its link) closes, prints
          RESULT received_bytes=N and RESULT received_sha256=HEX of everything received on it.
  client: scans for --target, connects, opens a channel to --psm, sends --bytes bytes (SDUs of the peer's MTU,
          waiting for credits), waits for all of them back, checks they are identical and prints
          RESULT bytes=N, RESULT identical=1, RESULT seconds=S, RESULT mb_per_s=R (both directions counted).
  client --violate: after opening, sends K-frames far beyond the credits it was granted (bypassing Bumble's flow
          control; the peer must not be reading: `ble l2cap serve --hold`) and prints RESULT violation_disconnected=1
          once the peer closes the channel.

    l2cap_bench.py --transport tcp-client:127.0.0.1:PORT --role server|client [--psm 0x0080] [--bytes N]
                   [--name BumbleL2CAPBench] [--target NAME] [--violate] [--count] [--run-for SECONDS]
"""
import argparse, asyncio, hashlib, signal, struct, time

from bumble.core import AdvertisingData
from bumble.device import Device, DeviceConfiguration
from bumble.hci import Address
from bumble.l2cap import LeCreditBasedChannelSpec
from bumble.transport import open_transport

import lab
from lab import HOSTS, fail

T0 = time.monotonic()


def log(*a):
    print(f'[l2cap-bench {time.monotonic() - T0:7.3f}s]', *a, flush=True)


def result(key, value):
    print(f'RESULT {key}={value}', flush=True)


def pattern(count):
    """The bytes `ble l2cap connect --bytes` sends: byte i is (31 i + i / 256) mod 256."""
    return bytes((i * 31 + (i >> 8)) & 0xFF for i in range(count))


def count(channel, connection):
    """Counts and hashes what arrives on channel; reports it once, when the channel or its link closes."""
    digest, received, reported = hashlib.sha256(), [0], [False]

    def on_sdu(sdu):
        digest.update(sdu)
        received[0] += len(sdu)

    def report(why):
        if reported[0]:
            return
        reported[0] = True
        log(f'{why}: {received[0]} bytes received')
        result('received_bytes', received[0])
        result('received_sha256', digest.hexdigest())
    channel.sink = on_sdu
    channel.on('close', lambda: report('channel closed'))
    connection.on('disconnection', lambda reason: report(f'link closed (reason {reason:#04x})'))


async def serve(device, args):
    def on_channel(channel):
        log(f'channel open: ours {channel.source_cid:#06x}, peer MTU {channel.peer_mtu}')
        if args.count:
            count(channel, channel.connection)
        else:
            channel.sink = channel.write
    device.create_l2cap_server(LeCreditBasedChannelSpec(psm=args.psm, mtu=2048, mps=247, max_credits=32), handler=on_channel)
    await device.start_advertising(auto_restart=True)
    print('READY', flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    if args.run_for > 0:
        loop.call_later(args.run_for, stop.set)
    await stop.wait()


async def client(device, args):
    found = asyncio.get_running_loop().create_future()

    def on_advertisement(adv):
        if adv.data.get(AdvertisingData.COMPLETE_LOCAL_NAME) == args.target and not found.done():
            found.set_result(adv.address)
    device.on('advertisement', on_advertisement)
    await lab.step('start scanning', device.start_scanning(active=True))
    target = await lab.step(f'scan for {args.target!r}', found)
    await lab.step('stop scanning', device.stop_scanning())
    connection = await lab.step('connect', device.connect(target))
    channel = await lab.step(f'open PSM {args.psm:#06x}', connection.create_l2cap_channel(
        spec=LeCreditBasedChannelSpec(psm=args.psm, mtu=2048, mps=247, max_credits=32)))
    log(f'channel open: peer MTU {channel.peer_mtu}, peer MPS {channel.peer_mps}, credits {channel.credits}')
    closed = asyncio.get_running_loop().create_future()
    channel.on('close', lambda: closed.done() or closed.set_result(True))
    if args.violate:
        # Complete one-frame SDUs far past the credits granted, written straight to the link (the peer holds its
        # channel unread, so no credit comes back): the peer must close the channel (Core 5.4, Vol 3, Part A, 10.1).
        granted = channel.credits
        frames = granted + 8
        for k in range(frames):
            device.send_l2cap_pdu(connection.handle, channel.destination_cid, struct.pack('<H', 8) + bytes([k]) * 8)
        await lab.step('the peer closes the channel', closed, 10)
        result('violation_granted_credits', granted)
        result('violation_frames', frames)
        result('violation_disconnected', 1)
        await lab.step('disconnect', connection.disconnect(), 5)
        return
    data = pattern(args.bytes)
    received = bytearray()
    done = asyncio.get_running_loop().create_future()

    def on_sdu(sdu):
        received.extend(sdu)
        if len(received) >= len(data) and not done.done():
            done.set_result(None)
    channel.sink = on_sdu
    start = time.monotonic()
    for offset in range(0, len(data), channel.peer_mtu):
        channel.write(data[offset:offset + channel.peer_mtu])
        await channel.drain()
    await lab.step('echo', done, 120)
    seconds = time.monotonic() - start
    result('bytes', len(received))
    result('identical', int(bytes(received) == data))
    result('seconds', f'{seconds:.3f}')
    result('mb_per_s', f'{2 * len(data) / seconds / 1e6:.3f}')
    await channel.disconnect()
    await lab.step('disconnect', connection.disconnect(), 5)


async def main():
    p = argparse.ArgumentParser()
    p.add_argument('--transport', required=True)
    p.add_argument('--role', choices=['server', 'client'], required=True)
    p.add_argument('--psm', type=lambda s: int(s, 0), default=0x0080)
    p.add_argument('--bytes', type=int, default=1 << 20)
    p.add_argument('--name', default='BumbleL2CAPBench')
    p.add_argument('--target', default='SwiftBLEL2CAP')
    p.add_argument('--address', help='default: D1:D2:D3:D4:D5:D7 for the server, D1:D2:D3:D4:D5:D8 for the client')
    p.add_argument('--violate', action='store_true')
    p.add_argument('--count', action='store_true', help='server: count and hash what arrives, send nothing back')
    p.add_argument('--run-for', type=float, default=0)
    args = p.parse_args()
    async with await open_transport(args.transport) as hci_transport:
        config = DeviceConfiguration()
        config.name = args.name
        config.address = Address(args.address or ('D1:D2:D3:D4:D5:D7' if args.role == 'server' else 'D1:D2:D3:D4:D5:D8'))
        config.advertising_interval_min = config.advertising_interval_max = 50
        config.advertising_data = bytes(AdvertisingData([
            (AdvertisingData.FLAGS, bytes([0x06])),
            (AdvertisingData.COMPLETE_LOCAL_NAME, args.name.encode()),
        ]))
        device = Device.from_config_with_hci(config, hci_transport.source, hci_transport.sink)
        HOSTS.append(device.host)
        await lab.step('power on', device.power_on())
        if args.role == 'server':
            await serve(device, args)
        else:
            await client(device, args)
        result('done', 1)


if __name__ == '__main__':
    asyncio.run(main())
