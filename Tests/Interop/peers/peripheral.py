#!/usr/bin/env python3
"""Bumble GATT peripheral used by swift-ble's interop tests.

Advertises 'BumbleLabPeripheral' (static random D1:D2:D3:D4:D5:D6) with Heart Rate and Battery in the advertising
data and manufacturer data in the scan response. Serves Battery 180F/2A19 (read, notify), Heart Rate 180D/2A37
(notify every 0.5 s), Device Information 180A/2A29, and the lab's custom service (the layout of swift-ble's
SampleDevice.lab, which `ble serve` runs):
  ...DEF1 read/write/write without response     ...DEF2 a 300-byte value (byte i = i mod 256)
  ...DEF3 needs encryption                       ...DEF4 512 bytes (byte i = 7i+3 mod 256), read/write (long writes)
  ...DEF5 notify: 200 numbered notifications to a central that subscribes (index LE16, then (index+k) mod 256,
          200 bytes cut to ATT_MTU-3)
  ...DEF6 indicate: 5 numbered indications (index LE16), each after the previous one was confirmed
  ...DEF7 write: 'disconnect' makes the peripheral disconnect the writer (after 100 ms)
Prints its own attribute table as 'TREE ...' lines (the format interop-central and central.py print for what they
discover), so the runner can compare the two.

    peripheral.py --transport tcp-client:127.0.0.1:PORT [--name N] [--address A] [--run-for SECONDS]

Prints 'RESULT <key>=<value>' lines; exits 0 on SIGTERM/SIGINT or after --run-for seconds; prints
'FAILED: <step>: <why>' and exits 1 when bring-up, advertising or a notification does not complete in time.
"""
import argparse, asyncio, logging, signal, struct, time

from bumble.core import AdvertisingData
from bumble.device import Device, DeviceConfiguration
from bumble.gatt import Characteristic, CharacteristicDeclaration, CharacteristicValue, Descriptor, Service
from bumble.hci import Address
from bumble.transport import open_transport

from lab import (BURST_COUNT, CUSTOM_BURST, CUSTOM_CONTROL, CUSTOM_INDICATE, CUSTOM_LONG, CUSTOM_LONG_WRITABLE,
                 CUSTOM_SECRET, CUSTOM_SERVICE, CUSTOM_WRITABLE, HOSTS, INDICATION_COUNT, LONG_VALUE,
                 LONG_WRITABLE_VALUE, burst_value, fail, step, uuid_key, waiting_for)


def print_tree(server):
    """The server's own attribute table, in the TREE format the centrals print for what they discover."""
    for attribute in server.attributes:
        if isinstance(attribute, Service):
            if attribute.primary:
                print(f'TREE service {attribute.handle}-{attribute.end_group_handle} {uuid_key(attribute.uuid)}', flush=True)
        elif isinstance(attribute, CharacteristicDeclaration):
            c = attribute.characteristic
            print(f'TREE characteristic {attribute.value_handle} {int(c.properties)} {uuid_key(c.uuid)}', flush=True)
        elif isinstance(attribute, Descriptor):
            print(f'TREE descriptor {attribute.handle} {uuid_key(attribute.type)}', flush=True)


T0 = time.monotonic()


def log(*a):
    print(f'[peripheral {time.monotonic() - T0:7.3f}s]', *a, flush=True)


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
        long_writable_value = [LONG_WRITABLE_VALUE]

        def on_long_write(connection, value):
            log(f'long write of {len(value)} bytes')
            print(f'RESULT long_write={len(value)}', flush=True)
            long_writable_value[0] = bytes(value)

        long_writable = Characteristic(
            CUSTOM_LONG_WRITABLE, Characteristic.Properties.READ | Characteristic.Properties.WRITE,
            Characteristic.READABLE | Characteristic.WRITEABLE,
            CharacteristicValue(read=lambda c: long_writable_value[0], write=on_long_write))
        burst = Characteristic(CUSTOM_BURST, Characteristic.Properties.NOTIFY, Characteristic.READABLE, bytes(2))
        indicating = Characteristic(CUSTOM_INDICATE, Characteristic.Properties.INDICATE, Characteristic.READABLE, bytes(2))

        def on_control(connection, value):
            log(f'control point: {bytes(value)!r}')
            if bytes(value) == b'disconnect':
                print('RESULT control_disconnect=1', flush=True)
                # After the Write Response has gone out.
                asyncio.get_running_loop().call_later(
                    0.1, lambda: asyncio.ensure_future(connection.disconnect()))

        control = Characteristic(
            CUSTOM_CONTROL, Characteristic.Properties.WRITE | Characteristic.Properties.WRITE_WITHOUT_RESPONSE,
            Characteristic.WRITEABLE, CharacteristicValue(write=on_control))
        device.add_services([Service('180F', [battery]), Service('180D', [hrm]), Service('180A', [manufacturer]),
                             Service(CUSTOM_SERVICE, [writable, long_char, secret, long_writable, burst, indicating,
                                                      control])])

        async def send_burst(connection):
            sent = 0
            try:
                for index in range(BURST_COUNT):
                    await device.notify_subscriber(connection, burst, burst_value(index))
                    sent += 1
            except Exception as error:
                log(f'burst stopped after {sent}: {error!r}')
            print(f'RESULT burst_sent={sent}', flush=True)

        async def send_indications(connection):
            confirmed = 0
            try:
                for index in range(INDICATION_COUNT):
                    await device.indicate_subscriber(connection, indicating, struct.pack('<H', index))
                    confirmed += 1
            except Exception as error:
                log(f'indications stopped after {confirmed}: {error!r}')
            print(f'RESULT indications_confirmed={confirmed}', flush=True)

        burst.on('subscription', lambda connection, notify, indicate: notify and asyncio.ensure_future(send_burst(connection)))
        indicating.on('subscription',
                      lambda connection, notify, indicate: indicate and asyncio.ensure_future(send_indications(connection)))

        def on_connection(connection):
            log(f'connected to {connection.peer_address}')
            print('RESULT connected=1', flush=True)
            connection.on('disconnection', lambda reason: print(f'RESULT disconnected=0x{reason:02X}', flush=True))
            connection.on('connection_att_mtu_update', lambda *a: print(f'RESULT mtu={connection.att_mtu}', flush=True))
        device.on('connection', on_connection)
        hrm.on('subscription', lambda conn, notify, indicate: print(f'RESULT subscribed={int(notify)}', flush=True))

        await step('power on (controller bring-up)', device.power_on())
        print('RESULT powered_on=1', flush=True)
        print_tree(device.gatt_server)
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
