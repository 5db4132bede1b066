"""Bumble's central against swift-ble's CoreBluetooth-style peripheral (Examples/transfer-demo --peripheral-only):
finds it by name, exchanges MTUs, discovers, reads the "who am I" characteristic (the identifier the peripheral's
CBCentral has for this central), subscribes to the transfer characteristic and collects the notified chunks until
the 3-byte "EOM" chunk, then writes a reply with response and disconnects.

Prints 'RESULT <key>=<value>' lines (received, sha256, who_am_i, reply); 'FAILED: <step>: <why>' and exit 1 when a
step does not complete in time."""
import argparse, asyncio, hashlib

from bumble.core import AdvertisingData, UUID
from bumble.device import Device, DeviceConfiguration, Peer
from bumble.hci import Address
from bumble.transport import open_transport

from lab import HOSTS, fail, step

TRANSFER_SERVICE = UUID('E20A39F4-73F5-4BC4-A12F-17D1AD07A961')
TRANSFER = UUID('08590F7E-DB05-467E-8757-72F6FAEB13D4')
WHO_AM_I = UUID('08590F7E-DB05-467E-8757-72F6FAEB13D5')


def result(key, value):
    print(f'RESULT {key}={value}', flush=True)


async def main():
    p = argparse.ArgumentParser()
    p.add_argument('--transport', required=True)
    p.add_argument('--address', default='C0:C1:C2:C3:C4:C5')
    p.add_argument('--target-name', required=True)
    p.add_argument('--reply', default='thanks from bumble')
    args = p.parse_args()

    hci_transport = await step('open transport', open_transport(args.transport), 5)
    async with hci_transport:
        config = DeviceConfiguration()
        config.name = 'BumbleTransferCentral'
        config.address = Address(args.address)
        device = Device.from_config_with_hci(config, hci_transport.source, hci_transport.sink)
        HOSTS.append(device.host)
        await step('power on (controller bring-up)', device.power_on(), 10)

        found = asyncio.get_running_loop().create_future()

        def on_advertisement(adv):
            name = adv.data.get(AdvertisingData.COMPLETE_LOCAL_NAME) or adv.data.get(AdvertisingData.SHORTENED_LOCAL_NAME)
            if name == args.target_name and not found.done():
                found.set_result(adv.address)
        device.on('advertisement', on_advertisement)
        await step('start scanning', device.start_scanning(active=True, filter_duplicates=False))
        target = await step(f'scan for {args.target_name!r}', found, 15)
        await step('stop scanning', device.stop_scanning())

        connection = await step('connect', device.connect(target), 10)
        peer = Peer(connection)
        await step('exchange MTU', peer.request_mtu(247))
        await step('discover all', peer.discover_all())
        service = next((s for s in peer.services if s.uuid == TRANSFER_SERVICE), None)
        if service is None:
            fail('the transfer service is not published')
        transfer = next((c for c in service.characteristics if c.uuid == TRANSFER), None)
        who = next((c for c in service.characteristics if c.uuid == WHO_AM_I), None)
        if transfer is None or who is None:
            fail('the transfer service lacks its characteristics')
        result('who_am_i', bytes(await step('read who am I', who.read_value())).decode())

        received = bytearray()
        ended = asyncio.get_running_loop().create_future()

        def on_value(value):
            if bytes(value) == b'EOM':
                if not ended.done():
                    ended.set_result(None)
            else:
                received.extend(value)
        await step('subscribe', peer.subscribe(transfer, on_value))
        await step('receive until EOM', ended, 20)
        result('received', len(received))
        result('sha256', hashlib.sha256(received).hexdigest())
        await step('write the reply', transfer.write_value(args.reply.encode(), with_response=True))
        result('reply', 'written')
        await step('disconnect', connection.disconnect(), 5)


asyncio.run(main())
