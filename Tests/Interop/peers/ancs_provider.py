#!/usr/bin/env python3
"""Bumble peer serving the Apple Notification Center Service (ANCS) as a phone does, for swift-ble's interop test of
`ble ancs` (the consumer).

    ancs_provider.py --transport tcp-client:127.0.0.1:PORT [--name BPhone] [--run-for SECONDS]

It advertises NAME (connectable) with the ANCS service UUID in a Service Solicitation (AD type 0x15), as a phone's
app does for accessories, and serves the ANCS service with its three characteristics:
  Notification Source (notify), Control Point (write), Data Source (notify)
each needing an encrypted link (the CCCDs too: subscribing needs encryption; Bumble answers Insufficient Encryption
where an iPhone answers Insufficient Authentication). It accepts Just Works pairing (bonding).

When a central enables the Notification Source it announces the notifications it holds, flagged pre-existing:
  UID 101  Chat   social         'Bumble says hi' / 'Hello from the Bumble ANCS provider'   negative 'Dismiss'
  UID 102  Phone  incoming call  'Bumble Caller' / 'Incoming call'   important, positive 'Accept', negative 'Reject'
and 0.5 s later a new one:
  UID 103  Chat   social         'Interop report' (subtitle 'RootCanal, Bumble, ble') / 'All green'  negative 'Dismiss'
The Control Point answers Get Notification Attributes and Get App Attributes on the Data Source (cut into
notifications of ATT_MTU - 3 bytes, titles, subtitles and messages cut to the length asked for), and performs
actions: an action a notification offers removes it (Notification Source EventID 2). Refusals: 0xA0 unknown command,
0xA1 malformed command, 0xA2 unknown UID or app (or ActionID), 0xA3 an action the notification does not offer.

RESULT lines:
  RESULT advertising=1
  RESULT connected=1
  RESULT paired=1 sc=.. authenticated=.. key_size=.. bonded=..   (and encrypted=1 paired_this_link=..)
  RESULT subscribed=notification_source | subscribed=data_source   when a CCCD enables notifications
  RESULT get_notification_attributes=UID                            each request answered
  RESULT get_app_attributes=APP_IDENTIFIER
  RESULT refused=0xNN                                               each refusal
  RESULT action=positive|negative uid=UID                           each action performed
  RESULT disconnected=0xNN
"""
import argparse, asyncio, logging, signal, struct, time
from types import SimpleNamespace

from bumble.att import ATT_Error, Attribute, AttributeValueV2
from bumble.core import AdvertisingData, UUID
from bumble.device import Device, DeviceConfiguration
from bumble.gatt import (GATT_CLIENT_CHARACTERISTIC_CONFIGURATION_DESCRIPTOR, Characteristic, CharacteristicValue,
                         Descriptor, Service)
from bumble.hci import Address
from bumble.keys import MemoryKeyStore
from bumble.pairing import PairingConfig
from bumble.transport import open_transport

import lab
from lab import HOSTS
from pairing_peer import CompletingSession, Delegate, watch_security

ANCS = '7905F431-B5CE-4E99-A40F-4B1E122D00D0'
NOTIFICATION_SOURCE = '9FBF120D-6301-42D9-8C58-25E699A21DBD'
CONTROL_POINT = '69D1D8F3-45E1-49A8-9821-9BBDFDAAD9D9'
DATA_SOURCE = '22EAC6E9-24D6-4BB5-BE44-B36ACE7C7BFB'

APPS = {'com.example.chat': 'Chat', 'com.apple.mobilephone': 'Phone', 'com.apple.mobilemail': 'Mail'}
# uid: (app, category, flags, title, subtitle, message, date, positive label, negative label)
HELD = {
    101: ('com.example.chat', 4, 0x00, 'Bumble says hi', '', 'Hello from the Bumble ANCS provider', '20261127T100000',
          None, 'Dismiss'),
    102: ('com.apple.mobilephone', 1, 0x02, 'Bumble Caller', '', 'Incoming call', '20261127T100100', 'Accept', 'Reject'),
}
LATER = {
    103: ('com.example.chat', 4, 0x00, 'Interop report', 'RootCanal, Bumble, ble', 'All green', '20261127T100200',
          None, 'Dismiss'),
}
# Attribute IDs followed by a maximum length in a Get Notification Attributes command: title, subtitle, message.
WITH_LENGTH = (1, 2, 3)

T0 = time.monotonic()


def log(*a):
    print(f'[ancs-provider {time.monotonic() - T0:7.3f}s]', *a, flush=True)


def result(text):
    print(f'RESULT {text}', flush=True)


def cut(text, maximum):
    """text in UTF-8, at most maximum bytes, on a character boundary."""
    data = text.encode()
    if maximum is None or len(data) <= maximum:
        return data
    return data[:maximum].decode(errors='ignore').encode()


class Provider:
    def __init__(self, device):
        self.device = device
        self.held = dict(HELD)
        self.later_posted = False

        def encrypted_cccd(characteristic_ref):
            # A CCCD of our own (Bumble adds one with no security when the characteristic has none): writing it
            # needs an encrypted link. Reads and writes go to Bumble's own CCCD bookkeeping.
            return Descriptor(GATT_CLIENT_CHARACTERISTIC_CONFIGURATION_DESCRIPTOR,
                              Attribute.READABLE | Attribute.WRITEABLE | Attribute.READ_REQUIRES_ENCRYPTION
                              | Attribute.WRITE_REQUIRES_ENCRYPTION,
                              AttributeValueV2(lambda bearer: device.gatt_server.read_cccd(bearer, characteristic_ref[0]),
                                               write=lambda bearer, value: device.gatt_server.write_cccd(
                                                   bearer, characteristic_ref[0], value)))
        ns_ref, ds_ref = [None], [None]
        self.notification_source = Characteristic(NOTIFICATION_SOURCE, Characteristic.Properties.NOTIFY,
                                                  Characteristic.READ_REQUIRES_ENCRYPTION, b'',
                                                  descriptors=[encrypted_cccd(ns_ref)])
        self.control_point = Characteristic(CONTROL_POINT, Characteristic.Properties.WRITE,
                                            Characteristic.WRITEABLE | Characteristic.WRITE_REQUIRES_ENCRYPTION,
                                            CharacteristicValue(write=self.on_write))
        self.data_source = Characteristic(DATA_SOURCE, Characteristic.Properties.NOTIFY,
                                          Characteristic.READ_REQUIRES_ENCRYPTION, b'',
                                          descriptors=[encrypted_cccd(ds_ref)])
        ns_ref[0], ds_ref[0] = self.notification_source, self.data_source
        device.add_services([Service(ANCS, [self.notification_source, self.control_point, self.data_source])])
        self.notification_source.on('subscription', self.on_notification_source)
        self.data_source.on('subscription',
                            lambda bearer, notify, indicate: notify and result('subscribed=data_source'))

    def event(self, event_id, uid, notification, pre_existing=False):
        app, category, flags, _, _, _, _, positive, negative = notification
        flags |= (0x04 if pre_existing else 0) | (0x08 if positive else 0) | (0x10 if negative else 0)
        count = sum(1 for n in self.held.values() if n[1] == category)
        return struct.pack('<BBBBI', event_id, flags, category, count, uid)

    async def announce(self, connection, value):
        await self.device.notify_subscriber(connection, self.notification_source, value)

    def on_notification_source(self, bearer, notify, indicate):
        if not notify:
            return
        result('subscribed=notification_source')
        connection = getattr(bearer, 'connection', None) or bearer

        async def announce_all():
            for uid, notification in list(self.held.items()):
                await self.announce(connection, self.event(0, uid, notification, pre_existing=True))
            if not self.later_posted:
                self.later_posted = True
                await asyncio.sleep(0.5)
                for uid, notification in LATER.items():
                    self.held[uid] = notification
                    await self.announce(connection, self.event(0, uid, notification))
        asyncio.ensure_future(announce_all())

    def refuse(self, code, why):
        log(f'refused with 0x{code:02X}: {why}')
        result(f'refused=0x{code:02X}')
        raise ATT_Error(code)

    def on_write(self, connection, value):
        value = bytes(value)
        if not value:
            self.refuse(0xA1, 'an empty command')
        command = value[0]
        if command == 0:
            if len(value) < 6:
                self.refuse(0xA1, 'Get Notification Attributes cut short')
            uid = struct.unpack_from('<I', value, 1)[0]
            requested, offset = [], 5
            while offset < len(value):
                attribute = value[offset]
                offset += 1
                if attribute > 7:
                    self.refuse(0xA1, f'unknown attribute {attribute}')
                maximum = None
                if attribute in WITH_LENGTH:
                    if offset + 2 > len(value):
                        self.refuse(0xA1, 'a maximum length cut short')
                    maximum = struct.unpack_from('<H', value, offset)[0]
                    offset += 2
                requested.append((attribute, maximum))
            if uid not in self.held:
                self.refuse(0xA2, f'no notification {uid}')
            app, _, _, title, subtitle, message, date, positive, negative = self.held[uid]
            texts = {0: app, 1: title, 2: subtitle, 3: message, 4: str(len(message.encode())), 5: date,
                     6: positive or '', 7: negative or ''}
            response = bytes([0]) + struct.pack('<I', uid)
            for attribute, maximum in requested:
                data = cut(texts[attribute], maximum)
                response += struct.pack('<BH', attribute, len(data)) + data
            result(f'get_notification_attributes={uid}')
            asyncio.ensure_future(self.send(connection, response))
        elif command == 1:
            end = value.find(0, 1)
            if end < 0 or end + 1 >= len(value):
                self.refuse(0xA1, 'Get App Attributes without its NUL or attributes')
            app = value[1:end].decode(errors='replace')
            if any(attribute != 0 for attribute in value[end + 1:]):
                self.refuse(0xA1, 'unknown app attribute')
            if app not in APPS:
                self.refuse(0xA2, f'no app {app}')
            response = bytes([1]) + value[1:end + 1]
            for _ in value[end + 1:]:
                name = APPS[app].encode()
                response += struct.pack('<BH', 0, len(name)) + name
            result(f'get_app_attributes={app}')
            asyncio.ensure_future(self.send(connection, response))
        elif command == 2:
            if len(value) != 6:
                self.refuse(0xA1, 'Perform Notification Action is UID and ActionID')
            uid, action = struct.unpack_from('<IB', value, 1)
            if uid not in self.held or action > 1:
                self.refuse(0xA2, f'no notification {uid} or no action {action}')
            notification = self.held[uid]
            if (notification[7] if action == 0 else notification[8]) is None:
                self.refuse(0xA3, f'notification {uid} offers no such action')
            result(f'action={"positive" if action == 0 else "negative"} uid={uid}')
            del self.held[uid]
            asyncio.ensure_future(self.announce(connection, self.event(2, uid, notification)))
        else:
            self.refuse(0xA0, f'unknown command {command}')

    async def send(self, connection, response):
        """The response on the Data Source, in notifications of ATT_MTU - 3 bytes (after the Write Response)."""
        await asyncio.sleep(0)
        size = max(1, connection.att_mtu - 3)
        for start in range(0, len(response), size):
            await self.device.notify_subscriber(connection, self.data_source, response[start:start + size])


async def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--transport', '--controller', dest='transport', required=True)
    p.add_argument('--name', default='BPhone')
    p.add_argument('--address', default='D7:D6:D5:D4:D3:D2')
    p.add_argument('--run-for', type=float, default=0)
    args = p.parse_args()

    hci_transport = await lab.step('open transport', open_transport(args.transport), 5)
    async with hci_transport:
        config = DeviceConfiguration()
        config.name = args.name
        config.address = Address(args.address)
        config.irk = (bytes(config.address) * 3)[:16]
        config.advertising_interval_min = config.advertising_interval_max = 50
        # Flags, the ANCS UUID solicited (0x15, little-endian) and the name: 3 + 18 + 2 + len(name) <= 31.
        config.advertising_data = bytes(AdvertisingData([
            (AdvertisingData.FLAGS, bytes([0x06])),
            (0x15, bytes(reversed(bytes.fromhex(ANCS.replace('-', ''))))),
            (AdvertisingData.COMPLETE_LOCAL_NAME, args.name.encode()),
        ]))
        device = Device.from_config_with_hci(config, hci_transport.source, hci_transport.sink)
        device.keystore = MemoryKeyStore()
        options = SimpleNamespace(io='none', reject=False, passkey=None)
        device.pairing_config_factory = lambda connection: PairingConfig(
            sc=True, mitm=False, bonding=True, delegate=Delegate(options),
            identity_address_type=PairingConfig.AddressType.RANDOM)
        device.smp_session_proxy = CompletingSession
        HOSTS.append(device.host)
        Provider(device)

        def on_connection(connection):
            log(f'connected to {connection.peer_address}')
            result('connected=1')
            watch_security(device, connection, options)
        device.on('connection', on_connection)

        await lab.step('power on (controller bring-up)', device.power_on())
        await lab.step('start advertising', device.start_advertising(auto_restart=True))
        log(f'advertising as {args.name!r} from {args.address}')
        result('advertising=1')

        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            asyncio.get_running_loop().add_signal_handler(sig, stop.set)
        try:
            await asyncio.wait_for(stop.wait(), args.run_for or None)
        except asyncio.TimeoutError:
            pass
        log('stopping')


if __name__ == '__main__':
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(main())
