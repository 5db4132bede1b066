#!/usr/bin/env python3
"""Bumble extended advertiser used by swift-ble's interop tests: two advertising sets made with Bumble's own
Device.create_advertising_set, extended (non-legacy) PDUs, non-connectable: one on LE 1M named '--name-1m', one on
LE Coded (primary and secondary) named '--name-coded', each from its own random address and SID.

    extended_advertiser.py --transport tcp-client:127.0.0.1:PORT [--phys 1m,coded] [--run-for SECONDS]

Prints 'RESULT advertising=1' once every set is on the air, 'RESULT set_<phy>=<address> sid <n>' for each, and exits
0 after --run-for seconds or on SIGTERM.
"""
import argparse, asyncio, signal

from bumble.device import AdvertisingEventProperties, AdvertisingParameters, Device, DeviceConfiguration
from bumble.hci import Address, Phy

from bumble.transport import open_transport

from lab import HOSTS, fail, step


def result(key, value):
    print(f'RESULT {key}={value}', flush=True)


def ad(*structures):
    return b''.join(bytes([len(data) + 1, ad_type]) + data for ad_type, data in structures)


async def main():
    p = argparse.ArgumentParser()
    p.add_argument('--transport', required=True)
    p.add_argument('--phys', default='1m,coded')
    p.add_argument('--name-1m', default='Bumble Ext 1M')
    p.add_argument('--name-coded', default='Bumble Ext Coded')
    p.add_argument('--run-for', type=float, default=0)
    args = p.parse_args()

    hci_transport = await step('open transport', open_transport(args.transport), 5)
    async with hci_transport:
        config = DeviceConfiguration()
        config.name = 'BumbleExtended'
        config.address = Address('F0:F1:F2:F3:F4:F5')
        device = Device.from_config_with_hci(config, hci_transport.source, hci_transport.sink)
        HOSTS.append(device.host)
        await step('power on (controller bring-up)', device.power_on(), 10)
        if not device.supports_le_extended_advertising:
            fail('the controller does not support extended advertising')
        plan = {'1m': (Phy.LE_1M, args.name_1m, 'C1:C2:C3:C4:C5:01', 1),
                'coded': (Phy.LE_CODED, args.name_coded, 'C1:C2:C3:C4:C5:02', 2)}
        for key in args.phys.split(','):
            phy, name, address, sid = plan[key]
            parameters = AdvertisingParameters(
                advertising_event_properties=AdvertisingEventProperties(is_connectable=False, is_scannable=False,
                                                                        is_legacy=False),
                primary_advertising_interval_min=100, primary_advertising_interval_max=100,
                primary_advertising_phy=phy, secondary_advertising_phy=phy, advertising_sid=sid)
            data = ad((0x01, b'\x06'), (0x09, name.encode()), (0xFF, b'\xff\xff' + bytes(range(60))))
            await step(f'create the {key} advertising set',
                       device.create_advertising_set(advertising_parameters=parameters, random_address=Address(address),
                                                     advertising_data=data, auto_start=True), 10)
            result(f'set_{key}', f'{address} sid {sid}')
        result('advertising', 1)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        if args.run_for > 0:
            loop.call_later(args.run_for, stop.set)
        await stop.wait()


if __name__ == '__main__':
    asyncio.run(main())
