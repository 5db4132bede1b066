#!/usr/bin/env python3
"""Bumble peer that pairs (LE Security Manager), as central or peripheral, driven by options; used by swift-ble's
interop tests to pair Bumble with Bumble and with our `ble` tool.

    pairing_peer.py --transport tcp-client:127.0.0.1:PORT --role peripheral|central --name NAME
                    [--io none|display|keyboard|yesno|keyboard-display] [--legacy] [--mitm] [--no-bond]
                    [--passkey N] [--reject] [--keystore FILE] [--address A] [--identity-public] [--zero-irk]
      peripheral:   [--run-for SECONDS]
      central:      [--read-before UUID] [--pair | --encrypt] [--read UUID ...]

(--controller is accepted as another name for --transport.)

--io          the SMP IO capability: none = NoInputNoOutput, display = DisplayOnly, keyboard = KeyboardOnly,
              yesno = DisplayYesNo, keyboard-display = KeyboardDisplay. Default none.
--legacy      no Secure Connections (SC bit clear: LE legacy pairing).
--mitm        set the MITM bit (without it on either side, SMP uses Just Works whatever the IO capabilities).
--no-bond     Bonding_Flags 00 (no bonding); keys of an unbonded pairing are not kept in --keystore.
--passkey N   the passkey this side displays (exactly N, six digits) when it displays one, and the one it enters
              when asked to enter one. Without it: a random passkey is displayed; a request to enter one is refused
              (Passkey Entry Failed).
--reject      the user answers no: to the numeric comparison, to the Just Works confirmation (Secure Connections),
              and to a passkey request.
--keystore F  Bumble's JSON key store in F (one namespace per --address), so a bond survives between runs.
--address A   the static random address this side advertises and connects from.
--identity-public
              key distribution sends the controller's public address as the identity address (Identity Address
              Information), not --address: a device that is known by its public address but uses a static random one
              on the air. Without it the identity is --address.
--zero-irk    key distribution sends an all-zero IRK (Identity Information): a device that does not use privacy may
              (Core Vol 3, Part H, 2.4.2.1); the peer must not treat it as a key.

Peripheral: advertises NAME (connectable) and serves service 12345678-1234-5678-1234-56789ABCDEF1 with
  ...DEF3 read, needs encryption, value b'top-secret'
  ...DEFB read, needs authentication (MITM), value b'authenticated'
and accepts pairing per its options. Runs for --run-for seconds (0: until SIGTERM/SIGINT), then exits 0.

Central: finds NAME, connects, then in order: --read-before UUID (an ATT read before any security),
--pair (pairs) or --encrypt (encrypts with the bond stored in --keystore, without pairing), each --read UUID,
disconnect. Exits 0 when every step ran (a pairing failure or an ATT error is a result, not a failure).

RESULT lines (both roles unless noted):
  RESULT identity=AA:BB:CC:DD:EE:FF           peripheral with --identity-public: the public identity it distributes
  RESULT advertising=1                        peripheral, once it advertises
  RESULT connected=1
  RESULT passkey=N                            when this side displays a passkey (six digits, zero-padded)
  RESULT compare=N                            when this side is asked to compare a number (numeric comparison)
  RESULT method=just_works|numeric_comparison|passkey|oob      the pairing method this side chose
  RESULT paired=1 sc=0|1 authenticated=0|1 key_size=N bonded=0|1
  RESULT pairing_failed=0xNN                  the SMP reason (sent or received)
  RESULT encrypted=1 paired_this_link=0|1     every time the link becomes encrypted (0: with a stored key)
  RESULT read_before=<hex>|0xNN               central, --read-before: the value or the ATT error code
  RESULT read_XXXX=<hex>|0xNN                 central, --read: XXXX = the UUID's last 4 hex digits, uppercase
  RESULT disconnected=0xNN
  RESULT done=1                               central, after the last step
Every step has a timeout; the first step that fails prints 'FAILED: <step>: <why>' and exits 1.
"""
import argparse, asyncio, logging, signal, time

from bumble.att import ATT_Error
from bumble.core import AdvertisingData, ProtocolError, UUID
from bumble.device import Device, DeviceConfiguration, Peer
from bumble.gatt import Characteristic, Service
from bumble.hci import Address, Role
from bumble.keys import JsonKeyStore, MemoryKeyStore
from bumble.pairing import PairingConfig, PairingDelegate
from bumble import smp
from bumble.smp import PairingMethod
from bumble.transport import open_transport

import lab
from lab import HOSTS, fail

PAIRING_SERVICE = '12345678-1234-5678-1234-56789ABCDEF1'
ENCRYPTED = '12345678-1234-5678-1234-56789ABCDEF3'
AUTHENTICATED = '12345678-1234-5678-1234-56789ABCDEFB'

IO_CAPABILITIES = {
    'none': PairingDelegate.IoCapability.NO_OUTPUT_NO_INPUT,
    'display': PairingDelegate.IoCapability.DISPLAY_OUTPUT_ONLY,
    'keyboard': PairingDelegate.IoCapability.KEYBOARD_INPUT_ONLY,
    'yesno': PairingDelegate.IoCapability.DISPLAY_OUTPUT_AND_YES_NO_INPUT,
    'keyboard-display': PairingDelegate.IoCapability.DISPLAY_OUTPUT_AND_KEYBOARD_INPUT,
}
METHODS = {
    PairingMethod.JUST_WORKS: 'just_works',
    PairingMethod.NUMERIC_COMPARISON: 'numeric_comparison',
    PairingMethod.PASSKEY: 'passkey',
    PairingMethod.OOB: 'oob',
}

T0 = time.monotonic()


def log(*a):
    print(f'[pairing-peer {time.monotonic() - T0:7.3f}s]', *a, flush=True)


def result(text):
    print(f'RESULT {text}', flush=True)


class Passkey(int):
    """A passkey that is true even when it is 000000. Bumble 0.0.236's Secure Connections passkey entry asserts
    `self.passkey` before each confirm value (smp.py, Session.send_pairing_confirm_command), so the valid passkey
    000000 (Core Vol 3, Part H, 2.3.5.3: 000000 to 999999) would stop the pairing with an AssertionError and no
    Pairing Failed. Only the truth value differs from int."""

    def __bool__(self):
        return True


class Delegate(PairingDelegate):
    """The user of this peer: answers from the command line and prints what a user would see."""

    def __init__(self, args):
        super().__init__(io_capability=IO_CAPABILITIES[args.io])
        self.args = args

    async def accept(self):
        return True

    async def confirm(self, auto=False):
        log(f'Just Works confirmation: answering {"no" if self.args.reject else "yes"}')
        return not self.args.reject

    async def compare_numbers(self, number, digits):
        result(f'compare={number:06d}')
        log(f'numeric comparison {number:06d}: answering {"no" if self.args.reject else "yes"}')
        return not self.args.reject

    async def get_number(self):
        if self.args.reject or self.args.passkey is None:
            log('passkey requested: refused')
            return None
        log(f'passkey requested: entering {self.args.passkey:06d}')
        return Passkey(self.args.passkey)

    async def generate_passkey(self):
        if self.args.passkey is not None:
            return Passkey(self.args.passkey)
        return await super().generate_passkey()

    async def display_number(self, number, digits):
        result(f'passkey={number:06d}')


class CompletingSession(smp.Session):
    """Bumble 0.0.236 finishes a pairing (stores the keys, reports 'pairing') in a task it cancels when the link goes
    down (smp.py, Session.on_peer_key_distribution_complete): when the initiator disconnects right after the last
    key distribution PDU, which it may, the responder has received every key but drops the bond. Here the pairing
    is completed whatever happens to the link afterwards."""

    def on_peer_key_distribution_complete(self):
        if self.is_initiator:
            self.distribute_keys()

        async def complete():
            try:
                await self.on_pairing()
            except Exception as error:   # the final drain of a link already gone
                log(f'after pairing: {error!r}')
        asyncio.ensure_future(complete())


def key_size(device, connection, session=None):
    """The encryption key size: from the controller's Encryption Change v2 when it reports one, else the size the
    two Pairing Request/Response PDUs negotiated (the smaller of their Maximum Encryption Key Size)."""
    if connection.encryption_key_size:
        return connection.encryption_key_size
    session = session or device.smp_manager.sessions.get(connection.handle)
    if session is not None and getattr(session, 'preq', None) and getattr(session, 'pres', None):
        return min(session.preq[4], session.pres[4])
    return 0


def watch_security(device, connection, args):
    """Prints the security events of one link."""
    state = {'paired_this_link': False, 'session': None}

    def on_pairing_start():
        state['paired_this_link'] = True
        state['session'] = device.smp_manager.sessions.get(connection.handle)
        log('pairing started')

    def on_pairing(keys):
        session = state['session']
        ltk = keys.ltk or keys.ltk_peripheral or keys.ltk_central
        authenticated = int(bool(ltk and ltk.authenticated))
        bonded = int(bool(session.bonding)) if session is not None else 0
        if session is not None:
            result(f'method={METHODS.get(session.pairing_method, session.pairing_method.name.lower())}')
        result(f'paired=1 sc={int(bool(connection.sc))} authenticated={authenticated} '
               f'key_size={key_size(device, connection, session)} bonded={bonded}')
        if not bonded and device.keystore is not None:
            # Bumble stores the keys of every pairing; without bonding they must not outlive the link.
            asyncio.ensure_future(forget(device, connection.peer_address))

    def on_pairing_failure(reason):
        result(f'pairing_failed=0x{int(reason):02X}')

    def on_encryption_change():
        if connection.is_encrypted:
            result(f'encrypted=1 paired_this_link={int(state["paired_this_link"])}')

    def on_encryption_failure(error):
        result(f'encryption_failed=0x{int(error):02X}')

    connection.on('pairing_start', on_pairing_start)
    connection.on('pairing', on_pairing)
    connection.on('pairing_failure', on_pairing_failure)
    connection.on('connection_encryption_change', on_encryption_change)
    connection.on('connection_encryption_failure', on_encryption_failure)
    connection.on('disconnection', lambda reason: result(f'disconnected=0x{reason:02X}'))


async def forget(device, address):
    try:
        await device.keystore.delete(str(address))
        log(f'not bonded: keys of {address} removed from the key store')
    except KeyError:
        pass


def make_device(args, hci_transport):
    config = DeviceConfiguration()
    config.name = args.name if args.role == 'peripheral' else 'BumblePairingCentral'
    config.address = Address(args.address)
    # Bumble's DeviceConfiguration() leaves the IRK all zero (its configuration files derive one from the
    # address); a real device distributes a real one, unless told to send none (--zero-irk).
    config.irk = bytes(16) if args.zero_irk else (bytes(config.address) * 3)[:16]
    config.advertising_interval_min = config.advertising_interval_max = 50
    # --eatt as peripheral: Bumble's GATT server accepts EATT bearers (SPSM 0x0027) and says so in its Server
    # Supported Features.
    config.eatt_enabled = args.role == 'peripheral' and args.eatt > 0
    if args.role == 'peripheral':
        config.advertising_data = bytes(AdvertisingData([
            (AdvertisingData.FLAGS, bytes([0x06])),
            (AdvertisingData.COMPLETE_LOCAL_NAME, args.name.encode()),
        ]))
    device = Device.from_config_with_hci(config, hci_transport.source, hci_transport.sink)
    # One namespace per address, so one file can hold the bonds of several peers (and both roles).
    device.keystore = JsonKeyStore(args.address, args.keystore) if args.keystore else MemoryKeyStore()
    delegate = Delegate(args)
    # The identity address this side distributes is the static random address it connects with, so the peer finds
    # the bond under the address it sees on the next link (Bumble would otherwise send the controller's public
    # address, which it never uses on the air here); with --identity-public it is that public address, and the peer
    # must find the bond under the static random address it paired through.
    identity_type = PairingConfig.AddressType.PUBLIC if args.identity_public else PairingConfig.AddressType.RANDOM
    device.pairing_config_factory = lambda connection: PairingConfig(
        sc=not args.legacy, mitm=args.mitm, bonding=not args.no_bond, delegate=delegate,
        identity_address_type=identity_type)
    device.smp_session_proxy = CompletingSession
    fix_legacy_ltk_lookup(device)
    HOSTS.append(device.host)
    return device


def fix_legacy_ltk_lookup(device):
    """A peripheral answers the LE Long Term Key Request of a bonded central with the LTK it distributed itself
    (the one whose EDIV and Rand the central sends; Core Vol 3, Part H, 2.4.4.2 and Vol 6, Part B, 5.1.3.1).
    Bumble 0.0.236 stores that key as `ltk_central` (smp.py, Session.on_pairing, responder) but looks up
    `ltk_peripheral` when it is the peripheral (device.py, Device.get_long_term_key), the key the *central*
    distributed, without checking EDIV/Rand: a legacy bond then ends in a MIC failure (0x3D) on the next link.
    Secure Connections bonds (one `ltk`) are not affected and go to Bumble's lookup unchanged."""
    bumble_lookup = device.host.long_term_key_provider

    async def long_term_key(connection_handle, rand, ediv):
        connection = device.lookup_connection(connection_handle)
        if (connection is not None and connection.role == Role.PERIPHERAL and device.keystore is not None
                and connection.handle not in device.smp_manager.sessions):
            keys = await device.keystore.get(str(connection.peer_address))
            if keys is not None and keys.ltk is None and keys.ltk_central is not None:
                ours = keys.ltk_central
                if (ours.ediv or 0) == ediv and (ours.rand or bytes(8)) == bytes(rand):
                    return ours.value
                log(f'LTK request with EDIV {ediv} Rand {bytes(rand).hex()}: no such key')
                return None
        return await bumble_lookup(connection_handle, rand, ediv)
    device.host.long_term_key_provider = long_term_key


async def run_peripheral(args, device):
    encrypted = Characteristic(ENCRYPTED, Characteristic.Properties.READ,
                               Characteristic.Permissions.READ_REQUIRES_ENCRYPTION, b'top-secret')
    authenticated = Characteristic(AUTHENTICATED, Characteristic.Properties.READ,
                                   Characteristic.Permissions.READ_REQUIRES_AUTHENTICATION, b'authenticated')
    device.add_services([Service(PAIRING_SERVICE, [encrypted, authenticated])])

    def on_connection(connection):
        log(f'connected to {connection.peer_address}')
        result('connected=1')
        watch_security(device, connection, args)
    device.on('connection', on_connection)

    await lab.step('power on (controller bring-up)', device.power_on())
    if args.identity_public:
        result(f'identity={device.public_address.to_string(False)}')
    await lab.step('start advertising', device.start_advertising(auto_restart=True))
    log(f'advertising as {args.name!r} from {args.address}, io {args.io}')
    result('advertising=1')

    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    try:
        await asyncio.wait_for(stop.wait(), args.run_for or None)
    except asyncio.TimeoutError:
        pass
    log('stopping')


def short_key(uuid):
    return uuid.replace('-', '')[-4:].upper()


async def read(peer, uuid):
    """The value in hex, or the ATT error code as 0xNN."""
    found = peer.get_characteristics_by_uuid(UUID(uuid))
    if not found:
        fail(f'read {uuid}: no such characteristic on the peer')
    try:
        value = await lab.step(f'read {uuid}', found[0].read_value(), 10, passthrough=(ATT_Error,))
        return bytes(value).hex()
    except ATT_Error as error:
        return f'0x{error.error_code:02X}'


async def read_over_eatt(args, connection, peer):
    """Opens --eatt Enhanced ATT bearers (one L2CAP_CREDIT_BASED_CONNECTION_REQ to SPSM 0x0027) and reads every --read
    characteristic on every bearer at once: RESULT eatt_bearers=N, then eatt_read_KEY=HEX per bearer (or 0xNN)."""
    from bumble.gatt_client import Client
    bearers = await lab.step(f'open {args.eatt} EATT bearers', Client.connect_eatt(connection, count=args.eatt), 10)
    if not isinstance(bearers, list):
        bearers = [bearers]
    result(f'eatt_bearers={len(bearers)}')
    for uuid in args.read:
        found = peer.get_characteristics_by_uuid(UUID(uuid))
        if not found:
            fail(f'eatt read {uuid}: no such characteristic on the peer')
        handle = found[0].handle

        async def read_on(bearer):
            try:
                return bytes(await bearer.read_value(handle)).hex()
            except ATT_Error as error:
                return f'0x{error.error_code:02X}'
        values = await lab.step(f'read {uuid} on every EATT bearer at once',
                                asyncio.gather(*(read_on(b) for b in bearers)), 10)
        for value in values:
            result(f'eatt_read_{short_key(uuid)}={value}')


async def run_central(args, device):
    await lab.step('power on (controller bring-up)', device.power_on())
    found = asyncio.get_running_loop().create_future()

    def on_advertisement(adv):
        if adv.data.get(AdvertisingData.COMPLETE_LOCAL_NAME) == args.name and not found.done():
            found.set_result(adv.address)
    device.on('advertisement', on_advertisement)
    # Duplicates are not filtered by the controller: RootCanal 1.10 reports nothing at all to an extended passive
    # scan with Filter_Duplicates set (Tests/Interop/README.md); the first report is all this needs.
    await lab.step('start scanning', device.start_scanning(active=False, filter_duplicates=False))
    target = await lab.step(f'scan for {args.name!r}', found, 10)
    await lab.step('stop scanning', device.stop_scanning())
    connection = await lab.step(f'connect to {target}', device.connect(target), 10)
    log(f'connected to {connection.peer_address}')
    result('connected=1')
    watch_security(device, connection, args)
    disconnected = asyncio.get_running_loop().create_future()
    connection.on('disconnection', lambda reason: disconnected.done() or disconnected.set_result(reason))

    peer = Peer(connection)
    if args.read_before or args.read:
        await lab.step('discover services', peer.discover_services())
        for service in peer.services:
            await lab.step(f'discover characteristics of {service.uuid}', service.discover_characteristics())
    if args.read_before:
        result(f'read_before={await read(peer, args.read_before)}')
    if args.pair:
        try:
            await lab.step('pair', connection.pair(), 20, passthrough=(ProtocolError,))
            # Bumble's pairing ends when it has handed its keys to its ACL queue, and its HCI Disconnect can overtake
            # what is still queued there (under load the peer then never gets the keys, and its pairing never
            # completes). One ATT round trip after the keys proves they arrived.
            await lab.step('a read after pairing (the keys delivered)',
                           peer.read_characteristics_by_uuid(UUID.from_16_bits(0x2A00)), 10)
        except ProtocolError as error:   # the reason is printed by the pairing_failure handler
            log(f'pairing failed: {error}')
            await asyncio.sleep(0.3)     # the peer gets our Pairing Failed before the link goes
    elif args.encrypt:
        await lab.step('encrypt with the stored key', connection.encrypt(), 10)
    for uuid in args.read:
        result(f'read_{short_key(uuid)}={await read(peer, uuid)}')
    if args.eatt:
        await read_over_eatt(args, connection, peer)
    await lab.step('disconnect', connection.disconnect(), 5)
    await lab.step('disconnection complete', disconnected, 5)
    result('done=1')


async def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--transport', '--controller', dest='transport', required=True)
    p.add_argument('--role', choices=('central', 'peripheral'), required=True)
    p.add_argument('--name', required=True, help='peripheral: advertised name; central: the name to connect to')
    p.add_argument('--address', help='static random address (default D1:D2:D3:D4:D5:D6 as peripheral, '
                                     'C0:C1:C2:C3:C4:C5 as central)')
    p.add_argument('--io', choices=tuple(IO_CAPABILITIES), default='none')
    p.add_argument('--legacy', action='store_true')
    p.add_argument('--mitm', action='store_true')
    p.add_argument('--no-bond', action='store_true')
    p.add_argument('--passkey', type=int)
    p.add_argument('--reject', action='store_true')
    p.add_argument('--keystore')
    p.add_argument('--identity-public', action='store_true')
    p.add_argument('--zero-irk', action='store_true')
    p.add_argument('--run-for', type=float, default=0)
    p.add_argument('--read-before')
    security = p.add_mutually_exclusive_group()
    security.add_argument('--pair', action='store_true')
    security.add_argument('--encrypt', action='store_true')
    p.add_argument('--read', action='append', default=[])
    p.add_argument('--eatt', type=int, default=0,
                   help='central: after pairing, open N EATT bearers and read each --read on all of them at once; '
                        'peripheral: N > 0 serves EATT')
    args = p.parse_args()
    if args.passkey is not None and not 0 <= args.passkey <= 999999:
        p.error('--passkey: six digits, 0 to 999999')
    if args.role == 'peripheral' and (args.read_before or args.pair or args.encrypt or args.read):
        p.error('--read-before, --pair, --encrypt and --read are the central\'s')
    if args.address is None:
        args.address = 'D1:D2:D3:D4:D5:D6' if args.role == 'peripheral' else 'C0:C1:C2:C3:C4:C5'

    hci_transport = await lab.step('open transport', open_transport(args.transport), 5)
    async with hci_transport:
        device = make_device(args, hci_transport)
        if args.role == 'peripheral':
            await run_peripheral(args, device)
        else:
            await run_central(args, device)


if __name__ == '__main__':
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(main())
