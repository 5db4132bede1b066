#!/usr/bin/env python3
"""Bumble GATT central that checks the lab device's characteristics its application answers (`ble serve`):

- the counter (…DEF8) is computed on each read: three reads give three consecutive numbers;
- the guarded value (…DEF9) refuses a write of `refuse` with application error 0x80 and keeps its value, and takes
  any other write;
- the slow value (…DEFA) answers a write only after its application waited (about 500 ms);
- a reliable write set across a stored value (…DEF1) and the guarded one is applied all or nothing: refused as a
  whole (0x80, the stored value unchanged) when the guarded part spells `refuse`, applied whole otherwise.

    app_client.py --transport tcp-client:127.0.0.1:PORT [--target-name SwiftBLELab]

Prints 'RESULT <key>=<value>' per check; the first failure prints 'FAILED: ...' and exits 1.
"""
import argparse, asyncio, struct, time

from bumble.att import (ATT_Error, ATT_Error_Response, ATT_Execute_Write_Request, ATT_Execute_Write_Response,
                        ATT_Prepare_Write_Request, ATT_Prepare_Write_Response)
from bumble.core import AdvertisingData, UUID
from bumble.device import Device, DeviceConfiguration, Peer
from bumble.hci import Address
from bumble.transport import open_transport

import lab
from lab import HOSTS, fail

CUSTOM_WRITABLE = UUID(lab.CUSTOM_WRITABLE)
COUNTER = UUID('12345678-1234-5678-1234-56789ABCDEF8')
GUARDED = UUID('12345678-1234-5678-1234-56789ABCDEF9')
SLOW = UUID('12345678-1234-5678-1234-56789ABCDEFA')


def result(key, value):
    print(f'RESULT {key}={value}', flush=True)


def check(condition, what):
    if not condition:
        fail(what)


async def step(name, awaitable, timeout=10):
    return await lab.step(name, awaitable, timeout, passthrough=(ATT_Error,))


async def reliable_set(client, parts):
    """Prepare Write Requests for `parts` [(handle, bytes)], then Execute Write (commit); the final response."""
    for handle, value in parts:
        response = await step(f'prepare write 0x{handle:04X}', client.send_request(
            ATT_Prepare_Write_Request(attribute_handle=handle, value_offset=0, part_attribute_value=value)))
        check(isinstance(response, ATT_Prepare_Write_Response) and bytes(response.part_attribute_value) == value,
              f'prepare write echo for 0x{handle:04X}: {response}')
    return await step('execute write', client.send_request(ATT_Execute_Write_Request(flags=1)))


async def main():
    p = argparse.ArgumentParser()
    p.add_argument('--transport', required=True)
    p.add_argument('--target-name', default='SwiftBLELab')
    args = p.parse_args()
    hci_transport = await step('open transport', open_transport(args.transport), 5)
    async with hci_transport:
        config = DeviceConfiguration()
        config.name = 'BumbleAppClient'
        config.address = Address('C0:C1:C2:C3:C4:C7')
        device = Device.from_config_with_hci(config, hci_transport.source, hci_transport.sink)
        HOSTS.append(device.host)
        await step('power on', device.power_on())
        found = asyncio.get_running_loop().create_future()

        def on_advertisement(adv):
            if adv.data.get(AdvertisingData.COMPLETE_LOCAL_NAME) == args.target_name and not found.done():
                found.set_result(adv.address)
        device.on('advertisement', on_advertisement)
        await step('start scanning', device.start_scanning(active=True))
        target = await step(f'scan for {args.target_name!r}', found)
        await step('stop scanning', device.stop_scanning())
        connection = await step('connect', device.connect(target))
        peer = Peer(connection)
        await step('exchange MTU', peer.request_mtu(247))
        await step('discover all', peer.discover_all())

        def characteristic(uuid):
            found = peer.get_characteristics_by_uuid(uuid)
            check(found, f'no characteristic {uuid}')
            return found[0]
        counter, guarded, slow, stored = (characteristic(u) for u in (COUNTER, GUARDED, SLOW, CUSTOM_WRITABLE))

        counts = []
        for n in range(3):
            value = bytes(await step(f'read counter {n + 1}', counter.read_value()))
            check(len(value) == 4, f'counter value {value.hex()}')
            counts.append(struct.unpack('<I', value)[0])
        check(counts[1] == counts[0] + 1 and counts[2] == counts[1] + 1, f'counter values {counts}')
        result('counter_reads', ','.join(map(str, counts)))
        result('counter_computed', 1)

        before = bytes(await step('read guarded', guarded.read_value()))
        try:
            await step('write refuse', guarded.write_value(b'refuse', with_response=True))
            fail('the guarded value took a write of "refuse"')
        except ATT_Error as e:
            result('refused_error', f'0x{e.error_code:02X}')
        check(bytes(await step('read guarded again', guarded.read_value())) == before, 'the refused write changed the value')
        result('refused_kept', 1)
        await step('write accepted', guarded.write_value(b'accepted', with_response=True))
        check(bytes(await step('read guarded back', guarded.read_value())) == b'accepted', 'the accepted write was not kept')
        result('guarded_write', 1)

        started = time.monotonic()
        await step('write slow', slow.write_value(b'late', with_response=True))
        elapsed = int((time.monotonic() - started) * 1000)
        result('slow_ms', elapsed)
        check(elapsed >= 450, f'the slow value answered after {elapsed} ms')
        check(bytes(await step('read slow back', slow.read_value())) == b'late', 'the slow write was not kept')
        result('slow_answered', 1)

        client = peer.gatt_client
        stored_before = bytes(await step('read stored', stored.read_value()))
        response = await reliable_set(client, [(stored.handle, b'set-A'), (guarded.handle, b'refuse')])
        check(isinstance(response, ATT_Error_Response), f'a set with "refuse" was executed: {response}')
        result('set_refused_error', f'0x{response.error_code:02X}')
        check(bytes(await step('read stored after refusal', stored.read_value())) == stored_before,
              'the refused set wrote the stored value')
        check(bytes(await step('read guarded after refusal', guarded.read_value())) == b'accepted',
              'the refused set wrote the guarded value')
        result('set_refused_nothing_written', 1)
        response = await reliable_set(client, [(stored.handle, b'set-B'), (guarded.handle, b'taken')])
        check(isinstance(response, ATT_Execute_Write_Response), f'the set was not executed: {response}')
        check(bytes(await step('read stored after the set', stored.read_value())).startswith(b'set-B'), 'the set missed the stored value')
        check(bytes(await step('read guarded after the set', guarded.read_value())).startswith(b'taken'), 'the set missed the guarded value')
        result('set_applied_whole', 1)

        await step('disconnect', connection.disconnect(), 5)
        result('done', 1)


if __name__ == '__main__':
    asyncio.run(main())
